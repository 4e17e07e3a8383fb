//! The runner: the matrix (every target × scenario × agent × client ×
//! server × SDK × store point, built whole in [`matrix`]) run from one
//! queue over the workers, one cell at a time per stack (restarts
//! interfere), on several stacks side by side with `--jobs N` (see
//! [`workers`]; a stack switches its server between points, see
//! [`servers`]). Each cell runs `repeat` attempts, a failed one again up to
//! `retries` times, each attempt with fresh clients and its own persist
//! store; each repeat is a job of its own in the queue, so one cell's
//! repeats are spread out as its targets are, and [`gather`] folds them
//! back into one cell (`flaky` when they disagree).
//! It emits [`RunEvent`]s and returns the finished (or interrupted) report
//! folded from them ([`Fold`]: each `CellFinished` is a cell, joined once
//! with the run's header by `report::join`); it never prints or renders.
//!
//! Over 400 lines on purpose: the run's start (`run`, `preflight`), the
//! events it emits (`RunEvent`) and their fold into the report (`Fold`,
//! `run_info`, `unavailable`) are one loop's start, stream and end, and its
//! tests check them together; the matrix, queue, workers, attempts, server
//! switching and gathering are apart (`runner/`).

use crate::client::hosted::Unhosted;
use crate::report::attempts::aggregate;
use crate::report::{Attempt, Cell, FlakyResult, LogFile, Report, RunInfo, TargetName, Verdict};
use crate::scenario::Scenario;
use crate::secret::{display_url, Secret};
use crate::targets::{Absence, Target, Unavailable};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

mod attempts;
mod client_axis;
pub(crate) use matrix::cost;
mod gather;
mod integrity;
mod matrix;
mod persist_axis;
mod queue;
mod servers;
mod workers;

pub(crate) use client_axis::{ClientChoice, ClientKind, ServedSdk};
/// The matrix's test helpers, for tests elsewhere that build a point.
#[cfg(test)]
pub(crate) use matrix::tests as matrix_tests;
pub(crate) use matrix::{
    AgentPoint, Axes, CellPoint, Matrix, PlannedCell, SdkPoint, SdkSource, ServerPoint,
    ServerSource, Shard, DEFAULT_AGENT,
};
pub(crate) use servers::{ServedBinary, ServerSlot};

use attempts::skipped_attempt;
pub(crate) use workers::workers_for;

pub(crate) use crate::persist::{PersistChoice, StackStores};

/// What a worker's cells connect to and restart: one stack's side of a run.
pub(crate) struct Worker {
    pub base_url: String,
    /// The stack's restart targets, in the run's target order.
    pub targets: Vec<Target>,
    /// Where the cell now running keeps its sessions: set from the cell's
    /// point before its attempts (see [`servers`]; a Rivet or Postgres
    /// store is this worker's own stack's).
    pub persist: PersistChoice,
    /// The stores this worker's stack provides beyond memory and SQLite
    /// (its Rivet actor, its Postgres), for cells whose point keeps
    /// sessions there.
    pub stores: StackStores,
    /// The process that holds the hosted SDK client (the RivetKit runner),
    /// when it is not one of the targets: the `client` target of a ts-sdk
    /// cell kills and starts it.
    pub sdk_process: Option<Target>,
    /// The stack's scripted agent's record of the chunks it streamed.
    pub agent_sent_log: Option<PathBuf>,
    /// The stack's fake model provider log (real agents only).
    pub model_calls: Option<crate::provider::ModelCalls>,
    /// Where this worker's stack hosts the TypeScript SDK client (its Rivet
    /// Engine endpoint), or why it cannot.
    pub sdk_host: Result<String, Unhosted>,
    /// Every SDK point's module, as the run installed it.
    pub sdks: std::sync::Arc<[ServedSdk]>,
    /// Where this worker's stack runs the browser client, or why it cannot.
    pub browser_host: Result<crate::stack::browser::BrowserHost, Unhosted>,
    /// Between its cells' deferred DELETEs and the restarts that would cut
    /// them; lanes of one shared deployment share it.
    pub fence: crate::scenario::CleanupFence,
    /// The local stack's sandbox-agent, switched between server points;
    /// `None` on a deployment (its one server is whatever runs there).
    pub server: Option<ServerSlot>,
    /// The back end of the local stack's sandbox provider.
    pub sandboxes: Option<crate::stack::sandboxes::Sandboxes>,
    /// The stack's running components not held above (not among `targets`,
    /// not the server's slot, not `sdk_process`): lent to a cell whose
    /// fault acts on several (a reboot, a schedule).
    pub components: Vec<Target>,
}

