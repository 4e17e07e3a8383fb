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

/// `continuity run --base-url URL` on one scenario with the seed script's knobs.
fn run_deployment(
    out: &Path,
    url: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "run",
        "--base-url",
        url,
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
    continuity_with(&args, env)
}

/// `SA_RESTART_CMD=true` restarts nothing: the restart phase fails "never
/// went down" (the server's pid and health unchanged), not a pass.
#[test]
fn a_restart_command_that_does_nothing_never_went_down() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::new(dir.path());
    let _killed = KillOnDrop(server.pids.clone());
    server.start_now();
    let out = dir.path().join("run");
    let run = run_deployment(
        &out,
        &server.base_url(),
        &[("SA_RESTART_CMD", "true"), ("SA_RESTART_WAIT_SEC", "0")],
        &[],
    );
    assert_ne!(
        run.status.code(),
        Some(i32::from(exit_codes::OK)),
        "{run:?}"
    );
    let report = report(&out);
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
    let server = ScriptedServer::new(dir.path());
    let _killed = KillOnDrop(server.pids.clone());
    server.start_now();
    let command = format!("{}; {}", server.stop_line(), server.start_line("2"));
    let out = dir.path().join("run");
    let run = run_deployment(
        &out,
        &server.base_url(),
        &[
            ("SA_RESTART_CMD", command.as_str()),
            ("SA_RESTART_WAIT_SEC", "0"),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
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
/// is the boundary ("did not come back"), not the next prompt.
#[test]
fn a_restart_that_never_comes_back_is_the_restarts_failure() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::new(dir.path());
    let _killed = KillOnDrop(server.pids.clone());
    server.start_now();
    let config = dir.path().join("continuity.toml");
    std::fs::write(
        &config,
        format!(
            "[targets.agent]\nrestart = {{ command = {:?} }}\nready_timeout_ms = 2000\n",
            server.stop_line()
        ),
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = run_deployment(
        &out,
        &server.base_url(),
        &[],
        &["--config", config.to_str().unwrap()],
    );
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
    let detail = restart["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the target did not come back within 2 s")
            && detail.contains("/v1/health"),
        "{detail}"
    );
}
