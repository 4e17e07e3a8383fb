//! The sandbox-state steps (files, processes, terminals) against the real
//! sandbox-agent server: each step on a live server, what a server restart
//! does to them, and that a cell's teardown removes what it made.

use crate::support;

use async_trait::async_trait;
use continuity::client::{Client, ClientOptions, TerminalError};
use continuity::persist::MemoryDriver;
use continuity::report::RestartResult;
use continuity::report::{Outcome, PhaseResult, Verdict};
use continuity::scenario::Restarted;
use continuity::scenario::{
    builtin_scenarios, parse_scenario, run_cell, CellRun, CellSettings, Restarter,
};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const SANDBOX_ROOT: &str = "/tmp/continuity-sandbox";

fn settings(base_url: String, suffix: &str) -> CellSettings {
    crate::support::cell_settings(base_url, suffix, Duration::from_secs(10))
}

fn phase<'a>(run: &'a CellRun, name: &str) -> &'a PhaseResult {
    run.phases
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no phase {name} in {:#?}", run.phases))
}

fn message(run: &CellRun, name: &str) -> String {
    let p = phase(run, name);
    p.signature
        .as_ref()
        .unwrap_or_else(|| panic!("{name} has no signature: {p:?}"))
        .message
        .clone()
}

fn client(base_url: String) -> Client {
    Client::connect(ClientOptions::new(
        base_url,
        Arc::new(MemoryDriver::default()),
    ))
    .unwrap()
}

fn suffix(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// Restarts the real server, as the `agent` target does.
struct RestartServer<'a>(&'a mut support::Server);

#[async_trait]
impl Restarter for RestartServer<'_> {
    async fn restart(&mut self, phase: &str) -> Restarted {
        let took = self.0.restart().await;
        Restarted::from_record(RestartResult {
            phase: phase.into(),
            ok: true,
            action: "managed".into(),
            restart_ms: took.as_millis() as u64,
            ready_ms: Some(took.as_millis() as u64),
            down: None,
            detail: None,
        })
    }
}

/// A "restart" that deletes the cell's files behind the server's back.
struct DeleteFiles(String);

#[async_trait]
impl Restarter for DeleteFiles {
    async fn restart(&mut self, phase: &str) -> Restarted {
        std::fs::remove_dir_all(&self.0).unwrap();
        Restarted::from_record(RestartResult {
            phase: phase.into(),
            ok: true,
            action: "delete".into(),
            restart_ms: 0,
            ready_ms: Some(0),
            down: None,
            detail: None,
        })
    }
}

const EVERY_STEP: &str = r#"
name = "every-step"
[[phase]]
name = "connect"
step = "connect"
client = "c"
[[phase]]
name = "probe"
step = "probe"
client = "c"
[[phase]]
name = "write"
step = "write_file"
client = "c"
path = "a/b.txt"
content = "bytes é\n"
[[phase]]
name = "read"
step = "read_file"
client = "c"
path = "a/b.txt"
[[phase]]
name = "spawnShort"
step = "spawn_process"
client = "c"
process = "short"
command = ["sh", "-c", "echo short-lived; exit 3"]
[[phase]]
name = "spawnShell"
step = "spawn_process"
client = "c"
process = "shell"
command = ["sh", "-c", "echo shell-marker; exec cat"]
tty = true
[[phase]]
name = "running"
step = "process_status"
client = "c"
process = "shell"
logs_contain = "shell-marker"
[[phase]]
name = "attach"
step = "terminal_attach"
client = "c"
process = "shell"
terminal = "t"
[[phase]]
name = "send"
step = "terminal_send"
terminal = "t"
text = "first-line"
[[phase]]
name = "echo"
step = "terminal_expect"
terminal = "t"
[[phase]]
name = "reattach"
step = "terminal_reattach"
client = "c"
terminal = "t"
[[phase]]
name = "sendAgain"
step = "terminal_send"
terminal = "t"
text = "second-line"
[[phase]]
name = "echoAgain"
step = "terminal_expect"
terminal = "t"
text = "second-line"
[[phase]]
name = "exited"
step = "process_status"
client = "c"
process = "short"
expect = "exited"
logs_contain = "short-lived"
"#;

