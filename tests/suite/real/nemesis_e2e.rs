//! The nemesis targets on the real local stack (issue 48): each of the ten
//! pauses seen stopping its component's whole process group and waking
//! it (a long one outlasting the client's deadline), the agent process
//! killed under a server that stays up (the error the client gets is
//! upstream's #116), the whole stack rebooted with its data kept, and a
//! chaos cell whose seeded schedule is the same on every repeat, recorded
//! in the report and the trace, drawn again by `rerun` (which refuses a
//! report whose schedule it cannot draw again).

use crate::support;

use continuity::exit_codes;
use serde_json::Value;
use std::path::Path;
use support::{assert_exit, cell, continuity_with, phase};

/// The trace events of a cell (or one of its attempts), in order.
fn trace(out: &Path, cell: &Value) -> Vec<Value> {
    let path = out.join(cell["trace"].as_str().expect("the cell has a trace"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'a>(trace: &'a [Value], ev: &str) -> Vec<&'a Value> {
    trace.iter().filter(|e| e["ev"] == ev).collect()
}

/// A cell that ran against the system: neither the harness's error nor skipped.
fn judged(cell: &Value) {
    assert!(
        !matches!(cell["verdict"].as_str(), Some("error" | "skipped")),
        "{cell}"
    );
}

/// Ten pause targets (Postgres's under `--persist postgres`), phase
/// deadline 4 s: each restart row is a pause seen to take, the trace shows
/// the group stopped and woken; the long pause (6 s) outlasts the prompt's
/// deadline, which times out while the server is frozen.
#[test]
fn every_pause_stops_its_components_whole_group_and_wakes_it() {
    let pauses = [
        "agent-pause",
        "agent-pause-long",
        "gateway-pause",
        "gateway-pause-long",
        "rivet-pause",
        "rivet-pause-long",
        "rivet-engine-pause",
        "rivet-engine-pause-long",
        "store-pause",
        "store-pause-long",
    ];
    let mut args = vec!["--scenario", "native-continuity", "--client", "rust"];
    for target in pauses {
        args.extend(["--target", target]);
    }
    args.extend(["--persist", "postgres", "--timeout-ms", "4000"]);
    let (_dir, out, report) = support::run_to_report(&args);
    for target in pauses {
        let cell = cell(&report, target, "native-continuity");
        judged(cell);
        let restart = &cell["restarts"][0];
        assert_eq!(restart["action"], "pause", "{target}: {restart}");
        assert_eq!(restart["ok"], true, "{target}: {restart}");
        let down = restart["down"].as_str().unwrap();
        assert!(down.contains("every process of it seen stopped"), "{down}");
        let trace = trace(&out, cell);
        let stopped = events(&trace, "pause_start");
        let woke = events(&trace, "pause_end");
        assert_eq!((stopped.len(), woke.len()), (1, 1), "{target}");
        assert!(!stopped[0]["members"].as_array().unwrap().is_empty());
        assert_eq!(woke[0]["ok"], true, "{target}: {}", woke[0]);
        let hold = stopped[0]["holdMs"].as_u64().unwrap();
        match target.ends_with("-long") {
            true => assert_eq!(hold, 6000, "{target}: the deadline and 2 s"),
            false => assert_eq!(hold, 2000, "{target}"),
        }
    }
    // The server frozen past the deadline: the prompt sent into it gave up.
    let long = cell(&report, "agent-pause-long", "native-continuity");
    let prompt = phase(long, "promptSameHandleAfterRestart");
    assert_eq!(prompt["outcome"], "timeout", "{prompt}");
    // Under the deadline, the same prompt only waited.
    let short = cell(&report, "agent-pause", "native-continuity");
    let prompt = phase(short, "promptSameHandleAfterRestart");
    assert_eq!(prompt["outcome"], "ok", "{prompt}");
    assert!(prompt["durationMs"].as_u64().unwrap() >= 1000, "{prompt}");
    // Postgres whole: its backends and workers each lead a group of their
    // own, and are stopped with the postmaster; the store's calls made into
    // the long pause wait past the deadline (they were answered by the
    // backends left running, and the cell passed in 2 s).
    let store = cell(&report, "store-pause-long", "native-continuity");
    let down = store["restarts"][0]["down"].as_str().unwrap();
    assert!(down.contains("descendants outside it"), "{down}");
    let prompt = phase(store, "promptSameHandleAfterRestart");
    assert_eq!(prompt["outcome"], "timeout", "{prompt}");
    assert_eq!(prompt["signature"]["kind"], "persist", "{prompt}");
}

/// The agent process dies, between turns and in the middle of one; the
/// server stays up (same pid and start time, checked by the action, and
/// seen again after the phases). sandbox-agent 0.4.2 answers the next
/// prompt on that server id with a 502 `stream_error` (a broken pipe to
/// the dead agent's stdin) and starts no agent again for it; a new server
/// id gets a new agent, where `session/load` brings the session back.
#[test]
fn the_agent_process_dies_under_a_server_that_stays_up() {
    let (_dir, out, report) = support::run_to_report(&[
        "--target",
        "agent-process",
        "--scenario",
        "native-continuity",
        "--scenario",
        "restart-mid-turn",
        "--scenario",
        "native-load",
        "--client",
        "rust",
        "--timeout-ms",
        "10000",
    ]);
    for scenario in ["native-continuity", "restart-mid-turn"] {
        let cell = cell(&report, "agent-process", scenario);
        judged(cell);
        let restart = &cell["restarts"][0];
        assert_eq!(restart["action"], "kill_agent", "{restart}");
        assert_eq!(restart["ok"], true, "{restart}");
        assert!(
            restart["down"]
                .as_str()
                .unwrap()
                .contains("the server kept running (same pid, same start time)"),
            "{restart}"
        );
        let trace = trace(&out, cell);
        let killed = events(&trace, "agent_kill");
        assert_eq!(killed.len(), 1, "{scenario}");
        assert!(!killed[0]["pids"].as_array().unwrap().is_empty());
        let after = events(&trace, "agent_after");
        assert_eq!(after.len(), 1, "{scenario}");
        assert_eq!(after[0]["serverSame"], true, "{}", after[0]);
        assert_eq!(after[0]["serverPid"], killed[0]["serverPid"]);
    }
    let between = cell(&report, "agent-process", "native-continuity");
    assert_eq!(between["verdict"], "fail", "{between}");
    // Which the server says first is its own race with the kill: the
    // prompt written to the dead agent's stdin (HTTP 502), or the agent's
    // exit it noticed first (`_adapter/agent_exited`, kind `agent_exit`);
    // beside another build the second was seen. Either is the #116 error.
    let prompt = phase(between, "promptSameHandleAfterRestart");
    let signature = &prompt["signature"];
    assert!(
        signature["httpStatus"] == 502 || signature["kind"] == "agent_exit",
        "{prompt}"
    );
    // The recovering client takes that 502 for the agent's death, opens a
    // new server id (a new agent process) and session/loads the session.
    let load = cell(&report, "agent-process", "native-load");
    assert_eq!(load["verdict"], "pass", "{load}");
    let recovered = &phase(load, "loadSessionAfterRestart")["detail"];
    assert_eq!(recovered["agentLost"], true, "{recovered}");
    assert_eq!(recovered["method"], "session/load", "{recovered}");
}

/// Every component down in reverse dependency order, then up in order;
/// the session's history, kept by the Rivet actor, is still all there.
#[test]
fn the_whole_stack_goes_down_and_comes_back_with_its_data() {
    let (_dir, _out, report) = support::run_to_report(&[
        "--target",
        "whole-stack",
        "--scenario",
        "native-continuity",
        "--client",
        "rust",
    ]);
    let cell = cell(&report, "whole-stack", "native-continuity");
    judged(cell);
    let restart = &cell["restarts"][0];
    assert_eq!(restart["action"], "reboot", "{restart}");
    assert_eq!(restart["ok"], true, "{restart}");
    let down = restart["down"].as_str().unwrap();
    let order = [
        "gateway down",
        "agent down",
        "rivet down",
        "rivet-engine down",
        "rivet-engine back",
        "rivet back",
        "agent back",
        "gateway back",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|step| down.find(step).unwrap_or_else(|| panic!("{step}: {down}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "out of order: {down}");
    assert!(down.contains("refused connections"), "seen down: {down}");
    // The history written before the reboot is read back whole after it.
    assert_eq!(phase(cell, "getEvents")["outcome"], "ok", "{cell}");
}

/// One seed, two repeats: the same schedule (in the cell and in each
/// attempt, and in the trace), its faults each seen over; `rerun` draws
/// it again from the recorded seed and this run's settings, and refuses a
/// report whose schedule is not the one it draws. The seed is one the
/// chaos soak found failing (bench/README.md, `bench/chaos.sh`: seed 12,
/// the rust client's native-continuity): its schedule restarts the server
/// after the session was made, so the prompt after the schedule meets
/// sandbox-agent's 400 on a server id it lost, in every repeat and again
/// in the rerun, at the same boundary.
#[test]
fn chaos_runs_one_seeded_schedule_on_every_repeat_and_rerun_draws_it_again() {
    let (dir, out, report) = support::run_to_report(&[
        "--target",
        "chaos",
        "--scenario",
        "native-continuity",
        "--client",
        "rust",
        "--seed",
        "12",
        "--repeat",
        "2",
    ]);
    let cell = cell(&report, "chaos", "native-continuity");
    judged(cell);
    let schedule = &cell["schedule"];
    assert_eq!(
        schedule["faults"].as_array().unwrap().len(),
        3,
        "{schedule}"
    );
    assert!(schedule["windowMs"].as_u64().unwrap() > 0);
    let restarts_the_server = schedule["faults"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["fault"] == "restart" && f["on"] == "agent");
    assert!(restarts_the_server, "the soak's seed 12: {schedule}");
    let boundary = (&cell["verdict"], &cell["failureBoundary"]);
    assert_eq!(
        (boundary.0.as_str(), boundary.1.as_str()),
        (Some("fail"), Some("promptAfterResume")),
        "{cell}"
    );
    let attempts = cell["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    for attempt in attempts {
        assert_eq!(&attempt["schedule"], schedule, "every repeat runs it");
        assert_eq!(
            (&attempt["verdict"], &attempt["failureBoundary"]),
            boundary,
            "every repeat fails where the first did"
        );
        let trace = trace(&out, attempt);
        let recorded = events(&trace, "schedule");
        assert_eq!(recorded.len(), 1);
        assert_eq!(&recorded[0]["schedule"], schedule);
        let ends = events(&trace, "scheduled_end");
        assert_eq!(ends.len(), 3, "every fault ran");
        assert!(ends.iter().all(|e| e["ok"] == true), "{ends:?}");
    }
    let shown = continuity_with(&["show", out.to_str().unwrap()], &[]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("schedule of native-continuity × chaos"),
        "{shown}"
    );

    let _one = support::stack_slot();
    let again = dir.path().join("rerun");
    let reran = continuity_with(
        &[
            "rerun",
            out.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
        &[],
    );
    assert!(again.join("report.json").exists(), "{reran:?}");
    let rerun = support::report(&again);
    let replayed = support::cell(&rerun, "chaos", "native-continuity");
    assert_eq!(&replayed["schedule"], schedule);
    assert_eq!(
        (&replayed["verdict"], &replayed["failureBoundary"]),
        boundary,
        "the rerun fails where the run did"
    );

    // A report whose schedule says otherwise: refused before any cell runs.
    let edited = dir.path().join("edited");
    std::fs::create_dir_all(&edited).unwrap();
    let mut tampered = report.clone();
    tampered["cells"][0]["schedule"]["faults"][0]["atMs"] = 1.into();
    std::fs::write(
        edited.join("report.json"),
        serde_json::to_string(&tampered).unwrap(),
    )
    .unwrap();
    let refused_out = dir.path().join("refused");
    let refused = continuity_with(
        &[
            "rerun",
            edited.to_str().unwrap(),
            "--out",
            refused_out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&refused, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is not the one it ran"), "{stderr}");
    assert!(!refused_out.join("report.json").exists());
}
