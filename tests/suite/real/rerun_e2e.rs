//! `continuity rerun` on the real local stack: a red run (agent and
//! gateway × native-continuity on sandbox-agent 0.4.2: the agent cell
//! fails, docs/findings.md) rerun with `--failed` runs only its failing
//! cell, with the run's seed, and gives the same verdict where it gave it;
//! the rerun of that rerun runs that cell again. What cannot be run as it
//! was (a candidate binary that changed) is refused before anything starts.

use crate::support;

use continuity::exit_codes;
use serde_json::Value;
use std::path::Path;
use support::{assert_exit, cells, continuity_with, report};

/// What a rerun must give again: each cell's point, verdict, boundary
/// and the boundary's signature (kind and HTTP status).
fn verdicts(report: &Value) -> Vec<(String, Value, Value, Value)> {
    cells(report)
        .iter()
        .map(|c| {
            let boundary = c["failureBoundary"].clone();
            let signature = c["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == boundary)
                .map(|p| serde_json::json!([p["signature"]["kind"], p["signature"]["httpStatus"]]))
                .unwrap_or(Value::Null);
            (
                format!("{}/{}", c["target"], c["scenario"]),
                c["verdict"].clone(),
                boundary,
                signature,
            )
        })
        .collect()
}

fn rerun(run: &Path, out: &Path, failed: bool) -> std::process::Output {
    let mut args = vec![
        "rerun",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    if failed {
        args.push("--failed");
    }
    continuity_with(&args, &[])
}

#[test]
fn rerun_failed_runs_only_the_failing_cells_with_the_runs_seed_and_gives_the_same_verdicts() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("run");
    let ran = continuity_with(
        &[
            "run",
            "--target",
            "agent",
            "--target",
            "gateway",
            "--scenario",
            "native-continuity",
            "--jobs",
            "1",
            "--out",
            first.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&ran, exit_codes::FAILED);
    let red = report(&first);
    let failing: Vec<_> = verdicts(&red)
        .into_iter()
        .filter(|(_, verdict, _, _)| verdict != "pass")
        .collect();
    assert_eq!(failing.len(), 1, "one failing cell: {}", red["cells"]);
    assert_eq!(cells(&red).len(), 2);
    let recipe = &red["run"]["recipe"];
    assert_eq!(recipe["targets"], serde_json::json!(["agent", "gateway"]));
    assert_eq!(recipe["clients"], serde_json::json!(["rust"]));

    let again = dir.path().join("rerun");
    let reran = rerun(&first, &again, true);
    assert_exit(&reran, exit_codes::FAILED);
    let stderr = String::from_utf8_lossy(&reran.stderr);
    assert!(
        stderr.contains("rerunning the 1 cell that did not pass")
            && stderr.contains(&format!("--seed {}", red["run"]["seed"])),
        "{stderr}"
    );
    let rerun_report = report(&again);
    // Only the failing cell ran, with the same verdict, boundary and signature.
    assert_eq!(
        verdicts(&rerun_report),
        failing,
        "{}",
        rerun_report["cells"]
    );
    assert_eq!(rerun_report["run"]["seed"], red["run"]["seed"]);
    assert_eq!(rerun_report["run"]["targets"], serde_json::json!(["agent"]));
    let recorded = &rerun_report["run"]["recipe"];
    assert_eq!(recorded["rerunOf"], red["run"]["id"]);
    assert_eq!(recorded["cells"].as_array().unwrap().len(), 1);

    // The rerun of the rerun (every cell of it) is that one cell again.
    let third = dir.path().join("third");
    let reran = rerun(&again, &third, false);
    assert_exit(&reran, exit_codes::FAILED);
    assert_eq!(verdicts(&report(&third)), failing);

    // A candidate build is the user's to give (the report's path is never
    // used), and one whose bytes do not have the recorded digest is
    // refused before anything starts.
    let build = dir.path().join("sandbox-agent");
    std::fs::write(&build, "a build").unwrap();
    let mut edited = red.clone();
    edited["run"]["points"] = serde_json::json!([{
        "axis": "server", "label": "fix", "source": "binary",
        "version": "sandbox-agent 0.4.2", "paths": [build.to_str().unwrap()],
        "sha256": continuity::digest::sha256_hex(b"another build"),
    }]);
    let edited_dir = dir.path().join("edited");
    std::fs::create_dir_all(&edited_dir).unwrap();
    std::fs::write(edited_dir.join("report.json"), edited.to_string()).unwrap();
    let refused_out = dir.path().join("refused");
    let refused = rerun(&edited_dir, &refused_out, true);
    assert_exit(&refused, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--server-bin fix=PATH"), "{stderr}");
    let spec = format!("fix={}", build.display());
    let refused = continuity_with(
        &[
            "rerun",
            edited_dir.to_str().unwrap(),
            "--out",
            refused_out.to_str().unwrap(),
            "--failed",
            "--server-bin",
            &spec,
        ],
        &[],
    );
    assert_exit(&refused, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("the server build `fix`") && stderr.contains("not what the run ran"),
        "{stderr}"
    );
    assert!(!refused_out.exists(), "nothing was started");
    // A run where every cell passed has nothing to rerun with --failed.
    let mut green = red.clone();
    for cell in green["cells"].as_array_mut().unwrap() {
        cell["verdict"] = "pass".into();
    }
    std::fs::write(edited_dir.join("report.json"), green.to_string()).unwrap();
    let nothing = rerun(&edited_dir, &refused_out, true);
    assert_exit(&nothing, exit_codes::OK);
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("nothing to rerun"));
}
