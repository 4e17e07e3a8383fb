//! The harness stays trustworthy under repeats, signals and hostile input:
//! repeated attempts never wait on cleanup nothing drives, reports survive
//! secrets that look like their own words, names from user text never
//! write outside the run folder, signals keep what finished, and stack
//! folders are found and stopped whatever their state file says. Each test
//! runs the real binary, most against the real local stack or server.

use crate::support;
use crate::support::spawned::{exit_code, first_event, spawn_run, stderr_of};
use crate::support::{assert_exit, cell, continuity_with, report};
use continuity::exit_codes;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// `continuity run ARGS --out DIR` on the local stack.
fn run_local(out: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    continuity_with(&all, env)
}

/// Each attempt of `cell`: its verdict and its reason.
fn attempts(cell: &Value) -> Vec<(String, String)> {
    cell["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("no attempts: {cell}"))
        .iter()
        .map(|a| {
            (
                a["verdict"].as_str().unwrap_or("?").to_string(),
                a["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// A repeated cell once waited for the fence its previous attempt's
/// deferred DELETEs held and nothing drove, until the overall deadline
/// cut attempt 2 short ("interrupted during restart"). The deadline here
/// is a hang guard far above two attempts (about 3 s each).
#[test]
fn a_repeated_cell_on_the_local_stack_runs_every_attempt() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--repeat",
            "2",
            "--jobs",
            "1",
            "--target",
            "gateway",
            "--scenario",
            "native-continuity",
            "--overall-timeout-ms",
            "120000",
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], false, "{report}");
    let cell = cell(&report, "gateway", "native-continuity");
    assert_eq!(
        attempts(cell),
        [
            ("pass".into(), String::new()),
            ("pass".into(), String::new())
        ],
        "{cell}"
    );
}

/// `--repeat` runs passes of the matrix: one cell's repeats came back to
/// back on one stack, where each Rivet engine restart came back slower
/// than the one before. Each cell's attempts are still numbered in the
/// order they ran, and folded into one record. The target is nginx's stop
/// and start, which passes both scenarios every time: its close of the
/// client's idle connections reaches the client before nginx is back (a
/// reload's close can cross the next POST, `gateway-reload-idle`).
#[test]
fn repeats_run_pass_by_pass_and_fold_into_one_cell_each() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--repeat",
            "2",
            "--jobs",
            "1",
            "--target",
            "gateway",
            "--scenario",
            "native-continuity",
            "--scenario",
            "recreate-rehydrate",
            "--message-format",
            "json",
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    let lines: Vec<Value> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let started: Vec<(&str, u64)> = lines
        .iter()
        .filter(|l| l["type"] == "cell-started")
        .map(|l| {
            (
                l["scenario"].as_str().unwrap(),
                l["attempt"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        started,
        [
            ("native-continuity", 1),
            ("recreate-rehydrate", 1),
            ("native-continuity", 2),
            ("recreate-rehydrate", 2)
        ]
    );
    let finished = lines
        .iter()
        .filter(|l| l["type"] == "cell-finished")
        .count();
    assert_eq!(finished, 2, "one record per cell");
    let report = report(&out);
    for scenario in ["native-continuity", "recreate-rehydrate"] {
        let cell = cell(&report, "gateway", scenario);
        let numbers: Vec<u64> = cell["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["attempt"].as_u64().unwrap())
            .collect();
        assert_eq!(numbers, [1, 2], "{cell}");
        assert_eq!(cell["verdict"], "pass", "{cell}");
    }
}

/// The same on a `--config` deployment, with a scenario that passes
/// there: the managed server's restart cuts open requests, so each
/// repeat's restart waits for the previous attempt's DELETEs, which must
/// be running out meanwhile.
#[test]
fn a_repeated_cell_on_a_deployment_runs_every_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--repeat",
            "3",
            "--scenario",
            "recreate-rehydrate",
            "--overall-timeout-ms",
            "120000",
        ],
        &[],
    );
    let report = report(&out);
    assert_eq!(
        report["run"]["interrupted"],
        false,
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let cell = cell(&report, "agent", "recreate-rehydrate");
    let seen = attempts(cell);
    assert_eq!(seen.len(), 3, "{cell}");
    assert!(
        seen.iter().all(|(verdict, _)| verdict == "pass"),
        "{seen:?}"
    );
    assert_exit(&run, exit_codes::OK);
}

/// Secrets equal to the report's own words (a field name, a verdict's
/// field) once renamed report.json's fields: the run exited 0 and `show`,
/// `compare` and `baseline` then refused the report.
/// (On nginx's stop and start, a cell that passes every time.)
#[test]
fn secrets_that_are_words_of_the_report_leave_it_readable() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &["--target", "gateway", "--scenario", "native-continuity"],
        &[("MY_SORT_KEY", "durationMs"), ("SA_TOKEN", "verdict")],
    );
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    assert!(report["run"]["durationMs"].is_u64(), "{report}");
    assert_eq!(
        cell(&report, "gateway", "native-continuity")["verdict"],
        "pass"
    );
    for command in [
        &["show"][..],
        &["baseline"][..],
        &["compare", out.to_str().unwrap()][..],
    ] {
        let mut args = command.to_vec();
        args.insert(1, out.to_str().unwrap());
        let read = continuity_with(&args, &[]);
        assert_exit(&read, exit_codes::OK);
    }
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// Scenario names are user text: one that climbs out (`/../..`) once made
/// the SQLite store `/tmp/x/pwn-1.db`, and one with a `/` (`team/alpha`)
/// turned every cell into an error ("cannot open …/001-agent-team/alpha-1.db").
#[test]
fn scenario_names_never_write_outside_the_run_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let climbing = format!("/../../../../../..{}/pwn", outside.display());
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let body = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/recreate-rehydrate.toml"
    ))
    .unwrap();
    let body = body.replace("name = \"recreate-rehydrate\"\n", "");
    for (file, name) in [("climbing", climbing.as_str()), ("slash", "team/alpha")] {
        std::fs::write(
            scenarios.join(format!("{file}.toml")),
            format!("name = {name:?}\n{body}"),
        )
        .unwrap();
    }
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--persist",
            "sqlite",
        ],
        &[],
    );
    assert_eq!(
        files_under(&outside),
        Vec::<String>::new(),
        "written outside"
    );
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    for name in [climbing.as_str(), "team/alpha"] {
        assert_eq!(cell(&report, "agent", name)["verdict"], "pass", "{report}");
    }
    let stores: Vec<String> = files_under(&out.join("persist"));
    assert_eq!(stores.len(), 2, "{stores:?}");
    assert!(
        stores.iter().all(|s| !s.contains('/')),
        "one folder, no subfolders: {stores:?}"
    );
}

