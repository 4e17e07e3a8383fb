//! Terminals and probes against tiny hostile servers that send what no real
//! sandbox-agent sends: a refused upgrade, garbage frames, an oversized
//! frame, a dropped connection, a 410. Each must end as a classified error
//! within the caller's deadline, never a hang or a panic.

use super::terminal_replay::cat_terminal_scenario;
use crate::support::cell_settings;
use crate::support::fake_http::read_request;
use continuity::client::{Client, ClientOptions, TerminalError};
use continuity::persist::MemoryDriver;
use continuity::report::Verdict;
use continuity::scenario::{parse_scenario, run_cell, Restarter};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

const BOUND: Duration = Duration::from_secs(5);

/// Serves one connection: reads the request head, then hands the socket over.
async fn serve_once<F, Fut>(handler: F) -> String
where
    F: FnOnce(TcpStream, String) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let Some(request) = read_request(&mut socket).await else {
            return;
        };
        handler(socket, request.head).await;
    });
    base
}

/// Accepts the upgrade, sends `ready`, then `frames` as raw bytes.
async fn upgrade_then(frames: Vec<u8>) -> String {
    serve_once(move |mut socket, head| async move {
        accept_upgrade(&mut socket, &head).await;
        let _ = socket.write_all(&frames).await;
        // Keep the connection open a while unless the frames closed it.
        tokio::time::sleep(Duration::from_secs(10)).await;
    })
    .await
}

