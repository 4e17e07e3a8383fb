//! How a URL appears in a trace: its path (for channel names) or its path
//! and query, with any `access_token` value redacted — never scheme, host
//! or user info.

/// The path of a URL (no query), or of a path and query (the hosted SDK's
/// records carry no host), or the text itself.
pub(super) fn path_of(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| u.path().to_string())
        .unwrap_or_else(|_| url.split('?').next().unwrap_or(url).to_string())
}

pub(super) fn path_and_query(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        },
        Err(_) => url.to_string(),
    }
}

/// Replaces the value of any `access_token` query parameter with `[redacted]`.
pub fn strip_access_token(url: &str) -> String {
    let Some((head, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("access_token") => format!("{k}=[redacted]"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{head}?{}", parts.join("&"))
}
