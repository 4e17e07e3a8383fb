//! What "restart this component" means for one target, and the two actions
//! that need no state between restarts: a shell command and an HTTP hook.
//!
//! A command runs in its own process group so a timeout can kill everything
//! it started. A command that *succeeds* may leave children behind on
//! purpose (`pkill server; server &` relaunches a daemon), so only a timed-out
//! or abandoned command has its group killed.

use super::{fmt_duration, DEFAULT_GRACE};
use crate::errors::error_chain;
use crate::secret::display_url;
use crate::signal::Signal;
use crate::supervise::{kill_group, Supervisor};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How much of a command's stderr is kept for a failure message.
const STDERR_TAIL_LINES: usize = 10;
const STDERR_KEEP_BYTES: usize = 16 * 1024;
/// After a command exits, how long its stderr may take to reach end of file
/// (a background child may hold the pipe open forever).
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// One way of restarting a component.
#[derive(Debug, Clone, PartialEq)]
pub enum RestartAction {
    /// `/bin/sh -c command`, killed (with its group) at `timeout`; a
    /// non-zero exit is a failed restart.
    Command { command: String, timeout: Duration },
    /// A process the harness starts itself and restarts by stopping and starting.
    Managed(ManagedSpec),
    /// Send `signal` to the pid written in `pid_file`.
    Signal { pid_file: PathBuf, signal: Signal },
    /// Call a hook URL; any 2xx passes unless `expect_status` is given.
    Http {
        url: String,
        method: String,
        expect_status: Option<u16>,
        timeout: Duration,
    },
    /// The cell's own clients: the cell drops continuity's clients and
    /// makes new ones over the same store, as a restarted application
    /// would; the action itself does nothing (a hosted SDK's process is
    /// the RivetKit runner, restarted by its own target's action).
    Clients,
    /// A toxic on a hop's fault proxy for a window.
    Fault(super::FaultAction),
    /// Servers taken down and left down: what brings them back is not the
    /// harness (a client's sandbox provider, `ensureServer`).
    LeftDown(LeftDownControl),
    /// A timeout on the path, in force for the whole cell; restarts nothing.
    Timeout(super::PathTimeout),
    /// A pause, an agent kill, a reboot of the whole stack, a schedule of
    /// faults ([`super::Nemesis`]).
    Nemesis(super::Nemesis),
}

/// Takes servers down and leaves them down: the local stack's sandbox
/// provider back end, for the SDK's `ensureServer` to bring them back.
#[async_trait::async_trait]
pub trait LeftDown: Send + Sync {
    /// Takes every server it holds down (SIGKILL to its group), checks that
    /// its listener then refuses, and says how each went down.
    async fn take_down(&self) -> Result<String, ActionError>;

    /// One line for listings.
    fn describe(&self) -> String;
}

/// A [`LeftDown`] as an action holds it (one is one: equal by identity).
#[derive(Clone)]
pub struct LeftDownControl(pub Arc<dyn LeftDown>);

impl PartialEq for LeftDownControl {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for LeftDownControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.describe())
    }
}

/// A process the harness owns: what to run and how to stop it.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// Where stdout and stderr go; in a run, `logs/<target>.log` in its
    /// folder if unset ([`super::Target::log_into`]).
    pub log: Option<PathBuf>,
    pub stop_signal: Signal,
    pub grace: Duration,
}

impl ManagedSpec {
    /// `program args…` with SIGTERM, a 5 s grace period and no extra environment.
    pub fn new(program: impl Into<PathBuf>, args: impl IntoIterator<Item = String>) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().collect(),
            env: Vec::new(),
            cwd: None,
            log: None,
            stop_signal: Signal::TERM,
            grace: DEFAULT_GRACE,
        }
    }

    /// The command line as a user would type it.
    pub fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The kinds of [`RestartAction`], as a target's `restart` table names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartKind {
    Managed,
    Command,
    Signal,
    Http,
    Clients,
    Fault,
    LeftDown,
    Timeout,
    Pause,
    KillAgent,
    Reboot,
    Chaos,
}

