//! Run folders made by hand, as an artifact from elsewhere may be made
//! (issue 43): a report of a few cells with whatever fields a test puts
//! in, traces, links, FIFOs; a listener that counts every connection; and
//! a command run under a time limit (a hang is a failure, never a stuck
//! suite).

use serde_json::{json, Value};
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A cell that failed at its one phase, with `trace` when given.
pub fn cell(target: &str, scenario: &str, trace: Option<&str>) -> Value {
    json!({
        "target": target,
        "scenario": scenario,
        "serverVersion": null,
        "attempt": 1,
        "verdict": "fail",
        "failureBoundary": "p",
        "reason": "seen",
        "durationMs": 40,
        "phases": [{
            "name": "p", "step": "prompt", "verdict": true, "cleanup": false,
            "outcome": "fail", "ok": false, "durationMs": 12, "deadlineMs": 30000,
            "detail": {},
            "signature": {
                "kind": "http", "httpStatus": 400, "problemType": "invalid_request",
                "rpcCode": null, "message": "HTTP 400 invalid_request", "pending": null
            }
        }],
        "restarts": [],
        "trace": trace,
    })
}

/// A v2 report of `cells`, with a recipe a rerun could take (the local
/// stack, the built-in scenario `native-continuity`).
pub fn report(id: &str, cells: Vec<Value>) -> Value {
    let targets: Vec<Value> = cells.iter().map(|c| c["target"].clone()).collect();
    let scenarios: Vec<Value> = cells.iter().map(|c| c["scenario"].clone()).collect();
    let failed = cells.len();
    json!({
        "schema": "continuity.report/v2",
        "run": {
            "id": id,
            "harnessVersion": env!("CARGO_PKG_VERSION"),
            "startedAt": "2026-12-01T22:25:03.675Z",
            "finishedAt": "2026-12-01T22:25:41.529Z",
            "durationMs": 37854,
            "baseUrl": "http://127.0.0.1:2468",
            "agent": "mock",
            "serverVersion": "sandbox-agent 0.4.2",
            "timeoutMs": 30000,
            "overallTimeoutMs": 1800000,
            "repeat": 1,
            "persist": "sqlite",
            "targets": targets,
            "scenarios": scenarios,
            "interrupted": false,
            "logs": [],
            "retries": 0,
            "flakyResult": "pass",
            "partition": null,
            "shards": [],
            "seed": 7,
            "recipe": {
                "targets": [],
                "scenarios": [],
                "agents": ["mock"],
                "clients": ["rust"],
                "rivetSave": "immediate",
                "rivetStop": "kill",
                "trace": "summary",
            },
        },
        "totals": {
            "cells": failed, "passed": 0, "failed": failed, "errored": 0,
            "skipped": 0, "flaky": 0, "interrupted": 0
        },
        "cells": cells,
    })
}

/// A valid trace whose one HTTP exchange names `url`.
pub fn trace(url: &str) -> String {
    [
        json!({"t": 0, "ev": "trace", "schema": "continuity.trace/v1", "level": "summary"}),
        json!({"t": 1, "ev": "phase_start", "phase": "p", "step": "prompt"}),
        json!({"t": 2, "ev": "http", "method": "POST", "url": url, "purpose": "acp",
               "ms": 1.0, "sent": 1, "received": 1, "status": 200}),
        json!({"t": 3, "ev": "phase_end", "phase": "p", "outcome": "fail", "ms": 2}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

pub fn write_report(dir: &Path, report: &Value) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
}

pub fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Runs `command` (its own process group, stdin closed) to its end, or
/// kills the group past `limit` and fails: a hang is the bug.
pub fn run_within(mut command: Command, limit: Duration) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().unwrap();
    let pid = child.id() as i32;
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let stderr = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
            let _ = child.wait();
            panic!("{command:?} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// A loopback listener that records every connection and what it sent.
pub struct Listener {
    pub url: String,
    got: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    pub fn start() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut bytes = vec![0u8; 8192];
                    let n = stream.read(&mut bytes).unwrap_or(0);
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&bytes[..n]).into_owned());
                });
            }
        });
        Listener { url, got }
    }

    /// Every connection so far, with what it sent first.
    pub fn connections(&self) -> Vec<String> {
        self.got.lock().unwrap().clone()
    }
}
