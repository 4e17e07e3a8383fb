//! The local stack end to end: `continuity run` with no deployment brings up
//! sandbox-agent, the nginx gateway and the Rivet layer, runs the matrix and
//! tears everything down. These tests need nginx and node/npm (`.ci/setup`
//! installs them); without them they fail, loudly, by design.

use crate::support;

use crate::support::{assert_exit, cell, phase, report};
use continuity::exit_codes;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn continuity(args: &[&str]) -> Command {
    support::continuity_command(args)
}

fn output(command: &mut Command) -> Output {
    command.output().unwrap()
}

/// Nothing the stack in `dir` started may still run: every component runs
/// in a folder inside the run folder (or names one on its command line).
fn assert_nothing_left(dir: &Path) {
    let left = support::processes_in(dir);
    assert!(left.is_empty(), "still running after teardown: {left:#?}");
    // Whatever the run started carries its owner tag (a runner-spawned engine
    // included), wherever it runs and whatever it is named.
    let owned = support::processes_owned_in(dir);
    assert!(owned.is_empty(), "still running after teardown: {owned:#?}");
}

/// Runs `stack down --dir` when dropped, so a failed assertion does not
/// leave a `stack up` stack running.
struct StackDownOnDrop(std::path::PathBuf);

impl Drop for StackDownOnDrop {
    fn drop(&mut self) {
        if self.0.join("stack.json").exists() {
            let _ = continuity(&["stack", "down", "--dir", self.0.to_str().unwrap()]).output();
        }
    }
}

/// A process named `rivet-engine` that continuity did not start (a copy of
/// `sleep`, no `--config`): it must outlive every teardown.
struct ForeignEngine {
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl ForeignEngine {
    fn start() -> ForeignEngine {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("rivet-engine");
        std::fs::copy("/bin/sleep", &program).unwrap();
        let child = Command::new(&program).arg("600").spawn().unwrap();
        ForeignEngine { child, _dir: dir }
    }

    fn assert_alive(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the foreign rivet-engine (pid {}) was killed",
            self.child.id()
        );
    }
}

