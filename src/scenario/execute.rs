//! Runs one cell: a scenario's phases against one target, each under its own
//! deadline, then the cleanup steps. A phase returns a [`PhaseResult`] and
//! never prints; the verdict and failure boundary are derived at the end.
//!
//! Over 400 lines on purpose: the cell's one loop (`RunningCell`: each phase
//! under its deadline, the restart and its settle, the cleanup, an
//! interrupt) and the types it is driven through (`CellSettings`,
//! `CellStore`, `Restarter`, `CellClient`, `CellRun`) share the running
//! cell's state; what each step does, the judgement, cleanup, recovery and
//! each client are apart (`execute/`), the loop's tests in `run_tests.rs`.
//! The tests left here are the rehydrate text's and the client axis's, the
//! latter beside `CellClient`, where a new client's recipe already writes
//! (ARCHITECTURE.md, "A client").

use super::{Phase, Scenario, Step};
use crate::client::Client;

mod chunks;
mod cleanup;
mod client_restart;
mod deferred;
mod driver;
mod hang;
mod hosted_data;
pub(crate) mod integrity;
mod judge;
mod recover;
mod recover_turn;
mod rust_client;
mod sandbox_steps;
mod sandbox_teardown;
mod sdk_client;
mod steps;
mod store_wait;
mod terminal_steps;
mod turns;
use crate::clock::millis;
use crate::diagnose;
use crate::persist::observe::ObservedDriver;
use crate::persist::PersistDriver;
use crate::report::{PhaseResult, Signature, SignatureKind, Verdict};
use crate::secret::Secret;
use crate::stop_flag::wait_true;
use crate::targets::{RestartResult, Restarted};
use crate::trace::event::{self, Event};
use async_trait::async_trait;
pub(crate) use deferred::CleanupFence;
pub(super) use deferred::DeferredCleanup;
use driver::ScenarioClient;
pub(super) use driver::Unsupported;
pub(crate) use hang::DEFAULT_GRACE as DEFAULT_HANG_GRACE;
use judge::{dispose_ended, judge, phase_result, ResultContext};
use judge::{interrupted_phase, not_applicable, not_run, outcome_word};
pub(crate) use sdk_client::{BrowserClient, TsSdkClient};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store_wait::StoreWait;
use tokio::sync::watch;

/// A restart phase's deadline when the scenario sets none: restarts wait for
/// readiness under their own deadline, so the phase gets at least this much.
const MIN_RESTART_DEADLINE: Duration = Duration::from_secs(120);
/// How long disposing a client the scenario left open may take.
const DISPOSE_BOUND: Duration = Duration::from_secs(3);
/// A probe phase's deadline when the scenario sets none: the reconnect
/// design's 15 s `pwd` limit, plus a margin so the probe's own limit answers first.
const PROBE_DEADLINE: Duration = Duration::from_secs(16);
/// How long fetching the hosted SDK's wire after a timed-out phase may take.
const WIRE_DRAIN_BOUND: Duration = Duration::from_secs(2);
/// After an interruption, how long the cell's cleanup (its cleanup phases,
/// then disposing the clients) may take in all before the run moves on.
const INTERRUPTED_CLEANUP_BOUND: Duration = Duration::from_secs(3);

/// What a cell needs to reach the server.
#[derive(Clone)]
pub struct CellSettings {
    pub base_url: String,
    pub token: Option<Secret>,
    pub headers: Vec<(String, String)>,
    pub agent: String,
    pub default_timeout: Duration,
    /// Appended to session labels so every cell's session ids are unique.
    pub session_suffix: String,
    pub store: CellStore,
    /// The cell's wire trace: phases, exchanges, envelopes, waits.
    pub trace: crate::trace::Trace,
    /// The scripted agent's record of the chunks it streamed (the local
    /// stack's); without it `turn_history` judges the history alone.
    pub agent_sent_log: Option<std::path::PathBuf>,
    /// The fake model provider's call log, when the stack runs one.
    pub model_calls: Option<crate::provider::ModelCalls>,
    /// The back end of the local stack's sandbox provider (the SDK's
    /// `SandboxAgent.start`); what the cell's sandboxes leave goes with the cell.
    pub sandboxes: Option<crate::stack::sandboxes::Sandboxes>,
    /// The clients' own wait for a POST's response headers (a
    /// `client-headers-timeout` cell); none: the client's default.
    pub headers_timeout: Option<Duration>,
    /// How long a pending call may have nothing in flight that could
    /// settle it before its phase ends as hung; none: wait the deadline out.
    pub hang_grace: Option<Duration>,
    /// Turns true on Ctrl-C, SIGTERM or the run's overall deadline: the cell
    /// stops its current phase, runs its cleanup (bounded) and ends `interrupted`.
    pub interrupt: watch::Receiver<bool>,
}

