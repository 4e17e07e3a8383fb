//! The summary matrix: targets × scenarios, each cell a verdict glyph (with
//! the pass rate when cells ran several attempts, and the expectation
//! outcome when judged), and a column for each axis the cells carry
//! (agent, client, SDK point, store, server point). [`render_summary`] is the grid as wide
//! as it comes; [`fitted_summary`] fits a terminal's width: the grid, the
//! grid with its scenario names broken at their hyphens, or, when even that
//! is too wide (many scenarios or axes), a list with one line per row.
//! A grid of mostly empty squares (a report from elsewhere may put a few
//! cells on a huge one) is never drawn: its cells are listed instead, so
//! what a rendering costs follows the cells, not the grid ([`Grid::sparse`]).
//! Never coloured.

use comfy_table::Cell as TableCell;

use super::model::{Axis, Cell, Report, RowPoint, Verdict};
use crate::fit;
use std::collections::HashMap;

/// Placeholder for a matrix point without a cell.
const NOT_RUN: &str = "–";

/// The grid, with every scenario name on one line (what the tests pin
/// down; the terminal takes it through [`fitted_summary`]).
#[cfg(test)]
pub(crate) fn render_summary(report: &Report) -> String {
    grid(report, &Grid::of(report), false)
}

/// The summary in at most `width` columns: the grid when it fits, then the
/// grid with two-line scenario names, else the list form; the cells alone
/// when the grid is mostly empty squares.
pub(crate) fn fitted_summary(report: &Report, width: usize) -> String {
    let matrix = Grid::of(report);
    if matrix.sparse() {
        return sparse_list(report, &matrix, width);
    }
    for broken in [false, true] {
        // A grid whose scenario columns alone are too wide is not drawn.
        if matrix.least_width(broken) > width {
            continue;
        }
        let text = grid(report, &matrix, broken);
        if fit::widest_line(&text) <= width {
            return text;
        }
    }
    list(report, &matrix, width)
}

/// The matrix a rendering draws: its rows, its scenarios, and the cells
/// of each square, found in one pass.
pub(crate) struct Grid<'a> {
    rows: Vec<RowPoint<'a>>,
    scenarios: Vec<&'a str>,
    places: Places<'a>,
    cells: usize,
}

