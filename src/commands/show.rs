//! `continuity show`: a finished run read back from its folder — the matrix,
//! or one cell's timeline as text (`--cell TARGET/SCENARIO[#ATTEMPT]`).

use super::{load_report, usage, Failure};
use crate::report::{render_text, timeline::render_timeline, Cell, Report};
use crate::trace::read_trace;
use std::io::IsTerminal;
use std::path::Path;

/// The text to print for `show RUN [--cell …]`.
pub fn show(run: &Path, cell: Option<&str>) -> Result<String, Failure> {
    let report = load_report(run)?;
    let Some(wanted) = cell else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let mut out = render_text(&report, color);
        out.push_str(
            "\none cell's timeline: continuity show RUN --cell TARGET/SCENARIO[#ATTEMPT]\n",
        );
        return Ok(out);
    };
    let cell = find_cell(&report, wanted)?;
    let dir = if run.is_dir() {
        run.to_path_buf()
    } else {
        run.parent().unwrap_or(Path::new(".")).to_path_buf()
    };
    let events = match &cell.trace {
        Some(path) => read_trace(&dir.join(path)).map_err(|e| usage(e.to_string()))?,
        None => Vec::new(),
    };
    Ok(render_timeline(cell, &events, report.run.repeat))
}

/// `TARGET/SCENARIO[#ATTEMPT]`; without `#` the first attempt.
fn find_cell<'a>(report: &'a Report, wanted: &str) -> Result<&'a Cell, Failure> {
    let (path, attempt) = match wanted.rsplit_once('#') {
        Some((path, n)) => (
            path,
            n.parse::<u32>().map_err(|_| {
                usage(format!(
                    "--cell {wanted:?}: the attempt after # must be a number"
                ))
            })?,
        ),
        None => (wanted, 1),
    };
    let Some((target, scenario)) = path.split_once('/') else {
        return Err(usage(format!(
            "--cell {wanted:?}: expected TARGET/SCENARIO[#ATTEMPT]"
        )));
    };
    report
        .cells
        .iter()
        .find(|c| c.target == target && c.scenario == scenario && c.attempt == attempt)
        .ok_or_else(|| {
            let known: Vec<String> = report
                .cells
                .iter()
                .map(|c| format!("{}/{}#{}", c.target, c.scenario, c.attempt))
                .collect();
            usage(format!(
                "no cell {target}/{scenario}#{attempt} in this run (cells: {})",
                known.join(", ")
            ))
        })
}
