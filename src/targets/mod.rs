//! Restart targets: a named component, the action that restarts it and the
//! probe that says it is back.
//!
//! Theory of operation. [`Target::prepare`] gets a target ready to be
//! restarted: a managed process is started, a pid file is checked, and the
//! readiness probe must pass once (a stack that is not up yet is reported
//! before any scenario runs). [`Target::restart`] never fails as a Rust
//! error: it returns a [`RestartResult`] saying how long the action took,
//! how the target was seen to go down ([`verify`]: a restart whose action
//! merely returned is not done), how long it then needed to become ready,
//! and, on failure, exactly what failed ([`RestartFailure`]). [`Target::shutdown`] stops what the target started;
//! dropping a target kills it outright. A fault target ([`FaultAction`])
//! restarts nothing: its "restart" opens a window with a toxic on a hop,
//! which [`Target::settle`] heals at the latest when the cell's phases end.
//! A timeout target ([`PathTimeout`]) restarts nothing either: its timeout
//! is in force on the cell's path from [`Target::begin_cell`] until
//! [`Target::settle`].

mod action;
mod agent_kill;
mod builtin;
pub mod chaos;
mod fault;
mod id;
mod nemesis;
mod nemesis_target;
mod pause;
mod process_of;
mod readiness;
mod reboot;
mod signal;
mod timeout;
mod unrecovered;
mod verify;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod verify_tests;

pub use action::{ActionError, LeftDown, LeftDownControl, ManagedSpec, RestartAction, RestartKind};
pub use agent_kill::AgentKill;
pub use builtin::{BuiltinTarget, PauseLength, PAST_DEADLINE, SHORT_PAUSE};
pub use chaos::Chaos;
pub use fault::FaultAction;
pub use id::{OwnTarget, Selection, TargetId, UnknownTarget};
pub use nemesis::Nemesis;
pub use pause::PauseAction;
pub use process_of::{ProcessOf, Recorded};
pub use readiness::{ProbeAuth, ProbeError, Readiness, Ready};
pub use reboot::Reboot;
pub use timeout::PathTimeout;
pub use unrecovered::NotBroughtBack;

use crate::clock::millis;
use crate::signal::Signal;
use crate::supervise::{ManagedProcess, ProcessSpec, ProcessState, Supervisor};
use crate::trace::event::{self, Event};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a target may take to become ready, unless configured.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a restart command may run, unless configured.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a restart hook may take to answer, unless configured.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a managed process has between its stop signal and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// How often an HTTP or TCP probe retries.
pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_millis(50);

/// Lines of a managed process's log quoted in a failure.
const LOG_TAIL_LINES: usize = 10;

pub use crate::report::RestartResult;

/// Why a target could not be prepared. The message is complete on its own.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    #[error("target `{target}`: {error}")]
    Action { target: String, error: ActionError },
    #[error("target `{target}` is not ready: {error}{hint}")]
    NotReady {
        target: String,
        error: ProbeError,
        /// What the managed process did meanwhile, when there is one.
        hint: String,
    },
}

/// Why a restart failed: its action failed, the target was never seen to
/// go down, or it did not come back in time. The restart phase is then the
/// cell's boundary, not a later session phase.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RestartFailure {
    #[error(transparent)]
    Action(#[from] ActionError),
    /// The action returned, yet nothing showed the target going down.
    #[error("the target never went down: {observed}")]
    NeverDown { observed: String },
    /// Without a probe nothing can show the target going down and coming back.
    #[error("the restart cannot be verified: the target has no readiness probe to see it go down and come back (give it a `ready` probe)")]
    Unverifiable,
    #[error("{} did not come back within {}: {error}{hint}", who(*.of), fmt_duration(*.timeout))]
    NotBack {
        timeout: Duration,
        #[source]
        error: ProbeError,
        /// What the managed process did meanwhile, when there is one, and
        /// what was done about it (a reboot's repair).
        hint: String,
        /// The component of the stack that did not come back, when the
        /// restart acted on several (a reboot's); `None`: the target.
        of: Option<BuiltinTarget>,
    },
}

/// What restarting `component` for the next cell did, as a clause.
fn repair_note(component: BuiltinTarget, repaired: &RestartResult) -> String {
    match repaired.ok {
        true => format!("; `{component}` was restarted for the next cell"),
        false => format!(
            "; restarting `{component}` for the next cell failed too: {}",
            repaired.detail.as_deref().unwrap_or("no detail")
        ),
    }
}

/// Who did not come back: a component named, else the target.
fn who(of: Option<BuiltinTarget>) -> String {
    match of {
        Some(component) => format!("`{component}`"),
        None => "the target".into(),
    }
}

impl RestartFailure {
    /// A component's failure (a reboot's), naming it and adding `clause`
    /// (what was done about it) when it did not come back.
    pub fn of_component(self, component: Option<BuiltinTarget>, clause: &str) -> Self {
        match self {
            RestartFailure::NotBack {
                timeout,
                error,
                hint,
                ..
            } => RestartFailure::NotBack {
                timeout,
                error,
                hint: format!("{hint}{clause}"),
                of: component,
            },
            other => other,
        }
    }

