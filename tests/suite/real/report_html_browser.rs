//! `report.html` in a real browser: Debian's `chromium`, headless, loads the
//! page from disk and dumps the DOM its script drew. The test fails on a
//! script error, or when a cell, a timeline or the failure boundary is
//! missing — for a run with passed, failed, errored and skipped cells that
//! was interrupted, and whose traces include a damaged one.

use continuity::report::{Report, RunFolder};
use continuity::trace::event::{self, Event};
use continuity::trace::{Exchange, Purpose, Seen, Trace, TraceLevel};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const INSTALL: &str = "apt-get install -y --no-install-recommends chromium";

fn phase(
    name: &str,
    step: &str,
    outcome: &str,
    ms: u64,
    signature: serde_json::Value,
) -> serde_json::Value {
    json!({"name": name, "step": step, "verdict": name.starts_with("prompt"), "cleanup": false,
           "outcome": outcome, "ok": outcome == "ok", "durationMs": ms, "deadlineMs": 3000,
           "detail": {}, "signature": signature})
}

fn cell(
    target: &str,
    verdict: &str,
    boundary: Option<&str>,
    trace: Option<&str>,
    phases: Vec<serde_json::Value>,
) -> serde_json::Value {
    json!({"target": target, "scenario": "native-continuity", "attempt": 1, "verdict": verdict,
           "failureBoundary": boundary, "reason": if phases.is_empty() { Some("nginx is not installed: apt-get install nginx") } else { None },
           "durationMs": phases.iter().map(|p| p["durationMs"].as_u64().unwrap()).sum::<u64>(),
           "phases": phases, "restarts": [], "trace": trace})
}

/// Gives a cell two attempts (as `--retries 1` does), both failed.
fn first_attempt(
    cell: &mut serde_json::Value,
    first: serde_json::Value,
    second: serde_json::Value,
) {
    let attempt = |mut a: serde_json::Value| {
        let a_obj = a.as_object_mut().unwrap();
        a_obj.remove("target");
        a_obj.remove("scenario");
        a_obj.remove("expectation");
        a_obj.entry("retry").or_insert(json!(false));
        a
    };
    cell["attempts"] = json!([attempt(first), attempt(second)]);
    cell["passRate"] = json!(0.0);
}