#[cfg(test)]
impl CellSettings {
    /// The cell of the executor's own tests: its server is one nothing
    /// listens at (127.0.0.1:9), each client keeps its own memory store,
    /// phases have 5 s, and there is no trace file, log, provider,
    /// sandbox, header timeout, hang grace or interrupt.
    pub(crate) fn for_tests() -> CellSettings {
        CellSettings {
            base_url: "http://127.0.0.1:9".into(),
            token: None,
            headers: vec![],
            agent: "mock".into(),
            default_timeout: Duration::from_secs(5),
            session_suffix: "t".into(),
            store: CellStore::PerClientMemory,
            trace: crate::trace::Trace::detached(),
            agent_sent_log: None,
            headers_timeout: None,
            hang_grace: None,
            model_calls: None,
            sandboxes: None,
            interrupt: watch::channel(false).1,
        }
    }
}

/// Where a cell's clients keep session records and events.
#[derive(Clone)]
pub enum CellStore {
    /// One store for every client of the cell (SQLite file, Rivet actor).
    Shared(Arc<dyn PersistDriver>),
    /// Each client its own in-memory store: the SDK's default, as the seed
    /// script ran it (a second client sees none of the first one's history).
    PerClientMemory,
}

/// Restarts the cell's target (and waits until it is ready again) for the
/// phase named `phase`, which the result carries.
#[async_trait]
pub trait Restarter: Send {
    async fn restart(&mut self, phase: &str) -> Restarted;

    /// The part of continuity's own the restart brings back that stands
    /// for no component of the deployment under test (the `store` target's
    /// Postgres, the Rivet app hosting the cell's SDK): when it does not
    /// come back, the harness failed, not the system under test.
    /// `component`: the one of the stack that did not come back, when the
    /// restart acted on several (a reboot's, a schedule's); else the target's.
    fn own_part_brought_back(
        &self,
        component: Option<crate::targets::BuiltinTarget>,
    ) -> Option<crate::errors::HarnessPart> {
        let _ = component;
        None
    }

    /// Whether the restart cuts clients' requests in flight (a server or a
    /// gateway stopped), so it must not land on another cell's deferred
    /// DELETE; false for a graceful reload or a component off their path.
    fn cuts_open_requests(&self) -> bool {
        true
    }

    /// Whether the restart leaves every process of the stack running (a
    /// pause, a network fault, a timeout, the agent alone): a client whose
    /// host runs in the stack need not fetch what it holds first.
    fn leaves_processes_running(&self) -> bool {
        false
    }

    /// Whether the restart is of the cell's own clients (target `client`):
    /// the cell then drops continuity's clients and connects new ones over
    /// the same store before the restart is recorded.
    fn restarts_clients(&self) -> bool {
        false
    }

    /// When the cell's phases are over, before its cleanup: a network
    /// fault still in force heals, a pause wakes. An error is blamed as
    /// [`judge::settle_failed`] says: a fault proxy that failed is the
    /// harness's, a stack that did not answer again the system's.
    async fn settle(&mut self) -> Result<(), crate::targets::SettleError> {
        Ok(())
    }

    /// Before the scenario's last phase: a schedule of faults still
    /// running is waited for, so that phase finds the stack whole. An
    /// error ends the cell, blamed as [`judge::settle_failed`] says (a
    /// fault that did not take: the setup; a component not back: the system).
    async fn before_last_phase(&mut self) -> Result<(), crate::targets::SettleError> {
        Ok(())
    }

    /// The parts of continuity's own this restart takes down on purpose
    /// (the `store` target its Postgres): their failures in the cell are
    /// the point of the test; any other part failing is the harness's error.
    fn restarts_parts(&self) -> Vec<crate::errors::HarnessPart> {
        Vec::new()
    }

    /// The stack's parts of continuity's own that run as processes (its
    /// nginx): a phase that cannot reach the server while one is gone
    /// failed because of that part.
    fn watched_parts(&self) -> Vec<crate::supervise::part::PartProcess> {
        Vec::new()
    }
}

