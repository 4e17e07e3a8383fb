//! Supervision of the child processes the harness starts, below everything
//! that starts one (`targets` restarts them, `stack` runs its components).
//!
//! Each child leads its own process group, so stopping it reaches everything
//! it spawned (sandbox-agent's agent processes, nginx workers, node's helpers).
//! Stop is graceful: a signal to the group, a grace period, then SIGKILL to the
//! group. Every live group is also listed in a process-wide registry that the
//! Ctrl-C handler and the panic hook empty, so nothing outlives the harness:
//! the only process-wide state here, since a signal handler and a panic hook
//! are reached by no argument.
//!
//! Everything else comes with a [`Supervisor`] handle, given to whoever
//! starts a process: the run's owner tag (put into each process's
//! environment, see [`owner`]), its [`keeper`] (which kills it all should
//! the harness die without cleaning up), and the [`Journal`] of the stack
//! the process belongs to (the stack's `stack.json`), which hears of each
//! start and stop, so supervision never reaches up to it.
//!
//! This crate is also the one place of libc and `unsafe` (in [`os`]): what
//! the workspace asks of the kernel that std does not say, each call behind
//! a safe function.
//!
//! Over 400 lines on purpose: it is the crate's root, the state and calls
//! its modules share: the one process-wide registry of live groups (filled
//! by `ManagedProcess`, `handle.rs` and `helper.rs`, emptied by the Ctrl-C
//! handler and the panic hook), the group signals over it (`kill_group`,
//! `group_members`), and `ManagedProcess`, the restartable child built on
//! both; the helpers, keeper, owner tag, OS calls and signal table are
//! apart, and the tests below run real process groups.

mod handle;
pub mod helper;
pub mod keeper;
pub mod os;
pub mod owner;
pub mod part;
pub mod signal;

pub use handle::{Journal, Lifecycle, Supervisor};

use signal::Signal;
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a killed group's members may take to disappear from `/proc`.
const GROUP_EXIT_BOUND: Duration = Duration::from_secs(2);

static LIVE_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Where supervision's own warnings go (a keeper that died, replaced or
/// not): the harness's console once [`print_warnings_with`] named it,
/// stderr before.
static WARNINGS: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Sends supervision's warnings to `print` (the console, which redacts and
/// keeps its live area whole) from now on; the first call wins.
pub fn print_warnings_with(print: fn(&str)) {
    let _ = WARNINGS.set(print);
}

fn warn(line: &str) {
    match WARNINGS.get() {
        Some(print) => print(line),
        None => eprintln!("{line}"),
    }
}

fn registry() -> std::sync::MutexGuard<'static, Option<HashSet<i32>>> {
    LIVE_GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// SIGKILLs every process group the harness still has running. Safe to call
/// from a signal-handling task or a panic hook; idempotent.
pub fn kill_all_groups() {
    let groups: Vec<i32> = registry()
        .as_mut()
        .map(|s| s.drain().collect())
        .unwrap_or_default();
    for pgid in groups {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// Sends `signal` to every process of the group; false if none received it.
pub(crate) fn signal_group(pgid: i32, signal: i32) -> bool {
    os::signal_group(pgid, signal)
}

/// SIGKILLs a process group and waits (at most a couple of seconds) until its
/// members are gone: the signal is delivered asynchronously, and "nothing left
/// running" must hold when this returns.
pub fn kill_group(pgid: i32) {
    signal_group(pgid, libc::SIGKILL);
    let gone_by = Instant::now() + GROUP_EXIT_BOUND;
    while group_alive(pgid) && Instant::now() < gone_by {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// [`kill_group`] for async callers: the wait sleeps on the runtime's
/// timer, not the thread, so other cells' tasks keep running meanwhile.
pub async fn kill_group_async(pgid: i32) {
    signal_group(pgid, libc::SIGKILL);
    let gone_by = Instant::now() + GROUP_EXIT_BOUND;
    while group_alive(pgid) && Instant::now() < gone_by {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Whether any process of the group is still running. Zombies do not count:
/// an orphan's zombie waits for PID 1 to reap it, which some containers never do.
pub(crate) fn group_alive(pgid: i32) -> bool {
    !group_members(pgid).is_empty()
}

/// The pids of the group's live (non-zombie) processes, read from `/proc`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the parenthesised command: state, ppid, pgrp, ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            group == Some(pgid) && !matches!(state, Some("Z" | "X"))
        })
        .collect()
}

/// What to run and where its output goes.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Short name for messages: `sandbox-agent`, `nginx`, `rivet-engine`.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// stdout and stderr are appended here.
    pub log: PathBuf,
}

/// The lifecycle of a managed process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    Running {
        pid: u32,
    },
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
    NotStarted,
}