/// A run folder: an interrupted run with one cell of each verdict, a real
/// trace for the failed cell and a damaged one for the passing cell.
fn run_folder(dir: &Path) -> Report {
    let cells = dir.join("cells/001-agent");
    let trace = Trace::create(&cells, TraceLevel::Summary, None, None).unwrap();
    trace.phase_start("createSession", "create_session");
    trace.phase_end("createSession", "ok", 30);
    trace.emit(Event::RestartStart);
    trace.emit(Event::RestartEnd(event::RestartEnd {
        ok: true,
        ready_ms: Some(120),
        ..Default::default()
    }));
    trace.phase_start("promptSameHandleAfterRestart", "prompt");
    trace.http(Exchange {
        last_event_id: None,
        method: "POST",
        url: "http://127.0.0.1:9/v1/acp/sdk-mock-1".into(),
        purpose: Purpose::AcpPost,
        attempt: None,
        status: Some(401),
        elapsed: Duration::from_millis(4),
        sent: 120,
        received: 90,
        failure: Some(Seen::Status {
            status: 401,
            problem_type: None,
            detail: Some("token expired".into()),
        }),
    });
    trace.emit(Event::Store(event::Store {
        event: Default::default(),
        call: "getSession".into(),
        driver: "rivet".into(),
        ms: Some(16.0),
        ok: Some(true),
        error: None,
    }));
    trace.phase_end("promptSameHandleAfterRestart", "fail", 5);
    trace.flush();
    std::fs::create_dir_all(dir.join("cells/002-gateway")).unwrap();
    std::fs::write(dir.join("cells/002-gateway/trace.jsonl"), "{not json\n").unwrap();

    let http_401 = json!({"kind": "http", "httpStatus": 401, "problemType": null, "rpcCode": null,
        "message": "HTTP 401: token expired", "pending": null,
        "cause": {"kind": "http", "httpStatus": 401, "problemType": null, "error": null},
        "observed": "POST /v1/acp/sdk-mock-<id>: 1 attempt, 1 failed; last: HTTP 401 \"token expired\""});
    let harness = json!({"kind": "harness", "httpStatus": null, "problemType": null, "rpcCode": null,
        "message": "readiness probe tcp 127.0.0.1:1 did not pass", "pending": null});
    let report = json!({
        "schema": "continuity.report/v1",
        "run": {"id": "browser", "harnessVersion": "0", "startedAt": "2026-11-30T00:00:00Z",
                "finishedAt": "2026-11-30T00:00:01Z", "durationMs": 1000, "baseUrl": "http://127.0.0.1:9",
                "agent": "mock", "serverVersion": null, "timeoutMs": 3000, "overallTimeoutMs": 60000,
                "repeat": 1, "persist": "memory", "targets": ["agent", "gateway", "rivet", "nginx"],
                "scenarios": ["native-continuity"], "interrupted": true,
                "logs": [{"name": "sandbox-agent", "path": "stack/sandbox-agent.log"}]},
        "cells": [
            cell("agent", "fail", Some("promptSameHandleAfterRestart"), Some("cells/001-agent/trace.jsonl"), vec![
                phase("createSession", "create_session", "ok", 30, json!(null)),
                phase("restart", "restart", "ok", 150, json!(null)),
                phase("promptSameHandleAfterRestart", "prompt", "fail", 5, http_401),
                phase("promptAfterResume", "prompt", "not_run", 0, json!(null)),
            ]),
            cell("gateway", "pass", None, Some("cells/002-gateway/trace.jsonl"), vec![
                phase("createSession", "create_session", "ok", 30, json!(null)),
                phase("promptSameHandleAfterRestart", "prompt", "ok", 20, json!(null)),
            ]),
            cell("rivet", "error", Some("restart"), None, vec![
                phase("createSession", "create_session", "ok", 30, json!(null)),
                phase("restart", "restart", "fail", 3000, harness),
            ]),
            cell("nginx", "skipped", None, None, vec![]),
        ],
        "totals": {"cells": 4, "passed": 1, "failed": 1, "errored": 1, "skipped": 1}
    });
    // The known bug, judged against an expectations file, with two attempts.
    let mut report = report;
    // What the always-on checker found in that cell: a mark on its timeline.
    report["cells"][0]["checked"] = json!({"checked": [{"invariant": "stream", "status": "broken"}],
        "violations": [{"invariant": "stream", "breach": "duplicate", "hop": "gateway", "since": "server",
            "stream": "sdk-mock-1", "ids": ["3"], "t": 40.0, "phase": "promptSameHandleAfterRestart",
            "detail": "SSE id 3 came twice on one GET of the stream"}]});
    report["cells"][0]["expectation"] = json!({"outcome": "expected", "verdict": "fail",
        "boundary": "promptSameHandleAfterRestart", "signature": null,
        "reason": "sandbox-agent #189", "entry": "ci/expect.toml:1", "failsRun": false});
    let first = report["cells"][0].clone();
    let mut second = first.clone();
    second["attempt"] = json!(2);
    second["retry"] = json!(true);
    first_attempt(&mut report["cells"][0], first, second);
    let report: Report = serde_json::from_value(report).unwrap();
    RunFolder::open(dir, continuity::secret::Redactor::none())
        .write_report(&report)
        .unwrap();
    report
}