impl Worker {
    /// Every restart target this worker holds, each once: its targets
    /// (with their index among them), then the server's when the worker
    /// does not hold it, the hosted SDK's process and the stack's other
    /// components. The one walk over a worker's parts: what an earlier
    /// cell left down is brought back from it, and a cell's fault is lent
    /// the components it acts on from it.
    pub(crate) fn parts_mut(&mut self) -> impl Iterator<Item = (Option<usize>, &mut Target)> {
        let Worker {
            targets,
            server,
            sdk_process,
            components,
            ..
        } = self;
        let others = server
            .as_mut()
            .and_then(|slot| slot.background_mut())
            .into_iter()
            .chain(sdk_process.iter_mut())
            .chain(components.iter_mut())
            .map(|part| (None, part));
        targets
            .iter_mut()
            .enumerate()
            .map(|(t, part)| (Some(t), part))
            .chain(others)
    }

    /// A cell's client as this worker runs it: a hosted client is called
    /// through this worker's own stack and runs the cell's SDK point.
    pub(crate) fn client(&self, point: &CellPoint) -> ClientChoice {
        let sdk = point.sdk.as_ref().map(|s| s.label.as_str());
        client_axis::choice(point.client, self, sdk.unwrap_or_default())
    }

    /// Another worker on the same stack (a shared deployment's lane), with no targets yet.
    pub(crate) fn sharing(&self) -> Worker {
        Worker {
            base_url: self.base_url.clone(),
            targets: Vec::new(),
            persist: self.persist.clone(),
            stores: self.stores.clone(),
            sdk_process: None,
            agent_sent_log: self.agent_sent_log.clone(),
            model_calls: self.model_calls.clone(),
            sdk_host: self.sdk_host.clone(),
            sdks: self.sdks.clone(),
            browser_host: self.browser_host.clone(),
            fence: self.fence.clone(),
            server: None,
            sandboxes: None,
            components: Vec::new(),
        }
    }
}

/// What flags, config and environment decide for a run, known before any
/// stack is up or any deployment is reached.
pub(crate) struct RunSettings {
    pub id: String,
    pub token: Option<Secret>,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub overall_timeout: Duration,
    /// How long a pending call may have nothing in flight before its phase
    /// ends as hung (`--hang-grace-ms`); none: every phase waits out its deadline.
    pub hang_grace: Option<Duration>,
    pub repeat: u32,
    /// A failed attempt runs again up to this many times; a later pass makes the cell flaky.
    pub retries: u32,
    pub flaky_result: FlakyResult,
    /// Run only this shard of the matrix.
    pub partition: Option<crate::partition::Partition>,
    /// A previous run's cell durations, for a `cost:` partition (`--timings`).
    pub timings: cost::Timings,
    pub scenarios: Vec<Scenario>,
    pub run_dir: PathBuf,
    /// How much of the wire each cell's `trace.jsonl` keeps.
    pub trace_level: crate::trace::TraceLevel,
    /// Every random choice of the run derives from it (`--seed`).
    pub seed: u64,
}

impl RunSettings {
    /// The shard this run holds, if it is one.
    pub(crate) fn shard(&self) -> Option<Shard<'_>> {
        self.partition.as_ref().map(|partition| Shard {
            partition,
            timings: &self.timings,
        })
    }
}

/// What the deployment or the local stack(s) provide: where the cells
/// connect, what they restart, where they keep their sessions.
pub(crate) struct RunStacks {
    /// The first (or only) stack, or the deployment.
    pub own: Worker,
    /// Targets that cannot run here: reported as skipped (or error) cells.
    pub skipped_targets: Vec<Unavailable>,
    /// Agents the stack could not install or wire, with why: their cells
    /// are skipped with that reason, the other agents still run.
    pub agent_skips: Vec<(String, String)>,
    /// What the servers report about themselves (the run header's
    /// `serverVersion`; on a server axis, each point's, comma-separated).
    pub server_version: Option<String>,
    pub logs: Vec<LogFile>,
    /// The stacks of further workers (`--jobs N`): each runs cells beside
    /// the own stack, with the same targets in the same order.
    pub workers: Vec<Worker>,
    /// On a shared deployment (no worker stacks): how many cells of
    /// `independent` targets may run at once; the others run alone.
    pub jobs: usize,
}