/// A finished cell.
#[derive(Debug, Clone)]
pub struct CellRun {
    pub phases: Vec<PhaseResult>,
    pub restarts: Vec<RestartResult>,
    pub verdict: Verdict,
    pub failure_boundary: Option<String>,
    /// Why a `not_applicable` cell says nothing about its restart: the
    /// phase and the call its client lacks.
    pub reason: Option<String>,
    pub duration_ms: u64,
    /// When the cell began: its duration runs from here.
    pub started: Instant,
}

#[derive(Debug)]
struct StepFailure {
    signature: Box<Signature>,
    detail: Map<String, Value>,
}

impl StepFailure {
    fn new(signature: Signature) -> Self {
        Self {
            signature: Box::new(signature),
            detail: Map::new(),
        }
    }

    /// The phase's detail: a typed one, or a map still built by hand.
    fn with_detail(mut self, detail: impl crate::report::detail::Detail) -> Self {
        self.detail = detail.to_map();
        self
    }

    fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.detail.insert(key.into(), value.into());
        self
    }
}

type StepResult = Result<Map<String, Value>, StepFailure>;

/// A cell while its phases run: its clients, turns, transcripts, restarts
/// and sandbox labels (what it becomes when done is a [`CellRun`]).
struct RunningCell<'a> {
    settings: &'a CellSettings,
    restarter: &'a mut dyn Restarter,
    clients: HashMap<String, Arc<Client>>,
    turns: turns::Turns,
    /// User prompts sent per session label: the client-side transcript.
    transcripts: HashMap<String, Vec<String>>,
    restarts: Vec<RestartResult>,
    /// Files, processes and terminals the sandbox steps made.
    sandbox: sandbox_steps::SandboxState,
    /// When the last restart was over (ready again), for recovery timings.
    restarted_at: Option<Instant>,
    restarted_at_ms: Option<u64>,
    /// The shared store's calls, to name it when it is what a phase waited on.
    persist: Option<crate::persist::observe::CallLog>,
    /// The client the steps go through: continuity's, or the real SDK's.
    client: Arc<dyn ScenarioClient>,
    /// The worker's fence: with one, the cleanup's closing DELETEs may be deferred.
    fence: Option<CleanupFence>,
    /// The cleanup's `dispose` phases whose DELETEs are deferred.
    pending_disposes: Vec<deferred::PendingDispose>,
    /// Server ids the recovering client opened, closed with the cleanup.
    recovered: Vec<crate::acp::Transport>,
    /// Clients a `client` restart dropped: their connections are closed
    /// with the cleanup, as the server would keep a killed app's.
    abandoned: Vec<crate::client::Disposal>,
    /// Those clients, by name: what they stored still counts in the
    /// integrity check (a restarted app's history is the old one's too).
    retired: Vec<(String, Arc<Client>)>,
    /// Clients whose making step (`connect`, `start_sandbox`) the client
    /// cannot take, with why: the steps on them are not applicable either.
    unmade: HashMap<String, (String, &'static str)>,
}

/// Runs every phase, then the cleanup, and judges the cell.
pub async fn run_cell(
    scenario: &Scenario,
    settings: &CellSettings,
    restarter: &mut dyn Restarter,
) -> CellRun {
    run_cell_with(scenario, settings, restarter, CellClient::Rust).await
}

/// The cell's client: which of the three [`ScenarioClient`]s takes its
/// steps. The runner sets up the SDK's (its actor, or its page), so a
/// cell of either arrives with the client it runs.
pub(crate) enum CellClient {
    /// continuity's own client, made in the cell.
    Rust,
    /// The real SDK in the cell's `sdkClient` actor.
    TsSdk(TsSdkClient),
    /// The real SDK in a page of the cell's Chromium.
    Browser(BrowserClient),
}

impl CellClient {
    /// The browser client's page (a `client` restart reloads it).
    pub(crate) fn page(&self) -> Option<&crate::client::browser::BrowserPage> {
        match self {
            CellClient::Browser(sdk) => Some(sdk.client.host()),
            CellClient::Rust | CellClient::TsSdk(_) => None,
        }
    }

    /// The client as the executor drives it, tracing into `trace` (and,
    /// when hangs are diagnosed, `watching` what its host has in flight).
    fn driver(self, trace: &crate::trace::Trace, watching: bool) -> Arc<dyn ScenarioClient> {
        match self {
            CellClient::Rust => Arc::new(rust_client::RustClient),
            CellClient::TsSdk(sdk) => Arc::new(sdk.traced(trace.clone(), watching)),
            CellClient::Browser(sdk) => Arc::new(sdk.traced(trace.clone(), watching)),
        }
    }
}

