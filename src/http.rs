//! The one way continuity builds an HTTP client: no proxy from the
//! environment (a proxy between the harness and the stack would itself be a
//! component that restarts), and TLS through rustls with the `ring` provider
//! and the platform's certificate store, for deployments behind HTTPS; and
//! the one percent-encoding of a value put into a URL.

use std::sync::{Arc, Once, OnceLock};

static TLS_PROVIDER: Once = Once::new();
static TLS_CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();

/// A client builder with continuity's defaults; callers add timeouts.
/// How long the SDK clients' HTTP waits for a connection: their only time
/// limit (each request has its own deadline above it).
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub fn client_builder() -> reqwest::ClientBuilder {
    TLS_PROVIDER.call_once(|| {
        // Fails only if another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let builder = reqwest::Client::builder().no_proxy();
    match TLS_CONFIG.get_or_init(tls_config) {
        Some(config) => builder.tls_backend_preconfigured(config.clone()),
        // reqwest builds its own (and says why it cannot).
        None => builder,
    }
}

/// The TLS settings reqwest would make, made once: its platform verifier
/// reads the system's certificate store, tens of milliseconds that every
/// client the harness builds (each `connect` step's) would spend again.
fn tls_config() -> Option<rustls::ClientConfig> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider)).ok()?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    // HTTP/1.1 only, as reqwest's own config without its `http2` feature.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Some(config)
}

/// `text` percent-encoded for a URL query value or path segment: every byte
/// but RFC 3986's unreserved ones (an actor key may hold anything).
pub(crate) fn encode_component(text: &str) -> String {
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
    fn the_tls_settings_are_made_once_and_clients_still_build() {
        for _ in 0..3 {
            super::client_builder().build().unwrap();
        }
        assert!(super::TLS_CONFIG.get().is_some_and(Option::is_some));
    }

    #[test]
    fn only_unreserved_bytes_stay_as_they_are() {
        assert_eq!(super::encode_component("run-1_a.b~"), "run-1_a.b~");
        assert_eq!(
            super::encode_component("a b/c?d&é"),
            "a%20b%2Fc%3Fd%26%C3%A9"
        );
    }
}
