//! The second stage: raw tables to checked values, for the `[run]` table
//! here and per target in `target`, with the value checks both share
//! (positive timeouts, URLs that parse, known signal names). Every failure
//! names the key, the span to point at and what was expected.

use super::raw::{RawConfig, RawRun};
use super::target::check_target;
use super::{PersistKind, RunDefaults, TargetEntry};
use crate::secret::display_url;
use crate::targets::parse_signal;
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

/// The checked contents of a file, before it is tied to a path.
pub(super) struct Checked {
    pub run: RunDefaults,
    pub targets: Vec<TargetEntry>,
}

impl TryFrom<RawConfig> for Checked {
    type Error = Invalid;

    fn try_from(raw: RawConfig) -> Result<Self, Invalid> {
        let run = match raw.run {
            Some(run) => check_run(run)?,
            None => RunDefaults::default(),
        };
        let mut targets = Vec::new();
        for (name, target) in raw.targets.map(|t| t.0).unwrap_or_default() {
            targets.push(check_target(&name, target)?);
        }
        Ok(Checked { run, targets })
    }
}

fn check_run(raw: RawRun) -> Result<RunDefaults, Invalid> {
    let mut run = RunDefaults::default();
    if let Some(url) = &raw.base_url {
        run.base_url = Some(check_base_url(url.get_ref()).map_err(|why| {
            invalid(
                "run.base_url",
                url.span(),
                Some(format!("{:?}", display_url(url.get_ref().trim()))),
                why,
            )
        })?);
    }
    if let Some(agent) = &raw.agent {
        check_agent_name(agent.get_ref()).map_err(|why| {
            invalid(
                "run.agent",
                agent.span(),
                Some(format!("{:?}", agent.get_ref())),
                why,
            )
        })?;
        run.agent = Some(agent.get_ref().clone());
    }
    run.timeout = raw
        .timeout_ms
        .as_ref()
        .map(|v| positive_ms("run.timeout_ms", v))
        .transpose()?;
    run.overall_timeout = raw
        .overall_timeout_ms
        .as_ref()
        .map(|v| positive_ms("run.overall_timeout_ms", v))
        .transpose()?;
    if let Some(repeat) = &raw.repeat {
        let value = *repeat.get_ref();
        run.repeat = Some(
            u32::try_from(value)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    invalid(
                        "run.repeat",
                        repeat.span(),
                        Some(value.to_string()),
                        "expected a whole number of runs, at least 1",
                    )
                })?,
        );
    }
    if let Some(expect) = &raw.expect {
        if expect.get_ref().trim().is_empty() {
            return Err(invalid(
                "run.expect",
                expect.span(),
                None,
                "expected the path of an expectations file",
            ));
        }
        run.expect = Some(expect.get_ref().into());
    }
    if let Some(retries) = &raw.retries {
        let value = *retries.get_ref();
        run.retries = Some(
            u32::try_from(value)
                .ok()
                .filter(|n| *n <= 100)
                .ok_or_else(|| {
                    invalid(
                        "run.retries",
                        retries.span(),
                        Some(value.to_string()),
                        "expected a whole number of retries from 0 to 100",
                    )
                })?,
        );
    }
    if let Some(jobs) = &raw.jobs {
        let value = *jobs.get_ref();
        run.jobs = Some(
            u32::try_from(value)
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| {
                    invalid(
                        "run.jobs",
                        jobs.span(),
                        Some(value.to_string()),
                        "expected a number of jobs from 1 to 64",
                    )
                })?,
        );
    }
    if let Some(persist) = &raw.persist {
        run.persist = Some(match persist.get_ref().as_str() {
            "sqlite" => PersistKind::Sqlite,
            "memory" => PersistKind::Memory,
            other => {
                return Err(invalid(
                    "run.persist",
                    persist.span(),
                    Some(format!("{other:?}")),
                    "expected \"sqlite\" or \"memory\"",
                ))
            }
        });
    }
    if let Some(name) = &raw.token_env {
        if !is_env_name(name.get_ref()) {
            // The value is not shown: a user who misread the key may have pasted the token itself.
            return Err(invalid(
                "run.token_env",
                name.span(),
                None,
                "expected the name of an environment variable (letters, digits, `_`), not the token itself",
            ));
        }
        run.token_env = Some(name.get_ref().clone());
    }
    for name in raw.secret_env.map(|n| n.into_inner()).unwrap_or_default() {
        if !is_env_name(name.get_ref()) {
            return Err(invalid(
                "run.secret_env",
                name.span(),
                None,
                "expected names of environment variables (letters, digits, `_`), not their values",
            ));
        }
        run.secret_env.push(name.into_inner());
    }
    for (name, value) in raw.headers.map(|h| h.0).unwrap_or_default() {
        let key = format!("run.headers.{name}");
        if name.eq_ignore_ascii_case("authorization") {
            return Err(invalid(
                &key,
                value.span(),
                None,
                "no Authorization header in the file: put the token in an environment variable and name it with `token_env`",
            ));
        }
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(invalid(
                &key,
                value.span(),
                None,
                "expected a valid HTTP header name",
            ));
        }
        if reqwest::header::HeaderValue::from_str(value.get_ref()).is_err() {
            return Err(invalid(
                &key,
                value.span(),
                None,
                "expected a header value of visible ASCII characters",
            ));
        }
        run.headers.push((name, value.into_inner()));
    }
    Ok(run)
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

pub(super) fn check_signal(key: &str, value: &Spanned<String>) -> Result<i32, Invalid> {
    parse_signal(value.get_ref()).map_err(|e| {
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
pub fn check_base_url(text: &str) -> Result<String, String> {
    let text = text.trim();
    let url =
        url::Url::parse(text).map_err(|e| format!("expected an http:// or https:// URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "expected an http:// or https:// URL (scheme `{}`)",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("expected an http:// or https:// URL (no host)".into());
    }
    if url.port() == Some(0) {
        return Err("expected an http:// or https:// URL (port 0)".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("credentials in the URL (user:pass@) are not supported: continuity sends only the bearer token (name its variable with --token-env or set SA_TOKEN); remove them from the URL".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("expected a base URL without ?query or #fragment".into());
    }
    Ok(text.trim_end_matches('/').to_string())
}

/// An agent name as sandbox-agent takes it in `?agent=` and in server ids:
/// letters, digits, `-`, `_` and `.`.
pub fn check_agent_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err("expected an agent name such as \"mock\" or \"claude\" (letters, digits, `-`, `_`, `.`)".into())
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

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