impl RestartKind {
    /// The key that selects the kind in a `[targets.NAME.restart]` table.
    pub fn as_str(self) -> &'static str {
        match self {
            RestartKind::Managed => "managed",
            RestartKind::Command => "command",
            RestartKind::Signal => "signal",
            RestartKind::Http => "http",
            RestartKind::Clients => "clients",
            RestartKind::Fault => "fault",
            RestartKind::LeftDown => "left_down",
            RestartKind::Timeout => "timeout",
            RestartKind::Pause => "pause",
            RestartKind::KillAgent => "kill_agent",
            RestartKind::Reboot => "reboot",
            RestartKind::Chaos => "chaos",
        }
    }
}

impl std::fmt::Display for RestartKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl RestartAction {
    pub fn kind(&self) -> RestartKind {
        match self {
            RestartAction::Command { .. } => RestartKind::Command,
            RestartAction::Managed(_) => RestartKind::Managed,
            RestartAction::Signal { .. } => RestartKind::Signal,
            RestartAction::Http { .. } => RestartKind::Http,
            RestartAction::Clients => RestartKind::Clients,
            RestartAction::Fault(_) => RestartKind::Fault,
            RestartAction::LeftDown(_) => RestartKind::LeftDown,
            RestartAction::Timeout(_) => RestartKind::Timeout,
            RestartAction::Nemesis(nemesis) => match nemesis {
                super::Nemesis::Pause(_) => RestartKind::Pause,
                super::Nemesis::KillAgent(_) => RestartKind::KillAgent,
                super::Nemesis::Reboot(_) => RestartKind::Reboot,
                super::Nemesis::Chaos(_) => RestartKind::Chaos,
            },
        }
    }

    /// One line: `managed: sandbox-agent server -p 2468 (SIGTERM, grace 5 s)`.
    pub fn describe(&self) -> String {
        match self {
            RestartAction::Command { command, timeout } => {
                format!("command: {command} (timeout {})", fmt_duration(*timeout))
            }
            RestartAction::Managed(spec) => format!(
                "managed: {} ({}, grace {})",
                spec.command_line(),
                spec.stop_signal,
                fmt_duration(spec.grace)
            ),
            RestartAction::Signal { pid_file, signal } => {
                format!("signal: {} to the pid in {}", signal, pid_file.display())
            }
            RestartAction::Http {
                url,
                method,
                expect_status,
                timeout,
            } => format!(
                "http: {method} {} (expect {}, timeout {})",
                display_url(url),
                expected_status_text(*expect_status),
                fmt_duration(*timeout)
            ),
            RestartAction::Clients => {
                "clients: the cell's clients are made anew over the same store".into()
            }
            RestartAction::Fault(fault) => fault.describe(),
            RestartAction::LeftDown(control) => format!("left down: {}", control.0.describe()),
            RestartAction::Timeout(timeout) => timeout.describe(),
            RestartAction::Nemesis(nemesis) => nemesis.describe(),
        }
    }
}

fn expected_status_text(expect: Option<u16>) -> String {
    expect.map_or_else(|| "2xx".to_string(), |s| s.to_string())
}

