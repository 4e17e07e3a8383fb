//! Where a cell's trace lives: `cells/NNN-TARGET-SCENARIO-ATTEMPT/trace.jsonl`
//! in the run folder, and the trace the runner gives each cell.

use super::{event::CellId, Trace, TraceLevel, TRACE_FILE};
use crate::secret::Secret;
use std::path::Path;

/// The folder of a cell inside the run folder: `cells/003-agent-native-continuity-1`.
pub fn cell_dir_name(index: usize, target: &str, scenario: &str, attempt: u32) -> String {
    format!(
        "cells/{index:03}-{}-{}-{attempt}",
        crate::file_name::safe(target),
        crate::file_name::safe(scenario)
    )
}

/// A cell's trace in `run_dir/<cell folder>/trace.jsonl`, and that path
/// relative to the run folder for the report. A trace that cannot be
/// created costs the file, never the cell: the waits still remember.
pub fn for_cell(
    run_dir: &Path,
    cell_dir: &str,
    level: TraceLevel,
    token: Option<Secret>,
    cell: CellId,
) -> (Trace, Option<String>) {
    if level == TraceLevel::Off {
        return (Trace::build(level, token, None), None);
    }
    match Trace::create(&run_dir.join(cell_dir), level, token.clone(), Some(cell)) {
        Ok(trace) => (trace, Some(format!("{cell_dir}/{TRACE_FILE}"))),
        Err(e) => {
            eprintln!("cannot write the trace of {cell_dir}: {e}");
            (Trace::build(TraceLevel::Off, token, None), None)
        }
    }
}
