//! The runner: targets × scenarios → cells, one after another on a stack
//! (restarts interfere), on several stacks side by side with `--jobs N`
//! (see [`workers`]); each cell runs `repeat` attempts, a failed one again up to
//! `retries` times, each attempt with fresh clients and its own persist
//! store, and the attempts fold into one cell (`flaky` when they disagree).
//! With a partition, only that shard's cells run.
//! It emits [`RunEvent`]s and returns the finished (or interrupted) report;
//! it never prints or renders.

use crate::client::hosted::Unhosted;
use crate::partition::{cell_name, Partition};
use crate::report::attempts::aggregate;
use crate::report::{
    Attempt, Cell, FlakyResult, LogFile, Report, RunInfo, Totals, Verdict, SCHEMA_ID,
};
use crate::scenario::Scenario;
use crate::secret::{display_url, Secret};
use crate::targets::{Absence, Target, Unavailable};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

mod attempts;
mod client_axis;
mod persist_axis;
mod workers;

pub use client_axis::ClientChoice;

use attempts::skipped_attempt;
pub use workers::workers_for;

pub use crate::persist::{PersistChoice, StackStores};

/// What a worker's cells connect to and restart: one stack's side of a plan.
pub struct Worker {
    pub base_url: String,
    /// The stack's restart targets, in the plan's target order.
    pub targets: Vec<Target>,
    /// Where this worker's cells keep their sessions (a Rivet or Postgres
    /// choice holds this worker's own stack's factory).
    pub persist: PersistChoice,
    /// The stores this worker's stack provides, for each point of the
    /// persistence axis.
    pub stores: StackStores,
    /// The process that holds the hosted SDK client (the RivetKit runner),
    /// when it is not one of the targets: the `client` target of a ts-sdk
    /// cell kills and starts it.
    pub sdk_process: Option<Target>,
    /// On a persistence axis, `STORE-`: what keeps one store's cell
    /// keys, files and trace folders apart from another's.
    pub persist_tag: String,
    /// The stack's scripted agent's record of the chunks it streamed.
    pub agent_sent_log: Option<PathBuf>,
    /// The stack's fake model provider log (real agents only).
    pub model_calls: Option<crate::provider::ModelCalls>,
    /// Where this worker's stack hosts the TypeScript SDK client (its Rivet
    /// Engine endpoint), or why it cannot.
    pub sdk_host: Result<String, Unhosted>,
    /// Between its cells' deferred DELETEs and the restarts that would cut
    /// them; lanes of one shared deployment share it.
    pub fence: crate::scenario::CleanupFence,
}

impl Worker {
    /// The plan's client as this worker's cells run it: a hosted client is
    /// called through this worker's own stack.
    pub(crate) fn client(&self, choice: &ClientChoice) -> ClientChoice {
        match choice {
            ClientChoice::Rust => ClientChoice::Rust,
            ClientChoice::TsSdk(_) => ClientChoice::TsSdk(self.sdk_host.clone()),
        }
    }

    /// Another worker on the same stack (a shared deployment's lane), with no targets yet.
    pub(crate) fn sharing(&self) -> Worker {
        Worker {
            base_url: self.base_url.clone(),
            targets: Vec::new(),
            persist: self.persist.clone(),
            stores: self.stores.clone(),
            sdk_process: None,
            persist_tag: self.persist_tag.clone(),
            agent_sent_log: self.agent_sent_log.clone(),
            model_calls: self.model_calls.clone(),
            sdk_host: self.sdk_host.clone(),
            fence: self.fence.clone(),
        }
    }
}

/// What flags, config and environment decide for a run, known before any
/// stack is up or any deployment is reached.
pub struct RunSettings {
    pub id: String,
    pub token: Option<Secret>,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub overall_timeout: Duration,
    pub repeat: u32,
    /// A failed attempt runs again up to this many times; a later pass makes the cell flaky.
    pub retries: u32,
    pub flaky_result: FlakyResult,
    /// Run only this shard of the matrix.
    pub partition: Option<Partition>,
    pub scenarios: Vec<Scenario>,
    pub run_dir: PathBuf,
    /// How much of the wire each cell's `trace.jsonl` keeps.
    pub trace_level: crate::trace::TraceLevel,
}