    /// The component of the stack that did not come back, when a restart
    /// acting on several says which (a part of continuity's own among
    /// them is then the harness's failure, not the system's).
    pub fn component(&self) -> Option<BuiltinTarget> {
        match self {
            RestartFailure::NotBack { of, .. } => *of,
            _ => None,
        }
    }
}

/// A restart as the cell records it and, when it failed, what failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Restarted {
    pub record: RestartResult,
    pub failure: Option<RestartFailure>,
}

impl Restarted {
    /// A record alone, with no typed failure (a restarter standing in for
    /// a target).
    pub fn from_record(record: RestartResult) -> Restarted {
        Restarted {
            record,
            failure: None,
        }
    }
}

impl From<verify::NotDown> for RestartFailure {
    fn from(seen: verify::NotDown) -> Self {
        RestartFailure::NeverDown { observed: seen.0 }
    }
}

/// Why a cell's faults could not be settled once its phases were over,
/// by whom it is blamed: a fault proxy that stopped is continuity's own
/// part failing; a fault that did not take or a process that did not
/// wake, the test's setup; something the fault acted on, seen running
/// again, that did not answer its probe did not come back ([`NotBack`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettleError {
    #[error(transparent)]
    Proxy(#[from] crate::faults::ProxyError),
    /// A pause that did not wake, a schedule's fault that did not take:
    /// the test's setup failed.
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    NotBack(#[from] NotBack),
    /// Several of the above: a schedule's faults, each failing its way.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<SettleError>),
}

impl SettleError {
    /// The failure with `clause` (what was done about it) added to what it says.
    pub fn noted(self, clause: &str) -> SettleError {
        match self {
            SettleError::Setup(said) => SettleError::Setup(format!("{said}{clause}")),
            SettleError::NotBack(mut not_back) => {
                not_back.said.push_str(clause);
                SettleError::NotBack(not_back)
            }
            other => other,
        }
    }
}

/// Something a fault acted on (a hop's toxic, a pause, a restart in a
/// schedule) that was seen running again, or healed, yet did not answer
/// its readiness probe: it did not come back from the fault. The system's
/// failure, unless the component is a part of continuity's own; `said`
/// also tells what was done so the next cell finds the stack whole.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{said}")]
pub struct NotBack {
    /// The component that did not come back; `None` for the stack behind
    /// a hop whose fault healed.
    pub component: Option<BuiltinTarget>,
    /// The probe that kept failing: its last cause is the signature's.
    pub probe: ProbeError,
    /// The whole sentence: what did not answer, within how long, the
    /// probe's error, and the repair.
    pub said: String,
}

/// A target that cannot run here, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    pub id: TargetId,
    pub reason: String,
    pub absence: Absence,
}

/// Why a target cannot run: its cells are skipped when its program is
/// missing, errors when the program failed to start, and not applicable
/// when the run has nothing it could restart (the `store` target without
/// a store server): they would say nothing about a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absence {
    Missing,
    StartFailed,
    NotApplicable,
}

impl Unavailable {
    pub fn skipped(id: impl Into<TargetId>, reason: &str) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            absence: Absence::Missing,
        }
    }

    pub fn not_applicable(id: impl Into<TargetId>, reason: &str) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            absence: Absence::NotApplicable,
        }
    }

    pub fn failed(id: impl Into<TargetId>, reason: &str) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            absence: Absence::StartFailed,
        }
    }
}

/// A restartable component.
#[derive(Debug)]
pub struct Target {
    pub id: TargetId,
    pub action: RestartAction,
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
    /// The running process of a managed target.
    process: Option<ManagedProcess>,
    /// What its processes (a managed one, a restart command) start under.
    supervisor: Supervisor,
    /// What HTTP probes of the server under test send (the token).
    probe_auth: ProbeAuth,
    /// The current cell's trace: component stop/start and readiness attempts.
    trace: crate::trace::Trace,
    /// Runs around a managed process's stop (restart or shutdown); what it
    /// returns goes into the restart's detail.
    after_stop: Option<AfterStop>,
    after_stop_note: Option<String>,
    /// A managed target's last stop: how it went down, or what was seen instead.
    stopped: Option<Result<String, verify::NotDown>>,
    /// The least wait after a restart action before its probe (a deployment
    /// command's `SA_RESTART_WAIT_SEC`, a delay kept beside the default probe).
    min_wait: Duration,
    /// A fault target's proxy (the control of its hop).
    fault_proxy: Option<crate::faults::FaultControl>,
    /// A fault target's window while its toxic is in force.
    window: Option<fault::OpenWindow>,
    /// A window each restart opens on `fault_proxy`'s hop just before its
    /// action ([`Target::with_window_along`]).
    along: Option<FaultAction>,
    /// The fault proxies the cells' traffic passes through: one that has
    /// stopped makes the cell a harness error ([`Target::settle`]).
    hops: Vec<crate::faults::FaultControl>,
    /// The stack's parts of continuity's own that run as processes (its
    /// nginx): a cell that cannot reach the server checks them.
    parts: Vec<crate::supervise::part::PartProcess>,
    /// Where the cell's clients connect when it is not the stack's base
    /// URL (a timeout target's gateway of its own).
    cell_base_url: Option<String>,
    /// A timeout target's window for the running cell, or why it could not open.
    timeout_window: Option<Result<timeout::TimeoutWindow, crate::faults::ProxyError>>,
    /// What a nemesis (a pause, a kill, a schedule) leaves open in the cell.
    nemesis: Option<nemesis::Open>,
    /// What its last restart said when it did not bring it back: the next
    /// cell brings it back first ([`Target::bring_back`]).
    unrecovered: Option<String>,
}

