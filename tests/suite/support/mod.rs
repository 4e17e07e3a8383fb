//! Test fixture: the real sandbox-agent server (npm `@sandbox-agent/cli-linux-x64`,
//! pinned), with the scripted agent behind its `mock` agent. Installs on first
//! use, fails loudly when it cannot start, and kills the server's process
//! group when dropped, panics included.

pub mod cell_settings;
pub mod command;
pub mod fake_http;
pub mod hostile_run;
pub mod node_fixture;
pub mod run;
pub mod spawned;

pub use cell_settings::cell_settings;
pub use command::{continuity_command, continuity_with};
pub use node_fixture::node_fixture;
pub use run::{
    cell, cell_where, cells, phase, ran_to_the_end, report, run_in, run_on_the_local_stack,
    run_to_report, trace_of,
};

use continuity::stack::sandbox_agent::{self, SandboxAgentConfig, SandboxAgentServer};
use continuity::supervise::Supervisor;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// The committed expectations for the pinned server (what CI gates on).
pub const EXPECTATIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/ci/expect-sandbox-agent-0.4.2.toml"
);

/// How many local stacks the tests run at once within a test binary
/// (`CONTINUITY_TEST_STACKS`, default 3). Each stack is several real
/// programs on a 2-core machine; most of a stack test's time is spent
/// waiting (restarts, deadlines that must run out): the suite's processes
/// used 55 % of two cores with two stacks at a time (bench/README.md, "The
/// test suite"), so three at a time, on four test threads
/// (`.cargo/config.toml`), leave a thread for the tests that need no
/// stack. Set it to 1 on a machine already loaded.
fn stack_slots() -> usize {
    std::env::var("CONTINUITY_TEST_STACKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(3)
}

/// A slot for one local stack (see [`stack_slots`]): held until dropped,
/// a panicked holder's slot comes back as its guard drops.
pub struct StackSlot(usize);

/// Slots taken, and tests waiting for every slot (who go first: a new
/// single slot waits behind them, so they are not starved).
static SLOTS: std::sync::Mutex<(usize, usize)> = std::sync::Mutex::new((0, 0));
static FREED: std::sync::Condvar = std::sync::Condvar::new();

impl Drop for StackSlot {
    fn drop(&mut self) {
        SLOTS.lock().unwrap_or_else(|p| p.into_inner()).0 -= self.0;
        FREED.notify_all();
    }
}

/// Waits for a stack slot: at most [`stack_slots`] local stacks at once.
pub fn stack_slot() -> StackSlot {
    let mut slots = SLOTS.lock().unwrap_or_else(|p| p.into_inner());
    while slots.0 >= stack_slots() || slots.1 > 0 {
        slots = FREED.wait(slots).unwrap_or_else(|p| p.into_inner());
    }
    slots.0 += 1;
    StackSlot(1)
}

/// Waits until no other stack runs and holds every slot: for a test whose
/// evidence is read off timing that other stacks beside it can shift (the
/// connections that carry data within a fault's few seconds). Tests that
/// ask for one slot after it wait behind it.
pub fn every_stack_slot() -> StackSlot {
    let all = stack_slots();
    let mut slots = SLOTS.lock().unwrap_or_else(|p| p.into_inner());
    slots.1 += 1;
    while slots.0 > 0 {
        slots = FREED.wait(slots).unwrap_or_else(|p| p.into_inner());
    }
    slots.1 -= 1;
    slots.0 += all;
    StackSlot(all)
}

pub const READY_WITHIN: Duration = Duration::from_secs(20);

pub struct Server {
    pub server: SandboxAgentServer,
    pub dir: tempfile::TempDir,
}

impl Server {
    pub async fn start() -> Server {
        Self::start_with(Vec::new()).await
    }

    /// Starts a server whose agent gets `agent_env` (fault knobs).
    pub async fn start_with(agent_env: Vec<(String, String)>) -> Server {
        let binary = tokio::task::spawn_blocking(|| {
            sandbox_agent::install(sandbox_agent::DEFAULT_VERSION, &mut |line| {
                eprintln!("{line}")
            })
        })
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("cannot install sandbox-agent: {e}"));
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxAgentConfig {
            binary,
            run_dir: dir.path().to_path_buf(),
            agent_program: PathBuf::from(env!("CARGO_BIN_EXE_continuity")),
            agent_env,
            port: None,
            cors_origin: None,
        };
        // Unowned: no run's tag or keeper; dropping `Server` kills its group.
        let server = SandboxAgentServer::start(config, Supervisor::default(), READY_WITHIN)
            .await
            .unwrap_or_else(|e| panic!("sandbox-agent did not start: {e}"));
        Server { server, dir }
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub async fn restart(&mut self) -> Duration {
        self.server
            .restart(READY_WITHIN)
            .await
            .unwrap_or_else(|e| panic!("sandbox-agent did not restart: {e}"))
    }

    /// Every message the agent processes received so far.
    pub fn agent_record(&self) -> Vec<Value> {
        std::fs::read_to_string(self.server.agent_record_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The prompts the agent received, as their text blocks.
    pub fn agent_prompts(&self) -> Vec<Vec<String>> {
        self.agent_record()
            .into_iter()
            .filter(|m| m["method"] == "session/prompt")
            .map(|m| {
                m["params"]["prompt"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_string))
                    .collect()
            })
            .collect()
    }
}

pub fn text(t: &str) -> Vec<Value> {
    vec![serde_json::json!({"type": "text", "text": t})]
}

/// Every running (non-zombie) process: pid, command line, working folder.
fn live_processes() -> Vec<(u32, String, Option<std::path::PathBuf>)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_string();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
            (state != "Z").then_some((pid, cmdline, cwd))
        })
        .collect()
}