/// How a process ended, in words that follow its name: `exited with code
/// 0`, `was killed by SIGKILL`. The one rendering of an exit status in any
/// message.
pub fn exit_text(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by {}", Signal::from_number(signal)),
        (None, None) => "ended with an unknown status".to_string(),
    }
}

/// [`exit_text`] of a finished process's status.
pub fn status_text(status: ExitStatus) -> String {
    exit_text(status.code(), status.signal())
}

impl std::fmt::Display for ProcessState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ProcessState::Running { pid } => write!(f, "running (pid {pid})"),
            ProcessState::Exited { code, signal } => f.write_str(&exit_text(code, signal)),
            ProcessState::NotStarted => f.write_str("never started"),
        }
    }
}

/// A child process in its own group, killed (group and all) when dropped.
#[derive(Debug)]
pub struct ManagedProcess {
    spec: ProcessSpec,
    supervisor: Supervisor,
    child: Option<Child>,
    last_exit: Option<ExitStatus>,
}

impl ManagedProcess {
    /// A process to be started under `supervisor`: its owner tag, its
    /// keeper, its stack's journal.
    pub fn new(spec: ProcessSpec, supervisor: Supervisor) -> Self {
        Self {
            spec,
            supervisor,
            child: None,
            last_exit: None,
        }
    }

    pub fn spec(&self) -> &ProcessSpec {
        &self.spec
    }

    pub fn log_path(&self) -> &Path {
        &self.spec.log
    }

    /// Starts the process; an error names the program and the cause.
    pub fn start(&mut self) -> Result<u32, ProcessError> {
        if let ProcessState::Running { pid } = self.state() {
            return Ok(pid);
        }
        if let Some(parent) = self.spec.log.parent() {
            std::fs::create_dir_all(parent).map_err(ProcessError::io(format!(
                "cannot create {}",
                parent.display()
            )))?;
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.spec.log)
            .map_err(ProcessError::io(format!(
                "cannot open log {}",
                self.spec.log.display()
            )))?;
        let log_err = log.try_clone().map_err(ProcessError::io(format!(
            "cannot open log {}",
            self.spec.log.display()
        )))?;
        let mut command = Command::new(&self.spec.program);
        command
            .args(&self.spec.args)
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        // The mark that lets the harness (and its keeper) prove, later, that
        // this process and everything it spawns are ours.
        if let Some(tag) = self.supervisor.owner_tag() {
            command.env(owner::OWNER_ENV, tag);
        }
        if let Some(cwd) = &self.spec.cwd {
            command.current_dir(cwd);
        }
        let child = command.spawn().map_err(ProcessError::io(format!(
            "cannot start {} ({})",
            self.spec.name,
            self.spec.program.display()
        )))?;
        let pid = child.id();
        self.supervisor.track_group(pid as i32);
        self.supervisor.record(&Lifecycle::Started {
            name: &self.spec.name,
            program: &self.spec.program,
            log: &self.spec.log,
            pid,
            started: owner::start_time(pid as i32),
        });
        self.child = Some(child);
        self.last_exit = None;
        Ok(pid)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Lets the process outlive this handle (and the harness): `continuity stack up`
    /// leaves the stack running for `stack down` to stop by process group.
    pub fn detach(&mut self) -> Option<u32> {
        let child = self.child.take()?;
        let pid = child.id();
        self.supervisor.untrack_group(pid as i32);
        Some(pid)
    }

    /// Polls the child without blocking.
    pub fn state(&mut self) -> ProcessState {
        let Some(child) = self.child.as_mut() else {
            return match self.last_exit {
                Some(status) => exited(status),
                None => ProcessState::NotStarted,
            };
        };
        match child.try_wait() {
            Ok(None) => ProcessState::Running { pid: child.id() },
            Ok(Some(status)) => {
                self.last_exit = Some(status);
                // The leader is gone but its children may not be: the group is still ours.
                exited(status)
            }
            Err(_) => ProcessState::Running { pid: child.id() },
        }
    }

    /// Sends `signal` to the group, waits up to `grace` for the leader to exit,
    /// then SIGKILLs the group. Returns how the leader ended.
    pub async fn stop(&mut self, signal: Signal, grace: Duration) -> ProcessState {
        let Some(mut child) = self.child.take() else {
            return self.state();
        };
        let pgid = child.id() as i32;
        signal_group(pgid, signal.number());
        let deadline = Instant::now() + grace;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                _ => break None,
            }
        };
        // Whatever the leader did, nothing of its group may stay behind.
        signal_group(pgid, libc::SIGKILL);
        let status = match status {
            Some(s) => s,
            None => child
                .wait()
                .unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL)),
        };
        // SIGKILL is delivered asynchronously: wait until the members are gone.
        kill_group_async(pgid).await;
        self.supervisor.untrack_group(pgid);
        self.supervisor
            .record(&Lifecycle::Stopped { pid: pgid as u32 });
        self.last_exit = Some(status);
        exited(status)
    }

    /// The last `lines` lines of the log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.spec.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

