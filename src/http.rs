//! The one way continuity builds an HTTP client: no proxy from the
//! environment (a proxy between the harness and the stack would itself be a
//! component that restarts), and TLS through rustls with the `ring` provider
//! and the platform's certificate store, for deployments behind HTTPS.

use std::sync::Once;

static TLS_PROVIDER: Once = Once::new();

/// A client builder with continuity's defaults; callers add timeouts.
pub fn client_builder() -> reqwest::ClientBuilder {
    TLS_PROVIDER.call_once(|| {
        // Fails only if another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder().no_proxy()
}
