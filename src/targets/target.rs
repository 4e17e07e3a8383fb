//! How a [`Target`] is built and told about its surroundings (its
//! supervisor, its probes' credentials, the hops and parts a cell watches,
//! the trace of the cell about to run), and what it says of itself (its
//! name, kind, description, process). `Target` itself is the module's
//! ([`super`]), which every file of it names.

use super::{
    fmt_duration, Action, Ctx, FaultAction, FaultWindow, ManagedSpec, ProbeAuth, Readiness,
    RestartAction, RestartKind, Target, TargetId, DEFAULT_READY_TIMEOUT,
};
use crate::supervise::Supervisor;
use crate::trace::Trace;
use std::path::Path;
use std::time::Duration;

impl Target {
    pub(crate) fn new(
        id: impl Into<TargetId>,
        action: RestartAction,
        readiness: Readiness,
    ) -> Self {
        Self {
            id: id.into(),
            action: action.into(),
            readiness,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            independent: false,
            keeps_open_requests: false,
            supervisor: Supervisor::default(),
            probe_auth: ProbeAuth::default(),
            trace: Trace::detached(),
            hops: Vec::new(),
            parts: Vec::new(),
            afresh: None,
        }
    }

    /// What it does.
    pub(crate) fn action(&self) -> &Action {
        &self.action
    }

    /// Its action and what the action works with, borrowed apart.
    pub(super) fn split(&mut self) -> (&mut Action, Ctx<'_>) {
        (
            &mut self.action,
            Ctx {
                id: &self.id,
                readiness: &self.readiness,
                ready_timeout: self.ready_timeout,
                probe_auth: &self.probe_auth,
                trace: &self.trace,
                supervisor: &self.supervisor,
            },
        )
    }

    /// A timeout target's cell clients connect to `url` (its gateway of
    /// its own) instead of the stack's base URL.
    pub(crate) fn with_cell_base_url(mut self, url: String) -> Self {
        if let Action::Timeout(window) = &mut self.action {
            window.set_gateway_url(url);
        }
        self
    }

    /// See [`Target::with_cell_base_url`].
    pub(crate) fn cell_base_url(&self) -> Option<&str> {
        match &self.action {
            Action::Timeout(window) => window.gateway_url(),
            _ => None,
        }
    }

    /// The header timeout a timeout target gives the cell's clients.
    pub(crate) fn client_headers_timeout(&self) -> Option<Duration> {
        match &self.action {
            Action::Timeout(window) => window.client_headers(),
            _ => None,
        }
    }

    /// Its name, as `--target` and the report write it.
    pub(crate) fn name(&self) -> &str {
        self.id.name()
    }

    /// Each restart opens `window` on `control`'s hop just before its
    /// action, and its action is done only once the toxic has acted on a
    /// connection (within the ready timeout): what the action makes the
    /// component do meets the toxic (an nginx reload's closes of idle
    /// connections held in flight, `stack::reload_race`). The window
    /// heals after its hold, or when the cell's phases end. Only a
    /// component's restart takes one.
    pub(crate) fn with_window_along(
        mut self,
        window: FaultAction,
        control: crate::faults::FaultControl,
    ) -> Self {
        if let Action::Restart(restart) = &mut self.action {
            restart.along = Some(FaultWindow::new(window, Some(control)));
        }
        self
    }

    /// The proxy of the hop a fault (or an idle cut) acts on.
    pub(crate) fn with_fault_proxy(mut self, control: crate::faults::FaultControl) -> Self {
        self.action.set_fault_proxy(control);
        self
    }

    /// See [`Target::with_fault_proxy`].
    pub(crate) fn set_fault_proxy(&mut self, control: crate::faults::FaultControl) {
        self.action.set_fault_proxy(control);
    }

    /// The fault proxies on the cells' paths, checked when each cell's phases end.
    pub(crate) fn watch_hops(&mut self, hops: Vec<crate::faults::FaultControl>) {
        self.hops = hops;
    }

    /// The stack's parts that run as processes, checked when a phase of
    /// the cell cannot reach the server.
    pub(crate) fn watch_parts(&mut self, parts: Vec<crate::supervise::part::PartProcess>) {
        self.parts = parts;
    }

    /// The fault proxies on the cells' paths (see [`Target::watch_hops`]).
    pub(crate) fn hops(&self) -> &[crate::faults::FaultControl] {
        &self.hops
    }