/// [`run_cell`] with `client` taking the client steps (a step it cannot
/// take is reported not applicable).
pub(super) async fn run_cell_with(
    scenario: &Scenario,
    settings: &CellSettings,
    restarter: &mut dyn Restarter,
    client: CellClient,
) -> CellRun {
    let (mut run, deferred) = run_cell_deferring(scenario, settings, restarter, client, None).await;
    if let Some(deferred) = deferred {
        run.complete(deferred).await;
    }
    run
}

/// [`run_cell_with`] on a worker's stack: with `fence`, the DELETEs that
/// end the cleanup are handed back undone (see [`DeferredCleanup`]); the
/// verdict is already decided, and [`CellRun::complete`] fills in their
/// phases. Its restarts first wait for the fence (other cells' DELETEs).
pub(crate) async fn run_cell_deferring(
    scenario: &Scenario,
    settings: &CellSettings,
    restarter: &mut dyn Restarter,
    client: CellClient,
    fence: Option<CleanupFence>,
) -> (CellRun, Option<DeferredCleanup>) {
    let client = client.driver(&settings.trace, settings.hang_grace.is_some());
    run_cell_on(scenario, settings, restarter, client, fence).await
}

/// [`run_cell_deferring`] with the cell's client given: every step the
/// client takes goes through it.
async fn run_cell_on(
    scenario: &Scenario,
    settings: &CellSettings,
    restarter: &mut dyn Restarter,
    client: Arc<dyn ScenarioClient>,
    fence: Option<CleanupFence>,
) -> (CellRun, Option<DeferredCleanup>) {
    let started = Instant::now();
    let (observed, persist) = match &settings.store {
        CellStore::Shared(store) => {
            let (driver, log) =
                ObservedDriver::wrap_traced(Arc::clone(store), settings.trace.clone());
            let settings = CellSettings {
                store: CellStore::Shared(driver),
                ..settings.clone()
            };
            (Some(settings), Some(log))
        }
        CellStore::PerClientMemory => (None, None),
    };
    let settings = observed.as_ref().unwrap_or(settings);
    let mut cell = RunningCell {
        settings,
        restarter,
        clients: HashMap::new(),
        turns: turns::Turns::default(),
        transcripts: HashMap::new(),
        restarts: Vec::new(),
        sandbox: Default::default(),
        restarted_at: None,
        restarted_at_ms: None,
        persist,
        client,
        fence,
        pending_disposes: Vec::new(),
        recovered: Vec::new(),
        abandoned: Vec::new(),
        retired: Vec::new(),
        unmade: HashMap::new(),
    };
    let (mut results, interrupted) = cell.run_phases(scenario).await;
    // After an interruption the cleanup still runs (a session left open keeps
    // its agent process alive on the server), but within a short budget.
    let cleanup_by = interrupted
        .as_ref()
        .map(|(_, at)| *at + INTERRUPTED_CLEANUP_BOUND);
    cell.run_cell_cleanup(scenario, cleanup_by, &mut results)
        .await;
    let deferred = cell.close_clients(cleanup_by, interrupted.is_some()).await;
    let folded = match interrupted {
        Some((phase, _)) => crate::report::fold::Folded {
            verdict: Verdict::Interrupted,
            boundary: Some(phase),
            reason: None,
        },
        None => judge(&results, &cell.restarts),
    };
    let run = CellRun {
        phases: results,
        restarts: cell.restarts,
        verdict: folded.verdict,
        failure_boundary: folded.boundary,
        reason: folded.reason,
        duration_ms: millis(started.elapsed()),
        started,
    };
    (run, deferred)
}

