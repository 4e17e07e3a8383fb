//! `continuity show`: a finished run folder read back as a matrix or one
//! cell's timeline; bad input (another schema, a damaged trace, an unknown
//! cell) is a usage error naming the file or the cell, never a panic.

use crate::support::{assert_exit, continuity_command};
use continuity::exit_codes;
use continuity::trace::event::{self, Event};
use continuity::trace::{Exchange, Purpose, Seen, Trace, TraceLevel};
use serde_json::json;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

fn show(args: &[&str]) -> Output {
    continuity_command(["show"].iter().chain(args))
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn run_folder(dir: &Path) {
    let trace = Trace::create(&dir.join("cells/001"), TraceLevel::Summary, None, None).unwrap();
    trace.phase_start("connect", "connect");
    trace.phase_end("connect", "ok", 1);
    trace.phase_start("promptAfter", "prompt");
    trace.http(Exchange {
        last_event_id: None,
        method: "POST",
        url: "http://127.0.0.1:9/v1/acp/sdk-mock-1".into(),
        purpose: Purpose::AcpPost,
        attempt: None,
        status: Some(401),
        elapsed: Duration::from_millis(2),
        sent: 10,
        received: 10,
        failure: Some(Seen::Status {
            status: 401,
            problem_type: None,
            detail: None,
        }),
    });
    trace.emit(Event::Store(event::Store {
        event: Default::default(),
        call: "insertEvent".into(),
        driver: "rivet".into(),
        ms: Some(12.5),
        ok: Some(false),
        error: Some("insertEvent: HTTP 503".into()),
    }));
    trace.phase_end("promptAfter", "fail", 3);
    trace.flush();
    let phase = |name: &str, outcome: &str, sig: serde_json::Value| {
        json!({"name": name, "step": "prompt",
        "verdict": true, "cleanup": false, "outcome": outcome, "ok": outcome == "ok", "durationMs": 2,
        "deadlineMs": 1000, "detail": {}, "signature": sig})
    };
    let sig = json!({"kind": "http", "httpStatus": 401, "problemType": null, "rpcCode": null, "message": "HTTP 401", "pending": null});
    let report = json!({
        "schema": "continuity.report/v1",
        "run": {"id": "show", "harnessVersion": "0", "startedAt": "x", "finishedAt": "y", "durationMs": 5,
                "baseUrl": "http://127.0.0.1:9", "agent": "mock", "serverVersion": null, "timeoutMs": 1000,
                "overallTimeoutMs": 1000, "repeat": 1, "persist": "memory", "targets": ["agent"],
                "scenarios": ["s"], "interrupted": false, "logs": []},
        "cells": [{"target": "agent", "scenario": "s", "attempt": 1, "verdict": "fail",
                   "failureBoundary": "promptAfter", "reason": null, "durationMs": 5,
                   "phases": [phase("connect", "ok", json!(null)), phase("promptAfter", "fail", sig)],
                   "restarts": [], "trace": "cells/001/trace.jsonl"}],
        "totals": {"cells": 1, "passed": 0, "failed": 1, "errored": 0, "skipped": 0}
    });
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .unwrap();
}

#[test]
fn show_prints_the_matrix_and_one_cells_timeline() {
    let dir = tempfile::tempdir().unwrap();
    run_folder(dir.path());
    let run = dir.path().to_str().unwrap();
    let matrix = show(&[run]);
    assert_exit(&matrix, exit_codes::OK);
    let (out, _) = text(&matrix);
    assert!(
        out.contains("FAIL [  0.0 s] agent × s @ promptAfter"),
        "{out}"
    );
    assert!(
        out.contains("\n  ❌ promptAfter    2 ms  http 401\n"),
        "{out}"
    );

    let timeline = show(&[run, "--cell", "agent/s"]);
    assert_exit(&timeline, exit_codes::OK);
    let (out, _) = text(&timeline);
    assert!(out.contains("promptAfter ◀ boundary"), "{out}");
    assert!(out.contains("POST /v1/acp/sdk-mock-1 → 401"), "{out}");
    assert!(
        out.contains("store insertEvent (rivet) → failed: insertEvent: HTTP 503 (12.5 ms)"),
        "{out}"
    );
    assert!(out.contains("trace: cells/001/trace.jsonl"), "{out}");
    // The same with an explicit attempt, and from the report.json itself.
    let report = dir.path().join("report.json");
    let again = show(&[report.to_str().unwrap(), "--cell", "agent/s#1"]);
    assert_eq!(text(&again).0, out);
}

/// [`run_folder`]'s one cell as two points of the axis `key` (a v2
/// report, where cells name their axes): `first` keeps the cell's failure
/// at `promptAfter`, `second` fails at `connect`.
fn two_points(dir: &Path, key: &str, first: &str, second: &str) {
    run_folder(dir);
    let path = dir.join("report.json");
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    report["schema"] = json!("continuity.report/v2");
    let mut other = report["cells"][0].clone();
    other[key] = json!(second);
    other["failureBoundary"] = json!("connect");
    report["cells"][0][key] = json!(first);
    report["cells"].as_array_mut().unwrap().push(other);
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
}

#[test]
fn on_a_client_axis_the_cell_names_its_client() {
    let dir = tempfile::tempdir().unwrap();
    two_points(dir.path(), "client", "rust", "ts-sdk");
    let run = dir.path().to_str().unwrap();

    let ambiguous = show(&[run, "--cell", "agent/s"]);
    assert_exit(&ambiguous, exit_codes::USAGE);
    let (_, err) = text(&ambiguous);
    assert!(err.contains("ran with clients rust and ts-sdk"), "{err}");

    let hosted = show(&[run, "--cell", "agent/s/ts-sdk"]);
    assert_exit(&hosted, exit_codes::OK);
    assert!(
        text(&hosted).0.contains("connect ◀ boundary"),
        "{}",
        text(&hosted).0
    );
    let own = show(&[run, "--cell", "agent/s/rust#1"]);
    assert_exit(&own, exit_codes::OK);
    assert!(
        text(&own).0.contains("promptAfter ◀ boundary"),
        "{}",
        text(&own).0
    );
    assert_exit(&show(&[run, "--cell", "agent/s/go"]), exit_codes::USAGE);
}

/// On a persistence axis one TARGET/SCENARIO is a cell per store: `show`
/// asks for the store rather than picking the first, and `--persist`
/// picks it (an agent axis likewise, with `--agent`).
#[test]
fn on_a_persistence_axis_the_store_is_named_with_persist() {
    let dir = tempfile::tempdir().unwrap();
    two_points(dir.path(), "persist", "sqlite", "postgres");
    let run = dir.path().to_str().unwrap();

    let ambiguous = show(&[run, "--cell", "agent/s"]);
    assert_exit(&ambiguous, exit_codes::USAGE);
    let (_, err) = text(&ambiguous);
    assert!(
        err.contains("ran with persist sqlite and postgres: name one, e.g. --cell agent/s --persist postgres"),
        "{err}"
    );
    let picked = show(&[run, "--cell", "agent/s", "--persist", "postgres"]);
    assert_exit(&picked, exit_codes::OK);
    assert!(
        text(&picked).0.contains("connect ◀ boundary"),
        "{}",
        text(&picked).0
    );
    let other = show(&[run, "--cell", "agent/s#1", "--persist", "sqlite"]);
    assert_exit(&other, exit_codes::OK);
    assert!(
        text(&other).0.contains("promptAfter ◀ boundary"),
        "{}",
        text(&other).0
    );
    let none = show(&[run, "--cell", "agent/s", "--persist", "rivet"]);
    assert_exit(&none, exit_codes::USAGE);
    assert!(
        text(&none)
            .1
            .contains("no cell agent/s with --persist rivet"),
        "{}",
        text(&none).1
    );
    // The flag picks among a cell's points: without --cell it means nothing.
    assert_exit(&show(&[run, "--persist", "sqlite"]), exit_codes::USAGE);
}

#[test]
fn bad_input_is_a_usage_error_naming_the_file_or_cell() {
    let dir = tempfile::tempdir().unwrap();
    run_folder(dir.path());
    let run = dir.path().to_str().unwrap();
    let usage = |args: &[&str], needle: &str| {
        let o = show(args);
        let (_, err) = text(&o);
        assert_eq!(
            o.status.code(),
            Some(i32::from(exit_codes::USAGE)),
            "{args:?}: {err}"
        );
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    usage(&[run, "--cell", "agent/nope"], "(cells: agent/s)");
    usage(&[run, "--cell", "agent/s#9"], "no attempt #9");
    usage(&[run, "--cell", "agent"], "TARGET/SCENARIO");
    usage(&[run, "--cell", "agent/s#x"], "attempt");

    std::fs::write(
        dir.path().join("cells/001/trace.jsonl"),
        "{\"t\":0,\"ev\":\"trace\",\"schema\":\"continuity.trace/v1\"}\n\u{0}garbage\n",
    )
    .unwrap();
    // A torn trace costs its events, not the timeline (as `--trace off`).
    let torn = show(&[run, "--cell", "agent/s"]);
    assert_exit(&torn, exit_codes::OK);
    let (out, err) = text(&torn);
    assert!(err.contains("trace.jsonl: line 2"), "{err}");
    assert!(out.contains("promptAfter ◀ boundary"), "{out}");

    let report = dir.path().join("report.json");
    let text = std::fs::read_to_string(&report)
        .unwrap()
        .replace("continuity.report/v1", "continuity.report/v9");
    std::fs::write(&report, text).unwrap();
    usage(&[run], "report.json");
    usage(&[dir.path().join("missing").to_str().unwrap()], "missing");
}

/// A report is text anyone may edit: the trace it names is read only
/// inside its run folder, never `/etc/passwd`, `../x` or a link out.
#[test]
fn show_never_reads_a_trace_outside_the_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    run_folder(&dir);
    // A valid trace outside the folder: read, it would give its events.
    std::fs::copy(
        dir.join("cells/001/trace.jsonl"),
        tmp.path().join("outside.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.jsonl"), dir.join("link.jsonl")).unwrap();
    let report = dir.join("report.json");
    let original = std::fs::read_to_string(&report).unwrap();
    let outside = tmp.path().join("outside.jsonl");
    for given in [
        "/etc/passwd",
        "../outside.jsonl",
        outside.to_str().unwrap(),
        "link.jsonl",
    ] {
        let edited = original.replace("cells/001/trace.jsonl", given);
        std::fs::write(&report, edited).unwrap();
        let out = show(&[dir.to_str().unwrap(), "--cell", "agent/s"]);
        let (stdout, stderr) = text(&out);
        assert_exit(&out, exit_codes::OK);
        assert!(
            stderr.contains("leads outside its run folder"),
            "{given}: {stderr}"
        );
        assert!(
            !stdout.contains("insertEvent"),
            "{given}: read the outside trace\n{stdout}"
        );
    }
}