    /// See [`Target::watch_parts`].
    pub(crate) fn watched_parts(&self) -> &[crate::supervise::part::PartProcess] {
        &self.parts
    }

    /// A restart command or hook without a probe of its own (none, or only
    /// a delay) is probed by `probe` (a deployment's health URL); the delay
    /// it had stays as the least wait before the probe. Other kinds keep theirs.
    pub(crate) fn with_default_probe(&mut self, probe: Readiness) {
        let Action::Restart(restart) = &mut self.action else {
            return;
        };
        if !restart.is_watched() {
            return;
        }
        match self.readiness {
            Readiness::None => self.readiness = probe,
            Readiness::Delay { duration } => {
                restart.min_wait = duration;
                self.readiness = probe;
            }
            _ => {}
        }
    }

    /// See [`Target::independent`].
    pub(crate) fn with_independent(mut self, independent: bool) -> Self {
        self.independent = independent;
        self
    }

    /// See [`Target::keeps_open_requests`].
    pub(crate) fn keeping_open_requests(mut self) -> Self {
        self.keeps_open_requests = true;
        self
    }

    /// Starts its processes (a managed one, a restart command) under
    /// `supervisor`: the run's owner tag and keeper, the stack's journal.
    pub(crate) fn supervised_by(mut self, supervisor: Supervisor) -> Self {
        self.supervisor = supervisor;
        self
    }

    /// See [`Target::supervised_by`], for a target built elsewhere.
    pub(crate) fn set_supervisor(&mut self, supervisor: Supervisor) {
        self.supervisor = supervisor;
    }

    /// The spec of the process the harness runs for it, if it runs one.
    pub(crate) fn managed_spec(&self) -> Option<&ManagedSpec> {
        match &self.action {
            Action::Restart(restart) => restart.managed_spec(),
            _ => None,
        }
    }

    /// A managed target whose config names no `log` writes its process's
    /// output to `<dir>/<target>.log`: a run keeps it in its own folder,
    /// beside the report, rather than in a temp folder no one cleans.
    pub(crate) fn log_into(&mut self, dir: &Path) {
        let file = format!("{}.log", crate::file_name::safe(self.id.name()));
        if let Action::Restart(restart) = &mut self.action {
            if let Some(spec) = restart.managed_spec_mut() {
                spec.log.get_or_insert_with(|| dir.join(file));
            }
        }
    }

    /// Runs `hook` each time the managed process has stopped.
    pub(crate) fn with_after_stop(mut self, hook: super::AfterStop) -> Self {
        if let Action::Restart(restart) = &mut self.action {
            restart.set_after_stop(hook);
        }
        self
    }

    /// HTTP probes of URLs under `base_url` will send `token` and `headers`,
    /// as the server under test wants them; other URLs get neither.
    pub(crate) fn authorize_probes(
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
    pub(crate) fn begin_cell(&mut self, seed: u64) {
        if let Some(control) = self.action.fault_proxy() {
            control.begin_cell(seed);
        }
        if let Action::Timeout(window) = &mut self.action {
            window.begin_cell(&self.trace);
        }
    }

    pub(crate) fn set_trace(&mut self, trace: Trace) {
        self.trace = trace;
    }

    pub(crate) fn with_ready_timeout(mut self, ready_timeout: Duration) -> Self {
        self.ready_timeout = ready_timeout;
        self
    }

    pub(crate) fn kind(&self) -> RestartKind {
        self.action.kind()
    }

    /// See [`Action::leaves_processes_running`].
    pub(crate) fn leaves_processes_running(&self) -> bool {
        self.action.leaves_processes_running()
    }

    /// One line for listings: the action, then the probe and its deadline.
    pub(crate) fn describe(&self) -> String {
        let min_wait = self.action.min_wait();
        match self.readiness {
            Readiness::None => self.action.describe(),
            _ if !min_wait.is_zero() => format!(
                "{}; ready: {} within {} after {}",
                self.action.describe(),
                self.readiness.describe(),
                fmt_duration(self.ready_timeout),
                fmt_duration(min_wait)
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
    pub(crate) fn pid(&self) -> Option<u32> {
        match &self.action {
            Action::Restart(restart) => restart.pid(),
            _ => None,
        }
    }

    /// Leaves a managed target's process running past this handle; returns its pid.
    pub(crate) fn detach(&mut self) -> Option<u32> {
        match &mut self.action {
            Action::Restart(restart) => restart.detach(),
            _ => None,
        }
    }
}