/// Waits (two minutes at most) for the first `cell-finished` event.
fn first_finished_cell(events: &std::sync::mpsc::Receiver<Value>) -> Value {
    first_event(events, "cell-finished")
}

#[allow(unsafe_code)]
fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: kill(2) on the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

/// Two scenarios: `a-quick` finishes at once; `b-hold` then holds its
/// cell in a long sleep, and its cleanup lingers (up to the 3 s an
/// interrupted cell's cleanup is given), so signals land while it runs.
fn quick_then_holding(dir: &Path) -> std::path::PathBuf {
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("a-quick.toml"),
        "name = \"a-quick\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n\n[[phase]]\nname = \"health\"\nstep = \"health\"\nclient = \"c\"\n",
    )
    .unwrap();
    std::fs::write(
        scenarios.join("b-hold.toml"),
        "name = \"b-hold\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n\n[[phase]]\nname = \"hold\"\nstep = \"sleep\"\nms = 120000\ntimeout_ms = 130000\n\n[[cleanup]]\nname = \"linger\"\nstep = \"sleep\"\nms = 60000\ntimeout_ms = 70000\n",
    )
    .unwrap();
    scenarios
}

/// A closed terminal or a dropped SSH session sends SIGHUP (and Ctrl-\
/// SIGQUIT): the run once exited 129 at once, with no report, every
/// finished cell lost. Now both stop it as Ctrl-C does.
#[test]
fn sighup_and_sigquit_stop_a_run_as_ctrl_c_does() {
    for (name, number) in [("SIGHUP", libc::SIGHUP), ("SIGQUIT", libc::SIGQUIT)] {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = support::managed_agent_config(dir.path(), &[]);
        let out = dir.path().join("out");
        let scenarios = quick_then_holding(dir.path());
        let (mut child, events) = spawn_run(
            &out,
            &[
                "--config",
                config.to_str().unwrap(),
                "--scenarios-dir",
                scenarios.to_str().unwrap(),
            ],
        );
        let finished = first_finished_cell(&events);
        signal(&child, number);
        assert_eq!(exit_code(&mut child), Some(2), "{name}");
        let report = report(&out);
        assert_eq!(report["run"]["interrupted"], true, "{name}");
        let cell = &finished["cell"];
        let kept = support::cell(
            &report,
            cell["target"].as_str().unwrap(),
            cell["scenario"].as_str().unwrap(),
        );
        assert_eq!(kept["verdict"], cell["verdict"], "{name}: {report}");
    }
}

