//! The always-on checker end to end, through a stand-in gateway
//! (`support/standin-gateway.mjs` in place of nginx on the local stack)
//! that, once after each restart, passes one SSE event on twice, swaps it
//! with the next, or drops it. Every client's `recreate-rehydrate` cell
//! fails with the stream invariant broken at the gateway hop, and so does
//! the `native-load` cell of continuity's client (the only one that takes
//! its load step), in the phase the client read the event in (for an
//! SDK, that phase or one after it); `continuity check`
//! on the run says the same. Passing everything through, no cell of any
//! client breaks an invariant over `--repeat 5`.

use crate::support::{assert_exit, continuity_with, phase, report, stack_slot};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn standin() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/support/standin-gateway.mjs")
        .display()
        .to_string()
}

/// `continuity run ARGS` on a local stack whose gateway is the stand-in
/// in `mode`: the temporary folder, the run folder and its report.
fn through_standin(mode: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf, Value) {
    let _one = stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut args = args.to_vec();
    args.extend([
        "--target",
        "gateway",
        "-j",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let gateway = standin();
    let run = continuity_with(
        &args,
        &[("CONTINUITY_NGINX", &gateway), ("STANDIN_GATEWAY", mode)],
    );
    assert!(out.join("report.json").exists(), "{run:?}");
    let report = report(&out);
    (dir, out, report)
}

/// The runs every mutation is tried with: continuity's client on both
/// scenarios, the SDK in the actor and in the page on `recreate-rehydrate`
/// (neither takes `native-load`'s load step).
const RUNS: [&[&str]; 2] = [
    &[
        "run",
        "--client",
        "rust",
        "--scenario",
        "recreate-rehydrate",
        "--scenario",
        "native-load",
    ],
    &[
        "run",
        "--client",
        "ts-sdk",
        "--client",
        "browser",
        "--persist",
        "memory",
        "--scenario",
        "recreate-rehydrate",
    ],
];

/// The phase after the restart in which each scenario's next update comes.
fn after_restart(scenario: &str) -> &'static str {
    match scenario {
        "recreate-rehydrate" => "promptRehydrate",
        "native-load" => "loadSessionAfterRestart",
        other => panic!("no phase known for {other}"),
    }
}

/// The phase in which the mutated event was read: the phase after the
/// restart where the next update comes, or, for an SDK client, one after
/// it. The SDK's prompt resolves before its stream has caught up with the
/// turn (docs/persistence.md, "A turn's tail"), and on a busy machine the
/// browser read the event past the gap while the next phase
/// (`destroyAfter`) ran: the checker blames the phase the client read it
/// in. Never a phase before the restart's next update.
fn breach_phase<'a>(cell: &'a Value, scenario: &str) -> &'a str {
    let names: Vec<&str> = cell["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let boundary = cell["failureBoundary"].as_str().expect("a boundary");
    let first = after_restart(scenario);
    let at = |name: &str| names.iter().position(|n| *n == name);
    let sdk = cell["client"].is_string();
    match sdk {
        true => assert!(
            at(boundary) >= at(first),
            "{boundary} before {first}: {cell}"
        ),
        false => assert_eq!(boundary, first, "{cell}"),
    }
    boundary
}

/// Every cell failed at its phase after the restart with the stream
/// invariant's `breach` at the gateway hop.
fn assert_each_cell_broke(report: &Value, breach: &str) -> usize {
    let cells = report["cells"].as_array().unwrap();
    for cell in cells {
        let scenario = cell["scenario"].as_str().unwrap();
        assert_eq!(cell["verdict"], "fail", "{cell}");
        let boundary = breach_phase(cell, scenario);
        let signature = &phase(cell, boundary)["signature"];
        assert_eq!(signature["kind"], "integrity", "{cell}");
        let violation = &signature["integrity"];
        assert_eq!(violation["invariant"], "stream", "{cell}");
        assert_eq!(violation["breach"], breach, "{cell}");
        assert_eq!(violation["hop"], "gateway", "{cell}");
        assert_eq!(violation["since"], "server", "{cell}");
        assert_eq!(violation["phase"], boundary, "{cell}");
        assert!(
            violation["stream"].is_string() && violation["ids"][0].is_string(),
            "{cell}"
        );
        // The report's own record of every invariant: none unknown here.
        let checked = cell["checked"]["checked"].as_array().unwrap();
        assert!(checked.iter().all(|c| c["status"] != "unknown"), "{cell}");
    }
    cells.len()
}

fn mutated(mode: &str, breach: &str) {
    let mut clients = Vec::new();
    for args in RUNS {
        let (_tmp, out, report) = through_standin(mode, args);
        let cells = assert_each_cell_broke(&report, breach);
        assert_eq!(cells, 2, "{report}");
        for cell in report["cells"].as_array().unwrap() {
            clients.push(cell["client"].as_str().unwrap_or("rust").to_string());
        }
        // Checked again from the folder: the same verdicts, the same exit.
        let check = continuity_with(&["check", out.to_str().unwrap()], &[]);
        assert_exit(&check, 1);
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(
            text.contains(&format!("stream {breach} at gateway")),
            "{text}"
        );
    }
    clients.sort();
    clients.dedup();
    assert_eq!(clients, ["browser", "rust", "ts-sdk"]);
}

#[test]
fn an_event_passed_on_twice_after_a_restart_is_a_duplicate_at_the_gateway() {
    mutated("duplicate", "duplicate");
}

#[test]
fn two_events_swapped_after_a_restart_are_reordered_at_the_gateway() {
    mutated("reorder", "reordered");
}

#[test]
fn an_event_dropped_after_a_restart_is_a_gap_at_the_gateway() {
    mutated("drop", "gap");
}

#[test]
fn a_gateway_that_passes_everything_on_breaks_no_invariant_over_five_repeats() {
    for args in RUNS {
        let mut args = args.to_vec();
        args.extend(["--repeat", "5"]);
        let (_tmp, _out, report) = through_standin("pass", &args);
        for cell in report["cells"].as_array().unwrap() {
            let attempts: Vec<&Value> = match cell["attempts"].as_array() {
                Some(all) if !all.is_empty() => all.iter().collect(),
                _ => vec![cell],
            };
            assert_eq!(attempts.len(), 5, "{cell}");
            for attempt in attempts {
                let checked = &attempt["checked"];
                assert!(checked.is_object(), "{attempt}");
                assert_eq!(checked["violations"], Value::Null, "{attempt}");
                for status in checked["checked"].as_array().unwrap() {
                    assert_eq!(status["status"], "valid", "{attempt}");
                }
                for phase in attempt["phases"].as_array().unwrap() {
                    assert_ne!(phase["signature"]["kind"], "integrity", "{attempt}");
                }
            }
        }
    }
}