impl RunStacks {
    /// Every worker runs its hosted cells on these SDK points.
    pub(crate) fn serve_sdks(&mut self, sdks: Vec<ServedSdk>) {
        let sdks: std::sync::Arc<[ServedSdk]> = sdks.into();
        for worker in std::iter::once(&mut self.own).chain(self.workers.iter_mut()) {
            worker.sdks = sdks.clone();
        }
    }
}

/// Everything one cell's attempts read: the run's settings and the cell's point.
#[derive(Clone, Copy)]
pub(crate) struct RunPlan<'a> {
    pub settings: &'a RunSettings,
    pub point: &'a CellPoint,
}

/// Progress, as plain data for whoever displays it.
#[derive(Debug, Clone)]
pub(crate) enum RunEvent {
    /// Before the first cell: how many cells this run (or shard) holds,
    /// and the axes its cells name, each with its values.
    RunStarted {
        id: String,
        total: usize,
        /// Each cell's attempts before retries (`--repeat`).
        repeat: u32,
        targets: Vec<crate::targets::TargetId>,
        scenarios: Vec<String>,
        partition: Option<String>,
        /// `(Axis::Client, ["rust", "ts-sdk"])`, `(Axis::Server, […])`…:
        /// see [`Matrix::named_axes`].
        axes: Vec<(crate::report::Axis, Vec<String>)>,
    },
    /// An attempt of a cell starts (`attempt` counts retries too).
    CellStarted {
        index: usize,
        total: usize,
        target: crate::targets::TargetId,
        scenario: String,
        attempt: u32,
        /// The cell's whole point (agent, client, server, SDK, store).
        point: Box<CellPoint>,
    },
    /// An attempt has its verdict; its cleanup may still be running.
    AttemptJudged {
        index: usize,
        total: usize,
        attempt: u32,
        verdict: crate::report::Verdict,
    },
    /// An attempt that did not pass and will run again (`--retries`).
    Retrying {
        index: usize,
        total: usize,
        attempt: Box<Attempt>,
        target: crate::targets::TargetId,
        scenario: String,
        point: Box<CellPoint>,
    },
    /// All of a cell's attempts have their verdicts; its record follows in
    /// [`RunEvent::CellFinished`] once their cleanup has run out (the
    /// workers have moved on meanwhile).
    CellJudged {
        index: usize,
        total: usize,
        /// Each attempt's verdict, in order.
        verdicts: Vec<crate::report::Verdict>,
    },
    /// The overall timeout ran out: the running cells stop and clean up.
    OverallTimeout { timeout_ms: u64 },
    /// A cell with all its attempts, exactly as `report.json` holds it.
    CellFinished {
        index: usize,
        total: usize,
        cell: Box<Cell>,
    },
    /// The last event: every cell has finished (or the run was cut short),
    /// and the run's header, known only now (its end, whether it was
    /// interrupted), is `report.json`'s `run`.
    RunEnded { run: Box<RunInfo> },
}

/// Why a run could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("sandbox-agent is unreachable at {url}: {cause}")]
    Unreachable { url: String, cause: String },
    /// A 401 or 403 to the health check: the server is up and says no.
    #[error("{}", rejection(.url, *.status, *.sent_token))]
    Rejected {
        url: String,
        status: u16,
        sent_token: bool,
    },
}

fn rejection(url: &str, status: u16, sent_token: bool) -> String {
    if sent_token {
        format!("sandbox-agent rejected the token (HTTP {status}) at {url}: check the variable --token-env (or SA_TOKEN) names")
    } else {
        format!("sandbox-agent wants a token (HTTP {status}) at {url}: set SA_TOKEN, or name the variable that holds it with --token-env")
    }
}

