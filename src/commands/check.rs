//! `continuity check RUN`: the always-on checker again, over a finished
//! run's traces (Jepsen's analysis of a stored history). Each attempt's
//! trace is read back through the run folder's one confined reader (its
//! path inside the folder, no link out of it, a regular file, bounded,
//! line by line), checked, and the attempt judged again with what the
//! check found: the same verdicts `run` gives, printed the same way, and
//! the exit code `run` would pick. Nothing is written: a merged run, a
//! downloaded artifact or a folder it may not write to is checked as it is.
//!
//! What a scenario allows is the run's own record of it, else the built-in
//! scenario's of that name; a scenario folder the report names is never read.

use super::{open_run, CommandError, Outcome};
use crate::check::{Allowance, Status, Verdict as Checked};
use crate::report::{self, Attempt, Cell, Report, Totals};
use std::path::Path;

/// `continuity check RUN [--expect FILE]`.
pub fn check(run: &Path, gate: &crate::cli::GateArgs) -> Result<Outcome, CommandError> {
    let dir = open_run(run)?;
    let mut report = dir
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))?;
    let builtin = crate::scenario::builtin_scenarios();
    let mut unreadable = Vec::new();
    for cell in &mut report.cells {
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
        recheck_cell(cell, &dir, &allows, &mut unreadable);
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
    crate::console::outln(&summary(&report, &unreadable));
    if report.cells.is_empty() {
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::failed_if(report::expect::gate_fails(&report)))
}

/// Checks each attempt of `cell` again and folds them back into the cell.
fn recheck_cell(
    cell: &mut Cell,
    dir: &report::RunDir,
    allows: &[Allowance],
    unreadable: &mut Vec<String>,
) {
    if cell.attempts.is_empty() {
        let Some(checked) = check_trace(dir, cell.trace.as_deref(), allows, unreadable) else {
            return;
        };
        let judged = crate::scenario::Judged {
            phases: std::mem::take(&mut cell.phases),
            verdict: cell.verdict,
            failure_boundary: cell.failure_boundary.take(),
            reason: cell.reason.take(),
        };
        let again = crate::scenario::recheck(judged, &cell.restarts, &checked);
        (cell.phases, cell.verdict) = (again.phases, again.verdict);
        (cell.failure_boundary, cell.reason) = (again.failure_boundary, again.reason);
        cell.checked = Some(checked);
        return;
    }
    let mut attempts = std::mem::take(&mut cell.attempts);
    for attempt in &mut attempts {
        recheck_attempt(attempt, dir, allows, unreadable);
    }
    let mut again = report::attempts::aggregate(cell.point.clone(), attempts);
    again.turn = cell.turn.take();
    *cell = again;
}

fn recheck_attempt(
    attempt: &mut Attempt,
    dir: &report::RunDir,
    allows: &[Allowance],
    unreadable: &mut Vec<String>,
) {
    let Some(checked) = check_trace(dir, attempt.trace.as_deref(), allows, unreadable) else {
        return;
    };
    let judged = crate::scenario::Judged {
        phases: std::mem::take(&mut attempt.phases),
        verdict: attempt.verdict,
        failure_boundary: attempt.failure_boundary.take(),
        reason: attempt.reason.take(),
    };
    let again = crate::scenario::recheck(judged, &attempt.restarts, &checked);
    (attempt.phases, attempt.verdict) = (again.phases, again.verdict);
    (attempt.failure_boundary, attempt.reason) = (again.failure_boundary, again.reason);
    attempt.checked = Some(checked);
}

/// The checker over the trace the report names, read confined to the run
/// folder; `None` (and a note) when there is none or it cannot be read.
fn check_trace(
    dir: &report::RunDir,
    relative: Option<&str>,
    allows: &[Allowance],
    unreadable: &mut Vec<String>,
) -> Option<Checked> {
    let relative = relative?;
    let mut history = crate::check::History::default();
    match dir.for_each_event(relative, |line| history.push(&line)) {
        Ok(()) => Some(crate::check::check(&history, allows)),
        Err(e) => {
            unreadable.push(crate::untrusted::Untrusted::new(&e.to_string()).terminal());
            None
        }
    }
}

/// What the check found, cell by cell: the violations, and the
/// invariants a trace could not tell (too old, or `--trace off`).
fn summary(report: &Report, unreadable: &[String]) -> String {
    let mut out = String::from("\nchecker\n");
    let mut unknown: std::collections::BTreeMap<String, usize> = Default::default();
    let mut checked_cells = 0;
    let mut violations = 0;
    let mut excused = crate::check::Excused::default();
    for cell in &report.cells {
        let Some(checked) = &cell.checked else {
            continue;
        };
        checked_cells += 1;
        violations += checked.violations.len();
        excused.add(checked.excused);
        for v in &checked.violations {
            out.push_str(&format!(
                "  {} × {}: {} — {} ({}{})\n",
                cell.label(),
                cell.point.scenario,
                v.short(),
                crate::untrusted::Untrusted::new(&v.detail).terminal(),
                v.phase
                    .as_deref()
                    .map_or(String::new(), |p| format!("{p}, ")),
                format_args!("{:.1} s", v.t / 1000.0),
            ));
        }
        for c in checked
            .checked
            .iter()
            .filter(|c| c.status == Status::Unknown)
        {
            let why = c.why.clone().unwrap_or_default();
            *unknown
                .entry(format!("{}: {why}", c.invariant))
                .or_default() += 1;
        }
    }
    out.push_str(&format!(
        "  {checked_cells} of {} cells checked, {violations} violations\n",
        report.cells.len()
    ));
    if !excused.is_none() {
        out.push_str(&format!(
            "  losses let pass: {} never read by the client (its stream cut and not resumed, closed, or the cell over), {} cut turns' tails the scenario allows, {} while the SDK's host restarted (its records went with it), {} writes the store refused (the client saw them fail)\n",
            excused.unread, excused.lost_tail, excused.host_restart, excused.refused
        ));
        if excused.untold > 0 {
            out.push_str(&format!(
                "  and {} more let pass by an older checker that did not say why\n",
                excused.untold
            ));
        }
    }
    for (what, n) in unknown {
        out.push_str(&format!("  not checkable in {n} cells — {what}\n"));
    }
    for e in unreadable {
        out.push_str(&format!("  unreadable: {e}\n"));
    }
    out.trim_end().to_string()
}
