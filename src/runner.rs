//! The runner: targets × scenarios × repeats → cells, one after another
//! (restarts interfere), each with fresh clients and its own persist store.
//! It emits [`RunEvent`]s and returns the finished (or interrupted) report;
//! it never prints or renders.

use crate::persist::{PersistDriver, SqliteDriver};
use crate::report::{Cell, LogFile, Report, RestartTiming, RunInfo, Totals, Verdict, SCHEMA_ID};
use crate::scenario::{run_cell, CellSettings, CellStore, RestartReport, Restarter, Scenario};
use crate::secret::{display_url, Secret};
use crate::targets::Target;
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// Which session store each cell gets.
#[derive(Debug, Clone, PartialEq)]
pub enum PersistChoice {
    /// A fresh SQLite file per cell, in the run folder.
    Sqlite,
    /// The SDK's default in-memory store, as the seed script uses.
    Memory,
    /// A custom factory (the local stack's Rivet actor): `key` is unique per cell.
    Custom(String),
}

/// Makes a cell's persist store; `key` is unique per cell.
pub type PersistFactory = Arc<dyn Fn(&str) -> Result<Arc<dyn PersistDriver>, String> + Send + Sync>;

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
    pub persist: PersistChoice,
    /// Used when `persist` is `Custom`.
    pub persist_factory: Option<PersistFactory>,
    pub targets: Vec<Target>,
    /// Targets that cannot run here: reported as skipped (or error) cells.
    pub skipped_targets: Vec<Unavailable>,
    pub scenarios: Vec<Scenario>,
    pub run_dir: PathBuf,
    pub server_version: Option<String>,
    pub logs: Vec<LogFile>,
}

/// A target that cannot run, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    pub name: String,
    pub reason: String,
    /// `Skipped` for a missing program, `Error` for one that failed to start.
    pub verdict: Verdict,
}

impl Unavailable {
    pub fn skipped(name: &str, reason: &str) -> Self {
        Self {
            name: name.into(),
            reason: reason.into(),
            verdict: Verdict::Skipped,
        }
    }

    pub fn failed(name: &str, reason: &str) -> Self {
        Self {
            name: name.into(),
            reason: reason.into(),
            verdict: Verdict::Error,
        }
    }
}

/// Progress, as plain data for whoever displays it.
#[derive(Debug, Clone)]
pub enum RunEvent {
    CellStarted {
        index: usize,
        total: usize,
        target: String,
        scenario: String,
        attempt: u32,
    },
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
}

/// Wraps a target so the scenario executor can restart it.
struct TargetRestarter<'a>(&'a mut Target);

#[async_trait]
impl Restarter for TargetRestarter<'_> {
    async fn restart(&mut self) -> RestartReport {
        let outcome = self.0.restart().await;
        RestartReport {
            ok: outcome.ok,
            action: self.0.kind().to_string(),
            restart_ms: outcome.restart_ms,
            ready_ms: outcome.ready_ms,
            detail: outcome.detail,
        }
    }
}

