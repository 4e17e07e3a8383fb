//! No false hangs, and a true one: continuity's client against a tiny
//! stand-in of sandbox-agent (health, `initialize`, `session/new`, a
//! prompt answered on the event stream), because the timing is the point
//! and no real server keeps it on cue. With a 1 s hang grace:
//!
//! - the prompt's answer comes on the open stream after 3 s of silence:
//!   the stream is in flight, so the phase is never cut;
//! - the prompt's POST is held silent for 3 s, then answered (a long
//!   silent turn, or a paused server that keeps its sockets open): a
//!   request awaiting its answer is in flight, never cut;
//! - the health check fails until the client's health wait has tried
//!   again after 0.5, 1, 2 and 4 s: a client still trying is never cut;
//! - the stream GET fails and the prompt's POST was only accepted (202):
//!   nothing is in flight that could answer, so the phase is `hung`
//!   within the grace, long before its deadline.

use crate::support;
use crate::support::fake_http::read_request;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// How the stand-in behaves.
#[derive(Clone, Copy)]
struct Standin {
    /// `/v1/health` answers 503 this many times after its first answer
    /// (the run's own check that the server is there, before any cell).
    health_failures: u32,
    /// The prompt's answer comes on the stream this long after the prompt;
    /// `None`: every stream GET fails with 500.
    answer_after: Option<Duration>,
    /// The prompt's POST is held silent this long, then answered in its body.
    hold_post: Option<Duration>,
}

/// The prompt the stream owes an answer to.
#[derive(Default)]
struct Owed {
    prompt: Mutex<Option<Value>>,
    posted: Notify,
}

fn start(standin: Standin) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            let owed = Arc::new(Owed::default());
            let health = Arc::new(AtomicU32::new(0));
            while let Ok((socket, _)) = listener.accept().await {
                let (owed, health) = (Arc::clone(&owed), Arc::clone(&health));
                tokio::spawn(serve(socket, standin, owed, health));
            }
        });
    });
    base
}

