//! Two reports side by side — a baseline and a candidate, e.g. two
//! sandbox-agent versions or a run before and after a fix: cell by cell
//! (target × scenario × attempt), what changed in verdict and signature.

use super::model::{Cell, Point, Report, Verdict};
use comfy_table::{Cell as TableCell, Color};

/// How one cell moved from the baseline to the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Same,
    /// Passed before, does not now.
    Regressed,
    /// Did not pass before, passes now.
    Fixed,
    /// Still not passing, but failing differently (boundary or signature);
    /// or to or from `not_applicable` (no verdict on the restart).
    Changed,
    /// Only in the candidate.
    New,
    /// Only in the baseline.
    Missing,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Same => "same",
            Change::Regressed => "REGRESSED",
            Change::Fixed => "fixed",
            Change::Changed => "changed",
            Change::New => "new",
            Change::Missing => "missing",
        }
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CellChange {
    /// The cell's point, which both cells share.
    pub point: Point,
    pub attempt: u32,
    pub baseline: Option<String>,
    pub candidate: Option<String>,
    pub change: Change,
}

/// Every cell of either report, in the candidate's order then the baseline's leftovers.
pub fn compare(baseline: &Report, candidate: &Report) -> Vec<CellChange> {
    compare_cells(&baseline.cells, &candidate.cells)
}

/// [`compare`] of two sets of cells.
pub fn compare_cells(baseline: &[Cell], candidate: &[Cell]) -> Vec<CellChange> {
    // A v2 cell holds all its attempts: its point is the key.
    fn key(c: &Cell) -> &Point {
        &c.point
    }
    // Indexed by point (first cell of each): a lookup per cell over every
    // cell of the other report was quadratic.
    fn index(cells: &[Cell]) -> std::collections::HashMap<&Point, &Cell> {
        let mut at = std::collections::HashMap::new();
        for c in cells {
            at.entry(&c.point).or_insert(c);
        }
        at
    }
    let (before_at, after_at) = (index(baseline), index(candidate));
    let mut rows = Vec::new();
    for cell in candidate {
        let before = before_at.get(key(cell)).copied();
        rows.push(CellChange {
            point: cell.point.clone(),
            attempt: cell.attempt,
            baseline: before.map(outcome),
            candidate: Some(outcome(cell)),
            change: match before {
                None => Change::New,
                Some(before) => classify(before, cell),
            },
        });
    }
    for cell in baseline {
        if !after_at.contains_key(key(cell)) {
            rows.push(CellChange {
                point: cell.point.clone(),
                attempt: cell.attempt,
                baseline: Some(outcome(cell)),
                candidate: None,
                change: Change::Missing,
            });
        }
    }
    rows
}

impl CellChange {
    /// The row's target with the other axes' values, as a cell's row is
    /// labelled (`agent · ts-sdk · sdk fix @ 0.4.2`).
    pub fn label(&self) -> String {
        self.point.label()
    }
}

fn classify(before: &Cell, after: &Cell) -> Change {
    // A cell with no verdict on its restart neither passed nor failed: to
    // or from it is a change, never a regression or a fix.
    let not_applicable = |c: &Cell| c.verdict == Verdict::NotApplicable;
    if not_applicable(before) || not_applicable(after) {
        return match outcome(before) == outcome(after) {
            true => Change::Same,
            false => Change::Changed,
        };
    }
    match (
        before.verdict == Verdict::Pass,
        after.verdict == Verdict::Pass,
    ) {
        (true, true) => Change::Same,
        (true, false) => Change::Regressed,
        (false, true) => Change::Fixed,
        (false, false) if outcome(before) == outcome(after) => Change::Same,
        (false, false) => Change::Changed,
    }
}

/// A cell's verdict in a few words: `pass`, `fail @ phase (http 400 invalid_request)`.
fn outcome(cell: &Cell) -> String {
    let mut text = cell.verdict.as_str().to_string();
    if let Some(boundary) = &cell.failure_boundary {
        text.push_str(&format!(" @ {boundary}"));
        if let Some(sig) = cell.phase(boundary).and_then(|p| p.signature.as_ref()) {
            let words = crate::untrusted::Untrusted::new(&sig.short()).terminal();
            text.push_str(&format!(" ({words})"));
        }
    }
    text
}

/// Why a file is not a report `compare` can read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a continuity report: {0}")]
    NotAReport(#[from] super::upgrade::UpgradeError),
}

/// Reads a `report.json`: any input gives a report or a typed error.
pub fn read_report(text: &str) -> Result<Report, ReadError> {
    // v1 reports (one cell per attempt) are folded into v2 cells.
    super::upgrade::parse_report(text).map_err(ReadError::NotAReport)
}

/// The cells a report holds more than once (a report no run writes: which
/// one counts?), named as messages name a cell ([`Point`]'s display).
pub fn duplicated_cells(report: &Report) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut told = std::collections::HashSet::new();
    let mut duplicated = Vec::new();
    for c in &report.cells {
        if !seen.insert(&c.point) && told.insert(&c.point) {
            duplicated.push(c.point.to_string());
        }
    }
    duplicated
}

/// The baseline's cells the candidate lacks.
pub fn missing_cells(rows: &[CellChange]) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in rows.iter().filter(|r| r.change == Change::Missing) {
        let name = r.point.to_string();
        if seen.insert(name.clone()) {
            missing.push(name);
        }
    }
    missing
}

