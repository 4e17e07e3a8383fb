//! What a run has finished so far, kept as it goes, so that a second
//! Ctrl-C (which kills everything at once rather than waiting for the
//! running cells' cleanup) still writes a report of every finished cell.

use crate::persist::Store;
use crate::report::{Cell, Floor, Report, RunFolder, RunInfo, Totals, SCHEMA_ID};
use crate::runner::RunSettings;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// The finished cells of a run and what its report says about the run.
#[derive(Clone)]
pub(super) struct PartialRun {
    folder: RunFolder,
    info: Arc<RunInfo>,
    started: Instant,
    cells: Arc<Mutex<Vec<Cell>>>,
}

impl PartialRun {
    /// `info` as the run's report will say it; its times are set when written.
    pub(super) fn new(folder: RunFolder, info: RunInfo) -> PartialRun {
        PartialRun {
            folder,
            info: Arc::new(info),
            started: Instant::now(),
            cells: Arc::default(),
        }
    }

    /// The run's id.
    pub(super) fn id(&self) -> &str {
        &self.info.id
    }

    /// A cell with all its attempts, as `report.json` will hold it.
    pub(super) fn finished(&self, cell: &Cell) {
        self.lock().push(cell.clone());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Cell>> {
        self.cells.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the report of the cells finished so far, marked interrupted,
    /// unless the run already wrote its own; how many cells it holds.
    pub(super) fn write(&self) -> std::io::Result<Option<usize>> {
        let cells = self.lock().clone();
        let mut info = (*self.info).clone();
        info.finished_at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        info.duration_ms = self.started.elapsed().as_millis() as u64;
        info.interrupted = true;
        info.timing = Floor::of_cells(&cells);
        for cell in &cells {
            if !info.targets.contains(&cell.point.target) {
                info.targets.push(cell.point.target.clone());
            }
        }
        let count = cells.len();
        let report = Report {
            schema: SCHEMA_ID.into(),
            run: info,
            totals: Totals::of(&cells),
            cells,
        };
        let Some(files) = self.folder.write_report_once(&report)? else {
            return Ok(None);
        };
        self.folder
            .check_report(&files)
            .map_err(std::io::Error::other)?;
        Ok(Some(count))
    }
}

/// What the report of a run killed part-way says about the run, known
/// before any stack is up (the axes' `points` among it: which candidate
/// a killed run was about).
pub(super) fn run_info(
    settings: &RunSettings,
    base_url: Option<&str>,
    agents: &[String],
    persists: &[Store],
    points: Vec<crate::report::AxisPoint>,
    recipe: crate::report::Recipe,
) -> RunInfo {
    RunInfo {
        id: settings.id.clone(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        finished_at: String::new(),
        duration_ms: 0,
        base_url: base_url.map(crate::secret::display_url).unwrap_or_default(),
        agent: agents.join(", "),
        server_version: None,
        timeout_ms: settings.timeout.as_millis() as u64,
        overall_timeout_ms: settings.overall_timeout.as_millis() as u64,
        repeat: settings.repeat,
        persist: persists
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
        client_stores: Vec::new(),
        targets: Vec::new(),
        scenarios: super::scenario_names(&settings.scenarios),
        interrupted: true,
        logs: Vec::new(),
        retries: settings.retries,
        flaky_result: settings.flaky_result,
        partition: settings.partition.map(|p| p.to_string()),
        shards: Vec::new(),
        expect_file: None,
        allow_fixed: false,
        timing: None,
        points,
        seed: Some(settings.seed),
        recipe: Some(recipe),
    }
}
