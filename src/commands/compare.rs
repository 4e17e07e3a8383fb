//! `continuity compare`: two runs cell by cell, or two points of an axis
//! of one run (`--axis`), what changed between them; a regression exits 1.

use super::{load_report, CommandError, Outcome};
use crate::report::axis_compare;
use crate::report::Axis;
use crate::report::{self, Report};
use std::path::Path;

/// `continuity compare`: cell by cell. A regression exits 1, and so does a
/// cell of the baseline the candidate lacks (unless `allow_missing`) or a
/// cell either report holds twice (always: which of the two would count?).
pub fn compare(
    baseline: &Path,
    candidate: &Path,
    allow_missing: bool,
) -> Result<Outcome, CommandError> {
    let (baseline, candidate) = (load_report(baseline)?, load_report(candidate)?);
    let rows = report::compare::compare(&baseline, &candidate);
    let color = crate::console::color(crate::console::Stream::Stdout);
    crate::console::out(&report::compare::render_comparison(
        &baseline, &candidate, &rows, color,
    ));
    let mut failed = report::compare::has_regressions(&rows);
    for (which, r) in [("baseline", &baseline), ("candidate", &candidate)] {
        let duplicated = report::compare::duplicated_cells(r);
        if !duplicated.is_empty() {
            crate::console::errln(&format!(
                "continuity: the {which} holds these cells more than once: {}",
                duplicated.join(", ")
            ));
            failed = true;
        }
    }
    let missing = report::compare::missing_cells(&rows);
    if !missing.is_empty() && !allow_missing {
        crate::console::errln(&format!(
            "continuity: the candidate lacks {} cell(s) of the baseline: {} (add --allow-missing to accept that)",
            missing.len(),
            missing.join(", ")
        ));
        failed = true;
    }
    Ok(Outcome::failed_if(failed))
}

/// `continuity compare RUN --axis AXIS [--from A] [--to B]`: the cells of
/// point B against those of point A of one run (every adjacent pair
/// without --from/--to). A regression exits 1, and so does a cell of A
/// that B lacks (unless `allow_missing`).
pub fn compare_within(
    run: &Path,
    axis: Axis,
    from: Option<&str>,
    to: Option<&str>,
    allow_missing: bool,
) -> Result<Outcome, CommandError> {
    let report = load_report(run)?;
    let points = axis_compare::axis_points(&report, axis);
    let pairs = pairs_to_compare(run, axis, &points, from, to)?;
    let color = crate::console::color(crate::console::Stream::Stdout);
    let slices = axis_compare::AxisSlices::of(&report, axis);
    let mut failed = false;
    for (from, to) in pairs {
        let rows = slices.compare(&from, &to);
        crate::console::out(&render_pair(&report, axis, &from, &to, &rows, color));
        failed |= report::compare::has_regressions(&rows);
        let missing = report::compare::missing_cells(&rows);
        if !missing.is_empty() && !allow_missing {
            crate::console::errln(&format!(
                "continuity: {} {to} lacks {} cell(s) of {from}: {} (add --allow-missing to accept that)",
                axis.name(),
                missing.len(),
                missing.join(", ")
            ));
            failed = true;
        }
    }
    Ok(Outcome::failed_if(failed))
}

/// The pairs of `axis`'s points to compare: `--from` and `--to` (each a
/// point of the run; one of them alone with its neighbour), else every
/// adjacent pair.
fn pairs_to_compare(
    run: &Path,
    axis: Axis,
    points: &[&str],
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<(String, String)>, CommandError> {
    let known = |label: &str, flag: &str| -> Result<(), CommandError> {
        match points.contains(&label) {
            true => Ok(()),
            false => Err(CommandError::usage(format!(
                "{flag} {label}: not a {} point of {} (its points: {})",
                axis.name(),
                run.display(),
                match points.is_empty() {
                    true => "none, the run has no such axis".to_string(),
                    false => shown(&points.join(", ")),
                }
            ))),
        }
    };
    let pairs: Vec<(String, String)> = match (from, to) {
        (Some(from), Some(to)) => {
            known(from, "--from")?;
            known(to, "--to")?;
            vec![(from.to_string(), to.to_string())]
        }
        (Some(from), None) => {
            known(from, "--from")?;
            let next = points
                .iter()
                .skip_while(|p| **p != from)
                .nth(1)
                .ok_or_else(|| {
                    CommandError::usage(format!(
                        "--from {from}: the last {} point, nothing after it: give --to",
                        axis.name()
                    ))
                })?;
            vec![(from.to_string(), next.to_string())]
        }
        (None, Some(to)) => {
            known(to, "--to")?;
            let before = points
                .iter()
                .take_while(|p| **p != to)
                .last()
                .ok_or_else(|| {
                    CommandError::usage(format!(
                        "--to {to}: the first {} point, nothing before it: give --from",
                        axis.name()
                    ))
                })?;
            vec![(before.to_string(), to.to_string())]
        }
        (None, None) if points.len() < 2 => {
            return Err(CommandError::usage(format!(
                "{}: its cells name {} {} point{} (a run names the points of an axis only when it has several): nothing to compare within it",
                run.display(),
                points.len(),
                axis.name(),
                if points.len() == 1 { "" } else { "s" }
            )))
        }
        (None, None) => points
            .windows(2)
            .map(|pair| (pair[0].to_string(), pair[1].to_string()))
            .collect(),
    };
    Ok(pairs)
}

/// One pair's table, under a line naming the run and the two points.
fn render_pair(
    report: &Report,
    axis: Axis,
    from: &str,
    to: &str,
    rows: &[report::compare::CellChange],
    color: bool,
) -> String {
    let table = report::compare::render_comparison(report, report, rows, color);
    // The two-run header names runs; within one run it names the points.
    let body = table
        .split_once('\n')
        .map(|(_, rest)| rest)
        .unwrap_or(&table);
    format!(
        "run {}: {} {} → {} {}\n{body}",
        shown(&report.run.id),
        axis.name(),
        shown(from),
        axis.name(),
        shown(to)
    )
}

/// A report's text in a line: inert.
fn shown(text: &str) -> String {
    crate::untrusted::Untrusted::new(text).terminal()
}
