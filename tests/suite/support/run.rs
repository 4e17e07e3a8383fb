//! The one way a test runs `continuity run` on its own local stack and
//! reads what it wrote: the run (in a stack slot), whether it ran to its
//! end, its report, the report's cells, one cell by its point, a cell's
//! phase and its trace.

use super::{continuity_with, stack_slot};
use continuity::exit_codes;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `continuity run ARGS --out DIR/run` on its own local stack, in a stack
/// slot ([`stack_slot`]): the run folder and what the run printed.
pub fn run_in(dir: &Path, args: &[&str]) -> (PathBuf, Output) {
    let _one = stack_slot();
    let out = dir.join("run");
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let run = continuity_with(&all, &[]);
    (out, run)
}

/// [`run_in`] a temporary folder of its own: the folder (kept while the
/// caller holds it), the run folder and what the run printed.
pub fn run_on_the_local_stack(args: &[&str]) -> (tempfile::TempDir, PathBuf, Output) {
    let dir = tempfile::tempdir().unwrap();
    let (out, run) = run_in(dir.path(), args);
    (dir, out, run)
}

/// [`run_on_the_local_stack`], then its report. Fails loudly, with what
/// the run printed, when it wrote no report.
pub fn run_to_report(args: &[&str]) -> (tempfile::TempDir, PathBuf, Value) {
    let (dir, out, run) = run_on_the_local_stack(args);
    assert!(out.join("report.json").exists(), "{run:?}");
    let report = report(&out);
    (dir, out, report)
}

/// Exited passed or failed: the run ran every cell it was dealt.
pub fn ran_to_the_end(run: &Output) -> bool {
    [exit_codes::OK, exit_codes::FAILED]
        .iter()
        .any(|&code| run.status.code() == Some(i32::from(code)))
}

/// The `report.json` of a run folder.
pub fn report(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report in {}: {e}", out.display()));
    serde_json::from_str(&text).unwrap()
}

/// The report's cells, in its order.
pub fn cells(report: &Value) -> &Vec<Value> {
    report["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("no cells in {report}"))
}

/// The report's cell at `point`: each `(key, value)` one of its fields
/// (`target`, `scenario`, an axis such as `client` or `persist`).
pub fn cell_where<'a>(report: &'a Value, point: &[(&str, &str)]) -> &'a Value {
    cells(report)
        .iter()
        .find(|c| point.iter().all(|(key, value)| c[*key] == *value))
        .unwrap_or_else(|| panic!("no cell with {point:?} in {report}"))
}

/// The report's cell for a target and scenario (the first, whatever its
/// other axes).
pub fn cell<'a>(report: &'a Value, target: &str, scenario: &str) -> &'a Value {
    cell_where(report, &[("target", target), ("scenario", scenario)])
}

/// A cell's phase by name.
pub fn phase<'a>(cell: &'a Value, name: &str) -> &'a Value {
    cell["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {cell}"))
}

/// Every event of a cell's trace (of the attempt the cell names).
pub fn trace_of(out: &Path, cell: &Value) -> Vec<Value> {
    let path = out.join(cell["trace"].as_str().expect("the cell has a trace"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