/// A second Ctrl-C kills everything at once; it once threw away every
/// finished cell too (exit 130, no report). Now the cells that finished
/// are written first.
#[test]
fn a_second_ctrl_c_still_writes_the_cells_that_finished() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let out = dir.path().join("out");
    let scenarios = quick_then_holding(dir.path());
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
    );
    let finished = first_finished_cell(&events);
    signal(&child, libc::SIGINT);
    std::thread::sleep(std::time::Duration::from_millis(200));
    signal(&child, libc::SIGINT);
    assert_eq!(exit_code(&mut child), Some(i32::from(exit_codes::KILLED)));
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], true);
    let cell = &finished["cell"];
    let kept = support::cell(
        &report,
        cell["target"].as_str().unwrap(),
        cell["scenario"].as_str().unwrap(),
    );
    assert_eq!(kept["verdict"], cell["verdict"], "{report}");
    let read = continuity_with(&["show", out.to_str().unwrap()], &[]);
    assert_exit(&read, exit_codes::OK);
}

/// `continuity stack ACTION --dir DIR`.
fn stack(action: &str, dir: &Path) -> Output {
    continuity_with(&["stack", action, "--dir", dir.to_str().unwrap()], &[])
}

/// What still runs of the stack in `dir`: by working folder or command
/// line (nginx included), and by owner tag.
fn left_running(dir: &Path) -> Vec<String> {
    let mut left = support::processes_in(dir);
    left.extend(support::processes_owned_in(dir));
    left
}

/// Stops whatever a failed assertion would leave of a stack folder.
struct DownOnDrop(std::path::PathBuf);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        let _ = stack("down", &self.0);
    }
}

/// A corrupt `stack.json` once made `stack down` stop nothing (exit 64) and
/// `stack up` overwrite it, leaving the first stack's engine, runner and
/// nginx running for good. Now `up` refuses the folder and `down` finds the
/// stack without the file, and a gone file likewise.
#[test]
fn a_stack_whose_state_file_is_corrupt_or_gone_is_still_stopped() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("stack");
    let _down = DownOnDrop(folder.clone());
    for damage in ["corrupt", "gone"] {
        let up = stack("up", &folder);
        assert_exit(&up, exit_codes::OK);
        assert!(!left_running(&folder).is_empty(), "the stack runs");
        let state = folder.join("stack.json");
        match damage {
            "corrupt" => std::fs::write(&state, "{ not json").unwrap(),
            _ => std::fs::remove_file(&state).unwrap(),
        }
        let again = stack("up", &folder);
        assert_exit(&again, exit_codes::USAGE);
        let down = stack("down", &folder);
        assert_exit(&down, exit_codes::OK);
        let left = left_running(&folder);
        assert!(left.is_empty(), "{damage}: still running: {left:#?}");
    }
    // Down on a folder with no stack is already done.
    let down = stack("down", &folder);
    assert_exit(&down, exit_codes::OK);
    assert!(
        String::from_utf8_lossy(&down.stdout).contains("no stack is up"),
        "{}",
        String::from_utf8_lossy(&down.stdout)
    );
}

