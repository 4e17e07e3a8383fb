//! Points of one axis side by side inside one run: the cells of one point
//! against the same cells of another, as `continuity compare` reads two
//! runs (regressed, fixed, changed, new, missing). `report.md` shows it
//! for every pair of adjacent points of the server and the SDK axes, so
//! one run answers "what changed from 0.4.0 to 0.4.2" and "what does the
//! candidate fix, and does it break anything"; `compare RUN --axis` prints
//! it for any axis.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::compare::{compare_cells, CellChange, Change};
use super::model::{Axis, AxisValue, Cell, Report};

/// The values the cells carry on `axis`, in run order; empty without that axis.
pub fn axis_points(report: &Report, axis: Axis) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    report
        .cells
        .iter()
        .filter_map(|c| c.point.name_on(axis))
        .filter(|v| seen.insert(*v))
        .collect()
}

/// The cells of each point of an axis, the axis's value taken off (what
/// two points' cells are joined by), grouped in one pass: a pass (and a
/// copy of the report) per point was quadratic in a report with many.
pub struct AxisSlices {
    axis: Axis,
    cells: HashMap<AxisValue, Vec<Cell>>,
}

impl AxisSlices {
    pub fn of(report: &Report, axis: Axis) -> AxisSlices {
        let mut cells: HashMap<AxisValue, Vec<Cell>> = HashMap::new();
        for cell in &report.cells {
            if let Some(value) = cell.point.get(axis) {
                let mut cell = cell.clone();
                let value = value.clone();
                cell.point.clear(axis);
                cells.entry(value).or_default().push(cell);
            }
        }
        AxisSlices { axis, cells }
    }

    /// The cells of point `to` against those of point `from` (each named
    /// as [`axis_points`] names it), row by row.
    pub fn compare(&self, from: &str, to: &str) -> Vec<CellChange> {
        let of = |name: &str| {
            self.cells
                .get(&AxisValue::parse(self.axis, name))
                .map_or(&[][..], Vec::as_slice)
        };
        compare_cells(of(from), of(to))
    }
}

/// Every pair of adjacent points of `axis`, each with its rows.
pub(crate) fn adjacent_pairs(
    report: &Report,
    axis: Axis,
) -> Vec<(String, String, Vec<CellChange>)> {
    let slices = AxisSlices::of(report, axis);
    axis_points(report, axis)
        .windows(2)
        .map(|pair| {
            (
                pair[0].to_string(),
                pair[1].to_string(),
                slices.compare(pair[0], pair[1]),
            )
        })
        .collect()
}

/// `1 regressed, 0 fixed, …`: what a pair's rows add up to.
pub fn counts(rows: &[CellChange]) -> String {
    let count = |c: Change| rows.iter().filter(|r| r.change == c).count();
    format!(
        "{} regressed, {} fixed, {} changed, {} same, {} new, {} missing",
        count(Change::Regressed),
        count(Change::Fixed),
        count(Change::Changed),
        count(Change::Same),
        count(Change::New),
        count(Change::Missing),
    )
}

/// `## Between points of an axis`: one table per adjacent pair of the
/// server and the SDK axes; `None` when neither has two points.
pub(crate) fn render_axis_comparison(report: &Report) -> Option<String> {
    let mut out = String::new();
    for axis in [Axis::Server, Axis::Sdk] {
        for (from, to, rows) in adjacent_pairs(report, axis) {
            let _ = writeln!(
                out,
                "\n### {} {} → {} {}\n\n{}\n",
                axis.title(),
                from,
                axis.title(),
                to,
                counts(&rows)
            );
            let differing: Vec<_> = rows.iter().filter(|r| r.change != Change::Same).collect();
            if differing.is_empty() {
                out.push_str("Every cell is the same.\n");
                continue;
            }
            let _ = writeln!(out, "| cell | scenario | {from} | {to} | change |");
            out.push_str("|---|---|---|---|---|\n");
            for row in differing {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    row.label(),
                    row.point.scenario,
                    row.baseline.as_deref().unwrap_or("–").replace('|', "\\|"),
                    row.candidate.as_deref().unwrap_or("–").replace('|', "\\|"),
                    row.change.as_str()
                );
            }
        }
    }
    (!out.is_empty()).then(|| format!("## Between points of an axis\n{out}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fixture, render_markdown, Verdict};

    fn two_versions() -> Report {
        let mut report = fixture::report();
        let mut newer = report.cells.clone();
        for cell in &mut report.cells {
            cell.point.set(AxisValue::Server("0.4.0".into()));
        }
        for cell in &mut newer {
            cell.point.set(AxisValue::Server("0.4.2".into()));
        }
        // 0.4.0 passed where 0.4.2 fails.
        report.cells[0].verdict = Verdict::Pass;
        report.cells[0].failure_boundary = None;
        report.cells.extend(newer);
        report
    }

    #[test]
    fn adjacent_versions_are_compared_in_the_markdown() {
        let r = two_versions();
        assert_eq!(axis_points(&r, Axis::Server), ["0.4.0", "0.4.2"]);
        let md = render_markdown(&r);
        assert!(md.contains("### server 0.4.0 → server 0.4.2"), "{md}");
        assert!(
            md.contains("1 regressed, 0 fixed, 0 changed, 3 same"),
            "{md}"
        );
        assert!(md.contains("| agent | native-continuity | pass | fail @ promptSameHandleAfterRestart (http 400 invalid_request) | REGRESSED |"), "{md}");
        assert!(md.contains("  - agent @ 0.4.2: "), "{md}");
        let summary = crate::render_summary(&r);
        assert!(
            summary.contains("│ agent   ┆ 0.4.0  ┆") && summary.contains("│ agent   ┆ 0.4.2  ┆"),
            "{summary}"
        );
    }

    /// A candidate SDK and a candidate server in one run: each axis's
    /// pair is read with the other axes kept apart.
    #[test]
    fn a_candidate_is_compared_with_the_release_on_its_own_axis() {
        let r = fixture::candidates("sandbox-agent 0.4.2");
        let md = render_axis_comparison(&r).unwrap();
        assert!(
            md.contains("### SDK 0.4.2 → SDK fix\n\n0 regressed, 2 fixed"),
            "{md}"
        );
        assert!(md.contains("| agent · ts-sdk @ fix | native-continuity | fail @ promptSameHandleAfterRestart (http 400 invalid_request) | pass | fixed |"), "{md}");
        assert!(
            md.contains("### server 0.4.2 → server fix\n\n0 regressed, 0 fixed, 0 changed, 2 same"),
            "{md}"
        );
        let rows = AxisSlices::of(&r, Axis::Sdk).compare("fix", "0.4.2");
        assert_eq!(
            rows.iter()
                .filter(|r| r.change == Change::Regressed)
                .count(),
            2
        );
    }

    #[test]
    fn one_point_has_no_comparison() {
        assert!(render_axis_comparison(&fixture::report()).is_none());
    }
}
