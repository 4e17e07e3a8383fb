//! The issue's run, made up: `gateway-reset` × native-continuity and
//! native-load, with continuity's client and the real SDK. The SDK has no
//! call to `session/load`, so its native-load cell prompted before the
//! restart and took no step after it. Each cell's verdict is folded from
//! its phases as the executor folds it; the cell says nothing about the
//! restart, so it is no pass, "Where the fix belongs" cannot tell from it
//! (naming the call), and the totals leave it out.

use serde_json::json;

use super::fixture;
use super::*;

const MISSING: &str = "session/load on a new server id";

fn phase(name: &str, step: &str, verdict: bool, outcome: &str, signature: Option<&str>) -> Value {
    let signature = signature.map(|short| match short {
        "stream closed" => json!({"kind": "stream_closed", "httpStatus": null, "problemType": null,
                                  "rpcCode": null, "message": "connection closed before message completed", "pending": null}),
        _ => json!({"kind": "timeout", "httpStatus": null, "problemType": null, "rpcCode": null,
                    "message": "no answer within 60000 ms", "pending": "session/prompt",
                    "cause": {"kind": "stream_closed", "httpStatus": null, "problemType": null, "error": "reset"}}),
    });
    json!({"name": name, "step": step, "verdict": verdict, "cleanup": false, "outcome": outcome,
           "ok": outcome == "ok", "durationMs": 10, "deadlineMs": 60000, "detail": {},
           "signature": signature})
}

use serde_json::Value;

/// A cell of `client` whose verdict is folded from `phases`.
fn cell(client: &str, scenario: &str, phases: Vec<Value>) -> Cell {
    let mut cell: Cell = serde_json::from_value(json!({
        "target": "gateway-reset", "scenario": scenario, "client": client, "attempt": 1,
        "verdict": "pass", "failureBoundary": null, "reason": null, "durationMs": 100,
        "phases": phases,
        "restarts": [{"phase": "restart", "action": "fault", "ok": true, "restartMs": 1,
                      "readyMs": null, "detail": null}],
        "passRate": null, "attempts": [], "expectation": null
    }))
    .unwrap();
    let folded = fold::fold(&cell.phases, &cell.restarts);
    cell.verdict = folded.verdict;
    cell.failure_boundary = folded.boundary;
    cell.reason = folded.reason;
    cell
}

fn continuity(client: &str, after: &str, signature: &str) -> Cell {
    cell(
        client,
        "native-continuity",
        vec![
            phase("promptBeforeRestart", "prompt", false, "ok", None),
            phase("restart", "restart", false, "ok", None),
            phase(
                "promptSameHandleAfterRestart",
                "prompt",
                true,
                after,
                Some(signature),
            ),
        ],
    )
}

fn load(client: &str, after: Value) -> Cell {
    cell(
        client,
        "native-load",
        vec![
            phase("promptBeforeRestart", "prompt", true, "ok", None),
            phase("restart", "restart", false, "ok", None),
            after,
        ],
    )
}

/// The run of the issue: the SDK's native-load cell could not load.
fn issue_run() -> Report {
    let mut not_loaded = phase(
        "loadSessionAfterRestart",
        "recover_session",
        true,
        "not_applicable",
        None,
    );
    not_loaded["ok"] = json!(false);
    not_loaded["detail"] = json!({
        "notApplicable": "the ts-sdk client: sandbox-agent SDK 0.4.2 has no call to session/load an agent session on a new server id",
        "missingCall": MISSING,
    });
    let cells = vec![
        continuity("rust", "fail", "stream closed"),
        load(
            "rust",
            phase(
                "loadSessionAfterRestart",
                "recover_session",
                true,
                "fail",
                Some("stream closed"),
            ),
        ),
        continuity("ts-sdk", "timeout", "timeout"),
        load("ts-sdk", not_loaded),
    ];
    let mut report = fixture::report();
    report.run.targets = vec!["gateway-reset".into()];
    report.run.scenarios = vec!["native-continuity".into(), "native-load".into()];
    report.totals = Totals::of(&cells);
    report.cells = cells;
    report
}

fn sdk_load(report: &Report) -> &Cell {
    report
        .cells
        .iter()
        .find(|c| {
            c.point.client().is(crate::ClientKind::TsSdk) && c.point.scenario == "native-load"
        })
        .unwrap()
}

#[test]
fn a_cell_that_took_no_step_after_its_restart_is_not_a_pass() {
    let report = issue_run();
    let cell = sdk_load(&report);
    assert_ne!(cell.verdict, Verdict::Pass);
    assert_eq!(cell.verdict.as_str(), "not_applicable");
    let reason = cell.reason.as_deref().unwrap_or_default();
    assert_eq!(
        reason,
        "loadSessionAfterRestart: no call for session/load on a new server id"
    );
}

#[test]
fn where_the_fix_belongs_cannot_tell_from_a_load_that_never_ran() {
    let md = render_markdown(&issue_run());
    let fix = md
        .split("## Where the fix belongs")
        .nth(1)
        .expect("the section")
        .split("\n## ")
        .next()
        .unwrap();
    assert!(
        fix.contains(&format!("cannot tell: the SDK has no call for {MISSING}")),
        "{fix}"
    );
    assert!(!fix.contains("load recovers"), "{fix}");
    // The two clients read the target differently: side by side, each
    // with the cells it rests on.
    assert!(
        fix.contains("- **gateway-reset**: the clients read it differently"),
        "{fix}"
    );
    assert!(fix.contains("  - rust: SDK fails, load fails too → server- or agent-side fix (rests on native-continuity fails @ promptSameHandleAfterRestart (stream closed); native-load fails @ loadSessionAfterRestart (stream closed))"), "{fix}");
    assert!(fix.contains("  - ts-sdk: SDK fails @ promptSameHandleAfterRestart (timeout: reset), load cannot tell: the SDK has no call for session/load on a new server id → cannot tell where the fix belongs (rests on native-continuity fails @ promptSameHandleAfterRestart (timeout: reset); native-load not applicable (loadSessionAfterRestart: no call for session/load on a new server id))"), "{fix}");
}

#[test]
fn the_totals_leave_out_a_cell_with_no_verdict_on_its_restart() {
    let report = issue_run();
    let totals = Totals::of(&report.cells);
    assert_eq!((totals.passed, totals.failed), (0, 3));
    assert_eq!(totals.judged(), 3);
    let md = render_markdown(&report);
    assert!(
        md.contains("- total: 0/1 success (1 not applicable)\n"),
        "{md}"
    );
    let text = table::totals_line(&report);
    assert_eq!(
        text,
        "0/3 cells passed (3 failed, 0 errors, 0 skipped, 1 not applicable)"
    );
    // By itself it fails nothing.
    let mut alone = report.clone();
    alone.cells = vec![sdk_load(&report).clone()];
    assert!(!expect::gate_fails(&alone));
}

/// The run's report.json, with the new verdict, its phase's detail and
/// the totals' count, against the published schema; judged by an entry
/// that pins it.
#[test]
fn the_report_with_a_not_applicable_cell_validates_against_the_schema() {
    let mut report = issue_run();
    expect::Expectations::parse(
        std::path::Path::new("e.toml"),
        "[[expect]]\nscenario = \"native-load\"\nclient = \"ts-sdk\"\nverdict = \"not_applicable\"\n",
    )
    .unwrap()
    .judge(&mut report, expect::GateOptions::default());
    assert_eq!(
        sdk_load(&report).expectation.as_ref().map(|j| j.outcome),
        Some(ExpectOutcome::Expected)
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["totals"]["notApplicable"], 1);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/report.schema.json"
    ))
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}
