//! Scenarios: the phases a cell runs, read from `scenarios/*.toml`, and the
//! executor that runs them under deadlines.
//!
//! A scenario is a list of phases (each one step: connect, create_session,
//! prompt, restart, …) plus cleanup steps that always run and never change the
//! verdict. Parsing is two-stage: serde reads raw tables (unknown keys are
//! errors), then [`parse::parse_scenario`] checks each step's fields and the
//! references between phases, naming the file and line of any mistake.

mod execute;
mod parse;
pub(crate) mod sandbox_root;
mod step;

/// What a [`Restarter`] returns: the restart's record and what failed.
pub use crate::targets::Restarted;
pub(crate) use execute::integrity::{recheck, Judged};
pub use execute::{run_cell, CellRun, CellSettings, CellStore, Restarter};
pub(crate) use execute::{
    run_cell_deferring, BrowserClient, CellClient, CleanupFence, TsSdkClient, DEFAULT_HANG_GRACE,
};
pub use parse::{builtin_scenarios, parse_scenario};
pub(crate) use parse::{load_dir, ScenarioError};
pub(crate) use step::{Label, Step, StepKind, UnknownStep};

use std::path::PathBuf;
use std::time::Duration;

/// One scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Where it was read from (`<builtin>/name.toml` for the embedded copies).
    pub file: PathBuf,
    pub phases: Vec<Phase>,
    pub cleanup: Vec<Phase>,
    /// `opt_in = true`: runs only when named with `--scenario` (a slow or
    /// specialised scenario that a plain `continuity run` leaves out).
    pub opt_in: bool,
    /// What the always-on checker lets pass in this scenario (`allow`):
    /// a scenario whose point is a loss says which; everything is checked.
    pub allows: Vec<crate::check::Allowance>,
    /// The SHA-256 of its file's text: what a run records so that `rerun`
    /// can tell a scenario that changed since.
    pub digest: String,
}

/// A named step with its deadline and failure policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub step: Step,
    /// Overrides the run's `--timeout-ms` for this phase.
    pub timeout: Option<Duration>,
    /// Whether the cell goes on after this phase fails.
    pub continue_on_failure: bool,
    /// Whether this phase decides the cell's verdict (the scenario's `verdict` list names it).
    pub decides_verdict: bool,
}

/// The reconnect design's statuses of a reattach (the seed's route).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxStatus {
    Connected,
    Expired,
    NoSandbox,
}

impl SandboxStatus {
    pub(crate) fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }
}

/// What `process_status` expects of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessExpect {
    Running,
    Exited,
    /// Only that the server still knows it.
    Listed,
}

/// What `resume_session` is expected to do, when a scenario pins it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeExpect {
    SameHandle,
    Recreated,
}
