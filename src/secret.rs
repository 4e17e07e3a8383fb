//! A bearer token that never shows itself: `Debug` and `Display` print
//! `[redacted]`, and [`redact`] scrubs it from any text bound for a log or report.

use std::fmt;

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

/// A URL fit for a report: user name and password removed.
pub fn display_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => url.to_string(),
    }
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
    }
}