/// A check around a managed target's stop, e.g. a count of the children
/// that outlive the process. `before` gets the pid before the group is
/// stopped (it may stop the process itself, to see what survives it);
/// `after` runs once the group is gone. Their notes join the restart's detail.
#[derive(Clone)]
pub struct AfterStop {
    pub before: std::sync::Arc<dyn Fn(Option<u32>) -> Option<String> + Send + Sync>,
    pub after: std::sync::Arc<dyn Fn() -> Option<String> + Send + Sync>,
}

// The hooks wait and scan /proc: on a blocking thread, so the other
// workers' cells (timers, streams) keep running meanwhile.
impl AfterStop {
    async fn run_before(&self, pid: Option<u32>) -> Option<String> {
        let before = std::sync::Arc::clone(&self.before);
        tokio::task::spawn_blocking(move || before(pid))
            .await
            .unwrap_or_default()
    }

    async fn run_after(&self, before: Option<String>) -> Option<String> {
        let after = std::sync::Arc::clone(&self.after);
        let after = tokio::task::spawn_blocking(move || after())
            .await
            .unwrap_or_default();
        match (before, after) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }
}

impl std::fmt::Debug for AfterStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterStop")
    }
}

impl Target {
    pub fn new(id: impl Into<TargetId>, action: RestartAction, readiness: Readiness) -> Self {
        Self {
            id: id.into(),
            action,
            readiness,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            independent: false,
            keeps_open_requests: false,
            process: None,
            supervisor: Supervisor::default(),
            probe_auth: ProbeAuth::default(),
            trace: crate::trace::Trace::detached(),
            after_stop: None,
            after_stop_note: None,
            stopped: None,
            min_wait: Duration::ZERO,
            fault_proxy: None,
            window: None,
            along: None,
            hops: Vec::new(),
            parts: Vec::new(),
            cell_base_url: None,
            timeout_window: None,
            nemesis: None,
            unrecovered: None,
        }
    }

    /// The cell's clients connect to `url` instead of the stack's base URL.
    pub fn with_cell_base_url(mut self, url: String) -> Self {
        self.cell_base_url = Some(url);
        self
    }

    /// See [`Target::with_cell_base_url`].
    pub fn cell_base_url(&self) -> Option<&str> {
        self.cell_base_url.as_deref()
    }

    /// The header timeout a timeout target gives the cell's clients.
    pub fn client_headers_timeout(&self) -> Option<Duration> {
        match &self.action {
            RestartAction::Timeout(timeout) => timeout.client_headers(),
            _ => None,
        }
    }

    /// Its name, as `--target` and the report write it.
    pub fn name(&self) -> &str {
        self.id.name()
    }

    /// Each restart opens `window` on `control`'s hop just before its
    /// action, and its action is done only once the toxic has acted on a
    /// connection (within the ready timeout): what the action makes the
    /// component do meets the toxic (an nginx reload's closes of idle
    /// connections held in flight, `stack::reload_race`). The window
    /// heals after its hold, or when the cell's phases end.
    pub fn with_window_along(
        mut self,
        window: FaultAction,
        control: crate::faults::FaultControl,
    ) -> Self {
        self.along = Some(window);
        self.fault_proxy = Some(control);
        self
    }

    /// The proxy of a fault target's hop.
    pub fn with_fault_proxy(mut self, control: crate::faults::FaultControl) -> Self {
        self.fault_proxy = Some(control);
        self
    }

    /// See [`Target::with_fault_proxy`].
    pub fn set_fault_proxy(&mut self, control: crate::faults::FaultControl) {
        self.fault_proxy = Some(control);
    }

    /// The fault proxies on the cells' paths, checked when each cell's phases end.
    pub fn watch_hops(&mut self, hops: Vec<crate::faults::FaultControl>) {
        self.hops = hops;
    }

    /// The stack's parts that run as processes, checked when a phase of
    /// the cell cannot reach the server.
    pub fn watch_parts(&mut self, parts: Vec<crate::supervise::part::PartProcess>) {
        self.parts = parts;
    }