#[tokio::test]
async fn every_sandbox_step_works_against_the_real_server_and_teardown_removes_it_all() {
    let server = support::Server::start().await;
    let scenario = parse_scenario(Path::new("every.toml"), EVERY_STEP).unwrap();
    let suffix = suffix("every");
    let run = run_cell(
        &scenario,
        &settings(server.base_url(), &suffix),
        &mut DeleteFiles(String::new()),
    )
    .await;
    for p in &run.phases {
        assert!(p.ok, "{} failed: {p:?}", p.name);
    }
    assert_eq!(run.verdict, Verdict::Pass);
    assert_eq!(phase(&run, "probe").detail["status"], "connected");
    assert_eq!(phase(&run, "read").detail["sameBytes"], true);
    assert_eq!(phase(&run, "read").detail["bytes"], "bytes é\n".len());
    let running = phase(&run, "running");
    assert_eq!(
        (&running.detail["listed"], &running.detail["status"]),
        (&true.into(), &"running".into())
    );
    assert_eq!(running.detail["logsRetained"], true);
    let exited = phase(&run, "exited");
    assert_eq!(exited.detail["exitCode"], 3, "{exited:?}");
    // No restart happened: the old socket is open, and 0.4.2 replays nothing on attach.
    let reattach = phase(&run, "reattach");
    assert_eq!(reattach.detail["oldSocket"], "open");
    assert_eq!(reattach.detail["scrollbackKept"], false, "{reattach:?}");
    // The watch for a replay ended on the server's answer to a ping, not
    // at its bound: an answer, not a wait of continuity's choosing.
    assert_eq!(
        reattach.detail["scrollbackWatchEnded"], "pong",
        "{reattach:?}"
    );

    let cleanup = phase(&run, "sandboxCleanup");
    assert!(cleanup.ok && cleanup.cleanup, "{cleanup:?}");
    assert_eq!(cleanup.detail["processes"], 2);
    let folder = format!("{SANDBOX_ROOT}/{suffix}");
    assert!(!Path::new(&folder).exists(), "{folder} was left behind");
    let left = client(server.base_url()).list_process_ids().await.unwrap();
    assert!(left.is_empty(), "processes left on the server: {left:?}");
    assert!(
        !marked_alive(&suffix),
        "a process of the cell is still running"
    );
}

#[tokio::test]
async fn a_server_restart_loses_processes_and_terminals_with_clear_signatures() {
    let mut server = support::Server::start().await;
    let scenario = builtin_scenarios()
        .into_iter()
        .find(|s| s.name == "sandbox-reconnect")
        .unwrap();
    let suffix = suffix("restart");
    let base_url = server.base_url();
    let run = run_cell(
        &scenario,
        &settings(base_url.clone(), &suffix),
        &mut RestartServer(&mut server),
    )
    .await;
    assert_eq!(run.verdict, Verdict::Fail);
    assert_eq!(run.failure_boundary.as_deref(), Some("processAfterRestart"));
    // The file is on disk, not in the server: it survives.
    assert!(phase(&run, "fileAfterRestart").ok);
    assert_eq!(
        phase(&run, "probeAfterRestart").detail["status"],
        "connected"
    );
    let process = phase(&run, "processAfterRestart");
    assert_eq!(process.signature.as_ref().unwrap().http_status, Some(404));
    assert!(message(&run, "processAfterRestart").starts_with("process gone"));
    assert!(
        message(&run, "oldTerminalSend").starts_with("ws close 1006"),
        "{}",
        message(&run, "oldTerminalSend")
    );
    // The expect after a failed send waits for the new line, not an old echo.
    assert_eq!(phase(&run, "oldTerminalEcho").outcome, Outcome::Fail);
    let reattach = phase(&run, "reattachTerminal");
    assert_eq!(reattach.detail["oldCloseCode"], 1006);
    assert_eq!(reattach.signature.as_ref().unwrap().http_status, Some(404));
    assert!(message(&run, "reattachTerminal").starts_with("ws upgrade refused: HTTP 404"));
    // Nothing hung: every phase ended well within its deadline.
    for p in &run.phases {
        assert_ne!(p.outcome, Outcome::Timeout, "{p:?}");
    }
    // 0.4.2 forgets the PTY process but does not kill it (it has its own
    // session): it runs on unlisted, and the teardown's sweep kills it.
    let orphans = process.detail["orphanPids"].as_array().unwrap();
    assert_eq!(orphans.len(), 1, "{process:?}");
    assert!(message(&run, "processAfterRestart").ends_with("(still running unlisted)"));
    let cleanup = phase(&run, "sandboxCleanup");
    assert!(cleanup.ok, "{cleanup:?}");
    assert_eq!(cleanup.detail["orphansKilled"], 1, "{cleanup:?}");
    let pid = orphans[0].as_i64().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while Path::new(&format!("/proc/{pid}")).exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !marked_alive(&suffix),
        "a process of the cell is still running"
    );
    assert!(!Path::new(&format!("{SANDBOX_ROOT}/{suffix}")).exists());
}

/// Whether any live process carries the cell's mark (zombies excluded).
fn marked_alive(suffix: &str) -> bool {
    let mark = format!("CONTINUITY_CELL={suffix}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
        })
        .any(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == mark.as_bytes()))
        })
}

