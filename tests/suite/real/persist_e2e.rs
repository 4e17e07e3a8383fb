//! The persistence axis against the real programs: the local stack's
//! Postgres (Debian's package) behind `--persist postgres`, the `client`
//! target (a fresh client over the same store restores by replay, the
//! replay cut as documented for a history past 50 events) and the `store`
//! target (Postgres restarted during a turn: every missing chunk is a write
//! that failed loudly, none lost silently), for continuity's client and the
//! hosted SDK; and a Postgres that is not installed.

use crate::support::{self, assert_exit, cell_where, phase, report};
use continuity::exit_codes;
use serde_json::Value;

/// A run folder Postgres's unprivileged user can reach (a temp dir is 0700,
/// and as root Postgres runs as the `postgres` user).
fn reachable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn number(phase: &Value, key: &str) -> u64 {
    phase["detail"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {phase}"))
}

/// The seed's promises after a restart of the client, checked on the cell:
/// the session continues, the replay is the newest 50 events of a longer
/// history cut at 12000 characters, and the history is intact.
fn assert_restored(cell: &Value) {
    assert_eq!(cell["verdict"], "pass", "{cell}");
    let replay = phase(cell, "replayCheck");
    assert!(number(replay, "historyEvents") > 50, "{replay}");
    assert_eq!(replay["detail"]["replayCutByEvents"], true, "{replay}");
    assert!(number(replay, "replayEvents") <= 50, "{replay}");
    // The SDK stops before 12000 characters, then appends `[history truncated]`.
    assert!(number(replay, "replayChars") <= 12_000 + 20, "{replay}");
    let events = phase(cell, "getEvents");
    assert_eq!(events["detail"]["writes"], "intact", "{events}");
    assert_eq!(number(events, "eventsLost"), 0, "{events}");
}

#[test]
fn postgres_with_the_client_and_store_targets_for_continuitys_client() {
    let _one = support::stack_slot();
    let dir = reachable_tempdir();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--persist",
            "postgres",
            "--persist",
            "memory",
            "--target",
            "client",
            "--target",
            "store",
            "--scenario",
            "client-restart",
            "--scenario",
            "restart-mid-turn",
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    // Memory loses the session on a client restart: the run fails.
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    assert_eq!(report["run"]["persist"], "postgres, memory");

    // A fresh client over the same Postgres restores the session by replay.
    assert_restored(cell_where(
        &report,
        &[
            ("target", "client"),
            ("scenario", "client-restart"),
            ("persist", "postgres"),
        ],
    ));

    // Over a fresh in-memory store there is nothing to restore: the record
    // is gone, and the old client's writes with it, silently.
    let memory = cell_where(
        &report,
        &[
            ("target", "client"),
            ("scenario", "client-restart"),
            ("persist", "memory"),
        ],
    );
    assert_eq!(memory["failureBoundary"], "promptAfterRestart", "{memory}");
    let after = phase(memory, "promptAfterRestart");
    assert!(
        after["signature"]["message"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{after}"
    );
    let events = phase(memory, "getEvents");
    assert_eq!(events["detail"]["writes"], "lostSilently", "{events}");
    assert!(number(events, "writesLostSilently") > 50, "{events}");

    // Postgres stopped and started 1.5 s into a 4 s turn: the turn ends,
    // and every chunk missing from the history is a write the store refused
    // (the client only logged it), none silently gone.
    let store = cell_where(
        &report,
        &[
            ("target", "store"),
            ("scenario", "restart-mid-turn"),
            ("persist", "postgres"),
        ],
    );
    let restart = phase(store, "restartMidTurn");
    assert_eq!(restart["outcome"], "ok", "{restart}");
    assert_eq!(
        phase(store, "awaitTurn")["detail"]["turnOutcome"],
        "completed"
    );
    let history = phase(store, "turnHistory");
    assert_eq!(number(history, "chunksSent"), 40, "{history}");
    assert_eq!(number(history, "writesLostSilently"), 0, "{history}");
    assert_eq!(
        number(history, "chunksMissing"),
        number(history, "writesFailedLoudly"),
        "{history}"
    );
    // The store target restarts a store server: memory has none, so the
    // cell would say nothing about a restart.
    let serverless = cell_where(
        &report,
        &[
            ("target", "store"),
            ("scenario", "restart-mid-turn"),
            ("persist", "memory"),
        ],
    );
    assert_eq!(serverless["verdict"], "not_applicable", "{serverless}");
    assert!(
        serverless["reason"]
            .as_str()
            .unwrap()
            .contains("no store server"),
        "{serverless}"
    );
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// The hosted SDK: the RivetKit runner holding it is SIGKILLed and started
/// again; its fresh `SandboxAgent` restores the session from Postgres.
#[test]
fn postgres_with_the_client_target_for_the_hosted_sdk() {
    let _one = support::stack_slot();
    let dir = reachable_tempdir();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "ts-sdk",
            "--persist",
            "postgres",
            "--target",
            "client",
            "--scenario",
            "client-restart",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let report = report(&out);
    let cell = &report["cells"][0];
    assert_eq!(
        (cell["target"].as_str(), cell["client"].as_str()),
        (Some("client"), Some("ts-sdk"))
    );
    let events = phase(cell, "getEvents");
    if support::passed_or_lost_the_tail(cell) {
        assert_exit(&run, exit_codes::OK);
        assert_restored(cell);
        // Present, so the agent's sent record was matched against the history.
        assert_eq!(number(events, "eventsNeverWritten"), 0, "{events}");
    } else {
        // No write refused by Postgres: the chunks never reached the store.
        assert_exit(&run, exit_codes::FAILED);
        assert_eq!(events["detail"]["writesFailedLoudly"], 0, "{events}");
    }
    let restart = phase(cell, "restart");
    assert_eq!(
        restart["detail"]["action"], "managed",
        "the runner's process: {restart}"
    );
    let prompt = phase(cell, "promptAfterRestart");
    assert_eq!(
        prompt["detail"]["handle"], "fetched after the actor woke",
        "{prompt}"
    );
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// No Postgres where it is looked for: its cells are skipped with the
/// install command, the other stores' cells run, nothing is left running.
#[test]
fn a_missing_postgres_skips_its_cells_with_the_install_command() {
    let _one = support::stack_slot();
    let dir = reachable_tempdir();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--persist",
            "postgres",
            "--persist",
            "sqlite",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("CONTINUITY_POSTGRES_BIN", "/nonexistent/postgresql/bin")],
    );
    let report = report(&out);
    let missing = cell_where(
        &report,
        &[
            ("target", "agent"),
            ("scenario", "native-continuity"),
            ("persist", "postgres"),
        ],
    );
    assert_eq!(missing["verdict"], "skipped", "{missing}");
    let reason = missing["reason"].as_str().unwrap();
    assert!(
        reason.contains("postgres") && reason.contains("apt-get install -y postgresql"),
        "{reason}"
    );
    let sqlite = cell_where(
        &report,
        &[
            ("target", "agent"),
            ("scenario", "native-continuity"),
            ("persist", "sqlite"),
        ],
    );
    assert_ne!(sqlite["verdict"], "skipped", "{sqlite}");
    assert!(run.status.code().is_some(), "exited, not killed");
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Postgres killed mid-run once made every later cell a FAIL on
/// sandbox-agent (`persist (postgres): … connection refused`). The store
/// is continuity's own part: nobody restarted it, so those cells are the
/// harness's `error` naming Postgres, and the run exits 2, not 1.
#[test]
fn a_postgres_killed_mid_run_makes_later_cells_errors_naming_it() {
    use support::spawned::{exit_code, first_event, kill_group, pids_with, spawn_run, stderr_of};
    let _one = support::stack_slot();
    let dir = reachable_tempdir();
    let out = dir.path().join("run");
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--persist",
            "postgres",
            "--target",
            "agent",
            "--target",
            "gateway",
            "--scenario",
            "native-continuity",
            "--scenario",
            "recreate-rehydrate",
            "--jobs",
            "1",
        ],
    );
    let finished = first_event(&events, "cell-finished");
    let postmaster = pids_with(&out, "bin/postgres");
    assert_eq!(postmaster.len(), 1, "{:?}", support::processes_in(&out));
    kill_group(postmaster[0]);
    let code = exit_code(&mut child);
    let stderr = stderr_of(&mut child);
    let report = report(&out);
    // The cell that finished before the kill keeps its own verdict (0.4.2
    // fails native-continuity on the agent restart); every later cell met
    // a Postgres nobody restarted: the harness's error, naming it.
    let first = &finished["cell"];
    let later: Vec<&Value> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["target"] != first["target"] || c["scenario"] != first["scenario"])
        .collect();
    assert_eq!(later.len(), 3, "{report}");
    for cell in later {
        assert_eq!(cell["verdict"], "error", "{cell}");
        let boundary = phase(cell, cell["failureBoundary"].as_str().unwrap());
        let signature = &boundary["signature"];
        assert_eq!(signature["component"], "postgres", "{boundary}");
        assert_eq!(signature["kind"], "harness", "{boundary}");
        let message = signature["message"].as_str().unwrap();
        assert!(
            message.starts_with("postgres (the session store): "),
            "{message}"
        );
    }
    assert_eq!(code, Some(exit_codes::INCOMPLETE.into()), "{stderr}");
    assert!(
        stderr.contains("continuity's own postgres (the session store) failed under"),
        "{stderr}"
    );
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Ctrl-C while a fresh stack's Postgres runs `initdb` once ended the run
/// with no report.json at all: the stack's start-up was cut outside any
/// path that writes one. Any stop during start-up now ends in the report
/// of an interrupted run (no cell), exit 2, nothing left running.
#[test]
#[allow(unsafe_code)]
fn ctrl_c_during_initdb_still_writes_the_report() {
    use support::spawned::{exit_code, pids_with, spawn_run, stderr_of};
    let _one = support::stack_slot();
    let dir = reachable_tempdir();
    let out = dir.path().join("run");
    let (mut child, _events) = spawn_run(
        &out,
        &[
            "--persist",
            "postgres",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--jobs",
            "1",
        ],
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while pids_with(&out, "initdb").is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "no initdb within two minutes"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill(2) on the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let code = exit_code(&mut child);
    let stderr = stderr_of(&mut child);
    assert_eq!(code, Some(exit_codes::INCOMPLETE.into()), "{stderr}");
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], true, "{report}");
    assert_eq!(report["cells"].as_array().unwrap().len(), 0, "{report}");
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}