    /// The fault proxies on the cells' paths (see [`Target::watch_hops`]).
    pub fn hops(&self) -> &[crate::faults::FaultControl] {
        &self.hops
    }

    /// See [`Target::watch_parts`].
    pub fn watched_parts(&self) -> &[crate::supervise::part::PartProcess] {
        &self.parts
    }

    /// [`Target::settle_lent`] of a target lent nothing.
    #[cfg(test)]
    pub async fn settle(&mut self) -> Result<(), SettleError> {
        self.settle_lent(&mut []).await
    }

    /// When the cell's phases are over: a fault target's window heals now
    /// (the cleanup runs on a healed network), and every hop's proxy must
    /// still be serving (an error is the harness's: the proxy itself
    /// failed). A nemesis closes what it left open: a schedule still
    /// running is waited for and gives back the components it was `lent`,
    /// a pause wakes (and is seen so: else the test's setup's error), an
    /// agent kill's server is looked at again. A stack or a component that
    /// does not answer after a heal or a wake did not come back from the
    /// fault ([`NotBack`]).
    pub async fn settle_lent(&mut self, lent: &mut [&mut Target]) -> Result<(), SettleError> {
        let nemesis = self.close_nemesis(lent).await;
        if let Some(window) = self.timeout_window.take() {
            window.and_then(timeout::TimeoutWindow::close)?;
        }
        if let Some(window) = self.window.take() {
            window.close()?;
            self.ready_after_heal().await.map_err(|probe| NotBack {
                component: None,
                said: format!(
                    "the stack was not ready again within {} of the fault's heal: {probe}",
                    fmt_duration(self.ready_timeout)
                ),
                probe,
            })?;
        }
        for hop in self.hops.iter().chain(self.fault_proxy.iter()) {
            hop.check()?;
        }
        nemesis
    }

    /// After a fault heals, the stack must answer again before the cell's
    /// cleanup and the next cell (a RivetKit runner whose engine link was
    /// cut reconnects with a backoff): the wait goes into the trace, and a
    /// stack that never recovers fails this cell (it did not come back from
    /// the fault), not the next one.
    async fn ready_after_heal(&mut self) -> Result<(), ProbeError> {
        if self.readiness == Readiness::None {
            return Ok(());
        }
        let took = self
            .readiness
            .wait_with(self.ready_timeout, &self.probe_auth, &self.trace)
            .await?;
        self.trace
            .emit(Event::FaultReady(event::Took { ms: millis(took) }));
        Ok(())
    }

    /// A restart command or hook without a probe of its own (none, or only
    /// a delay) is probed by `probe` (a deployment's health URL); the delay
    /// it had stays as the least wait before the probe. Other kinds keep theirs.
    pub fn with_default_probe(&mut self, probe: Readiness) {
        if !matches!(self.kind(), RestartKind::Command | RestartKind::Http) {
            return;
        }
        match self.readiness {
            Readiness::None => self.readiness = probe,
            Readiness::Delay { duration } => {
                self.min_wait = duration;
                self.readiness = probe;
            }
            _ => {}
        }
    }

    /// See [`Target::independent`].
    pub fn with_independent(mut self, independent: bool) -> Self {
        self.independent = independent;
        self
    }

    /// See [`Target::keeps_open_requests`].
    pub fn keeping_open_requests(mut self) -> Self {
        self.keeps_open_requests = true;
        self
    }

    /// Starts its processes (a managed one, a restart command) under
    /// `supervisor`: the run's owner tag and keeper, the stack's journal.
    pub fn supervised_by(mut self, supervisor: Supervisor) -> Self {
        self.supervisor = supervisor;
        self
    }

    /// See [`Target::supervised_by`], for a target built elsewhere.
    pub fn set_supervisor(&mut self, supervisor: Supervisor) {
        self.supervisor = supervisor;
    }

    /// A managed target whose config names no `log` writes its process's
    /// output to `<dir>/<target>.log`: a run keeps it in its own folder,
    /// beside the report, rather than in a temp folder no one cleans.
    pub fn log_into(&mut self, dir: &Path) {
        if let RestartAction::Managed(spec) = &mut self.action {
            if spec.log.is_none() {
                let file = format!("{}.log", crate::file_name::safe(self.id.name()));
                spec.log = Some(dir.join(file));
            }
        }
    }

    /// Runs `hook` each time the managed process has stopped.
    pub fn with_after_stop(mut self, hook: AfterStop) -> Self {
        self.after_stop = Some(hook);
        self
    }

    /// HTTP probes of URLs under `base_url` will send `token` and `headers`,
    /// as the server under test wants them; other URLs get neither.
    pub fn authorize_probes(
        &mut self,
        base_url: &str,
        token: Option<&crate::secret::Secret>,
        headers: &[(String, String)],
    ) {
        self.probe_auth = ProbeAuth::new(base_url, token, headers);
    }