/// Command lines of running processes that contain every one of `words`.
pub fn processes_with(words: &[&str]) -> Vec<String> {
    live_processes()
        .into_iter()
        .filter(|(_, cmdline, _)| words.iter().all(|w| cmdline.contains(w)))
        .map(|(_, cmdline, _)| cmdline)
        .collect()
}

/// Running processes that carry the owner tag of a run or stack whose folder
/// is `dir` or inside it (`CONTINUITY_OWNER=<id>:<folder>` in their
/// environment): everything that run started, whatever it is named.
pub fn processes_owned_in(dir: &std::path::Path) -> Vec<String> {
    let dirs = [
        dir.display().to_string(),
        dir.canonicalize()
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
    ];
    live_processes()
        .into_iter()
        .filter(|(pid, _, _)| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ.split(|b| *b == 0).any(|entry| {
                let entry = String::from_utf8_lossy(entry);
                entry
                    .strip_prefix("CONTINUITY_OWNER=")
                    .and_then(|tag| tag.split_once(':'))
                    .is_some_and(|(_, folder)| dirs.iter().any(|d| folder.starts_with(d.as_str())))
            })
        })
        .map(|(pid, cmdline, _)| format!("{pid}: {cmdline}"))
        .collect()
}

/// Whether a process with this pid runs (not a zombie).
pub fn alive(pid: u32) -> bool {
    live_processes().iter().any(|(p, _, _)| *p == pid)
}

/// Running processes whose working folder or command line is inside `dir`.
pub fn processes_in(dir: &std::path::Path) -> Vec<String> {
    pids_in(dir)
        .into_iter()
        .map(|(pid, cmdline)| format!("{pid}: {cmdline}"))
        .collect()
}

fn pids_in(dir: &std::path::Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    live_processes()
        .into_iter()
        .filter(|(_, cmdline, cwd)| {
            cwd.as_ref().is_some_and(|c| c.starts_with(&dir))
                || cmdline.contains(&dir.display().to_string())
        })
        .map(|(pid, cmdline, _)| (pid, cmdline))
        .collect()
}

