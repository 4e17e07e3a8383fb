//! Secrets: a bearer token that never shows itself (`Debug` and `Display`
//! print `[redacted]`), and the [`Redactor`] every writer of a run goes
//! through: built once per run from every value the run knows to be secret
//! (the token, URL credentials, secret-named headers and variables), it
//! scrubs them from the report files, the logs in the run folder, the
//! progress on stderr and the error messages.

mod redactor;

pub use redactor::{is_secret_name, Redactor, REDACTED};

use std::fmt;
use std::sync::RwLock;

/// The run's redactor, for the places that shorten foreign text before it
/// reaches a writer (a cut could otherwise leave half a secret that no
/// writer recognises) and for the terminal.
static KNOWN: RwLock<Option<Redactor>> = RwLock::new(None);

/// Makes `redactor` the run's: [`redact_known`] uses it from now on.
pub fn install(redactor: Redactor) {
    *KNOWN.write().unwrap_or_else(|p| p.into_inner()) = Some(redactor);
}

/// `text` with the run's known secrets redacted (as is before [`install`]).
/// Call it before cutting foreign text short.
pub fn redact_known(text: &str) -> String {
    match &*KNOWN.read().unwrap_or_else(|p| p.into_inner()) {
        Some(r) => r.redact(text).into_owned(),
        None => text.to_string(),
    }
}

/// The string values of `value` (never its keys) with `token` and the
/// run's known secrets redacted, in place.
pub fn redact_json_known(value: &mut serde_json::Value, token: Option<&Secret>) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            let redacted = redact_known(&redact(s, token));
            if redacted != *s {
                *s = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_json_known(v, token)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_json_known(v, token)),
        _ => {}
    }
}

/// A secret string, readable only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, for the one place that must send it (an `Authorization` header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Replaces every occurrence of the secret in `text` with `[redacted]`.
pub fn redact(text: &str, secret: Option<&Secret>) -> String {
    match secret {
        Some(s) if !s.0.is_empty() => text.replace(&s.0, "[redacted]"),
        _ => text.to_string(),
    }
}

/// A URL fit for a report: user name and password removed, even from a
/// URL that does not parse (the authority is cut at its last `@`).
pub fn display_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => match authority(url) {
            Some((start, end)) => match url[start..end].rfind('@') {
                Some(at) => format!("{}{}", &url[..start], &url[start + at + 1..]),
                None => url.to_string(),
            },
            None => url.to_string(),
        },
    }
}

/// Byte range of a URL's authority (`user:pass@host:port`), found by hand
/// so that a URL too broken for the parser is still handled.
fn authority(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    Some((start, end))
}

/// The raw (still percent-encoded) `user` and `pass` of `scheme://user:pass@host`.
fn url_credentials(url: &str) -> Option<(&str, &str)> {
    let url = url.trim();
    let (start, end) = authority(url)?;
    let userinfo = &url[start..start + url[start..end].rfind('@')?];
    let (user, password) = userinfo.split_once(':').unwrap_or(("", userinfo));
    Some((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("tok-123");
        assert!(!format!("{s:?} {s}").contains("tok-123"));
        assert_eq!(
            redact("Bearer tok-123 here", Some(&s)),
            "Bearer [redacted] here"
        );
    }

    #[test]
    fn strips_credentials_from_urls() {
        assert_eq!(
            display_url("http://u:p@127.0.0.1:9/x"),
            "http://127.0.0.1:9/x"
        );
        // Too broken to parse (port 99999), still stripped.
        assert_eq!(
            display_url("http://u:pw@d@host:99999/x?y=@"),
            "http://host:99999/x?y=@"
        );
        let mut r = Redactor::none();
        r.add_url_credentials("http://user:hunter22@host:99999/x");
        assert_eq!(r.redact("hunter22"), "[redacted]");
    }
}