    /// Records this target's restarts into `trace` (the cell about to run).
    /// A cell with `seed` begins on this target: a fault target's proxy
    /// draws the cell's toxic decisions from it.
    /// A timeout target's timeout comes into force for the cell here.
    pub fn begin_cell(&mut self, seed: u64) {
        if let Some(control) = &self.fault_proxy {
            control.begin_cell(seed);
        }
        if let RestartAction::Timeout(path_timeout) = &self.action {
            if let Some(Ok(stale)) = self.timeout_window.take() {
                let _ = stale.close();
            }
            let opened =
                timeout::TimeoutWindow::open(path_timeout, self.fault_proxy.as_ref(), &self.trace);
            self.timeout_window = Some(opened);
        }
    }

    pub fn set_trace(&mut self, trace: crate::trace::Trace) {
        self.trace = trace;
    }

    pub fn with_ready_timeout(mut self, ready_timeout: Duration) -> Self {
        self.ready_timeout = ready_timeout;
        self
    }

    pub fn kind(&self) -> RestartKind {
        self.action.kind()
    }

    /// One line for listings: the action, then the probe and its deadline.
    pub fn describe(&self) -> String {
        match self.readiness {
            Readiness::None => self.action.describe(),
            _ if !self.min_wait.is_zero() => format!(
                "{}; ready: {} within {} after {}",
                self.action.describe(),
                self.readiness.describe(),
                fmt_duration(self.ready_timeout),
                fmt_duration(self.min_wait)
            ),
            _ => format!(
                "{}; ready: {} within {}",
                self.action.describe(),
                self.readiness.describe(),
                fmt_duration(self.ready_timeout)
            ),
        }
    }