/// Why a restart action failed. The message says which command, URL or
/// file, and what came back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    #[error("command `{command}` could not start: {reason}")]
    Spawn { command: String, reason: String },
    #[error("command `{command}` {}{}", crate::supervise::exit_text(*.code, *.signal), tail_suffix("stderr", .stderr_tail))]
    Exit {
        command: String,
        code: Option<i32>,
        signal: Option<i32>,
        stderr_tail: String,
    },
    #[error("command `{command}` did not finish within {} and was killed{}", fmt_duration(*.timeout), tail_suffix("stderr", .stderr_tail))]
    Timeout {
        command: String,
        timeout: Duration,
        stderr_tail: String,
    },
    #[error("cannot start `{command}`: {reason}{}", tail_suffix("log", .log_tail))]
    Start {
        command: String,
        reason: String,
        log_tail: String,
    },
    #[error("pid file {}: {reason}", .path.display())]
    PidFile { path: PathBuf, reason: String },
    #[error("process {pid} named in {} is gone", .path.display())]
    NoProcess { pid: i32, path: PathBuf },
    #[error("cannot send {signal} to process {pid}: {reason}")]
    Kill {
        pid: i32,
        signal: String,
        reason: String,
    },
    #[error("{method} {url} failed: {reason}")]
    Request {
        method: String,
        url: String,
        reason: String,
    },
    #[error("the {hop} hop has no fault proxy here")]
    NoHop { hop: crate::faults::Hop },
    #[error("{error}")]
    Proxy {
        hop: crate::faults::Hop,
        #[source]
        error: crate::faults::ProxyError,
    },
    /// A restart made with a toxic along ([`super::Target::with_window_along`])
    /// whose toxic never acted: the condition it exists to create never arose.
    #[error("{toxic} never acted on a connection of the {hop} hop within {within} of the restart")]
    ToxicNeverActed {
        hop: crate::faults::Hop,
        toxic: String,
        within: String,
    },
    /// Nothing to take down (no server was running to leave down).
    #[error("nothing to take down: {reason}")]
    NothingDown { reason: String },
    #[error("{method} {url} answered {status}, expected {expected}{}", tail_suffix("body", .body))]
    Status {
        method: String,
        url: String,
        status: u16,
        expected: String,
        body: String,
    },
}

/// What kind of failure an [`ActionError`] is, without its details: what a
/// caller matches on (as `std::io::ErrorKind` for `io::Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionErrorKind {
    /// The restart command or managed process could not be started at all.
    Spawn,
    /// The restart command ran and exited with a failure.
    Exit,
    /// The restart command outlived its timeout.
    Timeout,
    /// The pid file is missing, unreadable or holds no pid.
    PidFile,
    /// The process a pid file names is gone.
    NoProcess,
    /// The signal could not be sent.
    Kill,
    /// The restart hook could not be called.
    Request,
    /// The restart hook answered with an unexpected status.
    Status,
    /// The fault's hop has no proxy, or its proxy stopped serving.
    Proxy,
}

impl ActionError {
    pub fn kind(&self) -> ActionErrorKind {
        match self {
            ActionError::Spawn { .. } | ActionError::Start { .. } => ActionErrorKind::Spawn,
            ActionError::Exit { .. } => ActionErrorKind::Exit,
            ActionError::Timeout { .. } => ActionErrorKind::Timeout,
            ActionError::PidFile { .. } => ActionErrorKind::PidFile,
            ActionError::NoProcess { .. } => ActionErrorKind::NoProcess,
            ActionError::Kill { .. } | ActionError::NothingDown { .. } => ActionErrorKind::Kill,
            ActionError::Request { .. } => ActionErrorKind::Request,
            ActionError::Status { .. } => ActionErrorKind::Status,
            ActionError::NoHop { .. }
            | ActionError::Proxy { .. }
            | ActionError::ToxicNeverActed { .. } => ActionErrorKind::Proxy,
        }
    }
}

fn tail_suffix(what: &str, tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; {what}: {}", tail.trim_end())
    }
}

/// The last `lines` lines of `bytes`, lossily decoded. When the start of
/// the output was dropped (`cut`), its first line is partial and is left
/// out too: half a secret would no longer be recognised as one.
pub(super) fn last_lines(bytes: &[u8], lines: usize, cut: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().skip(usize::from(cut)).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// SIGKILLs a command's process group unless disarmed: a restart future that
/// is dropped (cancelled run, Ctrl-C) must not leave its command running.
struct GroupGuard<'a> {
    pgid: Option<i32>,
    supervisor: &'a Supervisor,
}