/// The TCP and UDP addresses that processes running in `dir` listen on, as
/// `ip:port` read from `/proc/net`, with the owning command line.
pub fn listening_addresses_in(dir: &std::path::Path) -> Vec<(std::net::SocketAddr, String)> {
    let mut sockets = std::collections::HashMap::new();
    for (pid, cmdline) in pids_in(dir) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.filter_map(Result::ok) {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
            {
                sockets.insert(inode.to_string(), cmdline.clone());
            }
        }
    }
    let mut found = Vec::new();
    for (table, v6) in [
        ("tcp", false),
        ("tcp6", true),
        ("udp", false),
        ("udp6", true),
    ] {
        let text = std::fs::read_to_string(format!("/proc/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // TCP listeners are state 0A; any bound UDP socket listens.
            let listening = if table.starts_with("tcp") {
                f[3] == "0A"
            } else {
                true
            };
            if let (true, Some(owner)) = (listening, sockets.get(f[9])) {
                found.push((parse_proc_addr(f[1], v6), owner.clone()));
            }
        }
    }
    found
}

/// `0100007F:1F90` (little-endian words, as /proc/net prints them) → `127.0.0.1:8080`.
pub fn parse_proc_addr(text: &str, v6: bool) -> std::net::SocketAddr {
    let (ip, port) = text.split_once(':').unwrap();
    let port = u16::from_str_radix(port, 16).unwrap();
    let words: Vec<u32> = (0..ip.len() / 8)
        .map(|i| {
            u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16)
                .unwrap()
                .swap_bytes()
        })
        .collect();
    let ip: std::net::IpAddr = if v6 {
        let mut bytes = [0u8; 16];
        for (i, w) in words.iter().enumerate() {
            bytes[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
        }
        std::net::Ipv6Addr::from(bytes).into()
    } else {
        std::net::Ipv4Addr::from(words[0]).into()
    };
    std::net::SocketAddr::new(ip, port)
}

/// Whether a real-SDK cell of a scenario that prompts, then restarts at
/// once, passed; else asserts it failed for exactly the race the SDK has
/// there and nothing else: `prompt` resolves before the SDK has received
/// and stored the turn's streamed chunks (docs/persistence.md), so a
/// restart that lands on that tail leaves chunks the agent sent that never
/// reached the store (`neverWritten` at `getEvents`, no write refused, the
/// session restored all the same). Which way a cell goes depends on the
/// machine's load; a test must hold either way, never only when the race
/// is lost or won.
pub fn passed_or_lost_the_tail(cell: &Value) -> bool {
    if cell["verdict"] == "pass" {
        return true;
    }
    assert_eq!(cell["verdict"], "fail", "{cell}");
    assert_eq!(cell["failureBoundary"], "getEvents", "{cell}");
    assert_eq!(phase(cell, "promptAfterRestart")["outcome"], "ok", "{cell}");
    let events = phase(cell, "getEvents");
    assert_eq!(events["detail"]["writes"], "neverWritten", "{events}");
    let never = events["detail"]["eventsNeverWritten"].as_u64();
    assert!(never.is_some_and(|n| n > 0), "{events}");
    assert_eq!(events["detail"]["indexGaps"], 0, "{events}");
    assert_eq!(events["detail"]["eventsDuplicated"], 0, "{events}");
    false
}

/// Whether a `gateway-reload` cell passed; if not, asserts it failed for
/// exactly the reload's race and nothing else: a request sent on a pooled
/// keep-alive connection as the old nginx worker closes it
/// (docs/findings.md, "An nginx reload and the next POST"), which hyper
/// reads as `connection closed before message completed` and the SDK's
/// undici as `other side closed`. The expectations call such a cell
/// flaky; a test must hold either way.
pub fn passed_or_met_the_reload_race(cell: &Value) -> bool {
    if cell["verdict"] == "pass" {
        return true;
    }
    assert_eq!(cell["verdict"], "fail", "{cell}");
    let boundary = cell["failureBoundary"].as_str().unwrap_or_default();
    let signature = &phase(cell, boundary)["signature"];
    let message = signature["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("connection closed before message completed")
            || message.contains("other side closed"),
        "{cell}"
    );
    false
}