impl<'a> Grid<'a> {
    pub(crate) fn of(report: &'a Report) -> Grid<'a> {
        let places = Places::of(report);
        Grid {
            rows: report.row_order(),
            scenarios: report.scenario_order(),
            places,
            cells: report.cells.len(),
        }
    }

    fn squares(&self) -> usize {
        self.rows.len().saturating_mul(self.scenarios.len())
    }

    /// Whether most squares would be empty: more than 4 per cell (and a
    /// few thousand). A run's matrix, or a shard of one in up to 4, is
    /// not; a report that puts 5 000 cells on the diagonal of 5 000
    /// targets × 5 000 scenarios (1.4 MB) is, and drawing it made `show`
    /// print 302 MB in 71 s at 8.3 GB.
    pub(crate) fn sparse(&self) -> bool {
        self.squares() > self.cells.saturating_mul(4).saturating_add(4096)
    }

    /// The least width the grid's scenario columns take (each name, or its
    /// longer half when `broken`, and a column's padding and border).
    fn least_width(&self, broken: bool) -> usize {
        self.scenarios
            .iter()
            .map(|s| {
                let name = if broken {
                    break_at_hyphens(s)
                } else {
                    s.to_string()
                };
                name.lines().map(fit::width).max().unwrap_or(0) + 3
            })
            .sum()
    }

    /// Each row that has cells, with its scenarios that do (in scenario
    /// order) and their cells.
    pub(crate) fn occupied(&self) -> Vec<(&RowPoint<'a>, Squares<'_, 'a>)> {
        let rank: HashMap<&str, usize> = self
            .scenarios
            .iter()
            .enumerate()
            .map(|(i, s)| (*s, i))
            .collect();
        // Each row's squares, with their scenario's place in the order.
        let mut of_row: HashMap<RowPoint<'a>, Vec<(usize, Square<'_, 'a>)>> = HashMap::new();
        for ((row, scenario), cells) in &self.places.cells {
            let at = rank.get(scenario).copied().unwrap_or(usize::MAX);
            of_row
                .entry(*row)
                .or_default()
                .push((at, (*scenario, cells.as_slice())));
        }
        self.rows
            .iter()
            .filter_map(|row| {
                let mut squares = of_row.remove(row)?;
                squares.sort_by_key(|(at, (scenario, _))| (*at, *scenario));
                Some((row, squares.into_iter().map(|(_, square)| square).collect()))
            })
            .collect()
    }

    /// The cells of one square.
    pub(crate) fn at(&self, row: &RowPoint<'a>, scenario: &'a str) -> &[&'a Cell] {
        self.places.at(row, scenario)
    }

    pub(crate) fn rows(&self) -> &[RowPoint<'a>] {
        &self.rows
    }

    pub(crate) fn scenarios(&self) -> &[&'a str] {
        &self.scenarios
    }

    /// What a sparse rendering says of the squares it leaves out.
    pub(crate) fn left_out(&self, listed: usize) -> String {
        format!(
            "{} of the grid's {} squares ({} rows × {} scenarios) have no cell: not listed",
            self.squares().saturating_sub(listed),
            self.squares(),
            self.rows.len(),
            self.scenarios.len()
        )
    }
}

/// A square that has cells: its scenario and its cells.
pub(crate) type Square<'g, 'a> = (&'a str, &'g [&'a Cell]);

/// A row's squares that have cells, in scenario order.
pub(crate) type Squares<'g, 'a> = Vec<Square<'g, 'a>>;

/// Which axes the cells carry, each a column of its own, in row-label order.
#[derive(Clone)]
struct Axes(Vec<Axis>);

impl Axes {
    fn of(report: &Report) -> Axes {
        Axes(
            Axis::LABEL_ORDER
                .into_iter()
                .filter(|a| report.cells.iter().any(|c| c.point.get(*a).is_some()))
                .collect(),
        )
    }

    fn header(&self) -> Vec<&'static str> {
        let mut names = vec!["target"];
        names.extend(self.0.iter().map(|a| a.column()));
        names
    }

    fn labels<'a>(&self, row: &RowPoint<'a>) -> Vec<&'a str> {
        let mut labels = vec![row.target.as_str()];
        let value = |axis: Axis| row.name_on(axis).unwrap_or(NOT_RUN);
        labels.extend(self.0.iter().map(|a| value(*a)));
        labels
    }
}

/// The cells by row and scenario, made in one pass (a lookup per grid
/// square over every cell was quadratic: 40k cells took seconds).
struct Places<'a> {
    cells: HashMap<(RowPoint<'a>, &'a str), Vec<&'a Cell>>,
}

