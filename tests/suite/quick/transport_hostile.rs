//! The transport against responses no real server would send: a tiny
//! in-test HTTP server on loopback feeds malformed, truncated and oversized
//! replies. Each must end in a typed error, never a panic or a hang.

use crate::support::fake_http::{reply, sse, FakeServer, Reply, Request};
use continuity::acp::{AcpError, ConnectFailure, Direction, Observed, Transport, TransportConfig};
use continuity::secret::Secret;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

fn transport(base_url: &str) -> (Transport, mpsc::UnboundedReceiver<Observed>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let config = TransportConfig {
        base_url: base_url.to_string(),
        server_id: "srv-1".into(),
        bootstrap_agent: Some("mock".into()),
        token: Some(Secret::new("sekrit-token")),
        headers: Default::default(),
        delete_timeout: Duration::from_millis(500),
        headers_timeout: None,
    };
    let http = continuity::http::client_builder().build().unwrap();
    (Transport::new(config, http, tx), rx)
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .expect("must not hang")
}

fn ok_response(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}}).to_string()
}

fn request_id(request: &Request) -> i64 {
    serde_json::from_str::<Value>(&request.body).unwrap()["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn a_200_body_that_is_not_json_is_malformed_and_closes_the_transport() {
    let server = FakeServer::start(|r| match r.method.as_str() {
        "POST" => reply("200 OK", "application/json", "{not json"),
        _ => sse("", Duration::from_secs(5)),
    });
    let (t, _rx) = transport(&server.base_url());
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(e, AcpError::Malformed { .. }), "{e:?}");
    let later = within(t.request("session/new", json!({})))
        .await
        .unwrap_err();
    assert!(
        later.to_string().starts_with("ACP client is closed"),
        "{later}"
    );
    assert!(
        matches!(later, AcpError::Closed { cause: Some(ref c) } if matches!(**c, AcpError::Malformed { .. }))
    );
}