impl RunningCell<'_> {
    /// The scenario's phases in order, each to its deadline or the
    /// interrupt; after a failed one (unless it continues) the rest are
    /// not run. Returns their results and, if interrupted, where and when.
    async fn run_phases(
        &mut self,
        scenario: &Scenario,
    ) -> (Vec<PhaseResult>, Option<(String, Instant)>) {
        let settings = self.settings;
        let mut results = Vec::new();
        let mut stopped = false;
        let mut interrupted: Option<(String, Instant)> = None;
        let last = scenario.phases.len().saturating_sub(1);
        for (index, phase) in scenario.phases.iter().enumerate() {
            if index == last && index > 0 && !stopped && interrupted.is_none() {
                // A schedule of faults still running is over first (bounded
                // as a restart phase is: its window and the slowest
                // readiness deadline fit), so the last phase finds the stack whole.
                let over = tokio::select! {
                    over = tokio::time::timeout(
                        MIN_RESTART_DEADLINE,
                        self.restarter.before_last_phase(),
                    ) => Some(over),
                    _ = wait_true(settings.interrupt.clone()) => None,
                };
                let failed = match over {
                    None => {
                        interrupted = Some((phase.name.clone(), Instant::now()));
                        None
                    }
                    Some(Ok(Ok(()))) => None,
                    Some(Ok(Err(error))) => Some(error),
                    Some(Err(_)) => Some(crate::targets::SettleError::Setup(format!(
                        "the schedule of faults was not over within {} of the scenario's last phase",
                        crate::targets::fmt_duration(MIN_RESTART_DEADLINE)
                    ))),
                };
                if let Some(error) = failed {
                    results.extend(self.settle_failed(("faultSchedule", "fault_schedule"), &error));
                    stopped = true;
                }
            }
            if stopped || interrupted.is_some() {
                results.push(not_run(phase, settings.default_timeout, false));
                continue;
            }
            let phase_started = Instant::now();
            let result = tokio::select! {
                result = self.run_phase(phase, false) => result,
                _ = wait_true(settings.interrupt.clone()) => {
                    interrupted = Some((phase.name.clone(), Instant::now()));
                    interrupted_phase(phase, settings.default_timeout, phase_started)
                }
            };
            // A step the client cannot take stops nothing: the cell runs on.
            let applies = result.outcome != crate::report::Outcome::NotApplicable;
            // A part of continuity's own that is gone ends the cell at once.
            stopped = (!result.ok && applies && !phase.continue_on_failure)
                || judge::lost_a_part(&result);
            results.push(result);
        }
        (results, interrupted)
    }

    /// After the phases: the network healed, turns left running cancelled,
    /// the cleanup phases run (by `cleanup_by` after an interruption), the
    /// sandbox torn down and the client wound down; results appended.
    async fn run_cell_cleanup(
        &mut self,
        scenario: &Scenario,
        cleanup_by: Option<Instant>,
        results: &mut Vec<PhaseResult>,
    ) {
        // The network heals before the cleanup runs on it.
        if let Err(error) = self.restarter.settle().await {
            results.extend(self.settle_failed(("healFault", "heal_fault"), &error));
        }
        // A turn no phase collected (the cell stopped first) is cancelled before cleanup disposes its client.
        self.turns.cancel_running().await;
        let cleanup_results = self
            .run_cleanup(&scenario.cleanup, cleanup_by, results.len())
            .await;
        results.extend(cleanup_results);
        // Files and processes the cell made go, even after a failure.
        if let Some(teardown) = self.sandbox_teardown().await {
            results.push(teardown);
        }
        // SDK clients the scenario left open are closed, bounded, and their
        // host retired: it brings back its faults and last wire records.
        let faults = Arc::clone(&self.client).wind_down(self).await;
        hosted_data::attach_faults(&faults, results);
        // Sandboxes the cell's SDK made through the stack's provider and
        // did not destroy go with the cell (their servers, their folders).
        if let Some(sandboxes) = &self.settings.sandboxes {
            sandboxes.destroy_all().await;
        }
    }

    /// continuity's clients still open (left open, dropped by a `client`
    /// restart, the recovering client's server ids) closed, bounded; on a
    /// worker's stack (and not interrupted) their DELETEs are deferred.
    async fn close_clients(
        &mut self,
        cleanup_by: Option<Instant>,
        interrupted: bool,
    ) -> Option<DeferredCleanup> {
        let abandoned = std::mem::take(&mut self.abandoned);
        let _ = tokio::time::timeout(
            DISPOSE_BOUND,
            futures_util::future::join_all(abandoned.into_iter().map(|d| d.finish())),
        )
        .await;
        let leftovers: Vec<Arc<Client>> = self.clients.drain().map(|(_, c)| c).collect();
        let recovered = std::mem::take(&mut self.recovered);
        let dispose_bound = cleanup_by
            .map(|by| {
                by.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(500))
            })
            .unwrap_or(DISPOSE_BOUND);
        match self.fence.clone().filter(|_| !interrupted) {
            Some(fence) => {
                let loose = deferred::loose_deletes(&leftovers, recovered, dispose_bound).await;
                self.take_deferred(&fence, loose).await
            }
            None => {
                let closing = futures_util::future::join(
                    futures_util::future::join_all(leftovers.iter().map(|c| c.dispose())),
                    futures_util::future::join_all(recovered.iter().map(|t| t.close())),
                );
                let _ = tokio::time::timeout(dispose_bound, closing).await;
                None
            }
        }
    }
}

