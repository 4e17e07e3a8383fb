//! Waits that name what they saw, end to end: a loopback gateway stand-in in
//! front of the real sandbox-agent 0.4.2 that, once "restarted" (its restart
//! hook is called), answers every request with 401 — a rotated token — or
//! resets every connection. Verdicts and boundaries stay the SDK's; the
//! signatures must show the 401 or the reset, with the attempt count, and
//! `pending` must name the SDK's health wait rather than a `session/new`
//! that was never sent.

use crate::support;

use crate::support::{cell, phase, report};
use continuity::exit_codes;
use serde_json::Value;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const TOKEN: &str = "tok-diag-e2e-5f1c9a";
/// How long the gateway stand-in's port refuses connections once restarted.
const DOWN_FOR: Duration = Duration::from_millis(300);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Unauthorized = 1,
    Reset = 2,
}

/// A TCP gateway: pipes to the backend until its restart hook is called,
/// then drops every open connection, closes its port for [`DOWN_FOR`] (a
/// restart the harness can see) and fails every new connection with `fault`.
struct Gateway {
    port: u16,
    hook_port: u16,
    mode: Arc<AtomicU8>,
    restarted: watch::Sender<u64>,
}

impl Gateway {
    async fn start(backend: String, fault: Fault) -> Gateway {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hook = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gateway = Gateway {
            port: listener.local_addr().unwrap().port(),
            hook_port: hook.local_addr().unwrap().port(),
            mode: Arc::new(AtomicU8::new(0)),
            restarted: watch::channel(0).0,
        };
        let (mode, restarted) = (Arc::clone(&gateway.mode), gateway.restarted.clone());
        tokio::spawn(async move {
            loop {
                let (mut conn, _) = hook.accept().await.unwrap();
                read_request(&mut conn).await;
                mode.store(fault as u8, Ordering::SeqCst);
                restarted.send_modify(|g| *g += 1);
                let _ = conn
                    .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                    .await;
            }
        });
        let (mode, restarted) = (Arc::clone(&gateway.mode), gateway.restarted.clone());
        let port = gateway.port;
        tokio::spawn(async move {
            let mut listener = listener;
            let mut restarts = restarted.subscribe();
            loop {
                let conn = tokio::select! {
                    accepted = listener.accept() => accepted.unwrap().0,
                    _ = restarts.changed() => {
                        // A restarted gateway is down a moment: its port refuses.
                        drop(listener);
                        tokio::time::sleep(DOWN_FOR).await;
                        listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
                        continue;
                    }
                };
                let backend = backend.clone();
                let mode = mode.load(Ordering::SeqCst);
                let mut gone = restarted.subscribe();
                tokio::spawn(async move {
                    match mode {
                        0 => {
                            let Ok(mut upstream) = TcpStream::connect(&backend).await else {
                                return;
                            };
                            let mut conn = conn;
                            // A restart drops every connection, as a restarted gateway does.
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream) => {}
                                _ = gone.changed() => {}
                            }
                        }
                        1 => unauthorized(conn).await,
                        _ => {
                            // The request is read first: a reset that lands
                            // before the client has written it reaches hyper
                            // as a closed connection ("connection was not
                            // ready"), on a loaded machine now and then, and
                            // the client could not say it was a reset.
                            let mut conn = conn;
                            read_request(&mut conn).await;
                            // A zero linger makes the close a reset and never blocks.
                            #[allow(deprecated)]
                            let _ = conn.set_linger(Some(Duration::ZERO));
                            drop(conn);
                        }
                    }
                });
            }
        });
        gateway
    }

    /// Back to piping (before the next run).
    fn heal(&self) {
        self.mode.store(0, Ordering::SeqCst);
    }
}

/// Reads one request head and its `Content-Length` body, so closing after
/// the answer is a FIN (unread bytes would turn it into a reset). Returns
/// the head, as written; empty when the peer sent nothing.
async fn read_request(conn: &mut TcpStream) -> String {
    support::fake_http::read_request(conn)
        .await
        .map(|request| request.head)
        .unwrap_or_default()
}