/// How long the health check before the first cell waits for an answer.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// Checks the server answers `/v1/health` before any cell runs.
pub(crate) async fn preflight(
    base_url: &str,
    token: Option<&Secret>,
    headers: &[(String, String)],
) -> Result<(), RunError> {
    let url = format!("{}/v1/health", base_url.trim_end_matches('/'));
    let http = crate::http::client_builder()
        .timeout(PREFLIGHT_TIMEOUT)
        .build()
        .map_err(|e| RunError::Unreachable {
            url: display_url(&url),
            cause: e.to_string(),
        })?;
    let mut request = http.get(&url);
    for (k, v) in headers {
        request = request.header(k.as_str(), v.as_str());
    }
    if let Some(token) = token {
        request = request.bearer_auth(token.expose());
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) if matches!(r.status().as_u16(), 401 | 403) => Err(RunError::Rejected {
            url: display_url(&url),
            status: r.status().as_u16(),
            sent_token: token.is_some(),
        }),
        Ok(r) => Err(RunError::Unreachable {
            url: display_url(&url),
            cause: format!("HTTP {}", r.status().as_u16()),
        }),
        Err(e) => Err(RunError::Unreachable {
            url: display_url(&url),
            cause: crate::secret::redact(
                &crate::acp::AcpError::from_reqwest(&url, &e, PREFLIGHT_TIMEOUT).to_string(),
                token,
            ),
        }),
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Runs every cell of `matrix` (until `cancel` turns true or the overall
/// deadline passes): the cells no stack can run are reported at once, the
/// others go into one queue over the workers.
pub(crate) async fn run(
    settings: &RunSettings,
    matrix: &Matrix,
    stacks: &mut RunStacks,
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let deadline = started + settings.overall_timeout;
    let total = matrix.cells.len();
    let mut folded = Fold::default();
    {
        // Every event goes through the fold on its way out: the report is
        // the fold of the events (the cells are the `CellFinished` events',
        // the header the `RunEnded` event's), nothing kept beside them.
        let mut on_event = |event: RunEvent| {
            folded.see(&event);
            on_event(event);
        };
        on_event(RunEvent::RunStarted {
            id: settings.id.clone(),
            total,
            repeat: settings.repeat,
            targets: matrix.targets.clone(),
            scenarios: matrix.scenarios.clone(),
            partition: settings.partition.map(|p| p.to_string()),
            axes: matrix.named_axes(),
        });
        let jobs = split_unavailable(matrix, stacks, &mut on_event);
        let interrupted = run_until_stopped(
            settings,
            stacks,
            jobs,
            total,
            cancel,
            deadline,
            &mut on_event,
        )
        .await;
        let run = run_info(settings, matrix, stacks, (started_at, started), interrupted);
        on_event(RunEvent::RunEnded { run: Box::new(run) });
    }
    folded
        .report()
        .expect("run() sends `RunEnded` before it reads the fold")
}

/// A run's report as the fold of its events, the one channel a run's
/// record leaves the runner by: each `CellFinished` is a cell of it, in
/// matrix order whatever order they finished in; the `RunEnded` event, the
/// last, gives the run's header.
#[derive(Default)]
struct Fold {
    cells: Vec<(usize, Cell)>,
    run: Option<RunInfo>,
}

impl Fold {
    fn see(&mut self, event: &RunEvent) {
        match event {
            RunEvent::CellFinished { index, cell, .. } => {
                self.cells.push((*index, Cell::clone(cell)));
            }
            RunEvent::RunEnded { run } => self.run = Some(RunInfo::clone(run)),
            _ => {}
        }
    }

    /// The report, once the run has ended (`None` before its `RunEnded`).
    fn report(mut self) -> Option<Report> {
        let run = self.run?;
        self.cells.sort_by_key(|(index, _)| *index);
        let cells = self.cells.into_iter().map(|(_, c)| c).collect();
        Some(crate::report::join::join(run, cells))
    }
}

/// The cells no stack can run, reported (and finished) at once, and the
/// jobs of the others.
fn split_unavailable(
    matrix: &Matrix,
    stacks: &RunStacks,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Vec<workers::Job> {
    let total = matrix.cells.len();
    let mut jobs: Vec<workers::Job> = Vec::new();
    for planned in &matrix.cells {
        match unavailable(stacks, planned) {
            Some(cell) => on_event(RunEvent::CellFinished {
                index: planned.index,
                total,
                cell: Box::new(cell),
            }),
            None => jobs.push(workers::Job::of(planned)),
        }
    }
    jobs
}

/// Runs `jobs` over the workers until they are done or the run is cut
/// short (`cancel`, the overall `deadline`): whether the run was
/// interrupted (the cells finished went out as events).
async fn run_until_stopped(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    jobs: Vec<workers::Job>,
    total: usize,
    cancel: watch::Receiver<bool>,
    deadline: Instant,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> bool {
    // One flag for every way a run is cut short: the running cell sees it,
    // records itself as interrupted and runs its cleanup.
    let (interrupt_tx, interrupt) = watch::channel(false);
    let stop = async {
        tokio::select! {
            _ = crate::stop_flag::wait_true(cancel) => None,
            _ = tokio::time::sleep_until(deadline.into()) => Some(settings.overall_timeout),
        }
    };
    // The events of the cells and the one of the deadline share `on_event`,
    // never at once: the workers call it only while polled, and the stop
    // is taken between two polls of them.
    let events = std::sync::Mutex::new(on_event);
    let mut forward = |event: RunEvent| (events.lock().unwrap_or_else(|p| p.into_inner()))(event);
    let finished = {
        let running = workers::run_jobs(settings, stacks, jobs, total, &interrupt, &mut forward);
        tokio::pin!(running, stop);
        let mut stopped = false;
        loop {
            tokio::select! {
                finished = &mut running => break finished,
                overall = &mut stop, if !stopped => {
                    stopped = true;
                    let _ = interrupt_tx.send(true);
                    if let Some(timeout) = overall {
                        let on_event = &mut *events.lock().unwrap_or_else(|p| p.into_inner());
                        on_event(RunEvent::OverallTimeout {
                            timeout_ms: timeout.as_millis() as u64,
                        });
                    }
                }
            }
        }
    };
    // Stopped while only cleanup was left (the last cell's deferred
    // DELETEs) is stopped all the same: the user was told so.
    finished || *interrupt.borrow()
}

/// The run's record in the report: its settings, axes, stacks and times
/// (`started`: the wall clock and the monotonic one).
fn run_info(
    settings: &RunSettings,
    matrix: &Matrix,
    stacks: &RunStacks,
    (started_at, started): (SystemTime, Instant),
    interrupted: bool,
) -> RunInfo {
    let joined = |names: Vec<&str>| names.join(", ");
    RunInfo {
        id: settings.id.clone(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started_at: rfc3339(started_at),
        finished_at: rfc3339(SystemTime::now()),
        duration_ms: started.elapsed().as_millis() as u64,
        base_url: display_url(&stacks.own.base_url),
        agent: joined(matrix.axes.agents.iter().map(|a| a.name.as_str()).collect()),
        server_version: stacks.server_version.clone(),
        timeout_ms: settings.timeout.as_millis() as u64,
        overall_timeout_ms: settings.overall_timeout.as_millis() as u64,
        repeat: settings.repeat,
        persist: joined(matrix.axes.all_stores().iter().map(|p| p.name()).collect()),
        client_stores: matrix
            .axes
            .client_stores()
            .into_iter()
            .map(|(client, store)| crate::report::ClientStore {
                client: client.into(),
                store: store.into(),
            })
            .collect(),
        targets: matrix.targets.iter().map(TargetName::from).collect(),
        scenarios: matrix.scenarios.clone(),
        interrupted,
        logs: stacks.logs.clone(),
        retries: settings.retries,
        flaky_result: settings.flaky_result,
        partition: settings.partition.map(|p| p.to_string()),
        shards: Vec::new(),
        expect_file: None,
        allow_fixed: false,
        timing: None,
        points: matrix.axes.points(),
        seed: Some(settings.seed),
        // The command line's, which `commands` sets.
        recipe: None,
    }
}

/// The record of a cell no stack of this run can run: its agent could not
/// be installed, or its target cannot run here (skipped when its program
/// is missing, an error when it failed to start, not applicable when the
/// run has nothing it could restart).
fn unavailable(stacks: &RunStacks, planned: &PlannedCell) -> Option<Cell> {
    let point = &planned.point;
    let (verdict, reason) = match stacks.agent_skips.iter().find(|(a, _)| *a == point.agent) {
        Some((_, reason)) => (Verdict::Skipped, reason.clone()),
        None => match stacks.skipped_targets.iter().find(|u| u.id == point.target) {
            Some(u) => (
                match u.absence {
                    Absence::Missing => Verdict::Skipped,
                    Absence::StartFailed => Verdict::Error,
                    Absence::NotApplicable => Verdict::NotApplicable,
                },
                u.reason.clone(),
            ),
            None if stacks.own.targets.iter().any(|t| t.id == point.target) => return None,
            None => (
                Verdict::Error,
                format!("no stack of this run has the target `{}`", point.target),
            ),
        },
    };
    let mut cell = aggregate(planned.named.clone(), vec![skipped_attempt(1, &reason)]);
    cell.verdict = verdict;
    Some(cell)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A worker of no stack: its targets, SQLite, nothing hosted.
    pub(crate) fn bare_worker(targets: Vec<Target>) -> Worker {
        Worker {
            base_url: "http://127.0.0.1:9".into(),
            targets,
            persist: PersistChoice::Own(crate::persist::Store::Sqlite),
            stores: Default::default(),
            sdk_process: None,
            agent_sent_log: None,
            model_calls: None,
            sdk_host: Err(Unhosted("no stack".into())),
            sdks: Vec::new().into(),
            browser_host: Err(Unhosted("no stack".into())),
            fence: Default::default(),
            server: None,
            sandboxes: None,
            components: Vec::new(),
        }
    }

    /// The report is the fold of the events: each finished cell once, in
    /// matrix order whatever order they finished in, counted in the
    /// totals; no other event adds a cell.
    #[test]
    fn the_report_is_folded_from_the_finished_cells_events() {
        let sample = crate::report::fixture::report();
        assert!(sample.cells.len() >= 2, "the fixture has cells to reorder");
        let mut header = sample.run.clone();
        header.targets.clear();
        header.scenarios.clear();
        let mut fold = Fold::default();
        let total = sample.cells.len();
        for (index, cell) in sample.cells.iter().enumerate().rev() {
            fold.see(&RunEvent::CellJudged {
                index: index + 1,
                total,
                verdicts: vec![cell.verdict],
            });
            fold.see(&RunEvent::CellFinished {
                index: index + 1,
                total,
                cell: Box::new(cell.clone()),
            });
        }
        fold.see(&RunEvent::OverallTimeout { timeout_ms: 1 });
        let mut not_ended = Fold::default();
        not_ended.see(&RunEvent::OverallTimeout { timeout_ms: 1 });
        assert!(
            not_ended.report().is_none(),
            "no report before the run ends"
        );
        fold.see(&RunEvent::RunEnded {
            run: Box::new(header),
        });
        let report = fold.report().expect("the run ended");
        assert_eq!(report.cells, sample.cells);
        assert_eq!(report.totals, crate::report::Totals::of(&sample.cells));
        assert!(
            !report.run.targets.is_empty(),
            "the cells' targets are the run's"
        );
    }

    /// A worker holding a target of each place a part can be: among its
    /// targets, the server's slot in the background, the hosted SDK's
    /// process, the stack's other components.
    pub(crate) fn worker_of_every_place(targets: Vec<Target>) -> Worker {
        use crate::targets::{BuiltinTarget, Target};
        let mut worker = bare_worker(targets);
        worker.server = Some(servers::ServerSlot::new(
            Vec::new().into(),
            None,
            BuiltinTarget::Agent,
            Some(Target::placeholder(BuiltinTarget::Agent.into())),
        ));
        worker.sdk_process = Some(Target::placeholder(BuiltinTarget::Rivet.into()));
        worker.components = vec![
            Target::placeholder(BuiltinTarget::RivetEngine.into()),
            Target::placeholder(BuiltinTarget::Store.into()),
        ];
        worker
    }

    /// The one walk over a worker's parts meets each once, its targets
    /// first (with their index), then the server's, the SDK's process and
    /// the components, in that order.
    #[test]
    fn the_walk_over_a_workers_parts_meets_each_once_in_order() {
        use crate::targets::{BuiltinTarget, OwnTarget, TargetId};
        let own: TargetId = OwnTarget::new("mine").into();
        let mut worker = worker_of_every_place(vec![
            Target::placeholder(BuiltinTarget::Gateway.into()),
            Target::placeholder(own.clone()),
        ]);
        let walked: Vec<(Option<usize>, TargetId)> = worker
            .parts_mut()
            .map(|(t, part)| (t, part.id.clone()))
            .collect();
        assert_eq!(
            walked,
            [
                (Some(0), BuiltinTarget::Gateway.into()),
                (Some(1), own),
                (None, BuiltinTarget::Agent.into()),
                (None, BuiltinTarget::Rivet.into()),
                (None, BuiltinTarget::RivetEngine.into()),
                (None, BuiltinTarget::Store.into()),
            ]
        );
    }
}
