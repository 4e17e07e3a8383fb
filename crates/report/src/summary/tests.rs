//! The summary matrix's tests (`summary.rs`): its columns and rows, the diagonal, and how names and items fit the width.

use super::*;

/// Two SDK points (or stores) of one target and client were two rows
/// that looked alike: `agent ┆ ts-sdk ┆ ❌` above `agent ┆ ts-sdk ┆ ✅`.
#[test]
fn every_axis_a_row_differs_by_has_a_column() {
    let mut report = crate::fixture::candidates("sandbox-agent 0.4.2");
    report.cells[0].point.set(crate::Store::Sqlite.into());
    let grid = render_summary(&report);
    let header = grid.lines().nth(1).unwrap();
    for name in ["target", "client", "sdk", "store", "server"] {
        assert!(header.contains(name), "{name} not in {header}");
    }
    let rows: Vec<&str> = grid.lines().filter(|l| l.contains("agent")).collect();
    assert_eq!(rows.len(), 4, "{grid}");
    for (i, row) in rows.iter().enumerate() {
        assert!(!rows[..i].contains(row), "two rows alike:\n{grid}");
    }
    assert!(
        rows[0].contains("┆ 0.4.2 ┆ sqlite ┆ 0.4.2 ")
            && rows[1].contains("┆ fix   ┆ –      ┆ 0.4.2 "),
        "{grid}"
    );
    let list = fitted_summary(&report, 40);
    assert!(list.contains("agent · ts-sdk · fix · – · 0.4.2"), "{list}");
}

/// Two rows whose labels read alike (an agent named `x · sqlite`, and
/// an agent `x` on the store `sqlite`) are two rows: rows were keyed
/// by their label's text, so the second row's cells were drawn in the
/// first's squares under the first's axis values.
#[test]
fn rows_whose_labels_read_alike_are_two_rows() {
    use crate::AxisValue;
    let mut report = crate::fixture::report();
    let mut alike = report.cells[0].clone();
    report.cells[0]
        .point
        .set(AxisValue::Agent("x · sqlite".into()));
    alike.point.set(AxisValue::Agent("x".into()));
    alike.point.set(crate::Store::Sqlite.into());
    assert_eq!(report.cells[0].label(), alike.label());
    report.cells.push(alike);
    let grid = render_summary(&report);
    let row = |agent: &str, store: &str| {
        grid.lines()
            .any(|l| l.contains(&format!("┆ {agent} ┆ {store} ")))
    };
    assert!(
        row("x · sqlite", "–     ") && row("x         ", "sqlite"),
        "{grid}"
    );
}

/// A report from elsewhere with its cells on the diagonal of a huge
/// grid: each of `n` cells its own target and scenario.
fn diagonal(n: usize) -> Report {
    let mut report = crate::fixture::report();
    let cell = report.cells[0].clone();
    report.cells = (0..n)
        .map(|i| {
            let mut c = cell.clone();
            c.point.target = format!("t{i}").into();
            c.point.scenario = format!("s{i}");
            c
        })
        .collect();
    report.run.targets = (0..n).map(|i| format!("t{i}").into()).collect();
    report.run.scenarios = (0..n).map(|i| format!("s{i}")).collect();
    report
}

/// 5 000 cells on a diagonal (1.4 MB of report) drew a 25-million-square
/// grid: `show` printed 302 MB in 71 s at 8.3 GB. Its cells are listed.
#[test]
fn a_grid_of_mostly_empty_squares_lists_its_cells_instead() {
    let report = diagonal(300);
    let matrix = Grid::of(&report);
    assert!(matrix.sparse());
    let text = fitted_summary(&report, 100);
    assert_eq!(text.lines().count(), 2 * 300 + 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    for i in [0, 150, 299] {
        assert_eq!(lines[2 * i], format!("t{i}"), "{text}");
        assert!(lines[2 * i + 1].ends_with(&format!(" s{i}")), "{text}");
    }
    assert!(
            text.ends_with("89700 of the grid's 90000 squares (300 rows × 300 scenarios) have no cell: not listed\n"),
            "{text}"
        );
    let step = crate::github::render_step_summary(&report, "run");
    assert!(step.contains("| t7 | s7 |"), "{step}");
    assert!(step.contains("89700 of the grid's 90000 squares"), "{step}");
    // Linear in the cells: a grid of 300 × 300 squares alone was 0.4 MB.
    assert!(step.len() < 100_000, "{}", step.len());
    // A run's own matrix, and a shard of it, are drawn as grids.
    assert!(!Grid::of(&crate::fixture::report()).sparse());
    let mut shard = diagonal(60);
    shard.run.targets.truncate(0);
    assert!(!Grid::of(&shard).sparse());
}

#[test]
fn names_break_at_the_middlemost_hyphen() {
    assert_eq!(break_at_hyphens("native-continuity"), "native-\ncontinuity");
    assert_eq!(break_at_hyphens("a-b-c-d"), "a-b-\nc-d");
    assert_eq!(break_at_hyphens("plain"), "plain");
}

#[test]
fn items_flow_whole_within_the_width() {
    let items: Vec<String> = ["✅ aaaa", "❌ bbbbbb", "✅ cc"].map(String::from).to_vec();
    assert_eq!(flow(&items, "  ", 20), "  ✅ aaaa  ❌ bbbbbb\n  ✅ cc\n");
    assert_eq!(flow(&items, "  ", 9), "  ✅ aaaa\n  ❌ bbb…\n  ✅ cc\n");
}
