//! The one way continuity builds an HTTP client: no proxy from the
//! environment (a proxy between the harness and the stack would itself be a
//! component that restarts), and TLS through rustls with the `ring` provider
//! and the platform's certificate store, for deployments behind HTTPS; and
//! the one percent-encoding of a value put into a URL.

use std::sync::Once;

static TLS_PROVIDER: Once = Once::new();

/// A client builder with continuity's defaults; callers add timeouts.
/// How long the SDK clients' HTTP waits for a connection: their only time
/// limit (each request has its own deadline above it).
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub fn client_builder() -> reqwest::ClientBuilder {
    TLS_PROVIDER.call_once(|| {
        // Fails only if another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder().no_proxy()
}

/// `text` percent-encoded for a URL query value or path segment: every byte
/// but RFC 3986's unreserved ones (an actor key may hold anything).
pub fn encode_component(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_unreserved_bytes_stay_as_they_are() {
        assert_eq!(super::encode_component("run-1_a.b~"), "run-1_a.b~");
        assert_eq!(
            super::encode_component("a b/c?d&é"),
            "a%20b%2Fc%3Fd%26%C3%A9"
        );
    }
}