/// Asserts a `continuity` exit code, showing what it printed when it differs.
pub fn assert_exit(run: &std::process::Output, code: u8) {
    assert_eq!(
        run.status.code(),
        Some(i32::from(code)),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

/// A `continuity.toml` whose `agent` target is the real sandbox-agent
/// server, managed (started, restarted, stopped) by the harness itself;
/// `agent_env` reaches the scripted agent. Returns the config path and the
/// server's base URL.
pub fn managed_agent_config(
    dir: &std::path::Path,
    agent_env: &[(&str, &str)],
) -> (std::path::PathBuf, String) {
    managed_agent_config_with(dir, agent_env, None, Ready::Http)
}

/// A `[targets.NAME]` table for a deployment's `independent` component
/// beside the server: a small HTTP server (python's) on a port of its own,
/// managed by the harness, so its restart really goes down and comes back
/// (a command that restarts nothing fails as "never went down").
pub fn independent_component(name: &str) -> String {
    let port = continuity::supervise::free_port().unwrap();
    format!(
        "\n[targets.{name}]\nrestart = {{ managed = {{ command = [\"python3\", \"-m\", \"http.server\", \"--bind\", \"127.0.0.1\", \"{port}\"], grace_ms = 2000 }} }}\nready = {{ tcp = \"127.0.0.1:{port}\" }}\nindependent = true\n"
    )
}

/// How the managed server's readiness is probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// `GET /v1/health` (with the run's token), 200.
    Http,
    /// A TCP connect to its port: needs no token.
    Tcp,
}

/// [`managed_agent_config`], the server started with `--token TOKEN` when
/// `token` is given, probed by `ready`.
pub fn managed_agent_config_with(
    dir: &std::path::Path,
    agent_env: &[(&str, &str)],
    token: Option<&str>,
    ready: Ready,
) -> (std::path::PathBuf, String) {
    let binary = sandbox_agent::install(sandbox_agent::DEFAULT_VERSION, &mut |l| eprintln!("{l}"))
        .unwrap_or_else(|e| panic!("cannot install sandbox-agent: {e}"));
    let port = continuity::supervise::free_port().unwrap();
    let server = SandboxAgentConfig {
        binary,
        run_dir: dir.join("server"),
        agent_program: PathBuf::from(env!("CARGO_BIN_EXE_continuity")),
        agent_env: agent_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        port: Some(port),
        cors_origin: None,
    };
    let spec = server.prepare(port).unwrap();
    let base_url = format!("http://127.0.0.1:{port}");
    let mut command: Vec<String> = std::iter::once(spec.program.display().to_string())
        .chain(spec.args.iter().cloned())
        .collect();
    if let Some(token) = token {
        let at = command.iter().position(|a| a == "--no-token").unwrap();
        command.splice(at..=at, ["--token".to_string(), token.to_string()]);
    }
    let env: Vec<String> = spec
        .env
        .iter()
        .map(|(k, v)| format!("{k} = {v:?}"))
        .collect();
    let ready = match ready {
        Ready::Http => format!("ready = {{ http = \"{base_url}/v1/health\", status = 200 }}"),
        Ready::Tcp => format!("ready = {{ tcp = \"127.0.0.1:{port}\" }}"),
    };
    let config = format!(
        "[run]\nbase_url = {base_url:?}\nagent = \"mock\"\ntimeout_ms = 10000\n\n[targets.agent]\nrestart = {{ managed = {{ command = {command:?}, env = {{ {} }}, cwd = {:?}, log = {:?} }} }}\n{ready}\n",
        env.join(", "),
        spec.cwd.unwrap().display().to_string(),
        spec.log.display().to_string(),
    );
    let path = dir.join("continuity.toml");
    std::fs::write(&path, config).unwrap();
    (path, base_url)
}