/// An interrupted run's baseline once wrote `verdict = "interrupted"`,
/// which `run --expect` then refused (exit 64, "is not a verdict"); and a
/// report holding a cell twice, which `compare` refuses, got a baseline.
#[test]
fn baseline_writes_only_what_expect_reads_and_refuses_duplicated_cells() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let scenarios = quick_then_holding(dir.path());
    let out = dir.path().join("out");
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
    );
    first_finished_cell(&events);
    signal(&child, libc::SIGINT);
    assert_eq!(exit_code(&mut child), Some(2));
    assert_eq!(
        cell(&report(&out), "agent", "b-hold")["verdict"],
        "interrupted"
    );
    let baseline = continuity_with(&["baseline", out.to_str().unwrap()], &[]);
    assert_exit(&baseline, exit_codes::OK);
    assert!(
        String::from_utf8_lossy(&baseline.stderr).contains("left out 1 interrupted cell"),
        "{}",
        String::from_utf8_lossy(&baseline.stderr)
    );
    let expect = dir.path().join("expect.toml");
    std::fs::write(&expect, &baseline.stdout).unwrap();
    let judged = run_local(
        &dir.path().join("again"),
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--scenario",
            "a-quick",
            "--expect",
            expect.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&judged, exit_codes::OK);

    let mut twice = report(&out);
    let first = twice["cells"][0].clone();
    twice["cells"].as_array_mut().unwrap().push(first);
    std::fs::write(out.join("report.json"), twice.to_string()).unwrap();
    let refused = continuity_with(&["baseline", out.to_str().unwrap()], &[]);
    assert_exit(&refused, exit_codes::USAGE);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("more than once"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// A server that takes connections and never answers: the health check
/// before the first cell waits its 10 s, and once said it had waited 0 ms.
#[test]
fn a_preflight_that_gets_no_answer_names_the_real_wait() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        // Holds each connection open, answering nothing.
        let mut open = Vec::new();
        for stream in listener.incoming().take(4) {
            open.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &["--base-url", &url, "--scenario", "native-continuity"],
        &[("SA_RESTART_CMD", "true")],
    );
    assert_exit(&run, exit_codes::INCOMPLETE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("no answer within 10000 ms"), "{stderr}");
    drop(held);
}

/// Ctrl-C while the last cell's deferred DELETEs ran out (its verdict
/// judged, its record not yet finished) printed "writing the partial
/// report" and then exited 0 with `interrupted: false`.
#[test]
fn ctrl_c_during_the_last_deferred_delete_is_an_interrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let out = dir.path().join("out");
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenario",
            "recreate-rehydrate",
        ],
    );
    first_event(&events, "cell-judged");
    // sandbox-agent 0.4.2 never answers the DELETE: the SDK's 2 s bound runs.
    signal(&child, libc::SIGINT);
    assert_eq!(exit_code(&mut child), Some(2));
    assert_eq!(report(&out)["run"]["interrupted"], true);
    let stderr = stderr_of(&mut child);
    assert!(stderr.contains("(none was cut short)"), "{stderr}");
}

/// When --overall-timeout-ms ran out, nothing said so.
#[test]
fn the_overall_timeout_running_out_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let scenarios = quick_then_holding(dir.path());
    let out = dir.path().join("out");
    let (mut child, _events) = spawn_run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--overall-timeout-ms",
            "4000",
        ],
    );
    assert_eq!(exit_code(&mut child), Some(2));
    let stderr = stderr_of(&mut child);
    assert!(
        stderr.contains("the overall timeout (4000 ms, --overall-timeout-ms) ran out"),
        "{stderr}"
    );
    assert!(stderr.contains("the one it cut short"), "{stderr}");
    assert_eq!(
        cell(&report(&out), "agent", "b-hold")["verdict"],
        "interrupted"
    );
}

const SANDBOX_ROOT: &str = "/tmp/continuity-sandbox";

/// The sandbox folders of run `id` (one per cell that made files).
fn sandbox_folders_of(id: &str) -> Vec<String> {
    std::fs::read_dir(SANDBOX_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&format!("{id}-")))
        .collect()
}

