//! A restart in the middle of a turn, against the real programs: the local
//! stack's gateway reload keeps the connection (the turn completes with all
//! its chunks), a sandbox-agent restart cuts the turn (it fails at once,
//! named); a turn that never ends is lost at its deadline and cancelled; a
//! restart that fails mid-turn is an error and cleanup still cancels the turn.

use crate::support;

use crate::support::{assert_exit, cell, phase, report};
use continuity::exit_codes;

use serde_json::Value;
use std::time::{Duration, Instant};

fn detail<'a>(phase: &'a Value, key: &str) -> &'a Value {
    &phase["detail"][key]
}

#[test]
fn a_gateway_reload_keeps_the_turn_and_an_agent_restart_cuts_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--scenario",
            "restart-mid-turn",
            "--target",
            "agent",
            "--target",
            "gateway-reload",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);

    // nginx SIGHUP: the old worker keeps the POST and the stream; nothing is lost.
    // (Unless a later request met the reload's race on a pooled connection.)
    let reload = cell(&report, "gateway-reload", "restart-mid-turn");
    if support::passed_or_met_the_reload_race(reload) {
        let restart = phase(reload, "restartMidTurn");
        let into = detail(restart, "startedIntoTurnMs").as_u64().unwrap();
        assert!((1500..3000).contains(&into), "{restart}");
        let turn = phase(reload, "awaitTurn");
        assert_eq!(detail(turn, "turnOutcome"), "completed", "{turn}");
        assert_eq!(detail(turn, "stopReason"), "end_turn");
        assert!(
            detail(turn, "turnMs").as_u64().unwrap() > into,
            "the restart landed inside the turn: {turn}"
        );
        let via = detail(turn, "answeredVia").as_str().unwrap();
        assert!(["post", "stream"].contains(&via), "{turn}");
        let history = phase(reload, "turnHistory");
        for (key, value) in [
            ("chunksSent", 40),
            ("chunksStored", 40),
            ("chunksMissing", 0),
            ("chunksDuplicated", 0),
            ("chunksOutOfOrder", 0),
            ("indexGaps", 0),
        ] {
            assert_eq!(detail(history, key), value, "{key}: {history}");
        }
        assert_eq!(phase(reload, "promptAfterTurn")["ok"], true);
    }

    // sandbox-agent restarted: the agent dies with it and the turn fails at once, with its cause.
    let agent = cell(&report, "agent", "restart-mid-turn");
    assert_eq!(agent["verdict"], "fail");
    assert_eq!(agent["failureBoundary"], "awaitTurn");
    let turn = phase(agent, "awaitTurn");
    assert_eq!(detail(turn, "turnOutcome"), "failed", "{turn}");
    assert_ne!(turn["signature"]["kind"], "timeout", "{turn}");
    assert!(
        detail(turn, "turnMs").as_u64().unwrap() < 5000,
        "cut, not lost: {turn}"
    );
    assert!(!detail(turn, "cause").as_str().unwrap().is_empty());
    let history = phase(agent, "turnHistory");
    let sent = detail(history, "chunksSent").as_u64().unwrap();
    assert!(
        (1..40).contains(&sent),
        "the agent died mid-stream: {history}"
    );
    assert_eq!(
        detail(history, "chunksStored").as_u64().unwrap()
            + detail(history, "chunksMissing").as_u64().unwrap()
            - detail(history, "chunksDuplicated").as_u64().unwrap(),
        sent,
        "{history}"
    );
    assert_eq!(phase(agent, "promptAfterTurn")["ok"], false);
    assert!(support::processes_in(&out).is_empty(), "stack left running");
}

const STUCK: &str = r#"name = "stuck"
[[phase]]
name = "connect"
step = "connect"
client = "c"
[[phase]]
name = "create"
step = "create_session"
client = "c"
session = "s"
[[phase]]
name = "start"
step = "prompt"
client = "c"
session = "s"
text = "never ends [[hang]]"
wait = false
turn = "stuck"
[[phase]]
name = "awaitTurn"
step = "await_turn"
turn = "stuck"
timeout_ms = 800
[[cleanup]]
step = "dispose"
client = "c"
"#;

#[test]
fn a_lost_turn_and_a_failed_restart_mid_turn_end_bounded_and_cancel_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[targets.broken]\nrestart = { command = \"echo refused >&2; exit 3\" }\n");
    std::fs::write(&config, text).unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(scenarios.join("stuck.toml"), STUCK).unwrap();
    let failing = STUCK
        .replace("name = \"stuck\"\n[[phase]]", "name = \"failing\"\n[[phase]]")
        .replace(
            "[[phase]]\nname = \"awaitTurn\"",
            "[[phase]]\nname = \"restartMidTurn\"\nstep = \"restart\"\nafter_ms = 200\n[[phase]]\nname = \"awaitTurn\"",
        );
    std::fs::write(scenarios.join("failing.toml"), failing).unwrap();
    let out = dir.path().join("run");
    let started = Instant::now();
    let run = support::continuity_with(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--target",
            "agent",
            "--target",
            "broken",
            "--scenario",
            "stuck",
            "--scenario",
            "failing",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::FAILED);
    assert!(started.elapsed() < Duration::from_secs(60), "bounded");
    let report = report(&out);

    for target in ["agent", "broken"] {
        let lost = phase(cell(&report, target, "stuck"), "awaitTurn");
        assert_eq!(detail(lost, "turnOutcome"), "lost", "{lost}");
        assert_eq!(lost["signature"]["kind"], "timeout");
        assert_eq!(lost["deadlineMs"], 800, "the turn's deadline: {lost}");
        assert_eq!(
            detail(lost, "cancelled"),
            true,
            "the agent ended it: {lost}"
        );
        let pending = lost["signature"]["pending"].as_str().unwrap();
        assert!(
            pending.contains("turn stuck") && pending.contains("POST: no answer"),
            "what the stream and the POST saw: {pending}"
        );
        let took = lost["durationMs"].as_u64().unwrap();
        assert!(
            (800..3000).contains(&took),
            "{took} ms for an 800 ms deadline"
        );
    }

    let failed = cell(&report, "broken", "failing");
    assert_eq!(failed["verdict"], "error", "{failed}");
    assert_eq!(failed["failureBoundary"], "restartMidTurn");
    let restart = phase(failed, "restartMidTurn");
    assert_eq!(restart["signature"]["kind"], "harness");
    assert_eq!(detail(restart, "afterMs"), 200);
    assert_eq!(phase(failed, "awaitTurn")["outcome"], "not_run");

    // Every hung turn was cancelled: two lost ones, and the one the failed restart stranded.
    let record = std::fs::read_to_string(dir.path().join("server/agent-record.jsonl")).unwrap();
    let cancels = record
        .lines()
        .filter(|l| l.contains("\"session/cancel\""))
        .count();
    assert!(
        cancels >= 3,
        "session/cancel sent {cancels} times:\n{record}"
    );
}