impl CellRun {
    /// Runs the deferred DELETEs out and puts their phases in place; the
    /// cell's duration then runs to their end, as if never deferred.
    pub(crate) async fn complete(&mut self, deferred: DeferredCleanup) {
        for (position, result) in deferred.finish().await {
            if let Some(slot) = self.phases.get_mut(position) {
                *slot = result;
            }
        }
        self.duration_ms = millis(self.started.elapsed());
    }
}

/// The client a step makes (connects), if it makes one.
fn made_client(step: &Step) -> Option<&str> {
    step.names().makes_client
}

/// The client a step runs on, if it runs on one.
pub(super) fn step_client(step: &Step) -> Option<&str> {
    step.names().client
}

/// The seed script's continuation prompt, built from the earlier user prompts.
pub(super) fn rehydrate_text(prompts: &[String]) -> String {
    let mut lines = vec!["Continuation context from pre-restart session:".to_string()];
    lines.extend(
        prompts
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}) user: {p}", i + 1)),
    );
    lines.push("Continue with this context and reply with one short line.".into());
    lines.join("\n")
}

impl RunningCell<'_> {
    /// The phase's deadline: the scenario's, or its step's default.
    fn deadline(&self, phase: &Phase) -> Duration {
        match (&phase.step, phase.timeout) {
            // The step ends itself at its turn deadline, saying what it saw.
            (Step::AwaitTurn { deadline, .. }, _) => {
                deadline.unwrap_or(self.settings.default_timeout) + turns::AWAIT_MARGIN
            }
            (_, Some(t)) => t,
            (Step::Restart, None) => self.settings.default_timeout.max(MIN_RESTART_DEADLINE),
            (Step::Probe { .. }, None) => PROBE_DEADLINE,
            (Step::RestartDuringTurn { after }, None) => {
                self.settings.default_timeout.max(MIN_RESTART_DEADLINE) + *after
            }
            (_, None) => self.settings.default_timeout,
        }
    }

    async fn run_phase(&mut self, phase: &Phase, cleanup: bool) -> PhaseResult {
        let default = self.settings.default_timeout;
        let client = self.client.name();
        if let Err(unsupported) = self.client.supports(&phase.step) {
            if let Some(made) = made_client(&phase.step) {
                let why = format!(
                    "client `{made}` is made by phase `{}`, not applicable for the {client} client: {}",
                    phase.name, unsupported.api
                );
                self.unmade
                    .insert(made.to_string(), (why, unsupported.call));
            }
            return not_applicable(phase, default, cleanup, client, unsupported);
        }
        if let Some((why, call)) = step_client(&phase.step).and_then(|c| self.unmade.get(c)) {
            return judge::not_applicable_as(phase, default, cleanup, why.clone(), call);
        }
        let deadline = self.deadline(phase);
        let trace = self.settings.trace.clone();
        self.clear_fence(phase).await;
        trace.phase_start(&phase.name, phase.step.kind().name());
        let started = Instant::now();
        // The waits are read while the step is still alive: dropping it
        // at the deadline closes them.
        let client = Arc::clone(&self.client);
        client.begin_phase(&phase.name, deadline);
        let (grace, phase_t) = (self.settings.hang_grace, trace.now_ms());
        let mut hung = None;
        let (outcome, duration_ms, seen) = {
            let step = self.run_step(phase);
            tokio::pin!(step);
            let outcome = tokio::select! {
                done = &mut step => Some(done),
                _ = tokio::time::sleep(deadline) => None,
                // Judged as a timeout, then as hung (`hang::judge`).
                found = hang::watch(&trace, grace, &phase.step, phase_t, deadline) => {
                    hung = Some(found);
                    None
                }
            };
            // A hung step that waits of its own accord answers what it saw.
            let outcome = match hung {
                Some(_) => hang::cut_short(&*client, &phase.name, step.as_mut()).await,
                None => outcome,
            };
            let duration_ms = millis(started.elapsed());
            // An SDK action given up on never answered: what the SDK did
            // meanwhile (the 400 it kept to itself) is fetched for the signature.
            if outcome.is_none() {
                client.after_timeout(&phase.name).await;
            }
            (outcome, duration_ms, trace.snapshot())
        };
        let context = self.result_context();
        if let Some(Err(failure)) = &outcome {
            judge::let_parts_settle(&failure.signature, &seen, &context).await;
        }
        let mut result = phase_result(
            &context,
            phase,
            cleanup,
            started,
            duration_ms,
            deadline,
            outcome,
            &seen,
        );
        if let Some(hang) = &hung {
            hang::judge(&mut result, &context, phase, &seen, hang, client.name());
        }
        trace.phase_end(&phase.name, outcome_word(result.outcome), duration_ms);
        result
    }

    /// Before a phase that restarts a target which cuts requests in
    /// flight (or starts a turn such a restart will land in), waits until
    /// no earlier cell's deferred DELETE is running on this stack; the
    /// wait is the harness's, so it is outside the phase and in the trace.
    async fn clear_fence(&mut self, phase: &Phase) {
        let restarts = matches!(
            phase.step,
            Step::Restart | Step::RestartDuringTurn { .. } | Step::StartTurn { .. }
        );
        let Some(fence) = self.fence.as_ref().filter(|_| restarts) else {
            return;
        };
        if !self.restarter.cuts_open_requests() {
            return;
        }
        let waited = fence.clear().await;
        if waited >= Duration::from_millis(1) {
            let waited = event::Took { ms: millis(waited) };
            self.settings.trace.emit(Event::CleanupWait(waited));
        }
    }

    /// The rows of faults that could not be settled, blamed as
    /// [`judge::settle_failed`] says.
    fn settle_failed(
        &self,
        at: (&str, &str),
        error: &crate::targets::SettleError,
    ) -> Vec<PhaseResult> {
        let own = |component| self.restarter.own_part_brought_back(component);
        judge::settle_failed(at, error, &own, &self.result_context())
    }

    fn result_context(&self) -> ResultContext {
        ResultContext {
            persist: self.persist.clone(),
            token: self.settings.token.clone(),
            default_timeout: self.settings.default_timeout,
            owned: self.restarter.restarts_parts(),
            watched: self.restarter.watched_parts(),
        }
    }
}

