use super::*;
use crate::secret::Secret;
use crate::trace::{read_trace, TraceLevel, TRACE_FILE};

fn trace_in(dir: &std::path::Path, token: Option<Secret>) -> Trace {
    Trace::create(dir, TraceLevel::Summary, token, None).unwrap()
}

/// The epoch milliseconds `ms` after the trace began.
fn at(trace: &Trace, ms: f64) -> f64 {
    // t_of_epoch_ms's inverse, from a time after the trace began (t > 0).
    let probe = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
        + 1.0e6;
    probe - trace.t_of_epoch_ms(probe) + ms
}

fn wire(origin: &str, records: Vec<Value>, dropped: u64) -> Value {
    json!({"origin": origin, "records": records, "dropped": dropped})
}

#[test]
fn records_land_at_their_own_time_once_with_the_rust_clients_fields() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_in(dir.path(), None);
    let mut cursor = WireCursor::default();
    assert_eq!(cursor.ack(), Value::Null);
    let post = json!({"seq": 1, "kind": "http", "method": "POST", "url": "/v1/acp/sdk-mock-1",
        "purpose": "acp", "start": at(&trace, 100.0), "headersAt": at(&trace, 108.0),
        "at": at(&trace, 110.0), "sent": 84, "received": 230, "status": 400,
        "problemType": "urn:sandbox-agent:error:invalid_request", "detail": "missing agent"});
    let sse = json!({"seq": 2, "kind": "sse", "at": at(&trace, 120.0), "event": "message",
        "bytes": 92, "id": "7", "rpcId": 3, "method": "session/update"});
    let end = json!({"seq": 3, "kind": "stream_end", "at": at(&trace, 130.0),
        "url": "/v1/acp/sdk-mock-1", "events": 1, "received": 92,
        "error": {"kind": "reset", "detail": "TypeError: terminated"}});
    let store = json!({"seq": 4, "kind": "store", "start": at(&trace, 140.0),
        "at": at(&trace, 145.0), "call": "insertEvent", "driver": "actor-state", "ok": true});
    let first = wire("p1", vec![post.clone(), sse.clone()], 0);
    cursor.ingest(&trace, &first);
    assert_eq!(cursor.ack(), json!({"origin": "p1", "seq": 2}));
    // An answer the harness never read is repeated in the next: kept once.
    cursor.ingest(&trace, &wire("p1", vec![post, sse, end, store], 0));
    assert_eq!(cursor.ack(), json!({"origin": "p1", "seq": 4}));
    let seen = trace.snapshot();
    drop(trace);
    let events = read_trace(&dir.path().join(TRACE_FILE)).unwrap();
    let of = |ev: &str| -> Vec<&Value> { events.iter().filter(|e| e["ev"] == ev).collect() };
    let http = of("http");
    assert_eq!(http.len(), 1, "{events:?}");
    let http = http[0];
    assert!((http["t"].as_f64().unwrap() - 110.0).abs() < 0.2, "{http}");
    assert!((http["ms"].as_f64().unwrap() - 10.0).abs() < 0.2, "{http}");
    assert!(
        (http["headersMs"].as_f64().unwrap() - 8.0).abs() < 0.2,
        "{http}"
    );
    assert_eq!(
        (&http["method"], &http["status"], &http["problemType"]),
        (&json!("POST"), &json!(400), &json!("invalid_request"))
    );
    assert_eq!(
        (&http["sent"], &http["received"]),
        (&json!(84), &json!(230))
    );
    assert_eq!(of("sse")[0]["rpcId"], 3);
    assert_eq!(of("sse")[0]["id"], "7");
    assert_eq!(of("stream_end")[0]["error"], "reset");
    let store = of("store")[0];
    assert!((store["ms"].as_f64().unwrap() - 5.0).abs() < 0.2, "{store}");
    // Counted on their channels, as the Rust client's exchanges are.
    let post = seen
        .channel("POST /v1/acp/sdk-mock-1")
        .expect("POST channel");
    assert_eq!((post.attempts, post.failures), (1, 1));
    assert_eq!(
        post.last_failure.as_ref().unwrap().to_string(),
        "HTTP 400 invalid_request \"missing agent\""
    );
    let stream = seen
        .channel("GET /v1/acp/sdk-mock-1 (event stream)")
        .expect("stream channel");
    assert!(stream.failing);
}

#[test]
fn a_new_log_after_a_runner_restart_starts_its_own_count_and_losses_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_in(dir.path(), None);
    let mut cursor = WireCursor::default();
    let health = |seq: u64, ms: f64| {
        json!({"seq": seq, "kind": "http", "method": "GET", "url": "/v1/health",
            "purpose": "health", "start": at(&trace, ms), "at": at(&trace, ms + 1.0),
            "status": 200, "sent": 0, "received": 15})
    };
    cursor.ingest(
        &trace,
        &wire("old", vec![health(1, 10.0), health(2, 20.0)], 0),
    );
    cursor.ingest(&trace, &wire("new", vec![health(1, 30.0)], 3));
    assert_eq!(cursor.ack(), json!({"origin": "new", "seq": 1}));
    // A late answer from the old process adds nothing it already gave.
    cursor.ingest(&trace, &wire("old", vec![health(2, 20.0)], 0));
    drop(trace);
    let events = read_trace(&dir.path().join(TRACE_FILE)).unwrap();
    assert_eq!(events.iter().filter(|e| e["ev"] == "http").count(), 3);
    let lost: Vec<&Value> = events
        .iter()
        .filter(|e| e["ev"] == "wire_dropped")
        .collect();
    // The new log is said once (the old one's late answer is no new log),
    // and its own count of records it could not keep.
    assert_eq!(lost.len(), 2, "{lost:?}");
    assert_eq!(
        (lost[0]["restarted"].as_bool(), lost[0]["dropped"].as_u64()),
        (Some(true), Some(0))
    );
    assert_eq!(lost[1]["dropped"], 3);
}

#[test]
fn access_tokens_and_the_known_token_never_reach_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "sk-hosted-wire-secret-1234567890";
    let trace = trace_in(dir.path(), Some(Secret::new(secret.to_string())));
    let mut cursor = WireCursor::default();
    // Even if the actor failed to redact: the query value and the token are scrubbed here.
    let record = json!({"seq": 1, "kind": "http", "method": "GET",
        "url": format!("/v1/acp/s?access_token={secret}&x=1"), "purpose": "stream",
        "start": at(&trace, 1.0), "at": at(&trace, 2.0), "status": 401, "sent": 0,
        "received": 10, "detail": format!("bad token {secret}")});
    cursor.ingest(&trace, &wire("p", vec![record], 0));
    drop(trace);
    let text = std::fs::read_to_string(dir.path().join(TRACE_FILE)).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(text.contains("access_token=[redacted]&x=1"), "{text}");
}

#[test]
fn an_exchange_from_an_earlier_phase_is_not_counted_in_this_one() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_in(dir.path(), None);
    let mut cursor = WireCursor::default();
    let start = at(&trace, 0.0);
    std::thread::sleep(std::time::Duration::from_millis(5));
    trace.phase_start("later", "prompt");
    let failed = json!({"seq": 1, "kind": "http", "method": "POST", "url": "/v1/acp/s",
        "purpose": "acp", "start": start, "at": start + 1.0, "status": 400, "sent": 1,
        "received": 1});
    cursor.ingest(&trace, &wire("p", vec![failed], 0));
    assert!(trace.snapshot().channels.is_empty());
}