fn reply(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn serve(mut socket: TcpStream, standin: Standin, owed: Arc<Owed>, health: Arc<AtomicU32>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let path = request
        .target
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    let bytes = match request.method.as_str() {
        "GET" if path.ends_with("/v1/health") => match health.fetch_add(1, Ordering::SeqCst) {
            n if (1..=standin.health_failures).contains(&n) => {
                reply("503 Service Unavailable", r#"{"status":"starting"}"#)
            }
            _ => reply("200 OK", r#"{"status":"ok"}"#),
        },
        "GET" => return stream(socket, standin, owed).await,
        "POST" => {
            let envelope: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
            let result = match envelope["method"].as_str() {
                Some("initialize") => {
                    json!({"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []})
                }
                Some("session/new") => json!({"sessionId": "standin-session"}),
                Some("session/prompt") if standin.hold_post.is_some() => {
                    tokio::time::sleep(standin.hold_post.unwrap_or_default()).await;
                    json!({"stopReason": "end_turn"})
                }
                Some("session/prompt") => {
                    *owed.prompt.lock().unwrap() = Some(envelope["id"].clone());
                    owed.posted.notify_waiters();
                    // Accepted: the answer is the stream's to give.
                    let _ = socket.write_all(&reply("202 Accepted", "")).await;
                    return;
                }
                _ => {
                    let _ = socket.write_all(&reply("202 Accepted", "")).await;
                    return;
                }
            };
            let answer = json!({"jsonrpc": "2.0", "id": envelope["id"], "result": result});
            reply("200 OK", &answer.to_string())
        }
        _ => reply("200 OK", ""),
    };
    let _ = socket.write_all(&bytes).await;
}

/// The event stream: the prompt's answer after `answer_after` of silence,
/// then open until the client goes; or a 500 at once.
async fn stream(mut socket: TcpStream, standin: Standin, owed: Arc<Owed>) {
    let Some(after) = standin.answer_after else {
        let problem =
            r#"{"type":"urn:standin:error:broken","status":500,"detail":"no stream here"}"#;
        let _ = socket
            .write_all(&reply("500 Internal Server Error", problem))
            .await;
        return;
    };
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let id = loop {
        let posted = owed.posted.notified();
        if let Some(id) = owed.prompt.lock().unwrap().take() {
            break id;
        }
        posted.await;
    };
    tokio::time::sleep(after).await;
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
    let event = format!("id: 1\nevent: message\ndata: {answer}\n\n");
    if socket.write_all(event.as_bytes()).await.is_err() {
        return;
    }
    // Open until the client closes it.
    let mut sink = [0u8; 256];
    let _ = tokio::time::timeout(Duration::from_secs(30), socket.read(&mut sink)).await;
}

const SCENARIO: &str = "name = \"standin\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n[[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"c\"\nsession = \"s\"\n[[phase]]\nname = \"prompt\"\nstep = \"prompt\"\nclient = \"c\"\nsession = \"s\"\ntext = \"hi\"\n[[cleanup]]\nstep = \"dispose\"\nclient = \"c\"\n";

/// The scenario against the stand-in, with a 1 s hang grace and a 12 s
/// deadline per phase: the cell's phases by name.
fn run(standin: Standin) -> Value {
    let base = start(standin);
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    std::fs::write(scenarios.join("standin.toml"), SCENARIO).unwrap();
    let out = dir.path().join("out");
    let ran = support::continuity_with(
        &[
            "run",
            "--base-url",
            &base,
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--timeout-ms",
            "12000",
            "--hang-grace-ms",
            "1000",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("SA_RESTART_CMD", "true"), ("SA_RESTART_WAIT_SEC", "0")],
    );
    let report = support::report(&out);
    let cell = report["cells"][0].clone();
    assert!(
        cell["phases"].is_array(),
        "{}\n{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    cell
}

#[test]
fn an_answer_after_3_s_of_silence_on_an_open_stream_is_not_cut() {
    let cell = run(Standin {
        health_failures: 0,
        answer_after: Some(Duration::from_secs(3)),
        hold_post: None,
    });
    let prompt = support::phase(&cell, "prompt");
    assert_eq!(prompt["outcome"], "ok", "{prompt}");
    assert!(prompt["durationMs"].as_u64().unwrap() >= 3000, "{prompt}");
    assert_eq!(cell["verdict"], "pass", "{cell}");
}

#[test]
fn a_post_held_silent_for_3_s_then_answered_is_not_cut() {
    // Its stream fails at once: only the POST itself is in flight.
    let cell = run(Standin {
        health_failures: 0,
        answer_after: None,
        hold_post: Some(Duration::from_secs(3)),
    });
    let prompt = support::phase(&cell, "prompt");
    assert_eq!(prompt["outcome"], "ok", "{prompt}");
    assert!(prompt["durationMs"].as_u64().unwrap() >= 3000, "{prompt}");
}

#[test]
fn a_client_whose_health_wait_is_still_retrying_is_not_cut() {
    // Attempts at 0, 0.5, 1.5, 3.5 and 7.5 s: gaps of 1, 2 and 4 s, beyond the grace.
    let cell = run(Standin {
        health_failures: 4,
        answer_after: Some(Duration::from_millis(100)),
        hold_post: None,
    });
    let create = support::phase(&cell, "create");
    assert_eq!(create["outcome"], "ok", "{create}");
    assert!(create["durationMs"].as_u64().unwrap() >= 4000, "{create}");
    assert_eq!(cell["verdict"], "pass", "{cell}");
}

#[test]
fn a_prompt_nothing_can_answer_any_more_is_hung_within_the_grace() {
    let cell = run(Standin {
        health_failures: 0,
        answer_after: None,
        hold_post: None,
    });
    let prompt = support::phase(&cell, "prompt");
    assert_eq!(prompt["outcome"], "fail", "{prompt}");
    let sig = &prompt["signature"];
    assert_eq!(sig["kind"], "hung", "{sig}");
    let message = sig["message"].as_str().unwrap();
    assert!(
        message.contains("the server answered HTTP 500 broken to GET /v1/acp/")
            && message.ends_with(
                "then the rust client made no request, held no stream and scheduled no retry for 1.0 s: its prompt never settled"
            ),
        "{message}"
    );
    // The same cause a timeout would name: the stream's 500.
    assert_eq!(sig["cause"]["httpStatus"], 500, "{sig}");
    assert!(prompt["durationMs"].as_u64().unwrap() < 12_000, "{prompt}");
}
