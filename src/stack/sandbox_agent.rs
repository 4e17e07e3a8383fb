//! The real sandbox-agent server as a managed child: installed from the npm
//! registry at a pinned version, given its own `XDG_DATA_HOME` whose `mock`
//! launcher execs `continuity agent`, started on a loopback port, probed on
//! `/v1/health`, restartable on the same port.

use super::npm;
use super::progress::Note;
use super::StackError;
use crate::errors::Invalid;
use crate::signal::Signal;
use crate::supervise::{free_port, ManagedProcess, ProcessSpec, ProcessState, Supervisor};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The sandbox-agent version the harness pins by default.
pub const DEFAULT_VERSION: &str = "0.4.2";
const PACKAGE: &str = "@sandbox-agent/cli-linux-x64";

/// Installs `@sandbox-agent/cli-linux-x64@version` (once) and returns the binary path.
pub fn install(version: &str, progress: &mut dyn FnMut(Note)) -> Result<PathBuf, StackError> {
    // The version names a cache folder and an npm spec: never a path or a range.
    npm::check_version(version)
        .map_err(|e| StackError::from(e).context(format!("sandbox-agent version {version:?}")))?;
    let dir = npm::ensure_installed(
        &format!("sandbox-agent-{version}"),
        &[format!("{PACKAGE}@{version}")],
        progress,
    )?;
    let bin = dir
        .join("node_modules")
        .join(PACKAGE)
        .join("bin")
        .join("sandbox-agent");
    npm::make_executable(&bin)?;
    Ok(bin)
}

/// How to run one sandbox-agent server.
#[derive(Debug, Clone)]
pub struct SandboxAgentConfig {
    pub binary: PathBuf,
    /// Holds `data/` (its `XDG_DATA_HOME`), the agent's record and state files, and the log.
    pub run_dir: PathBuf,
    /// The program the `mock` launcher execs with the argument `agent`.
    pub agent_program: PathBuf,
    /// Extra environment for the agent (fault knobs).
    pub agent_env: Vec<(String, String)>,
    pub port: Option<u16>,
    /// The one origin whose pages may call the server (`--cors-allow-origin`):
    /// the browser client's page.
    pub cors_origin: Option<String>,
}

/// A running (or stopped) sandbox-agent server.
#[derive(Debug)]
pub struct SandboxAgentServer {
    config: SandboxAgentConfig,
    port: u16,
    process: ManagedProcess,
}

