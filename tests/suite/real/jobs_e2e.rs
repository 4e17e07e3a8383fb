//! `run --jobs N` end to end on the local stack: the same matrix with
//! `--jobs 1` and `--jobs 2` gives the same cells in the same order with the
//! same verdicts (judged by the committed expectations), the second on two
//! stacks at once; nothing of either is left running. Also `--jobs`'s bad
//! input. Three targets × two scenarios keep it short; every run is real.

use crate::support;

use crate::support::{assert_exit, continuity_with, processes_in, report};
use serde_json::Value;
use std::path::Path;

fn run(out: &Path, jobs: &str) -> std::process::Output {
    continuity_with(
        &[
            "run",
            "--jobs",
            jobs,
            "--target",
            "agent",
            "--target",
            "gateway",
            "--target",
            "gateway-reload",
            "--scenario",
            "native-continuity",
            "--scenario",
            "sandbox-reconnect",
            "--expect",
            support::EXPECTATIONS,
            "--message-format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    )
}

/// Each cell in report order: target, scenario, verdict, boundary,
/// expectation, attempts. A cell the expectations say may go either way (a
/// reload's close can cross the next POST: `verdict = "flaky"`) shows
/// that instead of its verdict and boundary, once it is judged expected:
/// a pass or the one failure its entry names, never another.
fn outcomes(report: &Value) -> Vec<Value> {
    support::cells(report)
        .iter()
        .map(|c| {
            if c["expectation"]["verdict"] == "flaky" {
                assert_eq!(c["expectation"]["outcome"], "expected", "{c}");
                return serde_json::json!([
                    c["target"],
                    c["scenario"],
                    "may vary",
                    Value::Null,
                    c["expectation"]["outcome"],
                    c["attempts"].as_array().map(Vec::len),
                ]);
            }
            serde_json::json!([
                c["target"],
                c["scenario"],
                c["verdict"],
                c["failureBoundary"],
                c["expectation"]["outcome"],
                c["attempts"].as_array().map(Vec::len),
            ])
        })
        .collect()
}

/// The JSON event lines on stdout: (type, index) in the order they came.
fn events(run: &std::process::Output) -> Vec<(String, u64)> {
    String::from_utf8_lossy(&run.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| Some((e["type"].as_str()?.to_string(), e["index"].as_u64()?)))
        .collect()
}

/// Whether some cell started while another was started and not yet judged
/// (its verdict phases over; its deferred cleanup may still run beside the next).
fn overlapped(events: &[(String, u64)]) -> bool {
    let mut running = 0;
    for (kind, _) in events {
        match kind.as_str() {
            "cell-started" if running > 0 => return true,
            "cell-started" => running += 1,
            "cell-judged" => running -= 1,
            _ => {}
        }
    }
    false
}

/// On one stack, a cell's closing DELETEs run out beside the next cell
/// (which starts before the cell is finished), each still timed to its
/// bound: 0.4.2 never answers a DELETE for a live server id, so it ends in
/// the SDK's 2 s timeout, and none is ever cut by the next cell's restart
/// (a DELETE answers or times out, never fails on the wire): a server
/// restart or gateway stop waits for them first (`cleanup_wait`, when the
/// queue had no other cell to give that worker); a gateway reload, which
/// lets requests in flight finish, never does.
fn deferred_deletes_are_never_cut(out: &Path, report: &Value, events: &[(String, u64)]) {
    let at = |kind: &str, index: u64| {
        events
            .iter()
            .position(|(k, i)| k == kind && *i == index)
            .unwrap_or_else(|| panic!("no {kind} {index}: {events:?}"))
    };
    let cells = report["cells"].as_array().unwrap();
    let mut unanswered = 0;
    for (n, cell) in cells.iter().enumerate() {
        let index = n as u64 + 1;
        let trace = support::trace_of(out, cell);
        let mut timed_out = false;
        for delete in trace.iter().filter(|e| e["method"] == "DELETE") {
            match delete["error"].as_str() {
                None => assert!(delete["status"].is_u64(), "{delete}"),
                Some("timeout") => {
                    timed_out = true;
                    assert!(delete["ms"].as_f64().unwrap() >= 1900.0, "{delete}");
                }
                Some(_) => panic!("a DELETE cut short: {delete}"),
            }
        }
        if timed_out {
            unanswered += 1;
            let dispose_ms: Vec<u64> = cell["phases"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["step"] == "dispose" && p["cleanup"] == true)
                .filter_map(|p| p["durationMs"].as_u64())
                .collect();
            assert!(
                dispose_ms.iter().any(|ms| *ms >= 1900),
                "the deferred dispose keeps its measured time: {dispose_ms:?}"
            );
            let (judged, finished) = (at("cell-judged", index), at("cell-finished", index));
            let last_started = events.iter().rposition(|(k, _)| k == "cell-started");
            if last_started.is_some_and(|last| last > judged) {
                assert!(
                    events[judged..finished]
                        .iter()
                        .any(|(k, _)| k == "cell-started"),
                    "the next cell starts while cell {index}'s DELETE runs out: {events:?}"
                );
            }
        }
        if trace.iter().any(|e| e["ev"] == "cleanup_wait") {
            assert_ne!(cell["target"], "gateway-reload", "a reload cuts nothing");
        }
    }
    assert!(
        unanswered >= 2,
        "{unanswered} cells with an unanswered DELETE"
    );
}

#[test]
fn two_jobs_give_the_cells_and_verdicts_of_one() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));

    let first = run(&one, "1");
    assert_exit(&first, 0);
    let second = run(&two, "2");
    assert_exit(&second, 0);

    let (one_report, two_report) = (report(&one), report(&two));
    let expected = outcomes(&one_report);
    assert_eq!(expected.len(), 6, "{expected:?}");
    assert!(
        expected.iter().any(|c| c[2] == "fail") && expected.iter().any(|c| c[2] == "pass"),
        "the subset holds both verdicts: {expected:?}"
    );
    assert_eq!(
        outcomes(&two_report),
        expected,
        "same cells, order, verdicts"
    );
    let varies = |r: &Value| {
        r["cells"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["expectation"]["verdict"] == "flaky" && c["verdict"] != "pass")
    };
    if !varies(&one_report) && !varies(&two_report) {
        assert_eq!(two_report["totals"], one_report["totals"]);
    }
    assert_eq!(two_report["totals"]["cells"], one_report["totals"]["cells"]);
    for r in [&one_report, &two_report] {
        let (floor, overhead) = (&r["run"]["floorMs"], &r["run"]["overheadMs"]);
        assert!(
            floor.as_u64().unwrap() > 0 && overhead.is_u64(),
            "{}",
            r["run"]
        );
    }

    // --jobs 1 runs a cell after the other; --jobs 2 two at a time, on two stacks.
    assert!(!overlapped(&events(&first)), "{:?}", events(&first));
    deferred_deletes_are_never_cut(&one, &one_report, &events(&first));
    assert!(overlapped(&events(&second)), "{:?}", events(&second));
    assert!(!one.join("stack-2").exists());
    let logs: Vec<&str> = two_report["run"]["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert!(logs.contains(&"stack-2 sandbox-agent"), "{logs:?}");
    // Each stack served cells: a session's ACP or a sandbox cell's calls
    // (which cells a stack takes is the queue's choice, not the test's).
    for stack in ["stack", "stack-2"] {
        let served = std::fs::read_to_string(two.join(stack).join("gateway/access.log")).unwrap();
        assert!(
            ["/v1/acp/", "/v1/processes", "/v1/fs/"]
                .iter()
                .any(|call| served.contains(call)),
            "{stack} served no cell:\n{served}"
        );
    }

    for out in [&one, &two] {
        let left = processes_in(out);
        assert!(left.is_empty(), "left running: {left:?}");
        for stack in ["stack", "stack-2"] {
            assert!(
                !out.join(stack).join("stack.json").exists(),
                "{stack}/stack.json says something still runs"
            );
        }
    }
}