/// Whether any cell that passed in the baseline does not pass in the candidate.
pub fn has_regressions(rows: &[CellChange]) -> bool {
    rows.iter().any(|r| r.change == Change::Regressed)
}

/// The comparison as a table, with one line naming both runs above it.
pub fn render_comparison(
    baseline: &Report,
    candidate: &Report,
    rows: &[CellChange],
    color: bool,
) -> String {
    // What it shows of each report is its id and server version, inert
    // (not the whole report made so: `compare RUN --axis` calls this per
    // pair of points, which was quadratic in a report with many).
    let name = |r: &Report| {
        let shown = |text: &str| crate::untrusted::Untrusted::new(text).terminal();
        format!(
            "{} ({})",
            shown(&r.run.id),
            shown(
                r.run
                    .server_version
                    .as_deref()
                    .unwrap_or("server version unknown")
            )
        )
    };
    let mut table = super::table::new_table(color);
    table.set_header(["target", "scenario", "baseline", "candidate", "change"]);
    for row in rows {
        // A v2 cell holds all its attempts: the row is the cell, not an attempt.
        let label = row.label();
        let mut change = TableCell::new(row.change.as_str());
        if color {
            change = change.fg(match row.change {
                Change::Regressed => Color::Red,
                Change::Fixed => Color::Green,
                Change::Changed | Change::New | Change::Missing => Color::Yellow,
                Change::Same => Color::Reset,
            });
        }
        // The rows hold the reports' own text: shown inert, as the reports are.
        let shown = |text: &str| crate::untrusted::Untrusted::new(text).terminal();
        table.add_row(vec![
            TableCell::new(shown(&label)),
            TableCell::new(shown(&row.point.scenario)),
            TableCell::new(shown(row.baseline.as_deref().unwrap_or("–"))),
            TableCell::new(shown(row.candidate.as_deref().unwrap_or("–"))),
            change,
        ]);
    }
    let count = |c: Change| rows.iter().filter(|r| r.change == c).count();
    format!(
        "baseline {} → candidate {}\n{} regressed, {} fixed, {} changed, {} same, {} new, {} missing\n{table}\n",
        name(baseline),
        name(candidate),
        count(Change::Regressed),
        count(Change::Fixed),
        count(Change::Changed),
        count(Change::Same),
        count(Change::New),
        count(Change::Missing),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_report_compared_with_itself_is_all_same() {
        let r = fixture::report();
        let rows = compare(&r, &r);
        assert_eq!(rows.len(), r.cells.len());
        assert!(
            rows.iter().all(|row| row.change == Change::Same),
            "{rows:?}"
        );
        assert!(!has_regressions(&rows));
    }

    #[test]
    fn verdict_moves_are_classified() {
        let baseline = fixture::report();
        let mut candidate = baseline.clone();
        let pass = candidate
            .cells
            .iter()
            .position(|c| c.verdict == Verdict::Pass)
            .unwrap();
        let fail = candidate
            .cells
            .iter()
            .position(|c| c.verdict == Verdict::Fail)
            .unwrap();
        candidate.cells[pass].verdict = Verdict::Fail;
        candidate.cells[fail].verdict = Verdict::Pass;
        candidate.cells[fail].failure_boundary = None;
        let dropped = candidate.cells.remove(candidate.cells.len() - 1);
        let rows = compare(&baseline, &candidate);
        let change_of = |cell: &Cell| rows.iter().find(|r| r.point == cell.point).unwrap().change;
        assert_eq!(change_of(&baseline.cells[pass]), Change::Regressed);
        assert_eq!(change_of(&baseline.cells[fail]), Change::Fixed);
        assert_eq!(change_of(&dropped), Change::Missing);
        assert!(has_regressions(&rows));
        let text = render_comparison(&baseline, &candidate, &rows, false);
        assert!(text.contains("1 regressed, 1 fixed"), "{text}");
        assert!(
            text.contains("REGRESSED") && !text.contains('\x1b'),
            "{text}"
        );
    }

    /// A pass that is now `not_applicable` (a report from before the
    /// verdict existed against one after it) is a change to read, never a
    /// regression that fails `compare`.
    #[test]
    fn a_move_to_or_from_not_applicable_is_a_change() {
        let baseline = fixture::report();
        let mut candidate = baseline.clone();
        let pass = candidate
            .cells
            .iter()
            .position(|c| c.verdict == Verdict::Pass)
            .unwrap();
        candidate.cells[pass].verdict = Verdict::NotApplicable;
        let rows = compare(&baseline, &candidate);
        let row = rows
            .iter()
            .find(|r| r.point == baseline.cells[pass].point)
            .unwrap();
        assert_eq!(row.change, Change::Changed);
        assert!(!has_regressions(&rows));
        let back = compare(&candidate, &baseline);
        assert!(back.iter().all(|r| r.change != Change::Fixed), "{back:?}");
        assert!(compare(&candidate, &candidate)
            .iter()
            .all(|r| r.change == Change::Same));
    }

    #[test]
    fn a_different_failure_is_a_change() {
        let baseline = fixture::report();
        let mut candidate = baseline.clone();
        let fail = candidate
            .cells
            .iter()
            .position(|c| c.verdict == Verdict::Fail)
            .unwrap();
        candidate.cells[fail].failure_boundary = Some("somewhereElse".into());
        let rows = compare(&baseline, &candidate);
        assert!(rows.iter().any(|r| r.change == Change::Changed), "{rows:?}");
        assert!(!has_regressions(&rows));
    }
}
