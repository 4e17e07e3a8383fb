//! A restart is verified, not assumed: against the real sandbox-agent
//! binary, a restart that never happened (a daemonising `--server-bin`, a
//! restart command that does nothing) fails its restart phase; one that
//! returns before the server is back is waited for, so the session is
//! judged on a server that is up; one that never comes back is the
//! restart's failure, not a later phase's.

use crate::support;
use crate::support::{assert_exit, cell, continuity_with, phase, report};
use continuity::exit_codes;
use continuity::stack::sandbox_agent::{self, SandboxAgentConfig};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn release() -> PathBuf {
    sandbox_agent::install(sandbox_agent::DEFAULT_VERSION, &mut |l| eprintln!("{l}"))
        .unwrap_or_else(|e| panic!("cannot install sandbox-agent: {e}"))
}

/// SIGKILLs the process groups whose leaders' pids `file` lists, one a line.
fn kill_listed(file: &Path) {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        continuity::supervise::kill_group(pid);
    }
}

/// Kills what a test started in the background, panics included.
struct KillOnDrop(PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_listed(&self.0);
    }
}

/// The restart phase of `cell`, and the cell's boundary.
fn restart_of(cell: &Value) -> (&Value, &Value) {
    (&cell["restarts"][0], &cell["failureBoundary"])
}

/// A `--server-bin` that daemonises: it starts the real server in a
/// session of its own, in the background, and exits 0 a second later (the
/// candidate check wants it running until the server answers). `--target agent`'s
/// SIGTERM to its group misses the server, which keeps serving: the
/// restart phase fails "never went down", and the run exits non-zero.
#[test]
fn a_daemonising_server_bin_never_went_down_and_fails_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let real = release();
    let daemons = dir.path().join("daemons");
    let _killed = KillOnDrop(daemons.clone());
    let wrapper = dir.path().join("sandbox-agent");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then exec {real} \"$@\"; fi\nsetsid {real} \"$@\" </dev/null >>{log} 2>&1 &\necho $! >> {daemons}\nsleep 1\nexit 0\n",
            real = real.display(),
            log = dir.path().join("daemon.log").display(),
            daemons = daemons.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = format!("daemon={}", wrapper.display());
    let out = dir.path().join("run");
    let run = {
        let _one = support::stack_slot();
        continuity_with(
            &[
                "run",
                "--server-bin",
                &spec,
                "--target",
                "agent",
                "--scenario",
                "native-continuity",
                "--timeout-ms",
                "10000",
                "--out",
                out.to_str().unwrap(),
            ],
            &[],
        )
    };
    assert_ne!(
        run.status.code(),
        Some(i32::from(exit_codes::OK)),
        "{run:?}"
    );
    let report = report(&out);
    let cell = cell(&report, "agent", "native-continuity");
    let (restart, boundary) = restart_of(cell);
    assert_eq!(boundary, "restart", "{cell}");
    assert_eq!(cell["verdict"], "error", "{cell}");
    assert_eq!(restart["ok"], false, "{restart}");
    let detail = restart["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the target never went down: its process group was stopped")
            && detail.contains("still accepted connections"),
        "{detail}"
    );
    let phase = phase(cell, "restart").to_string();
    assert!(phase.contains("never went down"), "{phase}");
}

/// The real server started in the background by a shell script, in a
/// session of its own, after `delay` seconds; its pid goes to `pids`.
struct ScriptedServer {
    port: u16,
    pids: PathBuf,
    dir: PathBuf,
}

impl ScriptedServer {
    fn new(dir: &Path) -> ScriptedServer {
        let port = continuity::supervise::free_port().unwrap();
        ScriptedServer {
            port,
            pids: dir.join("server.pids"),
            dir: dir.to_path_buf(),
        }
    }

