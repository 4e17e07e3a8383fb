//! The runner: targets × scenarios → cells, one after another (restarts
//! interfere); each cell runs `repeat` attempts, a failed one again up to
//! `retries` times, each attempt with fresh clients and its own persist
//! store, and the attempts fold into one cell (`flaky` when they disagree).
//! With a partition, only that shard's cells run.
//! It emits [`RunEvent`]s and returns the finished (or interrupted) report;
//! it never prints or renders.

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

pub use client_axis::ClientChoice;

use attempts::{run_attempts, skipped_attempt, CellId};

pub use crate::persist::{PersistChoice, PersistFactory};

/// Everything a run needs, resolved from flags, config and environment.
pub struct RunPlan {
    pub id: String,
    pub base_url: String,
    pub token: Option<Secret>,
    pub headers: Vec<(String, String)>,
    pub agent: String,
    pub timeout: Duration,
    pub overall_timeout: Duration,
    pub repeat: u32,
    /// A failed attempt runs again up to this many times; a later pass makes the cell flaky.
    pub retries: u32,
    pub flaky_result: FlakyResult,
    /// Run only this shard of the matrix.
    pub partition: Option<Partition>,
    pub persist: PersistChoice,
    pub targets: Vec<Target>,
    /// Targets that cannot run here: reported as skipped (or error) cells.
    pub skipped_targets: Vec<Unavailable>,
    pub scenarios: Vec<Scenario>,
    pub run_dir: PathBuf,
    pub server_version: Option<String>,
    /// On a version axis (several `--server-version`): the version every cell of this run carries.
    pub axis_version: Option<String>,
    pub logs: Vec<LogFile>,
    /// How much of the wire each cell's `trace.jsonl` keeps.
    pub trace_level: crate::trace::TraceLevel,
    /// The local stack's scripted agent records the chunks it streams here.
    pub agent_sent_log: Option<PathBuf>,
    /// The local stack's fake model provider log, when real agents run.
    pub model_calls: Option<crate::provider::ModelCalls>,
    /// Which client runs the cells (`--client`).
    pub client: ClientChoice,
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
    plan: &mut RunPlan,
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let deadline = started + plan.overall_timeout;
    let mut cells = Vec::new();
    let mut interrupted = false;
    let all_targets: Vec<String> = plan
        .skipped_targets
        .iter()
        .map(|u| u.name.clone())
        .chain(plan.targets.iter().map(|t| t.name.clone()))
        .collect();
    let selected = selection(plan, &all_targets);
    let total = selected.iter().filter(|k| **k).count();
    let per_target = plan.scenarios.len();
    let is_selected = |t: usize, s: usize| selected[t * per_target + s];
    on_event(RunEvent::RunStarted {
        id: plan.id.clone(),
        total,
        targets: all_targets.clone(),
        scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
        partition: plan.partition.map(|p| p.to_string()),
        server_version: plan.axis_version.clone(),
    });
    let mut index = 0;
    for (u, unavailable) in plan.skipped_targets.iter().enumerate() {
        for (s, scenario) in plan.scenarios.iter().enumerate() {
            if !is_selected(u, s) {
                continue;
            }
            index += 1;
            let mut cell = skipped_cell(&unavailable.name, &scenario.name, &unavailable.reason);
            cell.verdict = match unavailable.absence {
                Absence::Missing => Verdict::Skipped,
                Absence::StartFailed => Verdict::Error,
            };
            cell.server_version = plan.axis_version.clone();
            on_event(RunEvent::CellFinished {
                index,
                total,
                cell: Box::new(cell.clone()),
            });
            cells.push(cell);
        }
    }
    let scenarios = plan.scenarios.clone();
    let skipped = plan.skipped_targets.len();
    let mut sequence = 0;
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
    'cells: for t in 0..plan.targets.len() {
        for (s, scenario) in scenarios.iter().enumerate() {
            if !is_selected(skipped + t, s) {
                continue;
            }
            index += 1;
            let target_name = plan.targets[t].name.clone();
            let cell_id = CellId {
                index,
                total,
                target: t,
                scenario,
            };
            let attempts = run_attempts(plan, &cell_id, &mut sequence, &interrupt, on_event).await;
            interrupted = attempts.interrupted;
            let attempts = attempts.attempts;
            // An interrupted cell keeps the attempts that finished: nothing run is lost.
            if !attempts.is_empty() {
                let version = plan.axis_version.clone();
                let cell = aggregate(&target_name, &scenario.name, version, attempts);
                on_event(RunEvent::CellFinished {
                    index,
                    total,
                    cell: Box::new(cell.clone()),
                });
                cells.push(cell);
            }
            if interrupted {
                break 'cells;
            }
        }
    }
    watcher.abort();
    let finished_at = SystemTime::now();
    let totals = Totals::of(&cells);
    Report {
        schema: SCHEMA_ID.into(),
        run: RunInfo {
            id: plan.id.clone(),
            harness_version: env!("CARGO_PKG_VERSION").into(),
            started_at: rfc3339(started_at),
            finished_at: rfc3339(finished_at),
            duration_ms: started.elapsed().as_millis() as u64,
            base_url: display_url(&plan.base_url),
            agent: plan.agent.clone(),
            server_version: plan.server_version.clone(),
            timeout_ms: plan.timeout.as_millis() as u64,
            overall_timeout_ms: plan.overall_timeout.as_millis() as u64,
            repeat: plan.repeat,
            persist: plan.persist.name().to_string(),
            targets: all_targets,
            scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
            interrupted,
            logs: plan.logs.clone(),
            retries: plan.retries,
            flaky_result: plan.flaky_result,
            partition: plan.partition.map(|p| p.to_string()),
            shards: Vec::new(),
            expect_file: None,
            allow_fixed: false,
        },
        cells,
        totals,
    }
}

/// Which target × scenario cells (targets in `all_targets` order, scenarios
/// in plan order, row-major) this run holds.
fn selection(plan: &RunPlan, all_targets: &[String]) -> Vec<bool> {
    let names: Vec<String> = all_targets
        .iter()
        .flat_map(|t| {
            plan.scenarios
                .iter()
                .map(move |s| cell_name(t, &s.name, plan.axis_version.as_deref()))
        })
        .collect();
    match &plan.partition {
        Some(p) => p.selects(&names),
        None => vec![true; names.len()],
    }
}

fn skipped_cell(target: &str, scenario: &str, reason: &str) -> Cell {
    aggregate(target, scenario, None, vec![skipped_attempt(1, reason)])
}