fn exited(status: ExitStatus) -> ProcessState {
    ProcessState::Exited {
        code: status.code(),
        signal: status.signal(),
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pgid = child.id() as i32;
            signal_group(pgid, libc::SIGKILL);
            let _ = child.wait();
            kill_group(pgid);
            self.supervisor.untrack_group(pgid);
            self.supervisor
                .record(&Lifecycle::Stopped { pid: pgid as u32 });
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on right now, for a component
/// to bind later. It is drawn below the kernel's ephemeral range
/// (`ip_local_port_range`): a port from that range can be taken by any
/// outgoing connection between this check and the component's bind, which
/// then fails with "address in use" on a busy machine. No port is handed
/// out twice by one process. Port 0's pick is the fallback.
pub fn free_port() -> Result<u16, ProcessError> {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let handed = handed.get_or_insert_with(HashSet::new);
    // Its own generator, drawn from entropy: never the run's seeded one, or
    // two runs with one seed would pick the same ports.
    let mut rng = fastrand::Rng::new();
    if let Some(range) = below_ephemeral() {
        for _ in 0..64 {
            let port = rng.u16(range.clone());
            if !handed.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                handed.insert(port);
                return Ok(port);
            }
        }
    }
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(ProcessError::io("no free port on 127.0.0.1"))?;
    handed.insert(port);
    Ok(port)
}

/// The ports [`free_port`] draws from: from 10000 up to the start of the
/// ephemeral range (Linux's default starts at 32768); none when that range
/// starts so low that it leaves no room below it.
fn below_ephemeral() -> Option<std::ops::Range<u16>> {
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    (start > 11000).then_some(10000..start)
}

/// Why a process could not be started: what was being done, and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{doing}: {source}")]
pub struct ProcessError {
    pub doing: String,
    #[source]
    pub source: std::io::Error,
}

impl ProcessError {
    /// For `map_err`: an io error while `doing` something ("cannot open log X").
    pub fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> ProcessError {
        let doing = doing.into();
        move |source| ProcessError { doing, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let range = below_ephemeral().expect("this machine's ephemeral range starts above 11000");
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        let distinct: std::collections::HashSet<_> = ports.iter().collect();
        assert_eq!(distinct.len(), ports.len(), "a port handed out twice");
        assert!(
            ports.iter().all(|p| range.contains(p)),
            "{ports:?} not in {range:?}"
        );
        for port in ports.iter().take(20) {
            std::net::TcpListener::bind(("127.0.0.1", *port)).unwrap();
        }
    }

    #[test]
    fn an_exit_status_reads_as_words_never_as_debug_forms() {
        let shown = |code, signal| ProcessState::Exited { code, signal }.to_string();
        assert_eq!(shown(Some(0), None), "exited with code 0");
        assert_eq!(shown(None, Some(libc::SIGKILL)), "was killed by SIGKILL");
        assert_eq!(shown(None, None), "ended with an unknown status");
        let status = ExitStatus::from_raw(3 << 8);
        assert_eq!(status_text(status), "exited with code 3");
    }

    fn spec(dir: &Path, script: &str) -> ProcessSpec {
        ProcessSpec {
            name: "sh".into(),
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: None,
            log: dir.join("sh.log"),
        }
    }

    #[tokio::test]
    async fn stop_kills_the_whole_group_even_when_the_leader_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        // The leader ignores TERM and has a child that would outlive it.
        let mut p = ManagedProcess::new(
            spec(dir.path(), "trap '' TERM; sleep 300 & echo started; wait"),
            Supervisor::default(),
        );
        let pid = p.start().unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(group_alive(pid as i32));
        let state = p.stop(Signal::TERM, Duration::from_millis(200)).await;
        assert_eq!(
            state,
            ProcessState::Exited {
                code: None,
                signal: Some(libc::SIGKILL)
            }
        );
        assert!(!group_alive(pid as i32), "a process of the group survived");
        assert!(p.log_tail(5).contains("started"));
    }

    #[tokio::test]
    async fn dropping_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut p =
            ManagedProcess::new(spec(dir.path(), "sleep 300 & wait"), Supervisor::default());
        let pid = p.start().unwrap();
        drop(p);
        assert!(!group_alive(pid as i32));
    }

    /// Every start and stop it hears, as (pid, started?) pairs.
    #[derive(Default)]
    struct Heard(Mutex<Vec<(u32, bool)>>);

    impl Journal for Heard {
        fn record(&self, change: &Lifecycle<'_>) {
            let entry = match *change {
                Lifecycle::Started { pid, .. } => (pid, true),
                Lifecycle::Stopped { pid } => (pid, false),
            };
            self.0.lock().unwrap().push(entry);
        }
    }

    #[tokio::test]
    async fn each_process_carries_its_supervisors_tag_and_tells_its_own_journal() {
        // Two stacks of one run side by side, their logs in one folder: each
        // process is told to the journal it was started under, whatever its path.
        let dir = tempfile::tempdir().unwrap();
        let run = Supervisor::tagged_without_keeper("tag-1:/tmp/run");
        let (one, two) = (
            std::sync::Arc::new(Heard::default()),
            std::sync::Arc::new(Heard::default()),
        );
        let mut first = ManagedProcess::new(
            spec(dir.path(), "echo \"$CONTINUITY_OWNER\"; sleep 300"),
            run.with_journal(one.clone()),
        );
        let mut second =
            ManagedProcess::new(spec(dir.path(), "sleep 300"), run.with_journal(two.clone()));
        let mut unowned = ManagedProcess::new(spec(dir.path(), "sleep 300"), Supervisor::default());
        let (a, b, c) = (
            first.start().unwrap(),
            second.start().unwrap(),
            unowned.start().unwrap(),
        );
        let until = Instant::now() + Duration::from_secs(5);
        while !first.log_tail(5).contains("tag-1:/tmp/run") {
            assert!(Instant::now() < until, "the tag never reached the process");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(owner::carries_tag(b as i32, "tag-1:/tmp/run"));
        assert!(!owner::carries_tag(c as i32, "tag-1:/tmp/run"));
        first.stop(Signal::KILL, Duration::ZERO).await;
        drop(second);
        drop(unowned);
        assert_eq!(*one.0.lock().unwrap(), [(a, true), (a, false)]);
        assert_eq!(*two.0.lock().unwrap(), [(b, true), (b, false)]);
    }

    #[test]
    fn a_missing_program_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path(), "");
        s.program = "/nonexistent/program".into();
        let e = ManagedProcess::new(s, Supervisor::default())
            .start()
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/program"), "{e}");
    }
}
