//! The browser wire's tests (`wire.rs`): which of the page's requests are sandbox-agent's exchanges.

use super::*;

#[test]
fn only_sandbox_agents_paths_are_its_exchanges() {
    let base = "http://127.0.0.1:5";
    assert_eq!(purpose_of("GET", &format!("{base}/bundle.js")), None);
    assert_eq!(
        purpose_of("GET", &format!("{base}/sandbox/v1/health")),
        Some(Purpose::Health)
    );
    assert_eq!(
        purpose_of("GET", &format!("{base}/v1/health")),
        Some(Purpose::Health)
    );
    assert_eq!(
        purpose_of("GET", &format!("{base}/v1/acp/s1")),
        Some(Purpose::Stream)
    );
    assert_eq!(
        purpose_of("POST", &format!("{base}/v1/acp/s1")),
        Some(Purpose::AcpPost)
    );
    assert_eq!(
        purpose_of("DELETE", &format!("{base}/v1/acp/s1")),
        Some(Purpose::Delete)
    );
    assert_eq!(
        error_kind("net::ERR_CONNECTION_REFUSED", false),
        ErrorKind::Refused
    );
}