    /// One started now in `dir`, with the guard that stops every server
    /// it starts when the test ends, passed or not.
    fn started(dir: &Path) -> (ScriptedServer, KillOnDrop) {
        let server = ScriptedServer::new(dir);
        let killed = KillOnDrop(server.pids.clone());
        server.start_now();
        (server, killed)
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The shell line that starts it after `delay` seconds.
    fn start_line(&self, delay: &str) -> String {
        let config = SandboxAgentConfig {
            binary: release(),
            run_dir: self.dir.join("server"),
            agent_program: PathBuf::from(env!("CARGO_BIN_EXE_continuity")),
            agent_env: Vec::new(),
            port: Some(self.port),
            cors_origin: None,
        };
        let spec = config.prepare(self.port).unwrap();
        let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}='{v}'")).collect();
        let command: Vec<String> = std::iter::once(spec.program.display().to_string())
            .chain(spec.args.iter().cloned())
            .collect();
        format!(
            "(sleep {delay}; cd '{cwd}' && exec env {env} setsid {command}) </dev/null >>'{log}' 2>&1 & echo $! >> '{pids}'",
            cwd = spec.cwd.unwrap().display(),
            env = env.join(" "),
            command = command.join(" "),
            log = spec.log.display(),
            pids = self.pids.display(),
        )
    }

    /// Stops the last server started (its whole session's group).
    fn stop_line(&self) -> String {
        format!(
            "pid=$(tail -n 1 '{pids}'); kill -TERM -$pid; while kill -0 $pid 2>/dev/null; do sleep 0.05; done",
            pids = self.pids.display()
        )
    }

    fn start_now(&self) {
        let started = std::process::Command::new("/bin/sh")
            .args(["-c", &self.start_line("0")])
            .status()
            .unwrap();
        assert!(started.success());
        let health = format!("{}/v1/health", self.base_url());
        let deadline = std::time::Instant::now() + support::READY_WITHIN;
        while std::time::Instant::now() < deadline {
            let up = std::process::Command::new("curl")
                .args(["-sf", "-o", "/dev/null", &health])
                .status()
                .is_ok_and(|s| s.success());
            if up {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "sandbox-agent did not start on {}: {}",
            self.base_url(),
            std::fs::read_to_string(self.dir.join("server/sandbox-agent.log")).unwrap_or_default()
        );
    }
}

/// A finished `continuity run` against a deployment: its folder, how it
/// exited and its report.json.
struct Ran {
    out: PathBuf,
    run: std::process::Output,
    report: Value,
}

/// `continuity run --base-url` against `server` on one scenario with the
/// seed script's knobs (`env`) and `extra` flags, into `dir/run`, and its
/// report read (a run that wrote none panics with its output).
fn run_against(dir: &Path, server: &ScriptedServer, env: &[(&str, &str)], extra: &[&str]) -> Ran {
    let out = dir.join("run");
    let url = server.base_url();
    let mut args = vec![
        "run",
        "--base-url",
        &url,
        "--scenario",
        "native-continuity",
        "--agent",
        "mock",
        "--timeout-ms",
        "10000",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = continuity_with(&args, env);
    assert!(out.join("report.json").is_file(), "no report.json: {run:?}");
    let report = report(&out);
    Ran { out, run, report }
}

/// `SA_RESTART_CMD=true` restarts nothing: the restart phase fails "never
/// went down" (the server's pid and health unchanged), not a pass.
#[test]
fn a_restart_command_that_does_nothing_never_went_down() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let Ran { run, report, .. } = run_against(
        dir.path(),
        &server,
        &[("SA_RESTART_CMD", "true"), ("SA_RESTART_WAIT_SEC", "0")],
        &[],
    );
    assert_ne!(
        run.status.code(),
        Some(i32::from(exit_codes::OK)),
        "{run:?}"
    );
    let cell = cell(&report, "command", "native-continuity");
    let (restart, boundary) = restart_of(cell);
    assert_eq!(boundary, "restart", "{cell}");
    let detail = restart["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the target never went down: its probe answered throughout")
            && detail.contains("still served by the same process"),
        "{detail}"
    );
}

