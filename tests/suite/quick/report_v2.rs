//! A committed v2 report (two clients × two stores, `tests/fixtures/report-v2`)
//! read back by `show`, `compare`, `merge`, `merge --expect` and `export`:
//! reports written before cells carried one `Point` still load, every cell
//! keyed by its whole point (client and store included); `rerun` refuses
//! it, as it records no recipe.

use crate::support::{assert_exit, continuity_command};
use continuity::exit_codes;
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2/report.json")
}

fn run(args: &[&str]) -> (Output, String, String) {
    let out = continuity_command(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn show_reads_a_v2_report_and_picks_a_cell_by_client_and_store() {
    let report = fixture();
    let report = report.to_str().unwrap();
    let (out, text, err) = run(&["show", report]);
    assert_exit(&out, exit_codes::OK);
    for row in ["rust", "ts-sdk", "memory", "sqlite"] {
        assert!(text.contains(row), "no {row} in\n{text}\n{err}");
    }
    let (out, text, err) = run(&[
        "show",
        report,
        "--cell",
        "agent/native-continuity/ts-sdk",
        "--persist",
        "memory",
    ]);
    assert_exit(&out, exit_codes::OK);
    assert!(text.contains("◀ boundary"), "{text}\n{err}");
}

#[test]
fn compare_reads_a_v2_report_against_itself_and_along_an_axis() {
    let report = fixture();
    let report = report.to_str().unwrap();
    let (out, text, err) = run(&["compare", report, report]);
    assert_exit(&out, exit_codes::OK);
    assert!(text.contains("0 regressed"), "{text}\n{err}");
    // memory → sqlite: each client's cell against its own, 2 fixed.
    let (out, text, err) = run(&["compare", report, "--axis", "persist"]);
    assert_exit(&out, exit_codes::OK);
    assert!(text.contains("0 regressed, 2 fixed"), "{text}\n{err}");
}

#[test]
fn merge_reads_a_v2_report_and_gates_it_with_expect() {
    let dir = tempfile::tempdir().unwrap();
    let expect = dir.path().join("expect.toml");
    std::fs::write(
        &expect,
        "[[expect]]\nclient = \"*\"\nverdict = \"fail\"\nreason = \"every cell fails in this file\"\n",
    )
    .unwrap();
    let out_dir = dir.path().join("merged");
    let report = fixture();
    let (out, _, err) = run(&[
        "merge",
        "--out",
        out_dir.to_str().unwrap(),
        report.to_str().unwrap(),
    ]);
    // Without --expect, merge only joins: its failed cells are the gate's to judge.
    assert_exit(&out, exit_codes::OK);
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(merged["totals"]["cells"], 4, "{err}");
    let points: Vec<String> = merged["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} {}", c["client"], c["persist"]))
        .collect();
    assert_eq!(
        points,
        [
            r#""rust" "memory""#,
            r#""rust" "sqlite""#,
            r#""ts-sdk" "memory""#,
            r#""ts-sdk" "sqlite""#
        ]
    );
    let gated = dir.path().join("gated");
    let (out, _, err) = run(&[
        "merge",
        "--out",
        gated.to_str().unwrap(),
        "--expect",
        expect.to_str().unwrap(),
        report.to_str().unwrap(),
    ]);
    // The sqlite cells pass against an expected failure: fixed, which fails the gate.
    assert_exit(&out, exit_codes::FAILED);
    let gated: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gated.join("report.json")).unwrap()).unwrap();
    let outcomes: Vec<&str> = gated["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["expectation"]["outcome"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(
        outcomes,
        ["expected", "fixed", "expected", "fixed"],
        "{err}"
    );
}

#[test]
fn export_reads_a_v2_report_and_rerun_refuses_it_saying_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let report = fixture();
    let report = report.to_str().unwrap();
    let trace = dir.path().join("trace.json");
    let (out, _, err) = run(&["export", report, "--chrome-trace", trace.to_str().unwrap()]);
    assert_exit(&out, exit_codes::OK);
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(
        !exported["traceEvents"].as_array().unwrap().is_empty(),
        "{err}"
    );
    // No recipe: nothing runs, no folder is made, and the message says why.
    let rerun_out = dir.path().join("rerun");
    let (out, _, err) = run(&[
        "rerun",
        report,
        "--failed",
        "--out",
        rerun_out.to_str().unwrap(),
    ]);
    assert_exit(&out, exit_codes::USAGE);
    assert!(
        err.contains("cannot rerun run 44653cdb") && err.contains("run.recipe"),
        "{err}"
    );
    assert!(!rerun_out.exists());
}