    /// The pid of a managed target's process while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(ManagedProcess::pid)
    }

    /// Starts what the target owns and waits until it is ready. A delay
    /// probe is only waited for after starting a managed process: for the
    /// other kinds the component is already up.
    pub async fn prepare(&mut self) -> Result<(), TargetError> {
        match &self.action {
            RestartAction::Managed(spec) => {
                let spec = spec.clone();
                self.start_managed(&spec)
                    .map_err(|error| self.action_error(error))?;
            }
            RestartAction::Signal { pid_file, .. } => {
                let pid = signal::read_pid_file(pid_file).map_err(|e| self.action_error(e))?;
                if !signal::process_exists(pid) {
                    return Err(self.action_error(ActionError::NoProcess {
                        pid,
                        path: pid_file.clone(),
                    }));
                }
            }
            RestartAction::Command { .. }
            | RestartAction::Http { .. }
            | RestartAction::Clients
            | RestartAction::LeftDown(_)
            | RestartAction::Timeout(_)
            | RestartAction::Nemesis(_) => {}
            RestartAction::Fault(fault) => {
                let error = |error| TargetError::Action {
                    target: self.name().to_string(),
                    error,
                };
                let Some(control) = &self.fault_proxy else {
                    return Err(error(ActionError::NoHop {
                        hop: fault.hop.clone(),
                    }));
                };
                control.check().map_err(|e| {
                    error(ActionError::Proxy {
                        hop: fault.hop.clone(),
                        error: e,
                    })
                })?;
            }
        }
        let is_delay = matches!(self.readiness, Readiness::Delay { .. });
        if is_delay && !matches!(self.action, RestartAction::Managed(_)) {
            return Ok(());
        }
        if let Err(error) = self
            .readiness
            .wait_with(self.ready_timeout, &self.probe_auth, &self.trace)
            .await
        {
            let hint = self.process_hint();
            if let (Some(mut process), RestartAction::Managed(spec)) =
                (self.process.take(), &self.action)
            {
                // A target that failed to prepare leaves nothing running.
                process.stop(spec.stop_signal, spec.grace).await;
            }
            return Err(TargetError::NotReady {
                target: self.name().to_string(),
                error,
                hint,
            });
        }
        Ok(())
    }

    /// Runs the restart action, checks that the target went down and waits
    /// until it is back ([`verify`]); `phase` names the scenario phase the
    /// result belongs to.
    #[cfg(test)]
    pub async fn restart(&mut self, phase: &str) -> RestartResult {
        self.restart_lent(phase, &mut []).await.record
    }

    /// [`Target::restart`] with the stack's components lent to the cell
    /// (a reboot's, a schedule's: [`Target::lends`]), and what failed typed
    /// beside the record: a cell blames a target that did not come back on
    /// the system under test, one that never went down on its setup. A
    /// schedule keeps the components until [`Target::before_last_phase`] or
    /// [`Target::settle_lent`] gives them back, leaving placeholders
    /// meanwhile.
    pub async fn restart_lent(&mut self, phase: &str, lent: &mut [&mut Target]) -> Restarted {
        let started = Instant::now();
        let (restart_ms, checked) = match &self.action {
            RestartAction::Nemesis(_) => self.restart_nemesis(started, lent).await,
            _ => self.restart_checked(started).await,
        };
        let (ok, down, ready_ms, detail, failure) = match checked {
            Ok(seen) => (true, seen.down, seen.ready_ms, None, None),
            Err(failure) => (false, None, None, Some(failure.to_string()), Some(failure)),
        };
        self.note_restart(ok, detail.as_deref());
        let mut outcome = RestartResult {
            phase: phase.to_string(),
            action: self.kind().to_string(),
            ok,
            restart_ms,
            ready_ms,
            down,
            detail,
        };
        if let Some(note) = self.after_stop_note.take() {
            outcome.detail = Some(match outcome.detail {
                Some(detail) => format!("{detail}; {note}"),
                None => note,
            });
        }
        Restarted {
            record: outcome,
            failure,
        }
    }

    /// The action, then the kind's proof that the target went down
    /// ([`verify`]) and its readiness. Returns how long the action took.
    async fn restart_checked(&mut self, started: Instant) -> (u64, Result<Seen, RestartFailure>) {
        match self.kind() {
            RestartKind::Command | RestartKind::Http => self.restart_watched(started).await,
            RestartKind::Signal => {
                let family = match &self.action {
                    RestartAction::Signal { pid_file, .. } => signal::read_pid_file(pid_file)
                        .ok()
                        .map(|pid| (verify::Family::of(pid), pid_file.clone())),
                    _ => None,
                };
                let action = self.run_action_along().await;
                let restart_ms = millis(started.elapsed());
                if let Err(error) = action {
                    return (restart_ms, Err(error.into()));
                }
                let down = match family {
                    Some((family, pid_file)) => family.changed(&pid_file, self.ready_timeout).await,
                    None => Err(verify::NotDown(
                        "the pid file named no process before the signal".into(),
                    )),
                };
                (restart_ms, self.back_after(down).await)
            }
            RestartKind::Managed => {
                let action = self.run_action_along().await;
                let restart_ms = millis(started.elapsed());
                if let Err(error) = action {
                    return (restart_ms, Err(error.into()));
                }
                let down = self
                    .stopped
                    .take()
                    .unwrap_or_else(|| Ok("no process was running".into()));
                (restart_ms, self.back_after(down).await)
            }
            RestartKind::LeftDown => self.restart_left_down(started).await,
            RestartKind::Pause
            | RestartKind::KillAgent
            | RestartKind::Reboot
            | RestartKind::Chaos => self.restart_nemesis(started, &mut []).await,
            // They restart no process: a fault's probe waits for its heal
            // ([`Target::settle`]), the cell renews its own clients, a
            // timeout is in force for the whole cell already.
            RestartKind::Fault | RestartKind::Clients | RestartKind::Timeout => {
                let action = self.run_action_along().await;
                let restart_ms = millis(started.elapsed());
                (
                    restart_ms,
                    action.map(|()| Seen::default()).map_err(Into::into),
                )
            }
        }
    }

    /// Down, and left so: no probe is waited for; whoever brings the
    /// servers back (a client's `ensureServer`) says that they came back.
    async fn restart_left_down(&mut self, started: Instant) -> (u64, Result<Seen, RestartFailure>) {
        let down = match &self.action {
            RestartAction::LeftDown(control) => control.0.take_down().await,
            other => Err(ActionError::NothingDown {
                reason: format!("{} leaves nothing down", other.describe()),
            }),
        };
        let seen = down.map(|down| Seen {
            down: Some(down),
            ready_ms: None,
        });
        (millis(started.elapsed()), seen.map_err(Into::into))
    }

    /// A command's or hook's restart: its probe is watched from the
    /// action's start (a command may stop and start the server before it
    /// returns, or return before the server is back).
    async fn restart_watched(&mut self, started: Instant) -> (u64, Result<Seen, RestartFailure>) {
        let mut watch = verify::Watch::start(&self.readiness, &self.probe_auth).await;
        let action = self.run_action_along().await;
        let restart_ms = millis(started.elapsed());
        if let Err(error) = action {
            return (restart_ms, Err(error.into()));
        }
        if matches!(self.readiness, Readiness::None | Readiness::Delay { .. }) {
            return (restart_ms, Err(RestartFailure::Unverifiable));
        }
        let waited = Instant::now();
        tokio::time::sleep(self.min_wait).await;
        let during = match watch.as_mut() {
            Some(watch) => watch.during().await,
            None => None,
        };
        let ready = match self.wait_back().await {
            Ok(ready) => ready,
            Err(failure) => return (restart_ms, Err(failure)),
        };
        let down = match &watch {
            Some(watch) => watch.judge(during, ready.failed_first).await,
            None => ready.failed_first.map(|e| format!("the probe failed after the action returned: {e}")).ok_or_else(|| verify::NotDown("its probe passed at once after the action (a command probe is not watched while the action runs)".to_string())),
        };
        let seen = down
            .map(|down| Seen {
                down: Some(down),
                ready_ms: Some(millis(waited.elapsed())),
            })
            .map_err(RestartFailure::from);
        (restart_ms, seen)
    }

    /// Once `down` was seen (or what was seen instead), the target must be
    /// ready within its deadline.
    async fn back_after(
        &mut self,
        down: Result<String, verify::NotDown>,
    ) -> Result<Seen, RestartFailure> {
        let down = down?;
        let waited = Instant::now();
        if self.readiness == Readiness::None {
            return Ok(Seen {
                down: Some(down),
                ready_ms: None,
            });
        }
        self.wait_back().await?;
        Ok(Seen {
            down: Some(down),
            ready_ms: Some(millis(waited.elapsed())),
        })
    }

    /// The target's probe within its deadline; a failure is the restart's.
    async fn wait_back(&mut self) -> Result<Ready, RestartFailure> {
        match self
            .readiness
            .wait_observing(self.ready_timeout, &self.probe_auth, &self.trace)
            .await
        {
            Ok(ready) => Ok(ready),
            Err(error) => Err(RestartFailure::NotBack {
                timeout: self.ready_timeout,
                error,
                hint: self.process_hint(),
                of: None,
            }),
        }
    }

    /// From now on this managed target runs `program` (another build of
    /// the same component, same arguments, same port): the running process
    /// stops as at [`Target::shutdown`], then the new one starts and must
    /// become ready as at [`Target::prepare`].
    pub async fn switch_program(&mut self, program: PathBuf) -> Result<(), TargetError> {
        if !matches!(self.action, RestartAction::Managed(_)) {
            return Err(self.action_error(ActionError::Start {
                command: self.action.describe(),
                reason: "only a managed process can run another program".into(),
                log_tail: String::new(),
            }));
        }
        self.shutdown().await;
        if let RestartAction::Managed(spec) = &mut self.action {
            spec.program = program;
        }
        self.prepare().await
    }

    /// Leaves a managed target's process running past this handle; returns its pid.
    pub fn detach(&mut self) -> Option<u32> {
        self.process.as_mut().and_then(ManagedProcess::detach)
    }

    /// Stops a managed process (its stop signal, grace, then SIGKILL); a
    /// fault target's window heals.
    pub async fn shutdown(&mut self) {
        if let Some(window) = self.window.take() {
            let _ = window.close();
        }
        // A pause wakes as it is dropped; a schedule's lent parts go with it.
        self.nemesis = None;
        if let Some(Ok(window)) = self.timeout_window.take() {
            let _ = window.close();
        }
        let hook = self.after_stop.clone();
        if let (Some(mut process), RestartAction::Managed(spec)) =
            (self.process.take(), &self.action)
        {
            let before = match hook.as_ref() {
                Some(h) => h.run_before(process.pid()).await,
                None => None,
            };
            process.stop(spec.stop_signal, spec.grace).await;
            if let Some(hook) = &hook {
                hook.run_after(before).await;
            }
        }
    }

    /// The action, within the window along it when the target has one.
    async fn run_action_along(&mut self) -> Result<(), ActionError> {
        let Some(along) = self.along.clone() else {
            return self.run_action().await;
        };
        let proxy_error = |error| ActionError::Proxy {
            hop: along.hop.clone(),
            error,
        };
        let control = self
            .fault_proxy
            .as_ref()
            .ok_or_else(|| ActionError::NoHop {
                hop: along.hop.clone(),
            })?;
        if let Some(window) = self.window.take() {
            window.close().map_err(proxy_error)?;
        }
        let window = fault::OpenWindow::open(&along, control, &self.trace).map_err(proxy_error)?;
        self.window = Some(window);
        self.run_action().await?;
        let acted = match &self.window {
            Some(window) => window.acted_within(self.ready_timeout).await,
            None => false,
        };
        match acted {
            true => Ok(()),
            false => Err(ActionError::ToxicNeverActed {
                hop: along.hop.clone(),
                toxic: along.toxic.describe(),
                within: fmt_duration(self.ready_timeout),
            }),
        }
    }

    async fn run_action(&mut self) -> Result<(), ActionError> {
        match &self.action {
            RestartAction::Command { command, timeout } => {
                action::run_command(command, *timeout, &self.supervisor).await
            }
            RestartAction::Managed(spec) => {
                let spec = spec.clone();
                self.stop_managed(&spec).await;
                self.start_and_record(&spec)
            }
            RestartAction::Signal { pid_file, signal } => {
                signal::send_from_pid_file(pid_file, *signal)
            }
            RestartAction::Clients
            | RestartAction::LeftDown(_)
            | RestartAction::Timeout(_)
            | RestartAction::Nemesis(_) => Ok(()),
            RestartAction::Http {
                url,
                method,
                expect_status,
                timeout,
            } => action::call_hook(url, method, *expect_status, *timeout).await,
            RestartAction::Fault(fault) => {
                // One window at a time: a second restart in the cell heals the first.
                if let Some(window) = self.window.take() {
                    window.close().map_err(|error| ActionError::Proxy {
                        hop: fault.hop.clone(),
                        error,
                    })?;
                }
                let control = self
                    .fault_proxy
                    .as_ref()
                    .ok_or_else(|| ActionError::NoHop {
                        hop: fault.hop.clone(),
                    })?;
                let window =
                    fault::OpenWindow::open(fault, control, &self.trace).map_err(|error| {
                        ActionError::Proxy {
                            hop: fault.hop.clone(),
                            error,
                        }
                    })?;
                self.window = Some(window);
                Ok(())
            }
        }
    }

    /// Stops a managed target's running process (its hook around it), and
    /// records how it went down (`stopped`) and the stop in the trace.
    async fn stop_managed(&mut self, spec: &ManagedSpec) {
        let hook = self.after_stop.clone();
        let Some(process) = self.process.as_mut() else {
            return;
        };
        let before = match hook.as_ref() {
            Some(h) => h.run_before(process.pid()).await,
            None => None,
        };
        process.stop(spec.stop_signal, spec.grace).await;
        let state = process.state();
        component_event(&self.trace, Event::ComponentStop, self.name(), state);
        let addr = verify::probe_addr(&self.readiness);
        self.stopped = Some(verify::managed_down(&exit_words(state), addr.as_deref()).await);
        self.after_stop_note = match hook {
            Some(h) => h.run_after(before).await,
            None => None,
        };
    }

    /// Starts a managed target's process and records the start in the trace.
    fn start_and_record(&mut self, spec: &ManagedSpec) -> Result<(), ActionError> {
        let started = self.start_managed(spec);
        if let Some(process) = self.process.as_mut() {
            let state = process.state();
            component_event(&self.trace, Event::ComponentStart, self.name(), state);
        }
        started
    }

    fn start_managed(&mut self, spec: &ManagedSpec) -> Result<(), ActionError> {
        let name = self.id.name();
        let process = self.process.get_or_insert_with(|| {
            ManagedProcess::new(
                ProcessSpec {
                    name: name.to_string(),
                    program: spec.program.clone(),
                    args: spec.args.clone(),
                    env: spec.env.clone(),
                    cwd: spec.cwd.clone(),
                    log: spec.log.clone().unwrap_or_else(|| default_log_path(name)),
                },
                self.supervisor.clone(),
            )
        });
        process.start().map(drop).map_err(|e| ActionError::Start {
            command: spec.command_line(),
            reason: e.to_string(),
            log_tail: process.log_tail(LOG_TAIL_LINES),
        })
    }

    /// For a managed target whose probe failed: had the process exited, and
    /// what did it log? Empty for other kinds.
    fn process_hint(&mut self) -> String {
        let Some(process) = self.process.as_mut() else {
            return String::new();
        };
        let state = format!("; the process {}", exit_words(process.state()));
        let tail = process.log_tail(LOG_TAIL_LINES);
        if tail.trim().is_empty() {
            state
        } else {
            format!(
                "{state}; log {}: {}",
                process.log_path().display(),
                tail.trim_end()
            )
        }
    }

    fn action_error(&self, error: ActionError) -> TargetError {
        TargetError::Action {
            target: self.name().to_string(),
            error,
        }
    }
}