#[tokio::test]
async fn a_file_deleted_across_the_restart_is_file_missing() {
    let server = support::Server::start().await;
    let scenario = parse_scenario(
        Path::new("missing.toml"),
        r#"
name = "missing"
[[phase]]
name = "connect"
step = "connect"
client = "c"
[[phase]]
name = "write"
step = "write_file"
client = "c"
path = "gone.txt"
content = "x"
[[phase]]
name = "restart"
step = "restart"
[[phase]]
name = "read"
step = "read_file"
client = "c"
path = "gone.txt"
"#,
    )
    .unwrap();
    let suffix = suffix("missing");
    let run = run_cell(
        &scenario,
        &settings(server.base_url(), &suffix),
        &mut DeleteFiles(format!("{SANDBOX_ROOT}/{suffix}")),
    )
    .await;
    let read = phase(&run, "read");
    assert_eq!(read.detail["exists"], false);
    assert!(
        message(&run, "read").starts_with("file missing"),
        "{read:?}"
    );
    assert!(
        phase(&run, "sandboxCleanup").ok,
        "a missing folder is clean"
    );
}

#[tokio::test]
async fn an_upgrade_for_an_unknown_process_is_refused_with_404() {
    let server = support::Server::start().await;
    let error = client(server.base_url())
        .attach_terminal("proc_404")
        .await
        .unwrap_err();
    match error {
        TerminalError::Refused {
            status,
            problem_type,
            ..
        } => assert_eq!((status, problem_type.as_deref()), (404, Some("not_found"))),
        other => panic!("expected a refused upgrade, got {other:?}"),
    }
}

/// A sandbox-agent started with `--token`, its process group killed on drop.
struct TokenServer {
    base_url: String,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for TokenServer {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: killpg(2) on the group this test's own child leads.
        unsafe { libc::killpg(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

async fn start_with_token(token: &str) -> TokenServer {
    use continuity::stack::sandbox_agent::{self, SandboxAgentConfig};
    use std::os::unix::process::CommandExt;
    let binary = sandbox_agent::install(sandbox_agent::DEFAULT_VERSION, &mut |l| eprintln!("{l}"))
        .unwrap_or_else(|e| panic!("cannot install sandbox-agent: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let port = continuity::supervise::free_port().unwrap();
    let spec = SandboxAgentConfig {
        binary,
        run_dir: dir.path().to_path_buf(),
        agent_program: std::path::PathBuf::from(env!("CARGO_BIN_EXE_continuity")),
        agent_env: Vec::new(),
        port: Some(port),
        cors_origin: None,
    }
    .prepare(port)
    .unwrap();
    let args: Vec<String> = spec
        .args
        .iter()
        .flat_map(|a| match a.as_str() {
            "--no-token" => vec!["--token".to_string(), token.to_string()],
            _ => vec![a.clone()],
        })
        .collect();
    let child = std::process::Command::new(&spec.program)
        .args(&args)
        .envs(spec.env.iter().cloned())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let server = TokenServer {
        base_url: format!("http://127.0.0.1:{port}"),
        child,
        _dir: dir,
    };
    let deadline = std::time::Instant::now() + support::READY_WITHIN;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "sandbox-agent --token did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

#[tokio::test]
async fn the_terminal_socket_carries_the_token_and_is_refused_401_without_it() {
    let server = start_with_token("tok-ws-1").await;
    let mut options =
        ClientOptions::new(server.base_url.clone(), Arc::new(MemoryDriver::default()));
    options.token = Some(continuity::secret::Secret::new("tok-ws-1"));
    let with = Client::connect(options).unwrap();
    let process = with
        .create_process(&continuity::client::ProcessSpec {
            command: "cat".into(),
            args: vec![],
            tty: true,
            env: vec![],
        })
        .await
        .unwrap();
    let terminal = with.attach_terminal(&process.id).await.unwrap();
    let bound = Duration::from_secs(5);
    tokio::time::timeout(bound, terminal.wait_ready())
        .await
        .unwrap()
        .unwrap();
    let mark = terminal.send_line("token-line").await.unwrap();
    tokio::time::timeout(bound, terminal.expect("token-line", mark))
        .await
        .unwrap()
        .unwrap();

    let without = client(server.base_url.clone());
    match without.attach_terminal(&process.id).await {
        Err(TerminalError::Refused {
            status,
            problem_type,
            ..
        }) => assert_eq!(
            (status, problem_type.as_deref()),
            (401, Some("token_invalid"))
        ),
        other => panic!("expected 401, got {other:?}"),
    }
    with.remove_process(&process.id).await.unwrap();
    assert!(with.list_process_ids().await.unwrap().is_empty());
}