impl<'a> GroupGuard<'a> {
    fn new(pgid: Option<i32>, supervisor: &'a Supervisor) -> Self {
        if let Some(pgid) = pgid {
            supervisor.track_group(pgid);
        }
        Self { pgid, supervisor }
    }

    fn disarm(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            self.supervisor.untrack_group(pgid);
        }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
            self.supervisor.untrack_group(pgid);
        }
    }
}

impl Drop for GroupGuard<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `/bin/sh -c command` with a deadline, its group known to `supervisor`.
pub(super) async fn run_command(
    command: &str,
    timeout: Duration,
    supervisor: &Supervisor,
) -> Result<(), ActionError> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ActionError::Spawn {
            command: command.to_string(),
            reason: e.to_string(),
        })?;
    let mut guard = GroupGuard::new(child.id().map(|pid| pid as i32), supervisor);
    // The output kept, and whether its start was dropped.
    let captured = Arc::new(Mutex::new((Vec::<u8>::new(), false)));
    let reader = child.stderr.take().map(|mut stderr| {
        let captured = Arc::clone(&captured);
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let mut kept = captured.lock().unwrap_or_else(|p| p.into_inner());
                let (buf, cut) = &mut *kept;
                buf.extend_from_slice(&chunk[..n]);
                let excess = buf.len().saturating_sub(STDERR_KEEP_BYTES);
                if excess > 0 {
                    buf.drain(..excess);
                    *cut = true;
                }
            }
        })
    });
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    if waited.is_ok() {
        guard.disarm();
    } else {
        guard.kill();
        let _ = child.wait().await;
    }
    if let Some(mut reader) = reader {
        if tokio::time::timeout(STDERR_DRAIN, &mut reader)
            .await
            .is_err()
        {
            // A background child still holds the pipe; what arrived so far will do.
            reader.abort();
        }
    }
    let stderr_tail = {
        let kept = captured.lock().unwrap_or_else(|p| p.into_inner());
        last_lines(&kept.0, STDERR_TAIL_LINES, kept.1)
    };
    match waited {
        Err(_) => Err(ActionError::Timeout {
            command: command.to_string(),
            timeout,
            stderr_tail,
        }),
        Ok(Err(e)) => Err(ActionError::Spawn {
            command: command.to_string(),
            reason: format!("waiting for it failed: {e}"),
        }),
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            Err(ActionError::Exit {
                command: command.to_string(),
                code: status.code(),
                signal: status.signal(),
                stderr_tail,
            })
        }
    }
}

/// Calls a restart hook and checks its status.
pub(super) async fn call_hook(
    url: &str,
    method: &str,
    expect_status: Option<u16>,
    timeout: Duration,
) -> Result<(), ActionError> {
    let shown = display_url(url);
    let request_error = |reason: String| ActionError::Request {
        method: method.to_string(),
        url: shown.clone(),
        reason,
    };
    let method_value = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| request_error(format!("`{method}` is not an HTTP method")))?;
    let client = crate::http::client_builder()
        .timeout(timeout)
        .build()
        .map_err(|e| request_error(error_chain(&e)))?;
    let response = client
        .request(method_value, url)
        .send()
        .await
        .map_err(|e| request_error(error_chain(&e)))?;
    let status = response.status().as_u16();
    let passed = match expect_status {
        Some(expected) => status == expected,
        None => response.status().is_success(),
    };
    if passed {
        return Ok(());
    }
    let body = response.text().await.unwrap_or_default();
    Err(ActionError::Status {
        method: method.to_string(),
        url: shown,
        status,
        expected: expected_status_text(expect_status),
        // Redacted before the cut: half a secret would not be recognised later.
        body: crate::secret::redact_known(&body)
            .chars()
            .take(300)
            .collect(),
    })
}
