//! The gateway-reload race, made to happen at will: `gateway-reload-idle`
//! reloads nginx while the client holds an idle keep-alive connection to
//! the old worker and holds the worker's close in flight, so the client's
//! next POST goes out on a connection the server has closed. Every
//! attempt, with the real failure of each real client: continuity's own
//! (hyper) reads "connection closed before message completed"; the real
//! SDK (undici, hosted in the Rivet app) loses the POST and leaves the
//! prompt pending: hung. Judged by the committed expectations.

use crate::support;

use continuity::exit_codes;
use serde_json::Value;
use std::path::Path;
use support::{assert_exit, report};

const TARGET: &str = "gateway-reload-idle";
const SCENARIO: &str = "native-continuity";
const BOUNDARY: &str = "promptSameHandleAfterRestart";

fn run(args: &[&str], out: &Path) -> std::process::Output {
    let mut all = vec![
        "run",
        "--target",
        TARGET,
        "--scenario",
        SCENARIO,
        "--repeat",
        "3",
        "--jobs",
        "1",
        "--expect",
        support::EXPECTATIONS,
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    support::continuity_with(&all, &[])
}

/// The trace events of one attempt, in order.
fn trace(out: &Path, attempt: &Value) -> Vec<Value> {
    let path = out.join(attempt["trace"].as_str().expect("the attempt has a trace"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The cell's three attempts, each failed at the prompt after the reload
/// with the expected outcome, its restart done (the old worker closed an
/// idle connection, held in flight on the gateway hop); returns the
/// boundary phase of each.
fn three_failed_attempts(out: &Path, client: &str) -> Vec<Value> {
    let report = report(out);
    let cell = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == TARGET && c["scenario"] == SCENARIO)
        .unwrap_or_else(|| panic!("no {TARGET} cell in {report}"));
    assert_eq!(cell["verdict"], "fail", "{cell}");
    assert_eq!(cell["expectation"]["outcome"], "expected", "{cell}");
    let attempts = cell["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3, "{cell}");
    let mut boundaries = Vec::new();
    for attempt in attempts {
        assert_eq!(attempt["verdict"], "fail", "{client}: {attempt}");
        assert_eq!(attempt["failureBoundary"], BOUNDARY, "{client}: {attempt}");
        let phases = attempt["phases"].as_array().unwrap();
        let restart = phases.iter().find(|p| p["name"] == "restart").unwrap();
        assert_eq!(restart["ok"], true, "{client}: {restart}");
        let trace = trace(out, attempt);
        let held: Vec<&Value> = trace
            .iter()
            .filter(|e| e["ev"] == "fault_action" && e["action"] == "close_held")
            .collect();
        assert!(
            !held.is_empty() && held.iter().all(|e| e["hop"] == "gateway"),
            "the reload closed an idle connection, held on the gateway hop: {trace:?}"
        );
        let boundary = phases.iter().find(|p| p["name"] == BOUNDARY).unwrap();
        boundaries.push(boundary.clone());
    }
    boundaries
}

#[test]
fn the_rust_client_loses_its_post_to_the_reloads_close_every_time() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let ran = run(&["--client", "rust"], &out);
    assert_exit(&ran, exit_codes::OK);
    for boundary in three_failed_attempts(&out, "rust") {
        let signature = &boundary["signature"];
        assert_eq!(signature["kind"], "stream_closed", "{boundary}");
        let message = signature["message"].as_str().unwrap();
        assert!(
            message
                .contains("client error (SendRequest): connection closed before message completed"),
            "hyper's own words for a request answered by the end of the stream: {message}"
        );
        let observed = signature["observed"].as_str().unwrap();
        assert!(
            observed.starts_with("POST /sandbox/v1/acp/"),
            "the prompt's POST: {observed}"
        );
        assert!(
            boundary["durationMs"].as_u64().unwrap() < 10_000,
            "failed when the close arrived, not at a deadline: {boundary}"
        );
    }
}

#[test]
fn the_real_sdk_loses_its_post_and_leaves_the_prompt_pending_every_time() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let ran = run(&["--client", "ts-sdk", "--timeout-ms", "12000"], &out);
    assert_exit(&ran, exit_codes::OK);
    for boundary in three_failed_attempts(&out, "ts-sdk") {
        let signature = &boundary["signature"];
        assert_eq!(signature["kind"], "hung", "{boundary}");
        assert_eq!(signature["cause"]["error"], "closed", "{boundary}");
        let message = signature["message"].as_str().unwrap();
        assert!(
            message.contains("connection closed early"),
            "the SDK's POST met the end of the stream: {message}"
        );
    }
}