/// A cell's sandbox folder (`/tmp/continuity-sandbox/<run>-<cell>/`) was
/// left behind when a second Ctrl-C (or SIGKILL) cut its teardown; now the
/// harness removes its own on the way out, and the next run removes a
/// dead run's.
#[test]
fn sandbox_folders_go_after_a_second_ctrl_c_and_a_dead_runs_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("files.toml"),
        "name = \"files\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n\n[[phase]]\nname = \"write\"\nstep = \"write_file\"\nclient = \"c\"\npath = \"notes/a.txt\"\ncontent = \"kept\\n\"\n\n[[phase]]\nname = \"hold\"\nstep = \"sleep\"\nms = 120000\ntimeout_ms = 130000\n\n[[cleanup]]\nname = \"linger\"\nstep = \"sleep\"\nms = 60000\ntimeout_ms = 70000\n",
    )
    .unwrap();
    // The cleanup lingers (up to the 3 s an interrupted cell's cleanup is
    // given), so the second Ctrl-C lands while the run is still stopping.
    let out = dir.path().join("out");
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
    );
    let id = first_event(&events, "run-started")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while sandbox_folders_of(&id).is_empty() {
        assert!(std::time::Instant::now() < until, "the cell wrote no file");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    signal(&child, libc::SIGINT);
    std::thread::sleep(std::time::Duration::from_millis(100));
    signal(&child, libc::SIGINT);
    let code = exit_code(&mut child);
    assert_eq!(
        code,
        Some(i32::from(exit_codes::KILLED)),
        "{}",
        stderr_of(&mut child)
    );
    assert_eq!(sandbox_folders_of(&id), Vec::<String>::new());

    // A run killed outright (its lock file left, unlocked) leaves a folder:
    // the next run to start removes it, whatever becomes of that run.
    let dead = format!("{:08x}", std::process::id().wrapping_mul(2_654_435_761));
    let folder = Path::new(SANDBOX_ROOT).join(format!("{dead}-1"));
    std::fs::create_dir_all(folder.join("notes")).unwrap();
    std::fs::create_dir_all(Path::new(SANDBOX_ROOT).join(".runs")).unwrap();
    std::fs::write(
        Path::new(SANDBOX_ROOT)
            .join(".runs")
            .join(format!("{dead}.lock")),
        b"",
    )
    .unwrap();
    let next = run_local(
        &dir.path().join("next"),
        &[
            "--base-url",
            "http://127.0.0.1:1",
            "--scenario",
            "files",
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
        &[("SA_RESTART_CMD", "true")],
    );
    assert_exit(&next, exit_codes::INCOMPLETE);
    assert!(!folder.exists(), "a dead run's sandbox folder is left");
}

/// `show --cell` exited 64 on a missing trace or one torn line; a run with
/// `--trace off` has no trace and shows its timeline from the report's
/// phases, and so does a damaged one now (with the events before the damage).
#[test]
fn show_cell_degrades_on_a_missing_or_torn_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let scenarios = quick_then_holding(dir.path());
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--scenario",
            "a-quick",
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    let trace = out.join(
        cell(&report(&out), "agent", "a-quick")["trace"]
            .as_str()
            .unwrap(),
    );
    let show = || {
        continuity_with(
            &["show", out.to_str().unwrap(), "--cell", "agent/a-quick"],
            &[],
        )
    };
    let whole = show();
    assert_exit(&whole, exit_codes::OK);
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let half = &lines[2][..lines[2].len() / 2].to_string();
    lines[2] = half;
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let torn = show();
    assert_exit(&torn, exit_codes::OK);
    let stderr = String::from_utf8_lossy(&torn.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("events before it"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&torn.stdout).contains("health"));
    std::fs::remove_file(&trace).unwrap();
    let missing = show();
    assert_exit(&missing, exit_codes::OK);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("phases only"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    assert!(String::from_utf8_lossy(&missing.stdout).contains("health"));
}

/// `validate` said ok when the config's `expect` file was missing or
/// malformed; `run` then refused it.
#[test]
fn validate_reads_the_configs_expectations_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("continuity.toml");
    let expect = dir.path().join("expect.toml");
    std::fs::write(
        &config,
        format!("[run]\nexpect = {:?}\n", expect.display().to_string()),
    )
    .unwrap();
    let validate = || continuity_with(&["validate", "--config", config.to_str().unwrap()], &[]);
    let missing = validate();
    assert_exit(&missing, exit_codes::USAGE);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("expect.toml"));
    std::fs::write(&expect, "[[expect]]\nverdict = \"interrupted\"\n").unwrap();
    let malformed = validate();
    assert_exit(&malformed, exit_codes::USAGE);
    assert!(
        String::from_utf8_lossy(&malformed.stderr).contains("expect.toml:2"),
        "{}",
        String::from_utf8_lossy(&malformed.stderr)
    );
    std::fs::write(
        &expect,
        "[[expect]]\ntarget = \"nope\"\nverdict = \"pass\"\n",
    )
    .unwrap();
    assert_exit(&validate(), exit_codes::USAGE);
    std::fs::write(
        &expect,
        "[[expect]]\ntarget = \"gateway\"\nverdict = \"pass\"\n",
    )
    .unwrap();
    let good = validate();
    assert_exit(&good, exit_codes::OK);
    assert!(String::from_utf8_lossy(&good.stdout).contains("expect.toml: ok"));
}