/// A prompt's stop reason against the one the scenario expects, if any.
fn expect_stop(expected: Option<&str>, stop: &str) -> Result<(), StepFailure> {
    match expected.filter(|e| *e != stop) {
        None => Ok(()),
        Some(expected) => Err(StepFailure::new(diagnose::other(
            SignatureKind::Protocol,
            format!("stopReason {stop}, expected {expected}"),
        ))
        .with("stopReason", stop)),
    }
}

#[cfg(test)]
mod run_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rehydrate_text_is_the_seed_scripts() {
        let text = rehydrate_text(&["p1".into(), "p2".into()]);
        assert_eq!(text, "Continuation context from pre-restart session:\n1) user: p1\n2) user: p2\nContinue with this context and reply with one short line.");
    }

    /// The three implementations of the client interface are the client
    /// axis, one each: continuity's, and the SDK on each of its hosts.
    /// (Here, beside `CellClient`, so that a new client's line in it is in
    /// a file its recipe already touches.)
    #[test]
    fn each_client_on_the_axis_is_one_implementation_of_the_interface() {
        use crate::client::browser::BrowserPage;
        use crate::client::hosted::{HostedClient, HostedConfig, SdkHost};
        use crate::client::ClientKind;
        let actor = HostedClient::new(HostedConfig {
            endpoint: "http://127.0.0.1:9".into(),
            namespace: "default".into(),
            key: "k".into(),
        })
        .unwrap();
        let ts_sdk: &dyn ScenarioClient = &TsSdkClient::new(actor, None);
        let rust: &dyn ScenarioClient = &rust_client::RustClient;
        let mut names = vec![
            rust.name(),
            ts_sdk.name(),
            // A page needs a live Chromium; its client's name is its host's.
            <BrowserPage as SdkHost>::KIND.name(),
        ];
        names.sort();
        let mut axis: Vec<&str> = ClientKind::all().iter().map(|k| k.name()).collect();
        axis.sort();
        assert_eq!(names, axis);
    }
}
