//! Shards end to end on the local stack (sandbox-agent 0.4.2 and nginx):
//! `--partition cost:1/2` and `cost:2/2` run as separate runs, `merge`
//! makes them one run folder with the same cells and verdicts as one full
//! run, gated with the committed expectations file and writing the GitHub
//! step summary and annotations — the steps `.github/workflows/continuity.yml`
//! runs. Two targets (agent, gateway) keep it short; every run is real.
//! Also the version axis: two sandbox-agent versions in one run.

use crate::support;

use crate::support::{assert_exit, continuity_with, ran_to_the_end, report};
use continuity::exit_codes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn run(out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--target",
        "agent",
        "--target",
        "gateway",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    continuity_with(&args, &[])
}

/// target × scenario → (verdict, failure boundary).
fn matrix(report: &Value) -> BTreeMap<(String, String), (Value, Value)> {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                (
                    c["target"].as_str().unwrap().to_string(),
                    c["scenario"].as_str().unwrap().to_string(),
                ),
                (c["verdict"].clone(), c["failureBoundary"].clone()),
            )
        })
        .collect()
}

#[test]
fn merged_shards_equal_one_full_run_and_gate_like_it() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);

    // One full run, judged with the committed expectations: the known failure is expected.
    let full = run(&path("full"), &["--expect", support::EXPECTATIONS]);
    assert_exit(&full, exit_codes::OK);
    let full_report = report(&path("full"));
    let agent = full_report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == "agent" && c["scenario"] == "native-continuity")
        .unwrap();
    assert_eq!(agent["verdict"], "fail");
    assert_eq!(agent["expectation"]["outcome"], "expected");
    assert!(
        String::from_utf8_lossy(&full.stdout).contains("❌ expected"),
        "the summary table marks it"
    );

    // Two shards dealt by cost, as the workflow deals them, each a normal
    // run folder with some of the cells.
    let mut dealt = 0;
    for k in 1..=2 {
        let out = path(&format!("shard-{k}"));
        let shard = run(&out, &["--partition", &format!("cost:{k}/2")]);
        assert!(
            ran_to_the_end(&shard),
            "{}",
            String::from_utf8_lossy(&shard.stderr)
        );
        let r = report(&out);
        assert_eq!(r["run"]["partition"], format!("cost:{k}/2"));
        let cells = r["cells"].as_array().unwrap().len();
        assert!(cells > 0, "shard {k} holds cells");
        dealt += cells;
    }
    assert_eq!(dealt, full_report["cells"].as_array().unwrap().len());

    // Merge, gate and summarise as the workflow's last job does.
    let summary = path("summary.md");
    let merged = path("merged");
    let (shard_1, shard_2) = (path("shard-1"), path("shard-2"));
    let args = [
        "merge",
        "--out",
        merged.to_str().unwrap(),
        "--expect",
        support::EXPECTATIONS,
        shard_1.to_str().unwrap(),
        shard_2.to_str().unwrap(),
    ];
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let m = continuity_with(&args, &env);
    assert_exit(&m, exit_codes::OK);
    let merged_report = report(&merged);
    assert_eq!(matrix(&merged_report), matrix(&full_report));
    assert_eq!(merged_report["totals"], full_report["totals"]);
    assert_eq!(merged_report["run"]["shards"].as_array().unwrap().len(), 2);
    for file in ["report.txt", "report.md", "junit.xml"] {
        assert!(merged.join(file).exists(), "{file}");
    }
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("| agent | ❌ expected | ✅ expected |"), "{md}");
    assert!(
        md.contains("passes the gate") && md.contains("`merged`"),
        "{md}"
    );
    // Nothing unexpected, nothing flaky: no annotation.
    assert!(!String::from_utf8_lossy(&m.stdout).contains("::error"));

    // Refusals leave everything as it was: a missing shard, a run merged with itself, an existing folder.
    for (extra, words) in [
        (vec![path("shard-1")], "missing shard cost:2/2"),
        (vec![path("shard-1"), path("shard-1")], "with itself"),
    ] {
        let out = path("refused");
        let mut args = vec![
            "merge".to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        args.extend(extra.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let refused = continuity_with(&args, &[]);
        assert_exit(&refused, exit_codes::USAGE);
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains(words),
            "{}",
            String::from_utf8_lossy(&refused.stderr)
        );
        assert!(!out.exists(), "a refused merge writes nothing");
    }
    let again = continuity_with(&args, &[]);
    assert_exit(&again, exit_codes::USAGE);
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a report"));

    // An expectation the merged run contradicts fails the gate with an annotation.
    let strict = path("strict.toml");
    std::fs::write(
        &strict,
        "[[expect]]\nverdict = \"pass\"\nreason = \"all must pass\"\n",
    )
    .unwrap();
    let out = path("merged-strict");
    let m = continuity_with(
        &[
            "merge",
            "--out",
            out.to_str().unwrap(),
            "--expect",
            strict.to_str().unwrap(),
            path("shard-1").to_str().unwrap(),
            path("shard-2").to_str().unwrap(),
        ],
        &env,
    );
    assert_exit(&m, exit_codes::FAILED);
    let stdout = String::from_utf8_lossy(&m.stdout);
    assert!(stdout.contains("::error title=continuity%3A agent × native-continuity regressed (expected pass)::fail @ promptSameHandleAfterRestart: http 400 invalid_request"), "{stdout}");
}

#[test]
fn two_server_versions_make_one_matrix_with_a_version_axis() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("versions");
    let args = [
        "run",
        "--server-version",
        "0.4.0",
        "--server-version",
        "0.4.2",
        "--target",
        "agent",
        "--scenario",
        "native-continuity",
        "--out",
        out.to_str().unwrap(),
    ];
    let run = continuity_with(&args, &[]);
    assert!(
        ran_to_the_end(&run),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    let versions: Vec<&str> = r["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["serverVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["0.4.0", "0.4.2"]);
    let server = r["run"]["serverVersion"].as_str().unwrap();
    assert!(
        server.contains("0.4.0") && server.contains("0.4.2"),
        "{server}"
    );
    // The stacks served both versions, one switching its server to 0.4.2.
    let logs: String = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("stack"))
        .filter_map(|e| {
            std::fs::read_to_string(e.path().join("sandbox-agent/sandbox-agent.log")).ok()
        })
        .collect();
    assert!(
        logs.contains("continuity: sandbox-agent 0.4.2 ("),
        "no switch to 0.4.2 in the servers' logs:\n{logs}"
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("agent @ 0.4.0") && stdout.contains("agent @ 0.4.2"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### server 0.4.0 → server 0.4.2"), "{md}");
    // A version given twice, or several versions against a URL, are usage errors.
    let twice = continuity_with(
        &[
            "run",
            "--server-version",
            "0.4.2",
            "--server-version",
            "0.4.2",
        ],
        &[],
    );
    assert_exit(&twice, exit_codes::USAGE);
    let url = continuity_with(
        &[
            "run",
            "--base-url",
            "http://127.0.0.1:9",
            "--server-version",
            "0.4.0",
            "--server-version",
            "0.4.2",
        ],
        &[],
    );
    assert_exit(&url, exit_codes::USAGE);
}