#[tokio::test]
async fn non_object_envelopes_and_bad_error_members_are_malformed() {
    for body in [
        "[1,2,3]",
        r#"{"jsonrpc":"2.0","id":0,"error":"weird"}"#,
        r#"{"jsonrpc":"2.0","id":0}"#,
    ] {
        let body = body.to_string();
        let server = FakeServer::start(move |r| match r.method.as_str() {
            "POST" => reply("200 OK", "application/json", &body),
            _ => sse("", Duration::from_secs(5)),
        });
        let (t, _rx) = transport(&server.base_url());
        let e = within(t.request("initialize", json!({}))).await;
        // `{"id":0}` alone is not a response: nothing answers, so only the deadline ends it.
        match e {
            Err(AcpError::Malformed { .. }) => {}
            other => panic!("expected malformed, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn http_errors_keep_status_and_problem_type() {
    let server = FakeServer::start(|_| {
        reply(
            "503 Service Unavailable",
            "application/problem+json",
            r#"{"type":"urn:sandbox-agent:error:stream_error","title":"Stream Error","status":503,"detail":"agent gone"}"#,
        )
    });
    let (t, _rx) = transport(&server.base_url());
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    match e {
        AcpError::Http {
            status: 503,
            problem: Some(p),
        } => {
            assert_eq!(p.short_type(), Some("stream_error"));
            assert_eq!(p.detail.as_deref(), Some("agent gone"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_json_rpc_error_keeps_code_and_message() {
    let server = FakeServer::start(|r| {
        match r.method.as_str() {
        "POST" => reply(
            "200 OK",
            "application/json",
            &json!({"jsonrpc": "2.0", "id": request_id(r), "error": {"code": -32601, "message": "nope"}}).to_string(),
        ),
        _ => sse("", Duration::from_secs(5)),
    }
    });
    let (t, _rx) = transport(&server.base_url());
    let e = within(t.request("x/unknown", json!({}))).await.unwrap_err();
    assert!(
        matches!(e, AcpError::Rpc { code: -32601, ref message, .. } if message == "nope"),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_body_cut_short_is_a_closed_stream() {
    let server = FakeServer::start(|_| {
        Reply {
        bytes: b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"jsonrpc\"".to_vec(),
        hold: Duration::ZERO,
    }
    });
    let (t, _rx) = transport(&server.base_url());
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(e, AcpError::StreamClosed { .. }), "{e:?}");
}

#[tokio::test]
async fn nothing_listening_is_connection_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (t, _rx) = transport(&format!("http://127.0.0.1:{port}"));
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            AcpError::Connect {
                kind: ConnectFailure::Refused,
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn garbage_on_the_stream_fails_the_waiting_request() {
    let server = FakeServer::start(|r| match r.method.as_str() {
        "POST" => reply("202 Accepted", "application/json", ""),
        _ => sse("event: message\ndata: {garbage\n\n", Duration::from_secs(5)),
    });
    let (t, _rx) = transport(&server.base_url());
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(e, AcpError::Malformed { .. }), "{e:?}");
}

#[tokio::test]
async fn an_endless_stream_event_is_cut_off_not_buffered_forever() {
    let server = FakeServer::start(|r| match r.method.as_str() {
        "POST" => reply("202 Accepted", "application/json", ""),
        _ => {
            let mut huge = String::from("data: ");
            huge.push_str(&"x".repeat(17 * 1024 * 1024));
            sse(&huge, Duration::from_secs(5))
        }
    });
    let (t, _rx) = transport(&server.base_url());
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(e, AcpError::Malformed { ref detail } if detail.contains("over")),
        "{e:?}"
    );
}

#[tokio::test]
async fn responses_on_both_paths_are_delivered_once_and_the_protocol_details_match_the_sdk() {
    let server = FakeServer::start(|r| match r.method.as_str() {
        "POST" => reply("200 OK", "application/json", &ok_response(request_id(r))),
        "GET" => {
            let events = format!(
                "event: message\nid: 7\ndata: {}\n\nevent: message\nid: 8\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "a"}}),
                ok_response(0)
            );
            sse(&events, Duration::from_millis(50))
        }
        _ => reply("204 No Content", "text/plain", ""),
    });
    let (t, mut rx) = transport(&server.base_url());
    let first = within(t.request("initialize", json!({}))).await.unwrap();
    assert_eq!(first.result, json!({"ok": true}));
    within(t.settle(&first.id, Duration::from_secs(2))).await;
    within(t.request("session/new", json!({}))).await.unwrap();
    // Let the stream reconnect once (it closes after 50 ms) so Last-Event-ID is sent.
    tokio::time::sleep(Duration::from_millis(400)).await;
    t.close().await;

    let mut inbound_responses = 0;
    while let Ok(o) = rx.try_recv() {
        if o.direction == Direction::Inbound
            && o.envelope.get("result").is_some()
            && o.envelope["id"] == 0
        {
            inbound_responses += 1;
        }
    }
    assert_eq!(
        inbound_responses, 1,
        "response id 0 arrived twice but must be observed once"
    );

    let requests = server.requests();
    let posts: Vec<&Request> = requests.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts[0].target, "/v1/acp/srv-1?agent=mock", "{requests:#?}");
    assert_eq!(posts[1].target, "/v1/acp/srv-1");
    assert!(requests
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer sekrit-token")));
    let gets: Vec<&Request> = requests.iter().filter(|r| r.method == "GET").collect();
    assert_eq!(gets[0].header("accept"), Some("text/event-stream"));
    assert!(
        gets.iter()
            .skip(1)
            .any(|g| g.header("last-event-id") == Some("8")),
        "{gets:?}"
    );
    assert!(requests
        .iter()
        .any(|r| r.method == "DELETE" && r.target == "/v1/acp/srv-1"));
}

#[tokio::test]
async fn close_is_bounded_when_delete_never_answers() {
    let server = FakeServer::start(|r| match r.method.as_str() {
        "POST" => reply("200 OK", "application/json", &ok_response(request_id(r))),
        "DELETE" => Reply {
            bytes: Vec::new(),
            hold: Duration::from_secs(30),
        },
        _ => sse("", Duration::from_secs(30)),
    });
    let (t, _rx) = transport(&server.base_url());
    within(t.request("initialize", json!({}))).await.unwrap();
    let started = std::time::Instant::now();
    t.close().await;
    // The DELETE is held 30 s: closing does not wait for it (a bound
    // far from both, so load does not move the answer; it was 1.5 s).
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "ACP client is closed");
}

#[test]
fn the_token_never_appears_in_debug_output() {
    let config = TransportConfig {
        base_url: "http://user:pass@127.0.0.1:1".into(),
        server_id: "s".into(),
        bootstrap_agent: None,
        token: Some(Secret::new("sekrit-token")),
        headers: Default::default(),
        delete_timeout: Duration::from_secs(1),
        headers_timeout: None,
    };
    let text = format!("{config:?}");
    assert!(
        !text.contains("sekrit-token") && !text.contains("pass"),
        "{text}"
    );
}

#[tokio::test]
async fn https_urls_speak_tls() {
    // A plain-HTTP listener: a client without TLS would send an HTTP request
    // and get "200 OK"; a TLS client fails its handshake on these bytes.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let (t, _rx) = transport(&format!("https://127.0.0.1:{port}"));
    let e = within(t.request("initialize", json!({})))
        .await
        .unwrap_err();
    let text = format!("{e:?}").to_lowercase();
    assert!(
        text.contains("tls") || text.contains("corrupt") || text.contains("invalidcontenttype"),
        "{e:?}"
    );
}

/// Issue 15: a stream that resumes with a `Last-Event-ID` the server does
/// not know is refused; the pending prompt is then bounded by its caller's
/// deadline (never a hang), the stats name the refused resume, and close
/// still ends within its bound.
#[tokio::test]
async fn a_resume_with_an_unknown_last_event_id_is_named_and_bounded() {
    let server = FakeServer::start(|r| {
        match (r.method.as_str(), r.header("last-event-id")) {
        ("POST", _) => reply("202 Accepted", "application/json", ""),
        ("GET", None) => sse(
            "id: 5\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n\n",
            Duration::from_millis(50),
        ),
        ("GET", Some(_)) => reply(
            "400 Bad Request",
            "application/problem+json",
            r#"{"type":"urn:sandbox-agent:error:invalid_request","status":400,"detail":"unknown Last-Event-ID"}"#,
        ),
        _ => reply("200 OK", "application/json", ""),
    }
    });
    let (t, _rx) = transport(&server.base_url());
    let waited = tokio::time::timeout(
        Duration::from_millis(1500),
        t.request("session/prompt", json!({})),
    )
    .await;
    assert!(waited.is_err(), "nothing answers the prompt: {waited:?}");
    let stats = t.stats();
    assert_eq!(
        (
            stats.streams_opened,
            stats.streams_resumed,
            stats.events_read
        ),
        (1, 0, 1),
        "{stats:?}"
    );
    assert_eq!(stats.stream_ends.first().map(String::as_str), Some("ended"));
    let refused = stats.get_failures.last().expect("the resume was refused");
    assert!(
        refused.starts_with("resuming from Last-Event-ID 5: ") && refused.contains("400"),
        "{refused}"
    );
    assert!(server
        .requests()
        .iter()
        .any(|g| g.method == "GET" && g.header("last-event-id") == Some("5")));
    within(t.close()).await;
}