/// Checks the server answers `/v1/health` before any cell runs.
pub async fn preflight(base_url: &str, token: Option<&Secret>) -> Result<(), RunError> {
    let url = format!("{}/v1/health", base_url.trim_end_matches('/'));
    let http = crate::http::client_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| RunError::Unreachable {
            url: display_url(&url),
            cause: e.to_string(),
        })?;
    let mut request = http.get(&url);
    if let Some(token) = token {
        request = request.bearer_auth(token.expose());
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => Ok(()),
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
    let total = (plan.targets.len() + plan.skipped_targets.len())
        * plan.scenarios.len()
        * plan.repeat as usize;
    let mut index = 0;
    for unavailable in &plan.skipped_targets {
        for scenario in &plan.scenarios {
            for attempt in 1..=plan.repeat {
                index += 1;
                let mut cell = skipped_cell(
                    &unavailable.name,
                    &scenario.name,
                    attempt,
                    &unavailable.reason,
                );
                cell.verdict = unavailable.verdict;
                on_event(RunEvent::CellFinished {
                    index,
                    total,
                    cell: Box::new(cell.clone()),
                });
                cells.push(cell);
            }
        }
    }
    let scenarios = plan.scenarios.clone();
    // One flag for every way a run is cut short: the running cell sees it,
    // records itself as interrupted and runs its cleanup.
    let (interrupt_tx, interrupt) = watch::channel(false);
    let watcher = tokio::spawn(async move {
        tokio::select! {
            _ = wait_cancel(cancel) => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
        let _ = interrupt_tx.send(true);
    });
    'cells: for t in 0..plan.targets.len() {
        for scenario in &scenarios {
            for attempt in 1..=plan.repeat {
                if *interrupt.borrow() || Instant::now() >= deadline {
                    interrupted = true;
                    break 'cells;
                }
                index += 1;
                let target_name = plan.targets[t].name.clone();
                on_event(RunEvent::CellStarted {
                    index,
                    total,
                    target: target_name.clone(),
                    scenario: scenario.name.clone(),
                    attempt,
                });
                let cell = run_one(plan, t, scenario, attempt, index, interrupt.clone()).await;
                on_event(RunEvent::CellFinished {
                    index,
                    total,
                    cell: Box::new(cell.clone()),
                });
                let cut_short = cell.verdict == Verdict::Interrupted;
                cells.push(cell);
                if cut_short {
                    interrupted = true;
                    break 'cells;
                }
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
            persist: match &plan.persist {
                PersistChoice::Sqlite => "sqlite".into(),
                PersistChoice::Memory => "memory".into(),
                PersistChoice::Custom(name) => name.clone(),
            },
            targets: plan
                .skipped_targets
                .iter()
                .map(|u| u.name.clone())
                .chain(plan.targets.iter().map(|t| t.name.clone()))
                .collect(),
            scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
            interrupted,
            logs: plan.logs.clone(),
        },
        cells,
        totals,
    }
}

async fn wait_cancel(mut cancel: watch::Receiver<bool>) {
    let _ = cancel.wait_for(|c| *c).await;
}

fn skipped_cell(target: &str, scenario: &str, attempt: u32, reason: &str) -> Cell {
    Cell {
        target: target.into(),
        scenario: scenario.into(),
        attempt,
        verdict: Verdict::Skipped,
        failure_boundary: None,
        reason: Some(reason.into()),
        duration_ms: 0,
        phases: Vec::new(),
        restarts: Vec::new(),
    }
}

async fn run_one(
    plan: &mut RunPlan,
    t: usize,
    scenario: &Scenario,
    attempt: u32,
    index: usize,
    interrupt: watch::Receiver<bool>,
) -> Cell {
    let target_name = plan.targets[t].name.clone();
    let key = format!("{}-{index}", plan.id);
    let store: Result<CellStore, String> = match &plan.persist {
        PersistChoice::Memory => Ok(CellStore::PerClientMemory),
        PersistChoice::Sqlite => {
            let dir = plan.run_dir.join("persist");
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))
                .and_then(|()| {
                    let file = dir.join(format!(
                        "{index:03}-{target_name}-{}-{attempt}.db",
                        scenario.name
                    ));
                    SqliteDriver::open(file)
                        .map(|d| CellStore::Shared(Arc::new(d)))
                        .map_err(|e| e.to_string())
                })
        }
        PersistChoice::Custom(name) => match &plan.persist_factory {
            Some(factory) => factory(&key).map(CellStore::Shared),
            None => Err(format!("no factory for persist driver {name}")),
        },
    };
    let store = match store {
        Ok(p) => p,
        Err(reason) => {
            let mut cell = skipped_cell(&target_name, &scenario.name, attempt, &reason);
            cell.verdict = Verdict::Error;
            return cell;
        }
    };
    let settings = CellSettings {
        base_url: plan.base_url.clone(),
        token: plan.token.clone(),
        headers: plan.headers.clone(),
        agent: plan.agent.clone(),
        default_timeout: plan.timeout,
        session_suffix: key,
        store,
        interrupt,
    };
    let mut restarter = TargetRestarter(&mut plan.targets[t]);
    let run = run_cell(scenario, &settings, &mut restarter).await;
    let restart_phases: Vec<String> = run
        .phases
        .iter()
        .filter(|p| p.step == "restart")
        .map(|p| p.name.clone())
        .collect();
    let restarts = run
        .restarts
        .into_iter()
        .zip(
            restart_phases
                .into_iter()
                .chain(std::iter::repeat(String::new())),
        )
        .map(|(r, phase)| RestartTiming { phase, ..r })
        .collect();
    let reason = (run.verdict == Verdict::Interrupted).then(|| {
        format!(
            "the run was interrupted (Ctrl-C, SIGTERM or the overall deadline) during {}",
            run.failure_boundary.as_deref().unwrap_or("the cell")
        )
    });
    Cell {
        target: target_name,
        scenario: scenario.name.clone(),
        attempt,
        verdict: run.verdict,
        failure_boundary: run.failure_boundary,
        reason,
        duration_ms: run.duration_ms,
        phases: run.phases,
        restarts,
    }
}