/// The DOM chromium rendered in a window `width` pixels wide, or a loud
/// failure naming the install command.
fn rendered_dom(page: &Path, width: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new("chromium")
        .arg(format!("--window-size={width},900"))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            // Containers often have a tiny /dev/shm.
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run chromium ({e}): the HTML report test needs it — {INSTALL}")
        });
    assert!(
        output.status.success(),
        "chromium failed: {}\n(install: {INSTALL})",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The value of `attr` on the element with `id`, from the dumped DOM.
fn attribute(dom: &str, id: &str, attr: &str) -> Option<String> {
    let start = dom.find(&format!("id=\"{id}\""))?;
    let tag_start = dom[..start].rfind('<')?;
    let tag = &dom[tag_start..tag_start + dom[tag_start..].find('>')?];
    let at = tag.find(&format!(" {attr}=\""))? + attr.len() + 3;
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

#[test]
fn the_html_report_draws_every_cell_timeline_and_boundary_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_folder(dir.path());
    let page = dir.path().join("report.html");
    assert!(
        page.is_file(),
        "report.html is written with the other reports"
    );
    let dom = rendered_dom(&page, 1400);

    assert!(
        !dom.contains("id=\"jserror\""),
        "script error: {}",
        dom.split("id=\"jserror\"").nth(1).unwrap_or_default()
    );
    let check = |attr: &str| {
        attribute(&dom, "selfcheck", attr)
            .unwrap_or_else(|| panic!("no self-check in the DOM:\n{dom}"))
    };
    assert_eq!(check("data-status"), "ok", "{dom}");
    assert_eq!(check("data-cells"), report.cells.len().to_string());
    assert_eq!(
        check("data-timelines"),
        "3",
        "every cell that ran has a timeline"
    );
    assert_eq!(
        check("data-boundaries"),
        "2",
        "the failed and the errored cell's boundary"
    );
    assert_eq!(
        check("data-violations"),
        "1",
        "the checker's violation marked on the agent cell's timeline"
    );
    assert!(
        dom.contains("class=\"violation\"") && dom.contains("data-invariant=\"stream\""),
        "the violation's mark names its invariant"
    );
    assert!(
        dom.contains(
            "stream duplicate at the gateway (right at the server), ids 3, stream sdk-mock-1"
        ),
        "the violation's evidence on hover"
    );
    for cell in &report.cells {
        let key = format!("{}/{}", cell.label().replace(' ', ""), cell.point.scenario);
        assert!(
            dom.contains(&format!("data-cell=\"{key}\"")),
            "no row for {key}"
        );
        assert!(
            dom.contains(&format!("data-cell-detail=\"{key}\"")),
            "no detail for {key}"
        );
    }
    assert!(
        dom.contains("data-phase=\"promptSameHandleAfterRestart\" data-boundary=\"true\""),
        "boundary highlighted"
    );
    assert!(
        dom.contains("class=\"restart-window\""),
        "restart window shaded"
    );
    // The expectation beside the verdict, and every attempt of a retried cell.
    assert!(dom.contains("<th>expectation</th>"), "expectation column");
    assert!(
        dom.contains("data-expectation=\"expected\"")
            && dom.contains("expected: sandbox-agent #189"),
        "the agent cell's expectation and its reason"
    );
    assert!(
        dom.contains("#1 fail @ promptSameHandleAfterRestart, #2 (retry) fail"),
        "the attempts of the retried cell"
    );
    assert!(
        dom.contains("POST /v1/acp/sdk-mock-1 → HTTP 401 in 4 ms"),
        "a request mark with status and latency"
    );
    assert!(
        dom.contains("store getSession (rivet) → ok in 16 ms"),
        "a store call's mark with its latency"
    );
    assert!(
        dom.contains("id=\"interrupted\""),
        "the interrupted run says so"
    );
    assert!(
        dom.contains("class=\"mk mk-fail\"") && dom.contains("http 401"),
        "the matrix shows the signature beside its mark"
    );
    assert!(
        dom.contains("nginx is not installed"),
        "the skipped cell's reason"
    );
    assert!(
        dom.contains("Trace not drawn: ") && dom.contains("line 1"),
        "the damaged trace is named, not fatal"
    );
    assert!(
        dom.contains("href=\"cells/001-agent/trace.jsonl\""),
        "a link to the trace"
    );
}

/// Every client that runs the real SDK has its unhandled rejections on
/// the page (the browser's as the hosted SDK's), in a section of their own
/// and in the cell's detail; a cell with no verdict on its restart shows
/// its own mark and `not applicable`, out of the passed count.
#[test]
fn the_html_report_lists_every_sdk_clients_rejections_and_a_not_applicable_cell() {
    let dir = tempfile::tempdir().unwrap();
    let rejected = |phase: &str| {
        json!({"unhandledRejections": [{"kind": "unhandledRejection", "phase": phase,
            "name": "AcpHttpError", "message": "missing required 'agent' query parameter for first POST",
            "status": 400, "problemType": "invalid_request"}]})
    };
    let mut browser_prompt = phase(
        "promptSameHandleAfterRestart",
        "prompt",
        "timeout",
        60,
        json!(
        {"kind": "timeout", "httpStatus": null, "problemType": null, "rpcCode": null,
         "message": "no answer", "pending": "session/prompt"}),
    );
    browser_prompt["detail"] = rejected("promptSameHandleAfterRestart");
    let mut na = phase(
        "loadSessionAfterRestart",
        "recover_session",
        "not_applicable",
        0,
        json!(null),
    );
    na["detail"] = json!({"notApplicable": "the ts-sdk client: no load", "missingCall": "session/load on a new server id"});
    let mut browser = cell(
        "agent",
        "fail",
        Some("promptSameHandleAfterRestart"),
        None,
        vec![
            phase("restart", "restart", "ok", 150, json!(null)),
            browser_prompt,
        ],
    );
    browser["client"] = json!("browser");
    let mut sdk = cell(
        "agent",
        "not_applicable",
        None,
        None,
        vec![
            phase("promptBeforeRestart", "prompt", "ok", 20, json!(null)),
            phase("restart", "restart", "ok", 150, json!(null)),
            na,
        ],
    );
    sdk["client"] = json!("ts-sdk");
    sdk["scenario"] = json!("native-load");
    sdk["reason"] = json!("loadSessionAfterRestart: no call for session/load on a new server id");
    let report = json!({
        "schema": "continuity.report/v2",
        "run": {"id": "sdk", "harnessVersion": "0", "startedAt": "2026-11-30T00:00:00Z",
                "finishedAt": "2026-11-30T00:00:01Z", "durationMs": 1000, "baseUrl": "http://127.0.0.1:9",
                "agent": "mock", "serverVersion": null, "timeoutMs": 3000, "overallTimeoutMs": 60000,
                "repeat": 1, "persist": "memory", "targets": ["agent"],
                "scenarios": ["native-continuity", "native-load"], "interrupted": false, "logs": []},
        "cells": [browser, sdk],
        "totals": {"cells": 2, "passed": 0, "failed": 1, "errored": 0, "skipped": 0, "notApplicable": 1}
    });
    let report: Report = serde_json::from_value(report).unwrap();
    RunFolder::open(dir.path(), continuity::secret::Redactor::none())
        .write_report(&report)
        .unwrap();
    let dom = rendered_dom(&dir.path().join("report.html"), 1400);
    assert!(!dom.contains("id=\"jserror\""), "script error: {dom}");
    assert!(
        dom.contains("id=\"rejections\">Unhandled rejections in the SDK"),
        "{dom}"
    );
    let row = "<td>agent · browser × native-continuity</td><td>promptSameHandleAfterRestart</td><td class=\"mono\">AcpHttpError: missing required 'agent' query parameter for first POST (HTTP 400 invalid_request)</td>";
    assert!(dom.contains(row), "the browser's rejection, listed: {dom}");
    assert!(
        dom.contains("<h3>Unhandled rejections in the SDK</h3>"),
        "in the cell's detail too"
    );
    assert!(
        dom.contains("class=\"mk mk-not_applicable\"") && dom.contains(" not applicable"),
        "the not-applicable cell, drawn and named: {dom}"
    );
    assert!(
        dom.contains("0/1 cells passed (1 failed, 0 errors, 0 skipped, 1 not applicable)"),
        "{dom}"
    );
}

/// The marks are drawn (inline SVG), not emoji: every verdict in the matrix
/// has one with a size, whatever fonts the machine has (this one has no
/// emoji font: `fc-list | grep -i emoji` is empty), and no text on the page
/// needs one. In a narrow window the matrix scrolls in its own box and the
/// page does not.
#[test]
fn the_html_marks_need_no_emoji_font_and_wide_tables_scroll_in_their_box() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = run_folder(dir.path());
    // Every verdict, and a target that never came back.
    let not_back = json!({"kind": "not_back", "httpStatus": null, "problemType": null, "rpcCode": null,
        "message": "the target did not come back within 30 s: readiness probe http GET http://127.0.0.1:9/v1/health = 200 did not pass within 30 s (600 attempts); last error: status 502",
        "pending": null, "cause": {"kind": "http", "httpStatus": 502, "problemType": null, "error": null}});
    for extra in [
        cell(
            "gateway-reload",
            "flaky",
            None,
            None,
            vec![
                phase("createSession", "create_session", "ok", 30, json!(null)),
                phase(
                    "promptSameHandleAfterRestart",
                    "prompt",
                    "ok",
                    20,
                    json!(null),
                ),
            ],
        ),
        cell(
            "rivet-engine",
            "interrupted",
            Some("restart"),
            None,
            vec![
                phase("createSession", "create_session", "ok", 30, json!(null)),
                phase("restart", "restart", "interrupted", 10, json!(null)),
            ],
        ),
        cell(
            "gateway-reset",
            "fail",
            Some("restart"),
            None,
            vec![
                phase("createSession", "create_session", "ok", 30, json!(null)),
                phase("restart", "restart", "fail", 30000, not_back),
            ],
        ),
    ] {
        report.cells.push(serde_json::from_value(extra).unwrap());
    }
    RunFolder::open(dir.path(), continuity::secret::Redactor::none())
        .write_report(&report)
        .unwrap();
    let page = dir.path().join("report.html");
    for width in [1400, 480] {
        let dom = rendered_dom(&page, width);
        let check = |attr: &str| {
            attribute(&dom, "selfcheck", attr)
                .unwrap_or_else(|| panic!("no self-check in the DOM:\n{dom}"))
        };
        assert_eq!(check("data-status"), "ok", "{width} px: {dom}");
        assert_eq!(
            check("data-verdict-cells"),
            report.cells.len().to_string(),
            "one verdict cell a row"
        );
        assert_eq!(
            check("data-verdict-marks"),
            check("data-verdict-cells"),
            "every verdict drawn with a size ({width} px)"
        );
        assert_eq!(check("data-emoji"), "0", "no emoji on the page");
        assert_eq!(
            check("data-page-overflow"),
            "no",
            "the page is no wider than its {width} px window; past it: {}",
            check("data-overflowing")
        );
        assert!(dom.contains("not back: http 502"), "the not_back signature");
        for verdict in ["pass", "fail", "error", "skipped", "flaky", "interrupted"] {
            assert!(
                dom.contains(&format!("class=\"mk mk-{verdict}\"")),
                "the {verdict} mark ({width} px)"
            );
        }
        if width < 600 {
            assert_ne!(
                check("data-scrolling-tables"),
                "0",
                "a matrix wider than the window scrolls in its box"
            );
        }
    }
}