/// A `systemctl restart`-style command that returns before the server
/// listens (it stops the server and starts it again in the background after
/// 2 s), with `SA_RESTART_WAIT_SEC=0`: the harness waits for the server to
/// be back, so the session meets the server's real defect (0.4.2's 400 at
/// promptSameHandleAfterRestart), not `connection refused`.
#[test]
fn a_restart_that_returns_before_the_server_is_back_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let command = format!("{}; {}", server.stop_line(), server.start_line("2"));
    let Ran { run, report, .. } = run_against(
        dir.path(),
        &server,
        &[
            ("SA_RESTART_CMD", command.as_str()),
            ("SA_RESTART_WAIT_SEC", "0"),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::FAILED);
    let cell = cell(&report, "command", "native-continuity");
    let (restart, boundary) = restart_of(cell);
    assert_eq!(boundary, "promptSameHandleAfterRestart", "{cell}");
    let failed = phase(cell, "promptSameHandleAfterRestart");
    assert!(
        !failed.to_string().contains("connection refused"),
        "{failed}"
    );
    assert_eq!(failed["signature"]["httpStatus"], 400, "{failed}");
    // The restart phase waited for the server and says so.
    assert_eq!(restart["ok"], true, "{restart}");
    assert!(restart["readyMs"].as_u64().unwrap() >= 1500, "{restart}");
    assert!(
        restart["down"].as_str().unwrap().contains("failed"),
        "{restart}"
    );
}

/// A restart that stops the server and never starts it: the restart phase
/// is the boundary ("did not come back"), not the next prompt, and the
/// cell is the system's failure (`not_back`, the probe's refusal its
/// signature), not continuity's error: it was `error`, kind `harness`,
/// exit 2.
#[test]
fn a_restart_that_never_comes_back_is_the_restarts_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let config = dir.path().join("continuity.toml");
    std::fs::write(
        &config,
        format!(
            "[targets.agent]\nrestart = {{ command = {:?} }}\nready_timeout_ms = 2000\n",
            server.stop_line()
        ),
    )
    .unwrap();
    let Ran { run, report, .. } = run_against(
        dir.path(),
        &server,
        &[],
        &["--config", config.to_str().unwrap()],
    );
    assert_exit(&run, exit_codes::FAILED);
    let cell = cell(&report, "agent", "native-continuity");
    let (restart, boundary) = restart_of(cell);
    assert_eq!(boundary, "restart", "{cell}");
    assert_eq!(cell["verdict"], "fail", "{cell}");
    let detail = restart["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the target did not come back within 2 s")
            && detail.contains("/v1/health"),
        "{detail}"
    );
    let signature = &phase(cell, "restart")["signature"];
    assert_eq!(signature["kind"], "not_back", "{signature}");
    assert_eq!(signature["cause"]["error"], "refused", "{signature}");
}