/// What the deployment or the local stack(s) provide: where the cells
/// connect, what they restart, where they keep their sessions.
pub struct RunStacks {
    /// The first (or only) stack, or the deployment.
    pub own: Worker,
    /// Targets that cannot run here: reported as skipped (or error) cells.
    pub skipped_targets: Vec<Unavailable>,
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
    /// The same stacks with every target skipped for `reason` (no target is
    /// touched): the cells of an agent the stack could not install.
    pub fn all_skipped(&self, reason: &str) -> RunStacks {
        RunStacks {
            own: self.own.sharing(),
            skipped_targets: self
                .skipped_targets
                .iter()
                .map(|u| u.name.clone())
                .chain(self.own.targets.iter().map(|t| t.name.clone()))
                .map(|name| Unavailable::skipped(&name, reason))
                .collect(),
            server_version: self.server_version.clone(),
            logs: self.logs.clone(),
            workers: Vec::new(),
            jobs: 1,
        }
    }
}

/// Which point of the matrix's axes (agent × client × version) one run of
/// the cells is, and how long it may take.
#[derive(Clone)]
pub struct AxisPoint {
    pub agent: String,
    /// Whether the agent talks to the stack's fake model provider (a real
    /// agent): only then does its log judge the cells.
    pub real_agent: bool,
    /// Which client runs the cells (`--client`).
    pub client: ClientChoice,
    /// On a version axis (several `--server-version`): the version every cell carries.
    pub version: Option<String>,
    /// The run's overall timeout, or on a version axis what is left of it.
    pub overall_timeout: Duration,
}

/// Everything one run of the cells reads: the settings and its axis point.
#[derive(Clone, Copy)]
pub struct RunPlan<'a> {
    pub settings: &'a RunSettings,
    pub point: &'a AxisPoint,
}

/// Progress, as plain data for whoever displays it.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// Before the first cell: how many cells this run (or shard) holds. On
    /// a version axis, once per version, with that version.
    RunStarted {
        id: String,
        total: usize,
        targets: Vec<String>,
        scenarios: Vec<String>,
        partition: Option<String>,
        server_version: Option<String>,
    },
    /// An attempt of a cell starts (`attempt` counts retries too).
    CellStarted {
        index: usize,
        total: usize,
        target: String,
        scenario: String,
        attempt: u32,
    },
    /// An attempt that did not pass and will run again (`--retries`).
    Retrying {
        index: usize,
        total: usize,
        attempt: Box<Attempt>,
        target: String,
        scenario: String,
    },
    /// A cell's attempts have their verdicts; its record follows in
    /// [`RunEvent::CellFinished`] once their cleanup has run out (the
    /// worker has moved on to its next cell meanwhile).
    CellJudged {
        index: usize,
        total: usize,
        /// Each attempt's verdict, in order.
        verdicts: Vec<crate::report::Verdict>,
    },
    /// A cell with all its attempts, exactly as `report.json` holds it.
    CellFinished {
        index: usize,
        total: usize,
        cell: Box<Cell>,
    },
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