/// A 401 whose detail echoes the bearer token it refused, as careless
/// gateways do: the token must still reach no file of the run.
async fn unauthorized(mut conn: TcpStream) {
    let head = read_request(&mut conn).await;
    if head.is_empty() {
        return; // a TCP readiness probe: connected, sent nothing
    }
    let bearer = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("authorization: bearer "))
        .map(|l| l["authorization: bearer ".len()..].trim().to_string())
        .unwrap_or_else(|| "none".into());
    let body = format!(
        r#"{{"type":"urn:gateway:error:unauthorized","title":"Unauthorized","status":401,"detail":"token expired: {bearer}"}}"#
    );
    let response = format!(
        "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/problem+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// Runs one scenario through the gateway with its restart hook as the target.
async fn run_through(gateway: &Gateway, scenario: &str, dir: &std::path::Path) -> (Value, String) {
    gateway.heal();
    let config = dir.join(format!("{scenario}.toml"));
    std::fs::write(
        &config,
        format!(
            "[run]\nbase_url = \"http://127.0.0.1:{port}\"\nagent = \"mock\"\ntimeout_ms = 3000\ntoken_env = \"DIAG_TOKEN\"\n\n[targets.gateway]\nrestart = {{ http = \"http://127.0.0.1:{hook}/restart\", method = \"POST\", expect_status = 204 }}\nready = {{ tcp = \"127.0.0.1:{port}\" }}\n",
            port = gateway.port,
            hook = gateway.hook_port
        ),
    )
    .unwrap();
    let out = dir.join(format!("out-{scenario}"));
    let run = tokio::process::Command::from(support::continuity_command([
        "run",
        "--config",
        config.to_str().unwrap(),
        "--scenario",
        scenario,
        "--trace",
        "full",
        "--out",
        out.to_str().unwrap(),
    ]))
    .env("DIAG_TOKEN", TOKEN)
    .output()
    .await
    .unwrap();
    support::assert_exit(&run, exit_codes::FAILED);
    assert_no_token_in(&out);
    let report = report(&out);
    let cell = cell(&report, "gateway", scenario);
    let trace = cell["trace"].as_str().expect("the cell names its trace");
    assert!(out.join(trace).is_file(), "{trace} missing");
    (
        cell.clone(),
        String::from_utf8_lossy(&run.stdout).into_owned(),
    )
}

/// Every file of a run folder, read whole: the token is in none of them.
fn assert_no_token_in(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_no_token_in(&path);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            let found = bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes());
            assert!(!found, "the token is written in {}", path.display());
        }
    }
}

fn signature(cell: &Value, name: &str) -> Value {
    phase(cell, name)["signature"].clone()
}

async fn check(fault: Fault) {
    let server = support::Server::start().await;
    let backend = server.base_url().trim_start_matches("http://").to_string();
    let gateway = Gateway::start(backend, fault).await;
    let dir = tempfile::tempdir().unwrap();

    let (rehydrate, table) = run_through(&gateway, "recreate-rehydrate", dir.path()).await;
    // The SDK's outcome: the new client never gets past its health wait.
    assert_eq!(rehydrate["verdict"], "fail", "{rehydrate}");
    assert_eq!(rehydrate["failureBoundary"], "createAfter");
    let create = phase(&rehydrate, "createAfter");
    assert_eq!(create["outcome"], "timeout", "{create}");
    let sig = signature(&rehydrate, "createAfter");
    let pending = sig["pending"].as_str().unwrap();
    assert!(pending.contains("health wait"), "{sig}");
    assert!(!pending.contains("session/new"), "{sig}");
    // Every attempt since the client connected (0 s, 0.5 s, 1.5 s…) is counted.
    let attempts: u32 = pending
        .split(": ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no attempt count: {sig}"));
    assert!(attempts >= 2, "{sig}");
    let observed = sig["observed"].as_str().unwrap();
    assert!(observed.starts_with("GET /v1/health: "), "{sig}");
    let message = sig["message"].as_str().unwrap();
    match fault {
        Fault::Unauthorized => {
            assert_eq!(sig["cause"]["httpStatus"], 401, "{sig}");
            assert!(message.contains("HTTP 401"), "{sig}");
            assert!(message.contains("token expired"), "{sig}");
            assert!(pending.contains("last: HTTP 401"), "{sig}");
            assert!(
                message.contains("[redacted]"),
                "the echoed token is scrubbed: {sig}"
            );
            assert!(table.contains("timeout: http 401"), "{table}");
        }
        Fault::Reset => {
            assert_eq!(sig["cause"]["error"], "reset", "{sig}");
            assert!(message.contains("connection reset"), "{sig}");
            assert!(table.contains("timeout: reset"), "{table}");
        }
    }

    let (native, _) = run_through(&gateway, "native-continuity", dir.path()).await;
    assert_eq!(native["verdict"], "fail", "{native}");
    assert_eq!(native["failureBoundary"], "promptSameHandleAfterRestart");
    let sig = signature(&native, "promptSameHandleAfterRestart");
    let observed = sig["observed"].as_str().unwrap_or_default();
    assert!(
        observed.contains("POST /v1/acp/sdk-mock-<id>: 1 attempt"),
        "{sig}"
    );
    match fault {
        Fault::Unauthorized => {
            assert_eq!(sig["kind"], "http", "{sig}");
            assert_eq!(sig["httpStatus"], 401, "{sig}");
            assert_eq!(sig["cause"]["httpStatus"], 401, "{sig}");
        }
        Fault::Reset => {
            assert_eq!(sig["cause"]["error"], "reset", "{sig}");
            assert!(observed.contains("connection reset"), "{sig}");
        }
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_answering_401_after_its_restart_is_named_with_its_attempts() {
    check(Fault::Unauthorized).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_resetting_connections_after_its_restart_is_named_with_its_attempts() {
    check(Fault::Reset).await;
}
