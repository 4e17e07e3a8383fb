//! Restart targets: a named component, what a cell's restart does to it
//! and the probe that says it is back.
//!
//! Theory of operation. A [`Target`] is who (its [`TargetId`]), its probe
//! and deadline, and what it does: an [`Action`], one type per kind
//! ([`kinds`]). [`Target::prepare`] gets a target ready to be restarted: a
//! managed process is started, a pid file is checked, and the readiness
//! probe must pass once (a stack that is not up yet is reported before
//! any scenario runs). [`Target::restart`] never fails as a Rust error: it
//! returns a [`RestartResult`] saying how long the action took, how the
//! target was seen to go down ([`verify`]: a restart whose action merely
//! returned is not done), how long it then needed to become ready, and,
//! on failure, exactly what failed ([`RestartFailure`]).
//! [`Target::shutdown`] stops what the target started; dropping a target
//! kills it outright. A fault target ([`FaultWindow`]) restarts nothing:
//! its "restart" opens a window with a toxic on a hop, which
//! [`Target::settle`] heals at the latest when the cell's phases end. A
//! timeout target ([`TimeoutWindow`]) restarts nothing either: its
//! timeout is in force on the cell's path from [`Target::begin_cell`]
//! until [`Target::settle`].

mod action;
mod action_error;
mod afresh;
mod agent_kill;
mod builtin;
pub(crate) mod chaos;
mod chaos_run;
mod command;
mod failure;
mod fault;
mod id;
mod kinds;
mod lifecycle;
mod managed;
mod nemesis;
mod nemesis_target;
mod pause;
mod process_of;
mod readiness;
mod reboot;
mod repair;
mod restart;
mod signal;
mod target;
mod timeout;
mod unrecovered;
mod verify;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod verify_tests;

pub(crate) use action::{LeftDown, LeftDownControl, ManagedSpec, RestartAction, RestartKind};
pub(crate) use action_error::ActionError;
pub(crate) use afresh::Afresh;
pub(crate) use agent_kill::AgentKill;
pub(crate) use builtin::{BuiltinTarget, PauseLength, Repair, PAST_DEADLINE, SHORT_PAUSE};
pub(crate) use chaos::Chaos;
pub use failure::Restarted;
pub(crate) use failure::{Absence, NotBack, RestartFailure, SettleError, TargetError, Unavailable};
pub(crate) use fault::{FaultAction, FaultWindow};
pub(crate) use id::{OwnTarget, Selection, TargetId, UnknownTarget};
pub(crate) use managed::AfterStop;
pub(crate) use nemesis::Nemesis;
pub(crate) use pause::PauseAction;
pub(crate) use process_of::{ProcessOf, Recorded};
pub(crate) use readiness::{ProbeAuth, ProbeError, Readiness, Ready};
pub(crate) use reboot::Reboot;
pub(crate) use timeout::PathTimeout;
pub(crate) use unrecovered::{bring_back, NotBroughtBack};

use nemesis_target::{AgentKillWindow, PauseWindow, ScheduleWindow};
use repair::{repair_lent, repair_note, LentParts};
use restart::Restart;
use timeout::TimeoutWindow;

use crate::clock::millis;
use crate::supervise::Supervisor;
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use std::time::Duration;

/// How long a target may take to become ready, unless configured.
pub(crate) const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a restart command may run, unless configured.
pub(crate) const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a restart hook may take to answer, unless configured.
pub(crate) const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a managed process has between its stop signal and SIGKILL.
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// How often an HTTP or TCP probe retries.
pub(crate) const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_millis(50);

pub(crate) use crate::report::RestartResult;

/// What a target does, and what it keeps doing it.
#[derive(Debug)]
pub(crate) enum Action {
    /// A component stopped and started (a managed process, a command, a
    /// signal, a hook).
    Restart(Box<Restart>),
    /// The cell's own clients: the cell drops continuity's clients and
    /// makes new ones over the same store, as a restarted application
    /// would; the action itself does nothing (a hosted SDK's process is
    /// the RivetKit runner, restarted by its own target's action).
    Clients,
    /// Servers taken down and left down: what brings them back is not the
    /// harness (a client's sandbox provider, `ensureServer`).
    LeftDown(LeftDownControl),
    /// A toxic on a hop's fault proxy for a window.
    Fault(FaultWindow),
    /// A timeout on the path, in force for the whole cell; restarts nothing.
    Timeout(TimeoutWindow),
    Pause(PauseWindow),
    KillAgent(AgentKillWindow),
    Reboot(Reboot),
    Schedule(ScheduleWindow),
}

/// A restartable component.
#[derive(Debug)]
pub(crate) struct Target {
    pub id: TargetId,
    /// What a cell's restart does to it.
    action: Action,
    pub readiness: Readiness,
    pub ready_timeout: Duration,
    /// Its restarts disturb no other target's cells: on a shared deployment
    /// (`--jobs`), its cells may run beside other independent targets' cells.
    pub independent: bool,
    /// Its restart lets clients' requests in flight finish: a graceful
    /// reload, or a component off their path (the session store's engine
    /// and runner). Otherwise (the default) a restart waits for other
    /// cells' deferred DELETEs first, so it never cuts one.
    pub keeps_open_requests: bool,
    /// What its processes (a managed one, a restart command) start under.
    supervisor: Supervisor,
    /// What HTTP probes of the server under test send (the token).
    probe_auth: ProbeAuth,
    /// The current cell's trace: component stop/start and readiness attempts.
    trace: Trace,
    /// The fault proxies the cells' traffic passes through: one that has
    /// stopped makes the cell a harness error ([`Target::settle`]).
    hops: Vec<crate::faults::FaultControl>,
    /// The stack's parts of continuity's own that run as processes (its
    /// nginx): a cell that cannot reach the server checks them.
    parts: Vec<crate::supervise::part::PartProcess>,
    /// How it is started on an empty data folder, the last step of its
    /// repair ([`Repair::Afresh`]); `None`: it cannot be.
    afresh: Option<Afresh>,
}

/// What a target's action works with that is the target's own: its
/// name, its probe and deadline, the cell's trace, what its processes
/// start under.
struct Ctx<'a> {
    id: &'a TargetId,
    readiness: &'a Readiness,
    ready_timeout: Duration,
    probe_auth: &'a ProbeAuth,
    trace: &'a Trace,
    supervisor: &'a Supervisor,
}

impl Ctx<'_> {
    fn name(&self) -> &str {
        self.id.name()
    }

    /// After a fault heals, the stack must answer again before the cell's
    /// cleanup and the next cell (a RivetKit runner whose engine link was
    /// cut reconnects with a backoff): the wait goes into the trace, until
    /// the stack answered or the deadline it never answered by (the
    /// stack's time either way, as an unanswered call's), and a stack that
    /// never recovers fails this cell (it did not come back from the
    /// fault), not the next one.
    async fn ready_after_heal(&self) -> Result<(), ProbeError> {
        if *self.readiness == Readiness::None {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let waited = self
            .readiness
            .wait_with(self.ready_timeout, self.probe_auth, self.trace)
            .await;
        let took = waited
            .as_ref()
            .copied()
            .unwrap_or_else(|_| started.elapsed());
        self.trace
            .emit(Event::FaultReady(event::Took { ms: millis(took) }));
        waited.map(drop)
    }
}

/// What a restart saw: how the target went down (none for kinds that
/// restart no process) and how long it then took to be ready.
#[derive(Debug, Default)]
struct Seen {
    down: Option<String>,
    ready_ms: Option<u64>,
}

/// `5 s`, `1.5 s`, `250 ms`: durations as a person writes them.
pub(crate) fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