#[test]
fn jobs_must_be_a_positive_count_and_never_start_idle_stacks() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0", "-1", "two", "65"] {
        let out = dir.path().join(format!("bad{bad}"));
        let flag = format!("--jobs={bad}");
        let run = continuity_with(&["run", &flag, "--out", out.to_str().unwrap()], &[]);
        assert_exit(&run, 64);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains("--jobs"), "{bad}: {stderr}");
        assert!(!out.join("stack").exists(), "{bad}: nothing started");
    }

    let _serial = support::stack_slot();
    let out = dir.path().join("one-cell");
    let run = continuity_with(
        &[
            "run",
            "--jobs",
            "5",
            "--target",
            "gateway",
            "--scenario",
            "native-continuity",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, 0);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("--jobs 5: 1 cell to run, so 1 worker"),
        "{stderr}"
    );
    assert!(out.join("stack").exists() && !out.join("stack-2").exists());
    assert_eq!(report(&out)["cells"].as_array().unwrap().len(), 1);
}

/// A deployment (a managed sandbox-agent from a config file) with two
/// `independent` targets: `--jobs 2` runs their cells side by side, the
/// other target's alone, and gives `--jobs 1`'s cells and verdicts.
#[test]
fn independent_targets_of_a_deployment_run_side_by_side() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let mut text = std::fs::read_to_string(&config).unwrap();
    for hook in ["hook-a", "hook-b"] {
        text.push_str(&support::independent_component(hook));
    }
    std::fs::write(&config, text).unwrap();
    let run = |out: &Path, jobs: &str| {
        continuity_with(
            &[
                "run",
                "--config",
                config.to_str().unwrap(),
                "--jobs",
                jobs,
                "--scenario",
                "native-continuity",
                "--message-format",
                "json",
                "--out",
                out.to_str().unwrap(),
            ],
            &[],
        )
    };
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let first = run(&one, "1");
    let second = run(&two, "2");
    assert_eq!(first.status.code(), second.status.code());
    let expected = outcomes(&report(&one));
    let targets: Vec<&str> = expected.iter().filter_map(|c| c[0].as_str()).collect();
    assert_eq!(targets, ["agent", "hook-a", "hook-b"]);
    assert_eq!(outcomes(&report(&two)), expected);
    let (one_events, two_events) = (events(&first), events(&second));
    assert!(!overlapped(&one_events), "{one_events:?}");
    // hook-b (cell 3) starts before hook-a (cell 2) finishes; agent (cell 1) ran alone.
    let at = |events: &[(String, u64)], kind: &str, index: u64| {
        events
            .iter()
            .position(|(k, i)| k == kind && *i == index)
            .unwrap()
    };
    assert!(
        at(&two_events, "cell-started", 3) < at(&two_events, "cell-judged", 2),
        "{two_events:?}"
    );
    assert!(
        at(&two_events, "cell-finished", 1) < at(&two_events, "cell-started", 2),
        "{two_events:?}"
    );
    // Their processes' output is kept in each run's folder, beside its report.
    for out in [&one, &two] {
        for hook in ["hook-a", "hook-b"] {
            let log = out.join("logs").join(format!("{hook}.log"));
            assert!(log.is_file(), "{}", log.display());
        }
    }
    let left = processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}