/// `--partition count:5/5` over one cell started a whole local stack to run
/// nothing.
#[test]
fn an_empty_shard_starts_no_stack() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--target",
            "gateway",
            "--scenario",
            "native-continuity",
            "--partition",
            "count:5/5",
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    assert!(!out.join("stack").exists(), "a stack was started");
    let report = report(&out);
    assert_eq!(
        report["cells"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    assert_eq!(report["run"]["partition"], "count:5/5");
    assert_eq!(report["run"]["targets"][0], "gateway", "{report}");
}

/// A folder nobody may write into (root included: immutable), writable
/// again when dropped.
struct Unwritable(std::path::PathBuf);

impl Unwritable {
    #[allow(unsafe_code)]
    fn new(dir: &Path) -> Unwritable {
        std::fs::create_dir_all(dir).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let chattr = std::process::Command::new("chattr")
                .args(["+i", dir.to_str().unwrap()])
                .status()
                .expect("chattr (e2fsprogs) makes a folder read-only for root");
            assert!(chattr.success(), "chattr +i {}", dir.display());
        } else {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        Unwritable(dir.to_path_buf())
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .args(["-i", self.0.to_str().unwrap()])
            .status();
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

/// An existing `--out` the run cannot write into ran the whole matrix and
/// failed at the end; and an `--out` was created (empty) for a run that
/// then stopped on a usage error.
#[test]
fn an_unusable_out_is_refused_before_anything_runs_and_no_out_is_left_by_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("locked");
    let _locked = Unwritable::new(&out);
    let run = run_local(
        &out,
        &[
            "--base-url",
            "http://127.0.0.1:1",
            "--scenario",
            "native-continuity",
        ],
        &[("SA_RESTART_CMD", "true")],
    );
    assert_exit(&run, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("cannot write into"), "{stderr}");

    let fresh = dir.path().join("a/b/out");
    let run = run_local(
        &fresh,
        &[
            "--expect",
            dir.path().join("missing.toml").to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::USAGE);
    assert!(!dir.path().join("a").exists(), "--out was left behind");
}

/// The pids of `continuity keeper --owner TAG` processes whose tag names `dir`.
fn keepers_of(dir: &Path) -> Vec<i32> {
    let suffix = format!(":{}", dir.display());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let words: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words
                .windows(3)
                .any(|w| w[0] == "keeper" && w[1] == "--owner" && w[2].ends_with(&suffix))
        })
        .collect()
}

/// A keeper killed by hand went unnoticed: the harness, killed in turn,
/// then left everything it started running. Now a new keeper takes over.
#[allow(unsafe_code)]
#[test]
fn a_killed_keeper_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let scenarios = quick_then_holding(dir.path());
    let out = dir.path().join("out");
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
    );
    first_finished_cell(&events);
    let first = keepers_of(&out);
    assert_eq!(first.len(), 1, "one keeper: {first:?}");
    // SAFETY: kill(2) on the keeper of the run this test started.
    unsafe { libc::kill(first[0], libc::SIGKILL) };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let second = loop {
        let now = keepers_of(&out);
        if now.len() == 1 && now[0] != first[0] {
            break now[0];
        }
        assert!(
            std::time::Instant::now() < until,
            "no new keeper after the first was killed: {now:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(support::alive(second as u32));
    assert!(
        !support::processes_owned_in(&out).is_empty(),
        "the run's server runs"
    );
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = support::processes_owned_in(&out);
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "left running after the harness was killed: {left:#?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let stderr = stderr_of(&mut child);
    assert!(stderr.contains("a new one (pid"), "{stderr}");
}

/// The shared-deployment lanes (`--jobs 2` over `independent` targets of
/// one deployment, which share its cleanup fence) with `--repeat 2`: every
/// attempt of every cell runs, none waits for the overall deadline.
#[test]
fn repeated_cells_in_the_lanes_of_one_deployment_run_every_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let mut text = std::fs::read_to_string(&config).unwrap();
    for hook in ["hook-a", "hook-b"] {
        text.push_str(&support::independent_component(hook));
    }
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    let run = run_local(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--jobs",
            "2",
            "--repeat",
            "2",
            "--scenario",
            "recreate-rehydrate",
            "--overall-timeout-ms",
            "120000",
        ],
        &[],
    );
    let report = report(&out);
    assert_eq!(
        report["run"]["interrupted"],
        false,
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for target in ["agent", "hook-a", "hook-b"] {
        let whole = cell(&report, target, "recreate-rehydrate");
        let seen = attempts(whole);
        assert_eq!(seen.len(), 2, "{target}: {seen:?}\n{whole:#}");
        assert!(
            seen.iter().all(|(v, _)| v == "pass"),
            "{target}: {seen:?}\n{whole:#}"
        );
    }
    assert_exit(&run, exit_codes::OK);
}