/// A gateway in front of a restarted target that never serves again, as a
/// deployment meets it: one that answers 502 for good after its restart
/// (nginx, reloaded with `return 502`), one that resets every connection,
/// one that accepts and never answers (continuity's own fault proxy in
/// front of the real server, `reset_peer` or `timeout` put in force by the
/// restart). Each serves at first; its restart is seen going down (its
/// probe fails) and it never comes back: the system's `fail` at the
/// restart, signed with the probe's last answer; report.md puts the fix in
/// the component; the run exits 1. An expectations file pins all three
/// (what `baseline` records), and the run judged against it passes.
#[test]
fn a_gateway_that_never_serves_again_is_the_systems_failure_signed_by_its_last_answer() {
    use continuity_faults::{FaultProxy, Stream, Toxic, ToxicSpec};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let nginx = Nginx502::start(dir.path(), server.port, &server.pids);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _in_runtime = runtime.enter();
    let upstream: std::net::SocketAddr = ([127, 0, 0, 1], server.port).into();
    let loopback: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
    let resets = FaultProxy::start(
        continuity_faults::LocalHop::Gateway.into(),
        loopback,
        upstream,
    )
    .unwrap();
    let silent = FaultProxy::start(
        continuity_faults::LocalHop::Gateway.into(),
        loopback,
        upstream,
    )
    .unwrap();
    // Their "restart" (a command touching a file) puts the toxic in force for good.
    let breaks = [
        (
            dir.path().join("break-gw-reset"),
            resets.control(),
            Toxic::ResetPeer {
                timeout: Duration::ZERO,
            },
        ),
        (
            dir.path().join("break-gw-silent"),
            silent.control(),
            Toxic::Timeout {
                timeout: Duration::ZERO,
            },
        ),
    ];
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut pending: Vec<_> = breaks.into_iter().collect();
            while !done.load(Ordering::SeqCst) {
                pending.retain(|(file, control, toxic)| {
                    if !file.exists() {
                        return true;
                    }
                    let spec = ToxicSpec::new(toxic.clone(), Stream::Downstream);
                    control.set(spec, None).unwrap();
                    false
                });
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    // Each restart command returns once its gateway has stopped serving,
    // as a stop does. One that returned before its break took hold (the
    // file not yet seen by the watcher, nginx's old worker still
    // answering) had its probe pass at once and was judged "never went
    // down" (the setup's error), not this test's case: under load it
    // failed so in three runs of three.
    let touch = |name: &str, port: u16| {
        format!(
            "touch '{}'; {}",
            dir.path().join(name).display(),
            until_down(port)
        )
    };
    let targets = [
        (
            "gw-502",
            nginx.port,
            nginx.break_line(),
            "not back: http 502",
        ),
        (
            "gw-reset",
            resets.addr().port(),
            touch("break-gw-reset", resets.addr().port()),
            "not back: reset",
        ),
        (
            "gw-silent",
            silent.addr().port(),
            touch("break-gw-silent", silent.addr().port()),
            "not back: no answer",
        ),
    ];
    let config = dir.path().join("continuity.toml");
    let tables: String = targets
        .iter()
        .map(|(name, port, command, _)| {
            format!(
                "[targets.{name}]\nrestart = {{ command = {command:?} }}\nready = {{ http = \"http://127.0.0.1:{port}/v1/health\" }}\nready_timeout_ms = 2000\n\n"
            )
        })
        .collect();
    std::fs::write(&config, tables).unwrap();
    let Ran { out, run, report } = run_against(
        dir.path(),
        &server,
        &[],
        &["--config", config.to_str().unwrap()],
    );
    done.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert_exit(&run, exit_codes::FAILED);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for (name, _, _, short) in &targets {
        let cell = cell(&report, name, "native-continuity");
        assert_eq!(cell["verdict"], "fail", "{cell}");
        assert_eq!(cell["failureBoundary"], "restart", "{cell}");
        assert!(
            cell["restarts"][0]["detail"]
                .as_str()
                .unwrap()
                .starts_with("the target did not come back within 2 s"),
            "{cell}"
        );
        let signature = &phase(cell, "restart")["signature"];
        assert_eq!(signature["kind"], "not_back", "{signature}");
        let cause = &signature["cause"];
        let said = match (cause["httpStatus"].as_u64(), cause["error"].as_str()) {
            (Some(status), _) => format!("not back: http {status}"),
            (None, Some(error)) => format!("not back: {}", error.replace('_', " ")),
            _ => panic!("no cause: {signature}"),
        };
        assert_eq!(said, *short, "{signature}");
        assert!(
            md.contains(&format!(
                "- **{name}**: did not come back after its restart ({short}"
            )) && md.contains(&format!(
                "the fix belongs in the component `{name}` restarts"
            )),
            "{md}"
        );
    }
    // Expectations can pin it: what `baseline` records is judged as expected.
    let baseline = continuity_with(&["baseline", out.to_str().unwrap()], &[]);
    assert_exit(&baseline, exit_codes::OK);
    let pinned = String::from_utf8(baseline.stdout).unwrap();
    for (name, _, _, short) in &targets {
        assert!(
            pinned.contains(&format!("target = \"{name}\""))
                && pinned.contains(&format!("signature = \"{short}\"")),
            "{pinned}"
        );
    }
    let expect = dir.path().join("expect.toml");
    std::fs::write(&expect, pinned).unwrap();
    let gated = dir.path().join("gated");
    let judged = continuity_with(
        &[
            "merge",
            "--out",
            gated.to_str().unwrap(),
            "--expect",
            expect.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&judged, exit_codes::OK);
    drop(nginx);
}

/// nginx in front of the server, on a port of its own, until its restart
/// reloads it with a config that answers 502 to everything, for good.
struct Nginx502 {
    port: u16,
    pid: i32,
    prefix: PathBuf,
    child: std::process::Child,
}

impl Nginx502 {
    fn start(dir: &Path, upstream: u16, pids: &Path) -> Nginx502 {
        let port = continuity::supervise::free_port().unwrap();
        let prefix = dir.join("nginx-502");
        std::fs::create_dir_all(&prefix).unwrap();
        let user = match continuity::supervise::os::is_root() {
            true => "user root root;",
            false => "",
        };
        let conf = |location: &str| {
            format!(
                "{user}\ndaemon off;\nworker_processes 1;\npid {p}/nginx.pid;\nerror_log {p}/error.log;\nevents {{ worker_connections 64; }}\nhttp {{ access_log off; server {{ listen 127.0.0.1:{port}; location / {{ {location} }} }} }}\n",
                p = prefix.display()
            )
        };
        std::fs::write(
            prefix.join("nginx.conf"),
            conf(&format!("proxy_pass http://127.0.0.1:{upstream};")),
        )
        .unwrap();
        std::fs::write(prefix.join("broken.conf"), conf("return 502;")).unwrap();
        let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|b| Path::new(b).exists())
            .expect("nginx is needed (run .ci/setup, which installs it)");
        let child = std::process::Command::new("setsid")
            .arg(binary)
            .arg("-p")
            .arg(format!("{}/", prefix.display()))
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        std::fs::write(
            pids,
            format!(
                "{}{pid}\n",
                std::fs::read_to_string(pids).unwrap_or_default()
            ),
        )
        .unwrap();
        // Owned before anything can fail: its drop stops and reaps nginx.
        let nginx = Nginx502 {
            port,
            pid,
            prefix,
            child,
        };
        let deadline = std::time::Instant::now() + support::READY_WITHIN;
        let url = format!("http://127.0.0.1:{port}/v1/health");
        loop {
            let code = std::process::Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &url])
                .output()
                .unwrap();
            if code.stdout == b"200" {
                return nginx;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "nginx did not start: {}",
                std::fs::read_to_string(nginx.prefix.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The restart: the broken config in place, and a reload (SIGHUP),
    /// returning once the workers that served the old config are gone and
    /// the gateway no longer answers 200 (a reload returns before either).
    fn break_line(&self) -> String {
        let p = self.prefix.display();
        format!(
            "old=$(cat /proc/{pid}/task/{pid}/children); cp '{p}/broken.conf' '{p}/nginx.conf' && kill -HUP {pid}; \
             i=0; while [ $i -lt 200 ]; do alive=; for w in $old; do kill -0 $w 2>/dev/null && alive=1; done; \
             [ -z \"$alive\" ] && break; sleep 0.05; i=$((i+1)); done; {}",
            until_down(self.port),
            pid = self.pid
        )
    }
}

/// A shell line that waits, at most 10 s, until the health of the gateway
/// on `port` no longer answers 200 (a status of 400 or more, a reset, or no
/// answer within 1 s).
fn until_down(port: u16) -> String {
    format!(
        "i=0; while [ $i -lt 200 ] && curl -sf -m 1 -o /dev/null http://127.0.0.1:{port}/v1/health; do sleep 0.05; i=$((i+1)); done"
    )
}

impl Drop for Nginx502 {
    fn drop(&mut self) {
        continuity::supervise::kill_group(self.pid);
        let _ = self.child.wait();
    }
}

/// A component a cell's restart left down is brought back before the next
/// cell runs, or that cell is not run: its verdict is never the earlier
/// cell's fault's. The deployment's restart command stops the real server
/// and starts it again only from its third call on: the first cell's
/// restart leaves it down (that cell's `fail` at its restart); before the
/// second, its probe is refused and one more restart leaves it down too, so
/// the second is an `error` that says so (it was a `fail` at its first call,
/// as if its own restart had done it); before the third, the restart
/// brings it back and the third runs its own restart on a whole stack.
#[test]
fn the_next_cell_brings_back_what_an_earlier_restart_left_down_or_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let calls = dir.path().join("restart.calls");
    let script = dir.path().join("restart.sh");
    std::fs::write(
        &script,
        format!(
            "n=$(cat '{calls}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{calls}'\n\
             pid=$(tail -n 1 '{pids}'); kill -TERM -$pid 2>/dev/null; while kill -0 $pid 2>/dev/null; do sleep 0.05; done\n\
             if [ $n -ge 3 ]; then {start}; fi\n",
            calls = calls.display(),
            pids = server.pids.display(),
            start = server.start_line("0"),
        ),
    )
    .unwrap();
    let config = dir.path().join("continuity.toml");
    std::fs::write(
        &config,
        format!(
            "[targets.agent]\nrestart = {{ command = \"sh {}\" }}\nready_timeout_ms = 8000\n",
            script.display()
        ),
    )
    .unwrap();
    let Ran { run, report, .. } = run_against(
        dir.path(),
        &server,
        &[],
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenario",
            "recreate-rehydrate",
            "--scenario",
            "native-load",
            "--jobs",
            "1",
        ],
    );
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3, "{report}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    let left_down: Vec<&Value> = cells
        .iter()
        .filter(|c| c["verdict"] == "fail" && c["failureBoundary"] == "restart")
        .collect();
    assert_eq!(
        left_down.len(),
        1,
        "the first restart leaves it down: {report}"
    );
    let not_run: Vec<&Value> = cells.iter().filter(|c| c["verdict"] == "error").collect();
    assert_eq!(not_run.len(), 1, "{report}\n{stderr}");
    let reason = not_run[0]["reason"].as_str().unwrap_or_default();
    for said in [
        "not run: the stack was not whole before this cell",
        "`agent` did not come back after an earlier cell's fault",
        "and restarting `agent` before this cell failed too",
    ] {
        assert!(reason.contains(said), "{said:?} in {reason}");
    }
    assert!(
        not_run[0]["phases"].as_array().is_none_or(|p| p.is_empty()),
        "{}",
        not_run[0]
    );
    let whole: Vec<&Value> = cells
        .iter()
        .filter(|c| c["restarts"][0]["ok"] == true)
        .collect();
    assert_eq!(
        whole.len(),
        1,
        "the third runs on the stack brought back: {report}"
    );
    assert_ne!(whole[0]["verdict"], "error", "{}", whole[0]);
    assert_eq!(
        whole[0]["phases"][0]["ok"], true,
        "its first call answered: {}",
        whole[0]
    );
    let calls = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        calls.trim(),
        "4",
        "one restart a cell, one more before each of the last two"
    );
}

