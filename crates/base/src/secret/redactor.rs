//! The [`Redactor`]: the set of a run's secret values, each in every form a
//! writer or a foreign program may give it, and the replacement of them in
//! text, JSON and bytes. Also which names mark a value as secret.

use super::url_credentials;
use std::borrow::Cow;
use std::fmt;

/// What a redacted secret reads as.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not redacted inside other text: replacing
/// every `a` of a report would destroy it and hide nothing.
const MIN_SECRET_CHARS: usize = 4;

/// Scrubs a run's known secrets from text, and from bytes it cannot parse.
///
/// Each secret is also looked for in the forms a writer or a foreign
/// program may give it: JSON-escaped, XML-escaped, percent-encoded, and in
/// base64 (standard and URL-safe): whole, and as the run of characters it
/// makes inside the base64 of any longer text (`user:TOKEN` for Basic
/// authentication, a restart command printing `base64(TOKEN)`), at each of
/// the three byte offsets it can start at.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every form of every secret, longest first (so a secret that contains
    /// another is replaced whole).
    needles: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} forms)", self.needles.len())
    }
}

impl Redactor {
    /// A redactor that knows no secret.
    pub fn none() -> Self {
        Self::default()
    }

    /// A redactor for these secret values (blank and very short ones are ignored).
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut redactor = Self::default();
        for secret in secrets {
            redactor.add(secret.as_ref());
        }
        redactor
    }

    /// Adds one secret value and its encoded forms.
    pub fn add(&mut self, secret: &str) {
        if secret.trim().chars().count() < MIN_SECRET_CHARS {
            return;
        }
        let json = serde_json::to_string(secret).unwrap_or_default();
        let mut forms = vec![
            secret.to_string(),
            json.trim_matches('"').to_string(),
            xml_escape(secret),
        ];
        forms.extend(percent_forms(secret));
        forms.extend(base64_forms(secret.as_bytes()));
        for form in forms {
            if !form.is_empty() && !self.needles.contains(&form) {
                self.needles.push(form);
            }
        }
        self.needles
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }

    /// Adds the credentials of a URL (`user:pass@`): the password, the
    /// `user:pass` pair and its Basic-auth base64.
    pub fn add_url_credentials(&mut self, url: &str) {
        let Some((user, password)) = url_credentials(url) else {
            return;
        };
        let user = percent_decode(user);
        let password = percent_decode(password);
        self.add(&password);
        let pair = format!("{user}:{password}");
        self.add(&base64(pair.as_bytes()));
        self.add(&pair);
    }

    /// Adds the values of secret-named variables (`*_TOKEN`, `*_KEY`,
    /// `*_SECRET`, `*_PASSWORD`…) among `vars`: a restart command may print
    /// them. Only values of 8 characters or more count, so that a flag such
    /// as `USE_TOKEN=true` does not redact every `true`.
    pub fn add_secret_variables<I, K, V>(&mut self, vars: I)
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        for (name, value) in vars {
            let value = value.as_ref();
            if is_secret_name(name.as_ref()) && value.trim().chars().count() >= 8 {
                self.add(value);
            }
        }
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every known secret replaced by `[redacted]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.needles.iter().any(|n| text.contains(n.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), REDACTED);
            }
        }
        Cow::Owned(out)
    }

    /// Bytes of any kind (a log, a database page): text is redacted as
    /// text; bytes that are not UTF-8 keep their length, each secret
    /// overwritten with `*`, so the file's structure survives. `None` when
    /// nothing was found.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return match self.redact(text) {
                Cow::Borrowed(_) => None,
                Cow::Owned(text) => Some(text.into_bytes()),
            };
        }
        let mut out = bytes.to_vec();
        let mut found = false;
        for needle in &self.needles {
            let needle = needle.as_bytes();
            let mut at = 0;
            while let Some(pos) = find(&out[at..], needle) {
                let start = at + pos;
                out[start..start + needle.len()].fill(b'*');
                at = start + needle.len();
                found = true;
            }
        }
        found.then_some(out)
    }

    /// Redacts the string values of a JSON value, in place. Keys and the
    /// structure are never touched: a secret that happens to equal a field
    /// name (`SA_TOKEN=verdict`) must not rename the field.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

/// Whether a header or variable name says its value is a secret:
/// `Authorization`, `Cookie`, `X-Api-Key`, `DEPLOY_TOKEN`, `DB_PASSWORD`…
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('-', "_");
    const WORDS: [&str; 8] = [
        "token",
        "secret",
        "password",
        "passwd",
        "authorization",
        "cookie",
        "credential",
        "api_key",
    ];
    WORDS.iter().any(|w| name.contains(w))
        || name == "key"
        || name.ends_with("_key")
        || name.starts_with("key_")
        || name.ends_with("apikey")
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// Characters percent-encoders leave as they are beyond the unreserved
/// ones: none (strict), `/` (Python's `quote`, many path encoders),
/// `encodeURIComponent`'s, and a URL path's or query's (`/`, `:`, `@`, the
/// sub-delimiters), which is what a token put into a URL by `encodeURI`
/// looks like.
const KEPT_AS_IS: [&[u8]; 4] = [b"", b"/", b"!*'()", b"!$&'()*+,;=:@/?"];

/// The percent-encoded forms of `text`: each set of [`KEPT_AS_IS`], with
/// upper- and lower-case hex digits.
fn percent_forms(text: &str) -> Vec<String> {
    let mut forms = Vec::new();
    for kept in KEPT_AS_IS {
        for lower in [false, true] {
            let form = percent_encode(text, kept, lower);
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
    }
    forms
}

fn percent_encode(text: &str, kept: &[u8], lower: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'_' | b'.' | b'~')
            || kept.contains(&byte)
        {
            out.push(byte as char);
        } else if lower {
            out.push_str(&format!("%{byte:02x}"));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 with padding, as Basic authentication sends `user:pass`.
/// The shortest base64 run redacted on its own: shorter runs turn up by
/// chance in any base64 text.
const MIN_BASE64_CHARS: usize = 8;

/// `secret` as base64 text holds it: its own encoding (with padding), and
/// for each offset 0, 1, 2 it may start at inside longer bytes, the
/// characters that only its bytes decide (whole groups of three); each in
/// the standard and the URL-safe alphabet.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    let mut forms = vec![base64(secret)];
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(secret);
        let encoded = base64(&padded);
        // Groups wholly inside the secret: the first one that starts at or
        // after the offset, to the last that ends within it.
        let first = offset.div_ceil(3);
        let last = (offset + secret.len()) / 3;
        if last > first {
            forms.push(encoded[first * 4..last * 4].to_string());
        }
    }
    let url_safe: Vec<String> = forms
        .iter()
        .map(|f| {
            f.replace('+', "-")
                .replace('/', "_")
                .trim_end_matches('=')
                .to_string()
        })
        .collect();
    forms.extend(url_safe);
    forms.retain(|f| f.len() >= MIN_BASE64_CHARS);
    forms
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
