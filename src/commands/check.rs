//! `continuity check RUN`: the always-on checker again, over a finished
//! run's traces (Jepsen's analysis of a stored history). Each attempt's
//! trace is read back through the run folder's one confined reader (its
//! path inside the folder, no link out of it, a regular file, bounded,
//! line by line), checked, and the attempt judged again with what the
//! check found: the same verdicts `run` gives, printed the same way, and
//! the exit code `run` would pick, or 2 when a trace the run names could
//! not be read (that cell keeps its recorded verdict, unchecked; a check
//! the report recorded is never shown as made). Nothing is written: a
//! merged run, a downloaded artifact or a folder it may not write to is
//! checked as it is, and what it prints of the run is rendered from its
//! inert form ([`report::checker`]).
//!
//! What a scenario allows is the run's own record of it, else the built-in
//! scenario's of that name; a scenario folder the report names is never read.

use super::{open_run, CommandError, Outcome};
use crate::check::{Allowance, Verdict as Checked};
use crate::report::{self, Attempt, Cell, Totals};
use std::collections::HashMap;
use std::path::Path;

/// `continuity check RUN [--expect FILE]`.
pub fn check(run: &Path, gate: &crate::cli::GateArgs) -> Result<Outcome, CommandError> {
    let dir = open_run(run)?;
    let mut report = dir
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))?;
    let builtin = crate::scenario::builtin_scenarios();
    let mut traces = Traces::new(&dir);
    for cell in &mut report.cells {
        // The allow list is data (a closed set: it can only excuse a lost
        // tail, and the summary says how many it did), as the run recorded
        // it; a scenario file is never read.
        let allows = cell
            .checked
            .as_ref()
            .map(|c| c.allowed.clone())
            .or_else(|| {
                builtin
                    .iter()
                    .find(|s| s.name == cell.point.scenario)
                    .map(|s| s.allows.clone())
            })
            .unwrap_or_default();
        recheck_cell(cell, &mut traces, &allows);
    }
    report.totals = Totals::of(&report.cells);
    report.run.expect_file = None;
    for cell in &mut report.cells {
        cell.expectation = None;
    }
    if let Some(expectations) = super::gate::load_expectations(gate, None)? {
        super::gate::judge(&expectations, &mut report, gate);
    } else {
        report.run.flaky_result = gate.flaky_result.into();
    }
    let stdout = crate::console::Stream::Stdout;
    let layout = report::Layout {
        width: crate::console::width(stdout),
        color: crate::console::color(stdout),
        folder: run.display().to_string(),
    };
    crate::console::outln(report::render_terminal(&report, &layout).trim_end());
    crate::console::outln(&report::checker::render_checker(
        &report,
        &traces.unreadable,
    ));
    if report.cells.is_empty() {
        return Ok(Outcome::Failed);
    }
    if !traces.unreadable.is_empty() {
        return Ok(Outcome::Unchecked);
    }
    Ok(Outcome::failed_if(report::expect::gate_fails(&report)))
}

/// The traces of one run as the check reads them: each path once (the
/// checker's verdict on it kept for any other cell naming it, so a report
/// naming one trace for many cells costs one read), confined to the folder.
struct Traces<'a> {
    dir: &'a report::RunDir,
    read: HashMap<(String, Vec<Allowance>), Option<Checked>>,
    /// Why each trace that could not be read could not, once each.
    unreadable: Vec<String>,
}

impl<'a> Traces<'a> {
    fn new(dir: &'a report::RunDir) -> Traces<'a> {
        Traces {
            dir,
            read: HashMap::new(),
            unreadable: Vec::new(),
        }
    }

    /// The checker over the trace at `relative`; `None` (and a note) when
    /// it cannot be read.
    fn check(&mut self, relative: &str, allows: &[Allowance]) -> Option<Checked> {
        let key = (relative.to_string(), allows.to_vec());
        if let Some(known) = self.read.get(&key) {
            return known.clone();
        }
        let mut history = crate::check::History::default();
        let checked = match self
            .dir
            .for_each_event(relative, |line| history.push(&line))
        {
            Ok(()) => Some(crate::check::check(&history, allows)),
            Err(e) => {
                self.unreadable.push(e.to_string());
                None
            }
        };
        self.read.insert(key, checked.clone());
        checked
    }
}

/// Checks each attempt of `cell` again (a single-attempt cell's one
/// attempt is the cell's own) and folds them back into the cell, as the
/// runner folds a cell's attempts; the long turn's fate stays the run's.
fn recheck_cell(cell: &mut Cell, traces: &mut Traces<'_>, allows: &[Allowance]) {
    let mut attempts = match cell.attempts.is_empty() {
        true => vec![Attempt::of_cell(cell, false)],
        false => std::mem::take(&mut cell.attempts),
    };
    for attempt in &mut attempts {
        recheck(attempt, traces, allows);
    }
    let mut again = report::attempts::aggregate(cell.point.clone(), attempts);
    again.turn = cell.turn.take();
    *cell = again;
}

/// Judges `attempt` again with what the check of its trace found, and
/// keeps that check. Without a trace it could read, the judgement stands
/// as recorded and there is no check: one the report holds was not made
/// here, so it is never shown as made.
fn recheck(attempt: &mut Attempt, traces: &mut Traces<'_>, allows: &[Allowance]) {
    let checked = attempt
        .trace
        .as_deref()
        .and_then(|trace| traces.check(trace, allows));
    if let Some(checked) = &checked {
        let judged = crate::scenario::Judged {
            phases: std::mem::take(&mut attempt.phases),
            verdict: attempt.verdict,
            failure_boundary: attempt.failure_boundary.take(),
            reason: attempt.reason.take(),
        };
        let again = crate::scenario::recheck(judged, &attempt.restarts, checked);
        attempt.phases = again.phases;
        attempt.verdict = again.verdict;
        attempt.failure_boundary = again.failure_boundary;
        attempt.reason = again.reason;
    }
    attempt.checked = checked;
}