/// A component of a deployment, `part`, that its restart leaves down
/// (the restart stops it and starts nothing): an HTTP server in a group of
/// its own, its probe `ready_ms` long; the config naming it, and the
/// component (killed when dropped).
fn part_left_down(dir: &Path, ready_ms: u64) -> (PathBuf, GroupOnDrop) {
    use std::os::unix::process::CommandExt;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let component = std::process::Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = component.id();
    let component = GroupOnDrop(component);
    let up = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(up.elapsed().as_secs() < 10, "the component never listened");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let config = dir.join("continuity.toml");
    std::fs::write(
        &config,
        format!(
            "[targets.part]\nrestart = {{ command = \"kill -TERM -{pid} 2>/dev/null; true\" }}\n\
             ready = {{ http = \"http://127.0.0.1:{port}/\" }}\nready_timeout_ms = {ready_ms}\n"
        ),
    )
    .unwrap();
    (config, component)
}

/// A component of a deployment left down while the server stays up: the
/// first cell's DELETEs (0.4.2 never answers one; the SDK's 2 s bound)
/// are deferred past its verdict, and the next cell first restarts the
/// component again and waits out its probe. The DELETEs run out beside
/// that wait, so their phase is its own 2 s: left unpolled meanwhile, the
/// DELETE was sent only after it and its phase measured the wait as the
/// server's (540 s once, after a Rivet Engine that never came back).
#[test]
fn a_deferred_delete_runs_out_beside_the_next_cells_bring_back() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let (config, _component) = part_left_down(dir.path(), 6000);
    let Ran { report, run, .. } = run_against(
        dir.path(),
        &server,
        &[],
        &[
            "--config",
            config.to_str().unwrap(),
            "--scenario",
            "recreate-rehydrate",
            "--jobs",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    let cells = report["cells"].as_array().unwrap();
    let left_down = cells
        .iter()
        .find(|c| c["verdict"] == "fail" && c["failureBoundary"] == "restart")
        .unwrap_or_else(|| panic!("no cell left it down: {report}\n{stderr}"));
    assert!(
        cells.iter().any(|c| c["verdict"] == "error"),
        "the next cell is not run: {report}"
    );
    let disposes: Vec<u64> = left_down["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["cleanup"] == true && p["step"] == "dispose")
        .map(|p| p["durationMs"].as_u64().unwrap())
        .collect();
    assert!(!disposes.is_empty(), "{left_down}");
    assert!(
        disposes.iter().all(|ms| *ms < 4_000),
        "{disposes:?}: {left_down}"
    );
}

/// A Ctrl-C while the next cell brings back a component that does not
/// come back (its probe 20 s long) stops the run at once: the bring-back
/// is dropped and no later cell is begun. It went on to the probe's
/// deadline, then brought the component back for each cell left.
#[test]
fn a_ctrl_c_during_a_bring_back_stops_the_run_at_once() {
    use support::spawned::{exit_code, first_event, spawn_run};
    let dir = tempfile::tempdir().unwrap();
    let (server, _killed) = ScriptedServer::started(dir.path());
    let (config, _component) = part_left_down(dir.path(), 20_000);
    let out = dir.path().join("run");
    let url = server.base_url();
    let (mut child, events) = spawn_run(
        &out,
        &[
            "--base-url",
            &url,
            "--config",
            config.to_str().unwrap(),
            "--scenario",
            "native-continuity",
            "--scenario",
            "recreate-rehydrate",
            "--scenario",
            "native-load",
            "--timeout-ms",
            "10000",
            "--jobs",
            "1",
        ],
    );
    // The first cell's restart waits out the 20 s probe; the next cell's
    // bring-back is then under way.
    first_event(&events, "cell-finished");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let asked = std::time::Instant::now();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let code = exit_code(&mut child);
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(10),
        "{:?} after the Ctrl-C (exit {code:?})",
        asked.elapsed()
    );
    let report = report(&out);
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "no later cell was begun: {report}");
}

/// Kills a child's process group when dropped, and reaps the child.
struct GroupOnDrop(std::process::Child);

impl Drop for GroupOnDrop {
    fn drop(&mut self) {
        continuity::supervise::kill_group(self.0.id() as i32);
        let _ = self.0.wait();
    }
}