impl Drop for ForeignEngine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` (stderr piped) and calls `on_line` on each stderr line
/// until it returns true; returns the child and the lines read so far.
fn spawn_until(
    command: &mut Command,
    mut on_line: impl FnMut(&str) -> bool + Send + 'static,
) -> (std::process::Child, std::thread::JoinHandle<Vec<String>>) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = Vec::new();
        let mut told = false;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if !told && on_line(&line) {
                told = true;
                let _ = tx.send(());
            }
            seen.push(line);
        }
        seen
    });
    let _ = rx.recv_timeout(Duration::from_secs(300));
    (child, lines)
}

/// What each restart does to files, processes and terminals on 0.4.2, as the
/// README states it; the terminal phases went through the nginx gateway.
fn assert_sandbox_state_per_target(report: &serde_json::Value, targets: &[&str]) {
    let ok = |c: &serde_json::Value, name: &str| {
        let p = phase(c, name);
        assert_eq!(p["ok"], true, "{name}: {p}");
    };
    let message = |c: &serde_json::Value, name: &str| -> String {
        phase(c, name)["signature"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    for target in targets {
        let c = cell(report, target, "sandbox-reconnect");
        for before in [
            "probeBeforeRestart",
            "writeFile",
            "spawnProcess",
            "attachTerminal",
            "terminalEchoBeforeRestart",
            "probeAfterRestart",
            "fileAfterRestart",
        ] {
            ok(c, before);
        }
        assert_eq!(
            phase(c, "probeAfterRestart")["detail"]["status"],
            "connected"
        );
        assert_eq!(phase(c, "fileAfterRestart")["detail"]["sameBytes"], true);
        let cleanup = phase(c, "sandboxCleanup");
        assert_eq!(cleanup["ok"], true, "{target}: {cleanup}");
        match *target {
            // The server's restart kills its processes and forgets them.
            "agent" => {
                assert_eq!(c["verdict"], "fail");
                assert_eq!(c["failureBoundary"], "processAfterRestart");
                assert!(message(c, "processAfterRestart").starts_with("process gone"));
                assert!(message(c, "oldTerminalSend").starts_with("ws close 1006"));
                let reattach = phase(c, "reattachTerminal");
                assert_eq!(reattach["signature"]["httpStatus"], 404, "{reattach}");
                // Forgotten, not killed: the PTY process runs on until the sweep.
                assert_eq!(cleanup["detail"]["orphansKilled"], 1, "{cleanup}");
            }
            // Stop/start of nginx drops the socket; the process lives on behind it.
            "gateway" => {
                assert_eq!(c["failureBoundary"], "oldTerminalSend");
                ok(c, "processAfterRestart");
                assert!(message(c, "oldTerminalSend").starts_with("ws close 1006"));
                assert_eq!(phase(c, "reattachTerminal")["detail"]["oldCloseCode"], 1006);
                ok(c, "terminalEchoAfterReattach");
            }
            // A reload keeps open sockets (until worker_shutdown_timeout); Rivet is not in the path.
            // A reload may meet its race at a POST or GET on a pooled connection.
            "gateway-reload" if !support::passed_or_met_the_reload_race(c) => {}
            _ => {
                assert_eq!(c["verdict"], "pass", "{target}: {c}");
                assert_eq!(phase(c, "reattachTerminal")["detail"]["oldSocket"], "open");
            }
        }
    }
}

#[test]
fn the_full_local_matrix_runs_every_target_and_reproduces_the_agent_failure() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    // The README's command as a user types it: default (relative) report folder.
    let run = output(continuity(&["run"]).current_dir(dir.path()));
    let stderr = String::from_utf8_lossy(&run.stderr);
    // Native continuity fails on 0.4.2, so the run exits 1.
    assert_exit(&run, exit_codes::FAILED);
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "one run folder under reports/: {runs:?}");
    let out = runs[0].clone();
    let report = report(&out);

    let targets: Vec<&str> = report["run"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for expected in ["agent", "gateway", "rivet", "rivet-engine"] {
        assert!(
            targets.contains(&expected),
            "target {expected} missing from {targets:?}"
        );
    }
    assert_eq!(
        report["totals"]["skipped"], 0,
        "every target must run here:\n{stderr}"
    );
    assert_eq!(report["totals"]["errored"], 0, "{stderr}");
    // Four built-in scenarios: native-continuity, recreate-rehydrate,
    // sandbox-reconnect, native-load (restart-mid-turn is opt-in).
    assert_eq!(report["totals"]["cells"], targets.len() * 4);
    // The restarts; the default fault targets are faults_e2e.rs's.
    let restarts: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|t| cell(&report, t, "sandbox-reconnect")["restarts"][0]["action"] != "fault")
        .collect();
    assert_eq!(restarts.len(), 5, "{targets:?}");
    assert_sandbox_state_per_target(&report, &restarts);
    // The recovering client gets the scripted agent's session back after the restart.
    assert_eq!(cell(&report, "agent", "native-load")["verdict"], "pass");

    let native = cell(&report, "agent", "native-continuity");
    assert_eq!(native["verdict"], "fail");
    assert_eq!(native["failureBoundary"], "promptSameHandleAfterRestart");
    let same = phase(native, "promptSameHandleAfterRestart");
    assert_eq!(
        (
            same["signature"]["httpStatus"].as_u64(),
            same["signature"]["problemType"].as_str()
        ),
        (Some(400), Some("invalid_request"))
    );
    // The client went through the gateway, the history through the Rivet actor.
    assert!(
        report["run"]["baseUrl"]
            .as_str()
            .unwrap()
            .ends_with("/sandbox"),
        "{}",
        report["run"]["baseUrl"]
    );
    assert_eq!(report["run"]["persist"], "rivet");

    // Immediate saves: a runner crash loses nothing.
    let rivet = cell(&report, "rivet", "native-continuity");
    let events = phase(rivet, "getEvents");
    assert_eq!(events["ok"], true, "{events}");
    assert_eq!(events["detail"]["eventsLost"], 0);
    assert!(
        events["detail"]["eventsTotal"].as_u64().unwrap() >= 5,
        "{events}"
    );
    for target in &restarts {
        for scenario in [
            "native-continuity",
            "recreate-rehydrate",
            "sandbox-reconnect",
        ] {
            let restart = &cell(&report, target, scenario)["restarts"][0];
            assert_eq!(restart["ok"], true, "{target} × {scenario}: {restart}");
            assert!(restart["readyMs"].is_u64(), "{restart}");
        }
    }
    // Every component's log is linked from the report and exists.
    for log in report["run"]["logs"].as_array().unwrap() {
        assert!(
            out.join(log["path"].as_str().unwrap()).is_file(),
            "missing log {log}"
        );
    }
    assert_nothing_left(&out);
}

/// `continuity run` of native-continuity against `targets`, into `out`.
fn native_continuity(
    out: &std::path::Path,
    targets: &[&str],
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "run",
        "--scenario",
        "native-continuity",
        "--out",
        out.to_str().unwrap(),
    ];
    for target in targets {
        args.extend(["--target", target]);
    }
    args.extend(extra);
    output(&mut continuity(&args))
}

#[test]
fn deferred_actor_saves_lose_history_when_the_runner_crashes() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = native_continuity(&out, &["rivet"], &["--rivet-save", "deferred"]);
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    let native = cell(&report, "rivet", "native-continuity");
    let events = phase(native, "getEvents");
    assert_eq!(events["ok"], false, "{events}");
    assert_eq!(events["signature"]["kind"], "integrity");
    let lost = events["detail"]["eventsLost"].as_u64().unwrap();
    // How many survive depends on when RivetKit's first save fell; some never do.
    assert!(
        lost >= 1,
        "events written since the last save die with the runner: {events}"
    );
    assert_eq!(
        events["detail"]["eventsRecorded"].as_u64().unwrap(),
        lost + events["detail"]["eventsTotal"].as_u64().unwrap()
    );
    assert_nothing_left(&out);
}

/// The session store is a server of the stack: each call to the Rivet
/// actor is a `store` event in the cell's trace, across a runner crash and
/// an engine restart, and the history survives both (immediate saves).
#[test]
fn store_calls_reach_the_trace_through_runner_and_engine_restarts() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = native_continuity(&out, &["rivet", "rivet-engine"], &["--jobs", "1"]);
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    assert_eq!(report["run"]["persist"], "rivet");
    for target in ["rivet", "rivet-engine"] {
        let native = cell(&report, target, "native-continuity");
        assert_eq!(native["verdict"], "pass", "{native}");
        assert_eq!(phase(native, "getEvents")["detail"]["eventsLost"], 0);
        let events =
            continuity::trace::read_trace(&out.join(native["trace"].as_str().unwrap())).unwrap();
        let stores: Vec<&serde_json::Value> =
            events.iter().filter(|e| e["ev"] == "store").collect();
        for call in ["getSession", "updateSession", "insertEvent", "listEvents"] {
            assert!(
                stores.iter().any(|e| e["call"] == call),
                "{target}: no {call} store event in {stores:#?}"
            );
        }
        for store in &stores {
            assert_eq!(store["driver"], "rivet", "{store}");
            assert_eq!(store["ok"], true, "{target}: {store}");
            assert!(store["ms"].as_f64().unwrap() > 0.0, "{store}");
        }
        // The floor holds the restart and the servers' answers around it.
        let restart = &native["restarts"][0];
        let restarting =
            restart["restartMs"].as_u64().unwrap() + restart["readyMs"].as_u64().unwrap();
        assert!(
            native["floorMs"].as_u64().unwrap() > restarting,
            "{target}: floor {} within the restart's {restarting} ms",
            native["floorMs"]
        );
    }
    assert_nothing_left(&out);
}

#[test]
fn stack_up_status_down_leaves_nothing_running() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let stack = dir.path().join("stack");
    let stack_arg = stack.to_str().unwrap();
    let up = output(&mut continuity(&["stack", "up", "--dir", stack_arg]));
    let _down = StackDownOnDrop(stack.clone());
    let stdout = String::from_utf8_lossy(&up.stdout);
    assert_exit(&up, exit_codes::OK);
    assert!(stdout.contains("base URL: http://127.0.0.1:"), "{stdout}");
    for component in ["agent", "gateway", "rivet-engine", "rivet "] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(component) && l.contains("running")),
            "{component} not running:\n{stdout}"
        );
    }
    // It really serves: the health route through the gateway answers.
    let base = stdout
        .lines()
        .find_map(|l| l.strip_prefix("base URL: "))
        .unwrap()
        .trim()
        .to_string();
    let health =
        output(Command::new("curl").args(["-s", "--max-time", "5", &format!("{base}/v1/health")]));
    assert!(
        String::from_utf8_lossy(&health.stdout).contains("ok"),
        "{base}"
    );

    // Every listener of every component is on loopback.
    let listeners = support::listening_addresses_in(&stack);
    assert!(
        listeners.len() >= 5,
        "engine ports, runner, agent, nginx: {listeners:?}"
    );
    let exposed: Vec<_> = listeners
        .iter()
        .filter(|(a, _)| !a.ip().is_loopback())
        .collect();
    assert!(
        exposed.is_empty(),
        "listening beyond loopback: {exposed:#?}"
    );

    let status = output(&mut continuity(&["stack", "status", "--dir", stack_arg]));
    assert_exit(&status, exit_codes::OK);
    let again = output(&mut continuity(&["stack", "up", "--dir", stack_arg]));
    // A second stack in the same folder is refused.
    assert_exit(&again, exit_codes::USAGE);

    // A PTY process the server starts has its own session: stopping the
    // server's group leaves it running; `down` must find and kill it too.
    let spawned = output(Command::new("curl").args([
        "-s",
        "--max-time",
        "5",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"command":"cat","tty":true,"interactive":true}"#,
        &format!("{base}/v1/processes"),
    ]));
    assert!(
        String::from_utf8_lossy(&spawned.stdout).contains("\"running\""),
        "{}",
        String::from_utf8_lossy(&spawned.stdout)
    );

    let down = output(&mut continuity(&["stack", "down", "--dir", stack_arg]));
    assert_exit(&down, exit_codes::OK);
    assert_nothing_left(&stack);
    let status = output(&mut continuity(&["stack", "status", "--dir", stack_arg]));
    // No stack is up any more.
    assert_exit(&status, exit_codes::USAGE);
}

#[test]
#[allow(unsafe_code)]
fn ctrl_c_stops_the_run_writes_a_partial_report_and_kills_the_stack() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = continuity(&["run", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    CHILD.store(child.id() as i32, std::sync::atomic::Ordering::SeqCst);
    // Interrupt once the first cell has finished.
    let stderr = child.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.starts_with("[1/") {
                // SAFETY: SIGINT to our own child.
                unsafe {
                    libc::kill(
                        CHILD.load(std::sync::atomic::Ordering::SeqCst),
                        libc::SIGINT,
                    )
                };
            }
            seen.push(line);
        }
        seen
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the run did not stop after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let seen = lines.join().unwrap();
    assert_eq!(
        status.code(),
        Some(i32::from(exit_codes::INCOMPLETE)),
        "an interrupted run exits 2:\n{}",
        seen.join("\n")
    );
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], true);
    let cells = report["cells"].as_array().unwrap().len();
    assert!((1..10).contains(&cells), "the finished cells only: {cells}");
    assert_nothing_left(&out);
}

#[test]
fn a_missing_program_skips_its_target_with_the_install_command() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = output(
        continuity(&[
            "run",
            "--target",
            "gateway",
            "--target",
            "agent",
            "--scenario",
            "recreate-rehydrate",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("CONTINUITY_NGINX", "/nonexistent/nginx"),
    );
    // A skipped cell is not a pass.
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    let gateway = cell(&report, "gateway", "recreate-rehydrate");
    assert_eq!(gateway["verdict"], "skipped");
    assert!(
        gateway["reason"]
            .as_str()
            .unwrap()
            .contains("apt-get install -y nginx"),
        "{gateway}"
    );
    // The rest of the stack still runs, straight to sandbox-agent.
    assert_eq!(
        cell(&report, "agent", "recreate-rehydrate")["verdict"],
        "pass"
    );
    assert!(!report["run"]["baseUrl"]
        .as_str()
        .unwrap()
        .ends_with("/sandbox"));
    assert!(String::from_utf8_lossy(&run.stdout).contains("skipped: nginx is not installed"));
    assert_nothing_left(&out);
}

/// Every target on the gateway hop (the nginx restarts and reloads, the
/// faults on its hop, the timeouts of its own nginx or its proxy), as
/// `continuity list` names them: without nginx each is skipped, and its
/// reason names nginx and the command that installs it. The faults on the
/// hop said only "the gateway hop is not running here (its component did
/// not start)".
#[test]
fn without_nginx_every_gateway_hop_target_names_it_and_its_install_command() {
    let _serial = support::stack_slot();
    let list = output(&mut continuity(&["list"]));
    let targets: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .take_while(|l| !l.starts_with("scenarios:"))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with("gateway"))
        .map(str::to_string)
        .collect();
    for needed in [
        "gateway",
        "gateway-reload",
        "gateway-partition",
        "gateway-reset",
    ] {
        assert!(
            targets.iter().any(|t| t == needed),
            "{needed} in {targets:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut args = vec!["run", "--scenario", "recreate-rehydrate"];
    for target in &targets {
        args.extend(["--target", target.as_str()]);
    }
    args.extend(["--out", out.to_str().unwrap()]);
    let run = output(continuity(&args).env("CONTINUITY_NGINX", "/nonexistent/nginx"));
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    for target in &targets {
        let skipped = cell(&report, target, "recreate-rehydrate");
        assert_eq!(skipped["verdict"], "skipped", "{skipped}");
        let reason = skipped["reason"].as_str().unwrap();
        assert!(
            reason.contains("nginx is not installed")
                && reason.contains("apt-get install -y nginx"),
            "{target}: {reason}"
        );
    }
    assert_nothing_left(&out);
}

static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

#[test]
fn sigkill_of_the_harness_mid_run_leaves_no_component_running_after_5_s() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut child, lines) = spawn_until(
        &mut continuity(&["run", "--out", out.to_str().unwrap()]),
        |line| line.starts_with("[2/"),
    );
    // Mid-run: the stack is up and its components are recorded as they started.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("stack").join("stack.json")).unwrap(),
    )
    .unwrap();
    let components = state["components"].as_array().unwrap();
    assert!(components.len() >= 4, "{state:#}");
    // Engine, runner, sandbox-agent (nginx overwrites its environment block).
    let running = support::processes_owned_in(&out);
    assert!(running.len() >= 3, "the stack runs: {running:#?}");
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(5));
    let left = support::processes_owned_in(&out);
    assert!(
        left.is_empty(),
        "5 s after SIGKILL of the harness: {left:#?}"
    );
    let left = support::processes_in(&out);
    assert!(
        left.is_empty(),
        "5 s after SIGKILL of the harness: {left:#?}"
    );
    for c in components {
        let pid = c["pid"].as_u64().unwrap() as u32;
        assert!(!support::alive(pid), "{} (pid {pid}) survived", c["target"]);
    }
    drop(lines);
}

#[test]
fn concurrent_stack_up_on_one_folder_starts_one_stack_and_down_leaves_nothing() {
    let _serial = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let stack = dir.path().join("stack");
    let stack_arg = stack.to_str().unwrap().to_string();
    let _down = StackDownOnDrop(stack.clone());
    let ups: Vec<_> = (0..2)
        .map(|_| {
            let arg = stack_arg.clone();
            std::thread::spawn(move || output(&mut continuity(&["stack", "up", "--dir", &arg])))
        })
        .collect();
    let ups: Vec<Output> = ups.into_iter().map(|t| t.join().unwrap()).collect();
    let codes: Vec<Option<i32>> = ups.iter().map(|o| o.status.code()).collect();
    let refused = ups
        .iter()
        .find(|o| o.status.code() == Some(i32::from(exit_codes::USAGE)))
        .unwrap_or_else(|| panic!("one of the two must be refused: {codes:?}"));
    assert!(
        ups.iter()
            .any(|o| o.status.code() == Some(i32::from(exit_codes::OK))),
        "one starts: {codes:?}\n{}",
        String::from_utf8_lossy(&ups[0].stderr)
    );
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("stack.lock") || message.contains("already up"),
        "{message}"
    );
    // One stack: one of each component runs in the folder.
    let running = support::processes_in(&stack);
    for program in [
        "rivet-engine --config",
        "server.mjs",
        "sandbox-agent server",
        "nginx: master process",
    ] {
        let n = running.iter().filter(|l| l.contains(program)).count();
        assert_eq!(n, 1, "{program}: {running:#?}");
    }
    let down = output(&mut continuity(&["stack", "down", "--dir", &stack_arg]));
    assert_exit(&down, exit_codes::OK);
    assert_nothing_left(&stack);
}

#[test]
fn stack_down_kills_only_what_the_stack_started() {
    let _serial = support::stack_slot();
    let mut foreign_engine = ForeignEngine::start();
    let mut unrelated = Command::new("sleep").arg("600").spawn().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stack = dir.path().join("stack");
    let stack_arg = stack.to_str().unwrap();
    let up = output(&mut continuity(&["stack", "up", "--dir", stack_arg]));
    let _down = StackDownOnDrop(stack.clone());
    assert_exit(&up, exit_codes::OK);
    // Hand-edit stack.json: the agent's pid now names the unrelated `sleep`
    // (its recorded start time kept), and an extra entry names it with its
    // real start time, as a careful forger would.
    let path = stack.join("stack.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let start_of_sleep: u64 = {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", unrelated.id())).unwrap();
        let rest = stat.rsplit_once(')').unwrap().1.to_string();
        rest.split_whitespace().nth(19).unwrap().parse().unwrap()
    };
    let components = state["components"].as_array_mut().unwrap();
    let agent = components
        .iter_mut()
        .find(|c| c["target"] == "agent")
        .unwrap();
    agent["pid"] = unrelated.id().into();
    let mut forged = agent.clone();
    forged["target"] = "forged".into();
    forged["started"] = start_of_sleep.into();
    components.push(forged);
    for c in components
        .iter_mut()
        .filter(|c| c["target"] == "rivet-engine")
    {
        // The engine entry points at the foreign engine.
        c["pid"] = foreign_engine.child.id().into();
    }
    std::fs::write(&path, serde_json::to_string_pretty(&state).unwrap()).unwrap();

    let status = output(&mut continuity(&["stack", "status", "--dir", stack_arg]));
    // Not every component is the one started.
    assert_exit(&status, exit_codes::FAILED);
    let down = output(&mut continuity(&["stack", "down", "--dir", stack_arg]));
    let stderr = String::from_utf8_lossy(&down.stderr);
    assert_exit(&down, exit_codes::OK);
    assert!(stderr.contains("left alone"), "{stderr}");
    assert!(
        unrelated.try_wait().unwrap().is_none(),
        "stack down killed an unrelated process named in a hand-edited stack.json"
    );
    foreign_engine.assert_alive();
    // The real agent and engine, no longer named in stack.json, are still
    // found by the owner tag they carry.
    assert_nothing_left(&stack);
    unrelated.kill().unwrap();
    unrelated.wait().unwrap();
}

#[test]
#[allow(unsafe_code)]
fn ctrl_c_mid_cell_records_an_interrupted_cell_and_runs_its_cleanup() {
    let _serial = support::stack_slot();
    let mut foreign_engine = ForeignEngine::start();
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("hold.toml"),
        r#"name = "hold"
description = "A session held open by a long phase"
verdict = ["never"]

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
name = "prompt"
step = "prompt"
client = "c"
session = "s"
text = "hello"

[[phase]]
name = "hold"
step = "sleep"
ms = 120000
timeout_ms = 130000

[[phase]]
name = "never"
step = "prompt"
client = "c"
session = "s"
text = "not reached"

[[cleanup]]
name = "destroy"
step = "destroy_session"
client = "c"
session = "s"

[[cleanup]]
name = "dispose"
step = "dispose"
client = "c"
"#,
    )
    .unwrap();
    let out = dir.path().join("run");
    let (child, lines) = spawn_until(
        &mut continuity(&[
            "run",
            "--target",
            "agent",
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]),
        |line| line.starts_with("stack: starting nginx"),
    );
    // The cell is in its 120 s `hold` phase well before this.
    std::thread::sleep(Duration::from_secs(8));
    // SAFETY: SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = child.wait_with_output().unwrap();
    let seen = lines.join().unwrap();
    assert_eq!(
        run.status.code(),
        Some(i32::from(exit_codes::INCOMPLETE)),
        "{}",
        seen.join("\n")
    );
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], true);
    let cell = cell(&report, "agent", "hold");
    assert_eq!(cell["verdict"], "interrupted", "{cell:#}");
    assert_eq!(cell["failureBoundary"], "hold");
    assert_eq!(phase(cell, "prompt")["outcome"], "ok");
    assert_eq!(phase(cell, "hold")["outcome"], "interrupted");
    assert_eq!(phase(cell, "never")["outcome"], "not_run");
    // Its cleanup ran: the session was destroyed on the server, the client closed.
    for name in ["destroy", "dispose"] {
        let p = phase(cell, name);
        assert_eq!(
            (p["cleanup"].as_bool(), p["outcome"].as_str()),
            (Some(true), Some("ok")),
            "{p:#}"
        );
    }
    assert_eq!(report["totals"]["interrupted"], 1);
    assert!(
        seen.iter().any(|l| l.contains("interrupted @ hold")),
        "{seen:#?}"
    );
    assert_nothing_left(&out);
    // The run's teardown spared the rivet-engine it did not start.
    foreign_engine.assert_alive();
}

/// nginx killed mid-run by someone (the cells' target is not the gateway)
/// once made every later cell a FAIL of sandbox-agent: connections
/// refused or closed through the gateway. nginx is continuity's own part:
/// those cells are the harness's `error` naming it, and the run exits 2.
#[test]
fn an_nginx_killed_mid_run_makes_later_cells_errors_naming_it() {
    use support::spawned::{exit_code, first_event, kill_group, pids_with, spawn_run, stderr_of};
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--scenario",
            "recreate-rehydrate",
            "--jobs",
            "1",
        ],
    );
    let finished = first_event(&events, "cell-finished");
    let master = pids_with(&out, "nginx: master");
    assert_eq!(master.len(), 1, "{:?}", support::processes_in(&out));
    kill_group(master[0]);
    let code = exit_code(&mut child);
    let stderr = stderr_of(&mut child);
    let report = report(&out);
    let first = &finished["cell"];
    let later: Vec<&serde_json::Value> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scenario"] != first["scenario"])
        .collect();
    assert_eq!(later.len(), 1, "{report}");
    for cell in later {
        assert_eq!(cell["verdict"], "error", "{cell}");
        let boundary = phase(cell, cell["failureBoundary"].as_str().unwrap());
        let signature = &boundary["signature"];
        assert_eq!(signature["component"], "nginx", "{boundary}");
        assert_eq!(signature["kind"], "harness", "{boundary}");
        let message = signature["message"].as_str().unwrap();
        assert!(message.starts_with("nginx (the gateway): "), "{message}");
    }
    assert_eq!(code, Some(exit_codes::INCOMPLETE.into()), "{stderr}");
    assert!(
        stderr.contains("continuity's own nginx (the gateway) failed under"),
        "{stderr}"
    );
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}
