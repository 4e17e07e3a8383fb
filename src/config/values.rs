//! The value checks every table of a config file shares: positive
//! timeouts, HTTP statuses, URLs and addresses that parse, known signal
//! names, agent and environment names; each failure an [`Invalid`] naming
//! the key, the span to point at and what was expected. A leaf: `check` and
//! `target` both use it, it uses neither.

use crate::errors::Invalid as InvalidValue;
use crate::secret::display_url;
use crate::signal::Signal;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

/// A value that parsed but does not make sense.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Invalid {
    pub key: String,
    pub span: Range<usize>,
    /// The offending value, when showing it is safe and helps.
    pub value: Option<String>,
    pub expected: String,
}

pub(super) fn invalid(
    key: &str,
    span: Range<usize>,
    value: Option<String>,
    expected: impl Into<String>,
) -> Invalid {
    Invalid {
        key: key.to_string(),
        span,
        value,
        expected: expected.into(),
    }
}

pub(super) fn positive_ms(key: &str, value: &Spanned<i64>) -> Result<Duration, Invalid> {
    match u64::try_from(*value.get_ref()) {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(invalid(
            key,
            value.span(),
            Some(value.get_ref().to_string()),
            "expected a positive number of milliseconds",
        )),
    }
}

pub(super) fn check_status(key: &str, value: &Spanned<i64>) -> Result<u16, Invalid> {
    u16::try_from(*value.get_ref())
        .ok()
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| {
            invalid(
                key,
                value.span(),
                Some(value.get_ref().to_string()),
                "expected an HTTP status between 100 and 599",
            )
        })
}

pub(super) fn check_signal(key: &str, value: &Spanned<String>) -> Result<Signal, Invalid> {
    value.get_ref().parse::<Signal>().map_err(|e| {
        invalid(
            key,
            value.span(),
            Some(format!("{:?}", value.get_ref())),
            e.to_string(),
        )
    })
}

pub(super) fn check_url(key: &str, value: &Spanned<String>) -> Result<String, Invalid> {
    let text = value.get_ref().trim();
    let bad = |why: &str| {
        invalid(
            key,
            value.span(),
            Some(format!("{:?}", display_url(text))),
            format!("expected an http:// or https:// URL ({why})"),
        )
    };
    let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(&format!("scheme `{}`", url.scheme())));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(text.to_string())
}

/// A sandbox-agent base URL: http or https, a host, a valid port, and no
/// `user:pass@` (continuity authenticates with the bearer token only, and
/// would otherwise send those credentials as Basic auth unasked). Returns
/// it without a trailing `/`. The reason never quotes the URL.
pub(crate) fn check_base_url(text: &str) -> Result<String, InvalidValue> {
    let text = text.trim();
    let url = url::Url::parse(text)
        .map_err(|e| InvalidValue(format!("expected an http:// or https:// URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(InvalidValue(format!(
            "expected an http:// or https:// URL (scheme `{}`)",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(InvalidValue::new(
            "expected an http:// or https:// URL (no host)",
        ));
    }
    if url.port() == Some(0) {
        return Err(InvalidValue::new(
            "expected an http:// or https:// URL (port 0)",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(InvalidValue::new("credentials in the URL (user:pass@) are not supported: continuity sends only the bearer token (name its variable with --token-env or set SA_TOKEN); remove them from the URL"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(InvalidValue::new(
            "expected a base URL without ?query or #fragment",
        ));
    }
    Ok(text.trim_end_matches('/').to_string())
}

/// An agent name as sandbox-agent takes it in `?agent=` and in server ids:
/// letters, digits, `-`, `_` and `.`.
pub(crate) fn check_agent_name(name: &str) -> Result<(), InvalidValue> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(InvalidValue::new("expected an agent name such as \"mock\" or \"claude\" (letters, digits, `-`, `_`, `.`)"))
    }
}

pub(super) fn check_addr(key: &str, value: &Spanned<String>) -> Result<String, Invalid> {
    let text = value.get_ref().trim();
    let ok = text
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if ok {
        Ok(text.to_string())
    } else {
        Err(invalid(
            key,
            value.span(),
            Some(format!("{text:?}")),
            "expected host:port, e.g. \"127.0.0.1:2468\"",
        ))
    }
}

pub(super) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