impl<'a> Places<'a> {
    fn of(report: &'a Report) -> Places<'a> {
        let mut cells: HashMap<(RowPoint<'a>, &'a str), Vec<&'a Cell>> = HashMap::new();
        for cell in &report.cells {
            let square = (cell.point.row(), cell.point.scenario.as_str());
            cells.entry(square).or_default().push(cell);
        }
        Places { cells }
    }

    fn at(&self, row: &RowPoint<'a>, scenario: &'a str) -> &[&'a Cell] {
        self.cells.get(&(*row, scenario)).map_or(&[], Vec::as_slice)
    }
}

fn grid(report: &Report, matrix: &Grid<'_>, broken: bool) -> String {
    let scenarios = &matrix.scenarios;
    let axes = Axes::of(report);
    let mut table = super::table::new_table(false);
    let mut header: Vec<TableCell> = axes.header().into_iter().map(TableCell::new).collect();
    header.extend(scenarios.iter().map(|s| {
        TableCell::new(if broken {
            break_at_hyphens(s)
        } else {
            s.to_string()
        })
    }));
    table.set_header(header);
    for row in &matrix.rows {
        let mut line: Vec<TableCell> = axes.labels(row).into_iter().map(TableCell::new).collect();
        for scenario in scenarios {
            let cells = matrix.at(row, scenario);
            line.push(TableCell::new(summary_text(cells, report.run.repeat)));
        }
        table.add_row(line);
    }
    let mut out = table.to_string();
    out.push('\n');
    out
}

/// `native-continuity` as `native-\ncontinuity`: a name on two lines at
/// its middlemost hyphen, so no line of it is longer than need be.
fn break_at_hyphens(name: &str) -> String {
    let middle = name.len() / 2;
    let at = name
        .match_indices('-')
        .map(|(i, _)| i)
        .min_by_key(|i| i.abs_diff(middle));
    match at {
        Some(i) => format!("{}\n{}", &name[..=i], &name[i + 1..]),
        None => name.to_string(),
    }
}

/// One line per row (its target and axis labels), then its scenarios as
/// `glyph name` items, as many to a line as fit, each item whole (cut with
/// an ellipsis only if it alone is wider than the line).
fn list(report: &Report, matrix: &Grid<'_>, width: usize) -> String {
    let axes = Axes::of(report);
    let mut out = String::new();
    for row in &matrix.rows {
        out.push_str(&fit::cut(&axes.labels(row).join(" · "), width));
        out.push('\n');
        let items: Vec<String> = matrix
            .scenarios
            .iter()
            .map(|s| item(s, matrix.at(row, s), report.run.repeat))
            .collect();
        out.push_str(&flow(&items, "  ", width));
    }
    out
}

/// [`list`] of the rows and squares that have cells, and how many squares
/// it left out.
fn sparse_list(report: &Report, matrix: &Grid<'_>, width: usize) -> String {
    let axes = Axes::of(report);
    let mut out = String::new();
    let mut listed = 0;
    for (row, squares) in matrix.occupied() {
        out.push_str(&fit::cut(&axes.labels(row).join(" · "), width));
        out.push('\n');
        listed += squares.len();
        let items: Vec<String> = squares
            .iter()
            .map(|(s, cells)| item(s, cells, report.run.repeat))
            .collect();
        out.push_str(&flow(&items, "  ", width));
    }
    out.push_str(&fit::cut(
        &format!("{NOT_RUN} {}", matrix.left_out(listed)),
        width,
    ));
    out.push('\n');
    out
}

/// `glyph scenario (extra)`: one square of a list.
fn item(scenario: &str, cells: &[&Cell], repeat: u32) -> String {
    match summary_parts(cells, repeat) {
        (glyph, Some(extra)) => format!("{glyph} {scenario} ({extra})"),
        (glyph, None) => format!("{glyph} {scenario}"),
    }
}

/// `items` after `indent`, two spaces apart, a new line whenever the next would pass `width`.
fn flow(items: &[String], indent: &str, width: usize) -> String {
    let room = width.saturating_sub(fit::width(indent));
    let mut out = String::new();
    let mut line = String::new();
    for item in items {
        let item = fit::cut(item, room);
        if !line.is_empty() && fit::width(&line) + 2 + fit::width(&item) > room {
            out.push_str(&format!("{indent}{line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push_str("  ");
        }
        line.push_str(&item);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}{line}\n"));
    }
    out
}

fn summary_text(cells: &[&Cell], repeat: u32) -> String {
    match summary_parts(cells, repeat) {
        (glyph, Some(extra)) => format!("{glyph} {extra}"),
        (glyph, None) => glyph.to_string(),
    }
}

/// The glyph and what follows it: `1/2 passed`, the expectation outcome.
fn summary_parts(cells: &[&Cell], repeat: u32) -> (&'static str, Option<String>) {
    if cells.is_empty() {
        return (NOT_RUN, None);
    }
    if let [cell] = cells {
        let mut extra: Vec<String> = Vec::new();
        if cell.pass_rate.is_some() {
            extra.push(super::gate::attempts_text(cell));
        }
        if let Some(j) = &cell.expectation {
            extra.push(j.outcome.as_str().to_string());
        }
        return (
            cell.verdict.glyph(),
            (!extra.is_empty()).then(|| extra.join(" ")),
        );
    }
    let count = |v: Verdict| cells.iter().filter(|c| c.verdict == v).count();
    let (passed, failed, errored) = (
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Error),
    );
    let not_applicable = count(Verdict::NotApplicable);
    // The worst verdict decides the glyph: one failure among passes is a failure.
    let glyph = if failed > 0 {
        Verdict::Fail.glyph()
    } else if errored > 0 {
        Verdict::Error.glyph()
    } else if passed > 0 {
        Verdict::Pass.glyph()
    } else if not_applicable == cells.len() {
        Verdict::NotApplicable.glyph()
    } else {
        Verdict::Skipped.glyph()
    };
    // Cells with no verdict on their restart are out of the count.
    if repeat > 1 || cells.len() > 1 {
        (
            glyph,
            Some(format!("{passed}/{}", cells.len() - not_applicable)),
        )
    } else {
        (glyph, None)
    }
}

#[cfg(test)]
mod tests;