/// Answers the upgrade in `head` with 101 and sends the `ready` control frame.
pub(super) async fn accept_upgrade(socket: &mut TcpStream, head: &str) {
    let key = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-key"))
        })
        .map(|(_, v)| v.trim().to_string())
        .expect("an upgrade request");
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    socket.write_all(response.as_bytes()).await.unwrap();
    socket
        .write_all(&frame(0x1, br#"{"type":"ready","processId":"p"}"#))
        .await
        .unwrap();
}

/// An unmasked server frame with FIN set.
fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xFFFF => {
            out.push(126);
            out.extend((n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend((n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

fn client(base: &str) -> Client {
    Client::connect(ClientOptions::new(base, Arc::new(MemoryDriver::default()))).unwrap()
}

/// Attaches, sends a line and waits for it: returns how that ended.
async fn exchange(base: &str) -> Result<usize, TerminalError> {
    let c = client(base);
    let terminal = tokio::time::timeout(BOUND, c.attach_terminal("p"))
        .await
        .expect("attach within the bound")?;
    tokio::time::timeout(BOUND, terminal.wait_ready())
        .await
        .expect("ready within the bound")?;
    let mark = terminal.send_line("hello").await?;
    tokio::time::timeout(BOUND, terminal.expect("hello", mark))
        .await
        .expect("an answer within the bound")
}

#[tokio::test]
async fn binary_garbage_is_terminal_output_and_the_line_still_arrives() {
    let base = serve_once(|mut socket, head| async move {
        accept_upgrade(&mut socket, &head).await;
        let mut garbage: Vec<u8> = (0..=255u8).rev().collect();
        garbage.extend_from_slice(b"\xff\xfe\x00");
        socket.write_all(&frame(0x2, &garbage)).await.unwrap();
        // The client's input frame, then its echo after more garbage.
        let mut input = [0u8; 256];
        let _ = socket.read(&mut input).await;
        garbage.extend_from_slice(b"hello\r\n");
        socket.write_all(&frame(0x2, &garbage)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
    })
    .await;
    assert!(exchange(&base).await.is_ok());
}

#[tokio::test]
async fn a_text_frame_that_is_not_a_control_frame_is_a_protocol_error() {
    let base = upgrade_then(frame(0x1, b"\x01garbage{")).await;
    match exchange(&base).await {
        Err(TerminalError::Protocol(m)) => assert!(m.contains("not JSON"), "{m}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_utf8_in_a_text_frame_closes_with_1007() {
    let base = upgrade_then(frame(0x1, b"\xff\xfe\xfd")).await;
    match exchange(&base).await {
        Err(TerminalError::Closed(close)) => assert_eq!((close.code, close.clean), (1007, false)),
        other => panic!("expected ws close 1007, got {other:?}"),
    }
}

#[tokio::test]
async fn an_oversized_frame_closes_with_1009_without_reading_it_all() {
    // A header announcing 64 MiB, and only a little of it.
    let mut oversized = vec![0x82, 127];
    oversized.extend((64u64 << 20).to_be_bytes());
    oversized.extend_from_slice(&[0u8; 1024]);
    let base = upgrade_then(oversized).await;
    match exchange(&base).await {
        Err(TerminalError::Closed(close)) => {
            assert_eq!(close.code, 1009, "{close}");
            assert!(close.to_string().starts_with("ws close 1009"));
        }
        other => panic!("expected ws close 1009, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reserved_opcode_closes_with_1002() {
    let base = upgrade_then(frame(0x3, b"x")).await;
    match exchange(&base).await {
        Err(TerminalError::Closed(close)) => assert_eq!(close.code, 1002, "{close}"),
        other => panic!("expected ws close 1002, got {other:?}"),
    }
}

#[tokio::test]
async fn a_dropped_connection_is_ws_close_1006_and_a_clean_close_keeps_its_code() {
    let dropped = serve_once(|mut socket, head| async move {
        accept_upgrade(&mut socket, &head).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(socket);
    })
    .await;
    match exchange(&dropped).await {
        Err(TerminalError::Closed(close)) => {
            assert_eq!((close.code, close.clean), (1006, false), "{close}")
        }
        other => panic!("expected ws close 1006, got {other:?}"),
    }
    let mut close = vec![0x03, 0xF0]; // 1008
    close.extend_from_slice(b"policy");
    let clean = upgrade_then(frame(0x8, &close)).await;
    match exchange(&clean).await {
        Err(TerminalError::Closed(close)) => {
            assert_eq!((close.code, close.clean), (1008, true));
            assert_eq!(close.to_string(), "ws close 1008 (policy)");
        }
        other => panic!("expected ws close 1008, got {other:?}"),
    }
}

#[tokio::test]
async fn an_upgrade_refused_with_401_keeps_status_and_problem_type() {
    let body = r#"{"type":"urn:sandbox-agent:error:token_invalid","title":"Token Invalid","status":401,"detail":"token invalid"}"#;
    let base = serve_once(move |mut socket, _| async move {
        let response = format!(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
    })
    .await;
    match exchange(&base).await {
        Err(TerminalError::Refused {
            status,
            problem_type,
            ..
        }) => assert_eq!(
            (status, problem_type.as_deref()),
            (401, Some("token_invalid"))
        ),
        other => panic!("expected a refused upgrade, got {other:?}"),
    }
}

#[tokio::test]
async fn a_silent_server_cannot_hold_the_attach_past_the_callers_deadline() {
    let base = serve_once(|socket, _| async move {
        let _held = socket;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let c = client(&base);
    let started = std::time::Instant::now();
    let attach = tokio::time::timeout(Duration::from_millis(500), c.attach_terminal("p")).await;
    assert!(attach.is_err(), "no answer, so the deadline ends it");
    assert!(started.elapsed() < Duration::from_secs(2));
}

struct NoRestart;

#[async_trait::async_trait]
impl Restarter for NoRestart {
    async fn restart(&mut self, _phase: &str) -> continuity::scenario::Restarted {
        unreachable!("no restart phase here")
    }
}

async fn probe(base: String) -> continuity::report::PhaseResult {
    let scenario = parse_scenario(
        Path::new("probe.toml"),
        "name = \"p\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n[[phase]]\nname = \"probe\"\nstep = \"probe\"\nclient = \"c\"\n",
    )
    .unwrap();
    let settings = cell_settings(base, "probe", Duration::from_secs(5));
    let run = run_cell(&scenario, &settings, &mut NoRestart).await;
    assert_eq!(run.verdict, Verdict::Fail);
    run.phases.into_iter().find(|p| p.name == "probe").unwrap()
}

#[tokio::test]
async fn the_probe_reports_expired_on_410_no_sandbox_when_nothing_listens_else_error() {
    let gone = serve_once(|mut socket, _| async move {
        let _ = socket
            .write_all(b"HTTP/1.1 410 Gone\r\ncontent-length: 0\r\n\r\n")
            .await;
    })
    .await;
    let p = probe(gone).await;
    assert_eq!(p.detail["status"], "expired", "{p:?}");
    assert_eq!(p.signature.unwrap().http_status, Some(410));

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    assert_eq!(probe(closed).await.detail["status"], "no_sandbox");

    let broken = serve_once(|mut socket, _| async move {
        let _ = socket
            .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
            .await;
    })
    .await;
    assert_eq!(probe(broken).await.detail["status"], "error");
}

/// Serves every connection: `POST /v1/processes` starts "p1", a WebSocket
/// upgrade gets `ready` then `frames`, anything else is a 404.
async fn hostile_sandbox(frames: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let frames = frames.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let head = request.head;
                if head.to_ascii_lowercase().contains("upgrade: websocket") {
                    accept_upgrade(&mut socket, &head).await;
                    let _ = socket.write_all(&frames).await;
                    tokio::time::sleep(Duration::from_secs(10)).await;
                } else if head.starts_with("POST /v1/processes HTTP") {
                    let body = r#"{"id":"p1","status":"running","pid":1}"#;
                    let _ = socket
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                } else {
                    let _ = socket
                        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .await;
                }
            });
        }
    });
    base
}

#[tokio::test]
async fn hostile_terminal_frames_are_signatures_on_the_expect_phase_within_its_deadline() {
    let scenario = parse_scenario(
        Path::new("hostile.toml"),
        &cat_terminal_scenario(
            "hostile",
            "hello",
            r#"
[[phase]]
name = "echo"
step = "terminal_expect"
terminal = "t"
timeout_ms = 3000
"#,
        ),
    )
    .unwrap();
    let mut oversized = vec![0x82, 127];
    oversized.extend((64u64 << 20).to_be_bytes());
    let cases: [(Vec<u8>, &str); 3] = [
        (oversized, "ws close 1009"),
        (frame(0x1, b"\xff\xfe"), "ws close 1007"),
        (frame(0x1, b"not a control frame"), "terminal protocol"),
    ];
    for (frames, expected) in cases {
        let settings = cell_settings(
            hostile_sandbox(frames).await,
            "hostile",
            Duration::from_secs(3),
        );
        let started = std::time::Instant::now();
        let run = run_cell(&scenario, &settings, &mut NoRestart).await;
        // The first terminal phase that sees the frame carries the signature
        // (the send, when the socket was already closed by then).
        let boundary = run.failure_boundary.clone().expect("the cell failed");
        assert!(
            ["send", "echo"].contains(&boundary.as_str()),
            "{expected}: {:#?}",
            run.phases
        );
        let failed = run.phases.iter().find(|p| p.name == boundary).unwrap();
        let signature = failed
            .signature
            .as_ref()
            .expect("a failed phase has a signature");
        assert!(
            signature.message.starts_with(expected),
            "{expected}: {failed:?}"
        );
        assert_ne!(failed.outcome, continuity::report::Outcome::Timeout);
        // The teardown ran against the hostile server and ended, bounded.
        let cleanup = run
            .phases
            .iter()
            .find(|p| p.name == "sandboxCleanup")
            .unwrap();
        assert!(cleanup.cleanup && !cleanup.decides_verdict, "{cleanup:?}");
        assert!(started.elapsed() < Duration::from_secs(15), "{expected}");
    }
}
