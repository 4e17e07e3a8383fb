//! What each command does: resolve settings (flags > seed-script environment
//! > config file > defaults), run, render, and pick the exit code.
//!
//! Each command is a module of its own (`run.rs`: `continuity run`); here
//! is what several share (the scenarios, the config, a run folder read
//! back) and the two that only read (`validate`, `list`).

use crate::cli::Sources;
use crate::config::{from_seed_env, Config};
use crate::report::{self, Report};
use crate::scenario::{builtin_scenarios, load_dir, Scenario};
use crate::targets::Target;
use std::path::Path;

mod axes;
mod bisect;
mod candidates;
mod cell_line;
mod check;
mod compare;
mod deployment;
mod deployment_faults;
mod error;
mod events;
mod export;
mod gate;
pub mod interrupts;
mod merge;
mod partial;
mod progress;
mod recipe;
mod rerun;
mod run;
mod settings;
mod show;
mod stack;
mod workers;

use crate::stop_flag::wait_true;
pub use bisect::bisect;
pub use check::check;
pub use compare::{compare, compare_within};
pub use error::{exit_code, parse_error_exit_code, report, CommandError, Outcome};
pub use export::export_chrome_trace;
pub use merge::{baseline, merge};
use progress::Progress;
pub use rerun::rerun;
pub use run::run;
pub(crate) use run::run_given;
pub use show::show;
pub use stack::{stack_down, stack_status, stack_up};

/// Scenarios from `--scenarios-dir`, or the built-in ones.
pub(crate) fn load_scenarios(sources: &Sources) -> Result<Vec<Scenario>, CommandError> {
    match &sources.scenarios_dir {
        Some(dir) => Ok(load_dir(dir)?),
        None => Ok(builtin_scenarios()),
    }
}

fn load_config(sources: &Sources) -> Result<Option<Config>, CommandError> {
    sources
        .config
        .as_deref()
        .map(Config::load)
        .transpose()
        .map_err(CommandError::from)
}

/// Targets from the config file plus `SA_RESTART_CMD`, in that order.
fn configured_targets(config: Option<&Config>) -> Result<Vec<Target>, CommandError> {
    let mut targets = config.map(Config::targets).unwrap_or_default();
    if let Some(seed) = from_seed_env(std::env::vars())? {
        if targets.iter().any(|t| t.id == seed.id) {
            return Err(CommandError::usage(format!(
                "SA_RESTART_CMD defines target `{}`, which the config file defines too",
                seed.id
            )));
        }
        targets.push(seed);
    }
    Ok(targets)
}

/// Keeps the named items, in their order; an unknown name is a usage error naming the known ones.
fn select_scenarios<T>(
    items: Vec<T>,
    wanted: &[String],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> Result<Vec<T>, CommandError> {
    if wanted.is_empty() {
        return Ok(items);
    }
    for w in wanted {
        if !items.iter().any(|i| name(i) == w) {
            let known: Vec<&str> = items.iter().map(&name).collect();
            return Err(CommandError::usage(format!(
                "unknown {what} `{w}` (known: {})",
                known.join(", ")
            )));
        }
    }
    Ok(items
        .into_iter()
        .filter(|i| wanted.iter().any(|w| w == name(i)))
        .collect())
}

/// Installs, for everything printed from now on, a redactor of the
/// secrets the config file and the environment hold.
fn redact_output_with(config: Option<&Config>) {
    let mut redactor = crate::secret::Redactor::none();
    if let Some(config) = config {
        config.add_secrets(&mut redactor);
    }
    redactor.add_secret_variables(std::env::vars());
    crate::secret::install(redactor);
}

/// `continuity validate`: parses everything, touches nothing.
pub fn validate(sources: &Sources) -> Result<String, CommandError> {
    redact_output_with(None);
    let config = load_config(sources)?;
    redact_output_with(config.as_ref());
    let scenarios = load_scenarios(sources)?;
    let targets = configured_targets(config.as_ref())?;
    let mut out = String::new();
    if let Some(c) = &config {
        out.push_str(&format!(
            "{}: ok ({} targets)\n",
            c.path().display(),
            targets.len()
        ));
    }
    // The expectations file the config names is read as `run` would read it.
    if let Some(path) = config.as_ref().and_then(|c| c.run.expect.as_deref()) {
        let expectations = crate::report::expect::Expectations::load(path)?;
        let names: Vec<String> = if targets.is_empty() {
            let faults = config
                .as_ref()
                .map(Config::fault_targets)
                .unwrap_or_default();
            crate::stack::local::known_targets(&faults)
                .into_iter()
                .map(|k| k.id.to_string())
                .collect()
        } else {
            targets.iter().map(|t| t.id.to_string()).collect()
        };
        expectations.check_names(&names, &scenario_names(&scenarios))?;
        out.push_str(&format!("{}: ok\n", path.display()));
    }
    for s in &scenarios {
        out.push_str(&format!(
            "{}: ok ({}, {} phases)\n",
            s.file.display(),
            s.name,
            s.phases.len()
        ));
    }
    Ok(out)
}

/// `continuity list`: targets and scenarios.
pub fn list(sources: &Sources) -> Result<String, CommandError> {
    redact_output_with(None);
    let config = load_config(sources)?;
    redact_output_with(config.as_ref());
    let scenarios = load_scenarios(sources)?;
    let targets = configured_targets(config.as_ref())?;
    let mut out = String::from("targets:\n");
    if targets.is_empty() {
        let known = crate::stack::local::known_targets(&[]);
        // As wide as the longest name, so every description starts in one column.
        let width = known.iter().map(|k| k.id.name().len()).max().unwrap_or(0);
        for known in known {
            out.push_str(&format!(
                "  {:<width$} local stack: {}\n",
                known.id.name(),
                known.what
            ));
        }
    }
    for t in &targets {
        out.push_str(&format!("  {:<14} {}\n", t.id, t.describe()));
    }
    out.push_str("scenarios:\n");
    for s in &scenarios {
        let phases: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
        out.push_str(&format!(
            "  {:<20} {}{}\n  {:<20} phases: {}\n",
            s.name,
            s.description,
            if s.opt_in {
                " (only with --scenario)"
            } else {
                ""
            },
            "",
            phases.join(" → ")
        ));
    }
    Ok(out)
}

/// A run folder opened for reading, as every command that reads a run
/// opens it ([`report::RunDir`]): `path` is the folder or a report file in
/// it, in any form; every file read from it stays inside it.
pub(crate) fn open_run(path: &Path) -> Result<report::RunDir, CommandError> {
    report::RunDir::open(path).map_err(|e| CommandError::usage(e.to_string()))
}

/// Reads a run's report: a run folder or the report.json itself.
pub(crate) fn load_report(path: &Path) -> Result<Report, CommandError> {
    open_run(path)?
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))
}

pub(crate) fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// What a run is given beyond its command line, by `rerun` and `bisect`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Given {
    /// Only the cells of the matrix these select (see
    /// [`report::Point::selects`]); empty: every cell.
    pub only: Vec<report::Point>,
    /// The id of the run this one runs again.
    pub rerun_of: Option<String>,
    /// The schedules of faults the run this one runs again recorded, by
    /// cell: each is drawn again here and must be the same (`rerun`).
    pub schedules: Vec<(report::Point, report::Schedule)>,
}

fn scenario_names(scenarios: &[Scenario]) -> Vec<String> {
    scenarios.iter().map(|s| s.name.clone()).collect()
}