/// Checks the server answers `/v1/health` before any cell runs.
pub async fn preflight(
    base_url: &str,
    token: Option<&Secret>,
    headers: &[(String, String)],
) -> Result<(), RunError> {
    let url = format!("{}/v1/health", base_url.trim_end_matches('/'));
    let http = crate::http::client_builder()
        .timeout(Duration::from_secs(10))
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
                &crate::acp::AcpError::from_reqwest(&url, &e).to_string(),
                token,
            ),
        }),
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Runs every cell (until `cancel` turns true or the overall deadline passes).
pub async fn run(
    plan: RunPlan<'_>,
    stacks: &mut RunStacks,
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let deadline = started + plan.point.overall_timeout;
    let mut cells = Vec::new();
    let all_targets: Vec<String> = stacks
        .skipped_targets
        .iter()
        .map(|u| u.name.clone())
        .chain(stacks.own.targets.iter().map(|t| t.name.clone()))
        .collect();
    let selected = selection(plan, &all_targets);
    let total = selected.iter().filter(|k| **k).count();
    let per_target = plan.settings.scenarios.len();
    let is_selected = |t: usize, s: usize| selected[t * per_target + s];
    let scenario_names: Vec<String> = plan
        .settings
        .scenarios
        .iter()
        .map(|s| s.name.clone())
        .collect();
    on_event(RunEvent::RunStarted {
        id: plan.settings.id.clone(),
        total,
        targets: all_targets.clone(),
        scenarios: scenario_names.clone(),
        partition: plan.settings.partition.map(|p| p.to_string()),
        server_version: plan.point.version.clone(),
    });
    let mut index = 0;
    for (u, unavailable) in stacks.skipped_targets.iter().enumerate() {
        for (s, scenario) in plan.settings.scenarios.iter().enumerate() {
            if !is_selected(u, s) {
                continue;
            }
            index += 1;
            let mut cell = skipped_cell(&unavailable.name, &scenario.name, &unavailable.reason);
            cell.verdict = match unavailable.absence {
                Absence::Missing => Verdict::Skipped,
                Absence::StartFailed => Verdict::Error,
            };
            cell.server_version = plan.point.version.clone();
            on_event(RunEvent::CellFinished {
                index,
                total,
                cell: Box::new(cell.clone()),
            });
            cells.push(cell);
        }
    }
    let skipped = stacks.skipped_targets.len();
    let jobs: Vec<workers::Job> = (0..stacks.own.targets.len())
        .flat_map(|t| (0..plan.settings.scenarios.len()).map(move |s| (t, s)))
        .filter(|(t, s)| is_selected(skipped + t, *s))
        .enumerate()
        .map(|(n, (t, scenario))| workers::Job {
            index: index + n + 1,
            target: stacks.own.targets[t].name.clone(),
            scenario,
        })
        .collect();
    // One flag for every way a run is cut short: the running cell sees it,
    // records itself as interrupted and runs its cleanup.
    let (interrupt_tx, interrupt) = watch::channel(false);
    let watcher = tokio::spawn(async move {
        tokio::select! {
            _ = crate::stop_flag::wait_true(cancel) => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
        let _ = interrupt_tx.send(true);
    });
    let finished = workers::run_jobs(plan, stacks, jobs, total, &interrupt, on_event).await;
    cells.extend(finished.cells.into_iter().map(|(_, cell)| cell));
    let interrupted = finished.interrupted;
    watcher.abort();
    let finished_at = SystemTime::now();
    let totals = Totals::of(&cells);
    Report {
        schema: SCHEMA_ID.into(),
        run: RunInfo {
            id: plan.settings.id.clone(),
            harness_version: env!("CARGO_PKG_VERSION").into(),
            started_at: rfc3339(started_at),
            finished_at: rfc3339(finished_at),
            duration_ms: started.elapsed().as_millis() as u64,
            base_url: display_url(&stacks.own.base_url),
            agent: plan.point.agent.clone(),
            server_version: stacks.server_version.clone(),
            timeout_ms: plan.settings.timeout.as_millis() as u64,
            overall_timeout_ms: plan.point.overall_timeout.as_millis() as u64,
            repeat: plan.settings.repeat,
            persist: stacks.own.persist.name().to_string(),
            targets: all_targets,
            scenarios: scenario_names,
            interrupted,
            logs: stacks.logs.clone(),
            retries: plan.settings.retries,
            flaky_result: plan.settings.flaky_result,
            partition: plan.settings.partition.map(|p| p.to_string()),
            shards: Vec::new(),
            expect_file: None,
            allow_fixed: false,
            timing: crate::report::Floor::of_cells(&cells),
        },
        cells,
        totals,
    }
}

/// Which target × scenario cells (targets in `all_targets` order, scenarios
/// in plan order, row-major) this run holds.
fn selection(plan: RunPlan<'_>, all_targets: &[String]) -> Vec<bool> {
    let names: Vec<String> = all_targets
        .iter()
        .flat_map(|t| {
            plan.settings
                .scenarios
                .iter()
                .map(move |s| cell_name(t, &s.name, plan.point.version.as_deref()))
        })
        .collect();
    match &plan.settings.partition {
        Some(p) => p.selects(&names),
        None => vec![true; names.len()],
    }
}

fn skipped_cell(target: &str, scenario: &str, reason: &str) -> Cell {
    aggregate(target, scenario, None, vec![skipped_attempt(1, reason)])
}