/// Two runs on one `--out` once both went on: the report kept one run's
/// cells and `cells/` mixed both. The second is now refused at once (exit
/// 64, naming the first as the holder), with `--force` too, and the
/// first's report is whole.
#[test]
fn a_second_run_on_a_busy_out_folder_is_refused_and_the_first_stays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = support::managed_agent_config(dir.path(), &[]);
    let out = dir.path().join("out");
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    for (name, ms) in [("a-quick", 0), ("b-wait", 4000)] {
        std::fs::write(
            scenarios.join(format!("{name}.toml")),
            format!("name = \"{name}\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n\n[[phase]]\nname = \"wait\"\nstep = \"sleep\"\nms = {ms}\n\n[[phase]]\nname = \"health\"\nstep = \"health\"\nclient = \"c\"\n"),
        )
        .unwrap();
    }
    let config = config.to_str().unwrap();
    let scenarios = scenarios.to_str().unwrap();
    let args = ["--config", config, "--scenarios-dir", scenarios];
    let (mut first, events) = spawn_run(&out, &args);
    let id = first_event(&events, "run-started")["id"].clone();
    first_event(&events, "cell-started");
    // Plainly, and with --force, which once removed the first run's files.
    for force in [&[][..], &["--force"][..]] {
        let started = std::time::Instant::now();
        let mut all = vec!["run"];
        all.extend_from_slice(&args);
        all.extend_from_slice(force);
        all.extend_from_slice(&["--out", out.to_str().unwrap()]);
        let second = continuity_with(&all, &[]);
        let took = started.elapsed();
        assert_exit(&second, exit_codes::USAGE);
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert!(
            stderr.contains(&format!("in use by pid {} (continuity run)", first.id())),
            "{force:?}: {stderr}"
        );
        assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    }
    assert!(
        matches!(first.try_wait(), Ok(None)),
        "the first run still runs"
    );
    let code = exit_code(&mut first);
    assert_eq!(code, Some(0), "{}", stderr_of(&mut first));
    let report = report(&out);
    assert_eq!(report["cells"].as_array().unwrap().len(), 2, "{report}");
    for name in ["a-quick", "b-wait"] {
        assert_eq!(cell(&report, "agent", name)["verdict"], "pass", "{report}");
    }
    assert_eq!(report["run"]["id"], id, "{report}");
    let cells = std::fs::read_dir(out.join("cells")).unwrap().count();
    assert_eq!(cells, 2, "one folder per cell of the first run");
}