impl SandboxAgentConfig {
    /// Writes the `mock` launcher and returns how to run the server on `port`.
    pub fn prepare(&self, port: u16) -> Result<ProcessSpec, StackError> {
        if !self.run_dir.is_absolute() {
            return Err(StackError::Invalid(crate::errors::Invalid(format!(
                "the sandbox-agent folder must be an absolute path, not {}",
                self.run_dir.display()
            ))));
        }
        let data = self.run_dir.join("data");
        write_launcher(&data, self)?;
        Ok(ProcessSpec {
            name: "sandbox-agent".into(),
            program: self.binary.clone(),
            args: [
                "server",
                "--no-token",
                "--no-telemetry",
                "-H",
                "127.0.0.1",
                "-p",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([port.to_string()])
            .chain(self.cors_origin.iter().flat_map(|origin| cors_args(origin)))
            .collect(),
            env: vec![("XDG_DATA_HOME".into(), data.display().to_string())],
            cwd: Some(self.run_dir.clone()),
            log: self.run_dir.join("sandbox-agent.log"),
        })
    }

    /// Every message the agent processes received, one JSON value per line.
    pub(crate) fn agent_record_path(&self) -> PathBuf {
        self.run_dir.join("agent-record.jsonl")
    }

    /// Where the scripted agent records the chunks it streams (`CONTINUITY_AGENT_SENT`).
    pub(crate) fn agent_sent_path(&self) -> PathBuf {
        self.run_dir.join("agent-sent.jsonl")
    }
}

/// The flags that let pages of `origin` call the server: the SDK posts
/// JSON, reads event streams, deletes sessions and (`writeFsFile`) PUTs files.
fn cors_args(origin: &str) -> Vec<String> {
    let mut args = vec!["--cors-allow-origin".to_string(), origin.to_string()];
    for method in ["GET", "POST", "PUT", "DELETE", "OPTIONS"] {
        args.extend(["--cors-allow-method".to_string(), method.to_string()]);
    }
    for header in ["content-type", "accept", "authorization", "last-event-id"] {
        args.extend(["--cors-allow-header".to_string(), header.to_string()]);
    }
    args
}

/// `sandbox-agent --version`, e.g. `sandbox-agent 0.4.2`: a helper in a
/// group of its own, bounded in time and output.
pub(crate) fn binary_version(binary: &Path) -> Option<String> {
    let mut command = std::process::Command::new(binary);
    command.arg("--version");
    let output =
        crate::supervise::helper::output_blocking(command, VERSION_WITHIN, 64 * 1024).ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// How long a binary given as a server has to answer `--version`.
const VERSION_WITHIN: Duration = Duration::from_secs(10);

/// Whether `binary` is a sandbox-agent a local stack can run: a file, executable,
/// that answers `--version` as sandbox-agent does (`sandbox-agent 0.4.2`,
/// which is returned); otherwise why not.
pub(crate) async fn check_binary(binary: &Path) -> Result<String, Invalid> {
    use crate::user_file::{check_kind, Kind, Why};
    use std::os::unix::fs::PermissionsExt;
    // A FIFO, a socket or a device is refused before anything opens it.
    let meta = check_kind(binary, Kind::File).map_err(|e| match e.why {
        Why::WrongKind("a folder") => Invalid::new("a folder, not a sandbox-agent binary"),
        Why::Io(e) => Invalid(format!("cannot read it: {e}")),
        why => Invalid(why.to_string()),
    })?;
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(Invalid::new("not executable (chmod +x it)"));
    }
    // Its own process group, in the registry (a signal's handler kills
    // it), and bounded: whatever it started that holds its output open
    // once it exited, or runs past the limit, is killed with it.
    let mut command = tokio::process::Command::new(binary);
    command.arg("--version");
    let output = crate::supervise::helper::output(command, VERSION_WITHIN, 64 * 1024)
        .await
        .map_err(|e| match e {
            crate::supervise::helper::HelperError::TimedOut(_) => Invalid(format!(
                "it did not answer `--version` within {} s (sandbox-agent answers at once)",
                VERSION_WITHIN.as_secs()
            )),
            other => Invalid(other.to_string()),
        })?;
    let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let first_line = said.lines().next().unwrap_or_default().trim().to_string();
    let is_sandbox_agent = first_line
        .split_whitespace()
        .next()
        .is_some_and(|word| word == "sandbox-agent");
    if output.status.success() && is_sandbox_agent {
        return Ok(first_line);
    }
    let shown: String = match first_line.is_empty() {
        true => String::from_utf8_lossy(&output.stderr)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
        false => first_line,
    };
    let shown: String = shown.chars().take(120).collect();
    Err(Invalid(format!(
        "not a sandbox-agent: `--version` {} and printed {shown:?} (sandbox-agent prints `sandbox-agent VERSION`)",
        crate::supervise::status_text(output.status)
    )))
}

/// Starts `binary` as the stack would (in `dir`, the scripted agent behind
/// it) and stops it once healthy: a candidate that never answers
/// `/v1/health` is caught before any cell, with the end of its log.
pub(crate) async fn check_starts(
    binary: &Path,
    dir: &Path,
    agent_program: &Path,
    within: Duration,
    supervisor: &Supervisor,
) -> Result<(), StackError> {
    let mut server = SandboxAgentServer::start(
        SandboxAgentConfig {
            binary: binary.to_path_buf(),
            run_dir: dir.to_path_buf(),
            agent_program: agent_program.to_path_buf(),
            agent_env: Vec::new(),
            port: None,
            cors_origin: None,
        },
        supervisor.clone(),
        within,
    )
    .await?;
    server.stop().await;
    Ok(())
}

impl SandboxAgentServer {
    /// Writes the launcher, starts the server under `supervisor` and waits
    /// until it is healthy.
    pub async fn start(
        config: SandboxAgentConfig,
        supervisor: Supervisor,
        ready_within: Duration,
    ) -> Result<Self, StackError> {
        let port = match config.port {
            Some(p) => p,
            None => free_port()?,
        };
        let spec = config.prepare(port)?;
        let mut server = SandboxAgentServer {
            config,
            port,
            process: ManagedProcess::new(spec, supervisor),
        };
        server.process.start()?;
        server.wait_ready(ready_within).await?;
        Ok(server)
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    pub(crate) fn log_path(&self) -> &Path {
        self.process.log_path()
    }

    /// Every message the agent processes received, one JSON value per line.
    pub fn agent_record_path(&self) -> PathBuf {
        self.config.agent_record_path()
    }

    /// Kills the server's process group.
    pub(crate) async fn stop(&mut self) -> ProcessState {
        self.stop_with(Signal::TERM, Duration::from_secs(3)).await
    }

    /// Stops the server's process group with `signal`, then SIGKILL after `grace`.
    pub(crate) async fn stop_with(&mut self, signal: Signal, grace: Duration) -> ProcessState {
        self.process.stop(signal, grace).await
    }

    /// How its process stands now.
    pub(crate) fn state(&mut self) -> ProcessState {
        self.process.state()
    }

    /// Its process's state in words (`exited with code 0`, `running (pid N)`).
    pub(crate) fn exit_words(&mut self) -> String {
        self.process.state().to_string()
    }

    /// Whether `/v1/health` answers 2xx within a second.
    pub(crate) async fn healthy(&self) -> bool {
        let Ok(http) = crate::http::client_builder()
            .timeout(Duration::from_secs(1))
            .build()
        else {
            return false;
        };
        let url = format!("{}/v1/health", self.base_url());
        matches!(http.get(&url).send().await, Ok(r) if r.status().is_success())
    }

    /// Starts a server that is down again on its port (whatever stopped
    /// it: its group is gone first) and waits until it is healthy.
    pub(crate) async fn start_again(&mut self, ready_within: Duration) -> Result<(), StackError> {
        self.stop_with(Signal::KILL, Duration::from_millis(500))
            .await;
        self.process.start()?;
        self.wait_ready(ready_within).await
    }

    /// Stops the server and starts it again on the same port; returns time to healthy.
    pub async fn restart(&mut self, ready_within: Duration) -> Result<Duration, StackError> {
        self.stop().await;
        let started = Instant::now();
        self.process.start()?;
        self.wait_ready(ready_within).await?;
        Ok(started.elapsed())
    }

    async fn wait_ready(&mut self, within: Duration) -> Result<(), StackError> {
        let url = format!("{}/v1/health", self.base_url());
        let http = crate::http::client_builder()
            .timeout(Duration::from_millis(500))
            .build()?;
        let deadline = Instant::now() + within;
        loop {
            if let state @ ProcessState::Exited { .. } = self.process.state() {
                return Err(StackError::Failed(format!(
                    "sandbox-agent {state} during start; log {}:\n{}",
                    self.log_path().display(),
                    self.process.log_tail(20)
                )));
            }
            if let Ok(r) = http.get(&url).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(StackError::Failed(format!(
                    "sandbox-agent not healthy at {url} within {} ms; log {}:\n{}",
                    within.as_millis(),
                    self.log_path().display(),
                    self.process.log_tail(20)
                )));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// sandbox-agent runs `$XDG_DATA_HOME/sandbox-agent/bin/agent_processes/mock-acp`
/// for agent `mock`; ours execs the scripted agent with its knobs.
fn write_launcher(data: &Path, config: &SandboxAgentConfig) -> Result<(), StackError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = data
        .join("sandbox-agent")
        .join("bin")
        .join("agent_processes");
    std::fs::create_dir_all(&dir)
        .map_err(StackError::io(format!("cannot create {}", dir.display())))?;
    let mut script = String::from(
        "#!/bin/sh\n# Written by continuity: the scripted ACP agent stands in for `mock`.\n",
    );
    let record = config.agent_record_path();
    let state = config.run_dir.join("agent-state.json");
    let mut env = vec![
        (
            "CONTINUITY_AGENT_RECORD".to_string(),
            record.display().to_string(),
        ),
        (
            "CONTINUITY_AGENT_STATE".to_string(),
            state.display().to_string(),
        ),
        (
            "CONTINUITY_AGENT_SENT".to_string(),
            config.agent_sent_path().display().to_string(),
        ),
        // As the real agents do: native-load can session/load after a restart.
        ("CONTINUITY_AGENT_LOAD_SESSION".to_string(), "1".to_string()),
    ];
    env.extend(config.agent_env.iter().cloned());
    for (key, value) in env {
        if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(StackError::Invalid(crate::errors::Invalid(format!(
                "invalid agent environment variable name {key:?}"
            ))));
        }
        script.push_str(&format!("export {key}={}\n", shell_quote(&value)));
    }
    script.push_str(&format!(
        "exec {} agent \"$@\"\n",
        shell_quote(&config.agent_program.display().to_string())
    ));
    let path = dir.join("mock-acp");
    std::fs::write(&path, script)
        .map_err(StackError::io(format!("cannot write {}", path.display())))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .map_err(StackError::io(format!("cannot chmod {}", path.display())))
}
