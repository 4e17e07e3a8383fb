//! A request whose answer should come on the event stream, while every
//! stream GET fails with 502 (a gateway in trouble): the timeout must name
//! the response it waited for and the stream's failure, and count the GETs.
//! A tiny in-test server, because no real sandbox-agent answers this way.

use crate::support::fake_http::{reply, FakeServer, Reply};
use continuity::acp::{Transport, TransportConfig};
use continuity::trace::Trace;
use serde_json::json;
use std::time::Duration;

/// POST → 202 (the answer "comes on the stream"); GET → 502 with a problem.
fn gateway_with_a_broken_stream() -> FakeServer {
    FakeServer::start(|request| match request.method.as_str() {
        "POST" => Reply {
            bytes: b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_vec(),
            hold: Duration::ZERO,
        },
        _ => reply(
            "502 Bad Gateway",
            "application/problem+json",
            r#"{"type":"urn:gateway:error:bad_gateway","status":502,"detail":"upstream gone"}"#,
        ),
    })
}

#[tokio::test]
async fn a_timeout_names_the_response_it_waited_for_and_the_failing_stream() {
    let gateway = gateway_with_a_broken_stream();
    let trace = Trace::detached();
    let config = TransportConfig {
        base_url: gateway.base_url(),
        server_id: "sdk-mock-1".into(),
        bootstrap_agent: Some("mock".into()),
        token: None,
        headers: Default::default(),
        delete_timeout: Duration::from_millis(300),
        headers_timeout: None,
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let http = continuity::http::client_builder().build().unwrap();
    let transport = Transport::traced(config, http, tx, trace.clone());
    trace.phase_start("prompt", "prompt");
    // Two earlier requests that also went unanswered: each write starts a stream GET.
    for _ in 0..2 {
        let _ = tokio::time::timeout(
            Duration::from_millis(300),
            transport.request("session/prompt", json!({})),
        )
        .await;
    }
    // As the executor does: read the waits while the request is still open.
    let request = transport.request("session/prompt", json!({"prompt": []}));
    tokio::pin!(request);
    let seen = tokio::select! {
        done = &mut request => panic!("answered: {done:?}"),
        _ = tokio::time::sleep(Duration::from_millis(400)) => trace.snapshot(),
    };
    let sig = continuity::diagnose::timeout_seen(400, "fallback".into(), &seen, None);
    assert_eq!(
        sig.message,
        r#"timed out after 400 ms waiting for a response to session/prompt; GET /v1/acp/sdk-mock-1 (event stream): HTTP 502 bad_gateway "upstream gone""#
    );
    assert_eq!(
        sig.pending.as_deref(),
        Some("a response to session/prompt (id 2)")
    );
    let observed = sig.observed.unwrap();
    assert!(
        observed.starts_with("GET /v1/acp/sdk-mock-1 (event stream): 3 attempts, 3 failed"),
        "{observed}"
    );
    let cause = sig.cause.unwrap();
    assert_eq!(
        (cause.http_status, cause.problem_type.as_deref()),
        (Some(502), Some("bad_gateway"))
    );
    transport.close().await;
}
