//! What "restart this component" means for one target as it is declared
//! ([`RestartAction`]: the config file's and the stack's; a target holds it
//! as its [`super::Action`]) and the kinds' names.

use super::action_error::ActionError;
use super::DEFAULT_GRACE;
use crate::signal::Signal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// One way of restarting a component, as a target is declared with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RestartAction {
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
pub(crate) trait LeftDown: Send + Sync {
    /// Takes every server it holds down (SIGKILL to its group), checks that
    /// its listener then refuses, and says how each went down.
    async fn take_down(&self) -> Result<String, ActionError>;

    /// One line for listings.
    fn describe(&self) -> String;
}

/// A [`LeftDown`] as an action holds it (one is one: equal by identity).
#[derive(Clone)]
pub(crate) struct LeftDownControl(pub Arc<dyn LeftDown>);

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
pub(crate) struct ManagedSpec {
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
    pub(crate) fn new(program: impl Into<PathBuf>, args: impl IntoIterator<Item = String>) -> Self {
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
    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The kinds of [`RestartAction`], as a target's `restart` table names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestartKind {
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
    pub(crate) fn as_str(self) -> &'static str {
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

pub(super) fn expected_status_text(expect: Option<u16>) -> String {
    expect.map_or_else(|| "2xx".to_string(), |s| s.to_string())
}
