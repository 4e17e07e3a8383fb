//! One report from a run header and cells that ran apart (on several
//! workers, or in several shard runs): the totals, the run's floor and
//! overhead (`run.timing`) and the header's axis lists are recomputed from
//! the cells. The runner and `merge` both end here, so no copy of the join
//! can forget one of them (the client axis's own join once forgot
//! `run.timing`, so a two-client run's floor covered half its cells).

use super::model::{Cell, Floor, Report, RunInfo, Totals, SCHEMA_ID};

/// The report of `cells` under `run`: every target and scenario a cell
/// names is in the header's lists (after the ones it had, in cell order),
/// and the totals and timing are the cells' own.
pub fn join(mut run: RunInfo, cells: Vec<Cell>) -> Report {
    for cell in &cells {
        add_once(&mut run.targets, &cell.point.target);
        add_once(&mut run.scenarios, &cell.point.scenario);
    }
    run.timing = Floor::of_cells(&cells);
    Report {
        schema: SCHEMA_ID.into(),
        totals: Totals::of(&cells),
        run,
        cells,
    }
}

fn add_once<T: Clone + PartialEq>(list: &mut Vec<T>, name: &T) {
    if !list.contains(name) {
        list.push(name.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::ClientKind;

    /// Cells of two clients, each with its own floor: the run's timing is
    /// the sum over all of them, not over the first client's.
    #[test]
    fn the_run_timing_and_totals_cover_every_cell() {
        let mut report = fixture::report();
        let mut cells = Vec::new();
        for (n, client) in [ClientKind::Rust, ClientKind::TsSdk]
            .into_iter()
            .enumerate()
        {
            let mut cell = report.cells[0].clone();
            cell.point.set(client.into());
            cell.point.target = format!("target-{n}").into();
            cell.timing = Some(Floor {
                floor_ms: 100 * (n as u64 + 1),
                overhead_ms: 10 * (n as u64 + 1),
            });
            cells.push(cell);
        }
        report.run.targets = vec!["target-0".into()];
        let joined = join(report.run, cells);
        assert_eq!(
            joined.run.timing,
            Some(Floor {
                floor_ms: 300,
                overhead_ms: 30
            })
        );
        assert_eq!(joined.totals.cells, 2);
        assert_eq!(joined.run.targets, ["target-0", "target-1"]);
    }
}