/// What a restart saw: how the target went down (none for kinds that
/// restart no process) and how long it then took to be ready.
#[derive(Debug, Default)]
struct Seen {
    down: Option<String>,
    ready_ms: Option<u64>,
}

/// How a process stands, as a sentence's predicate: its exit status in
/// [`crate::supervise::exit_text`]'s words.
fn exit_words(state: ProcessState) -> String {
    match state {
        ProcessState::Exited { code, signal } => crate::supervise::exit_text(code, signal),
        ProcessState::Running { pid } => format!("(pid {pid}) is still running"),
        ProcessState::NotStarted => "never started".into(),
    }
}

/// A managed component stopped or started, with its pid or exit status.
fn component_event(
    trace: &crate::trace::Trace,
    ev: fn(event::Component) -> Event,
    name: &str,
    state: ProcessState,
) {
    let mut component = event::Component {
        component: name.into(),
        ..Default::default()
    };
    match state {
        ProcessState::Running { pid } => component.pid = Some(pid),
        ProcessState::Exited { code, signal } => {
            component.exit_code = code;
            component.signal = signal.map(|s| Signal::from_number(s).to_string());
        }
        ProcessState::NotStarted => component.state = Some("not started".into()),
    }
    trace.emit(ev(component));
}

/// `<tmp>/continuity-<harness pid>/<target>.log`: unique per harness
/// run, for a managed target outside a run (a run's are in its folder,
/// [`Target::log_into`]).
fn default_log_path(target: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!("continuity-{}", std::process::id()))
        .join(format!("{}.log", crate::file_name::safe(target)))
}

/// `5 s`, `1.5 s`, `250 ms`: durations as a person writes them.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
