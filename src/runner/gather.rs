//! A cell's repeats (`--repeat`) are jobs of their own, spread over the
//! queue and perhaps over workers (see [`super::workers`]); this gathers
//! them back into the cell's one record. It numbers a cell's attempts in
//! the order they start, across its repeats and their retries, and says
//! when a cell's last verdict is in and when its last cleanup has run out.

use crate::report::attempts::aggregate;
use crate::report::{Attempt, Cell, Point, Verdict};
use std::collections::HashMap;
use std::sync::Mutex;

/// Every cell of a run being gathered, by its index.
pub(super) struct Gather {
    cells: Mutex<HashMap<usize, Gathering>>,
}

/// What a cell's record names it by.
pub(super) struct CellName {
    pub index: usize,
    /// The point its record names (see `PlannedCell::named`).
    pub named: Point,
}

/// One cell: what it is, and how far its repeats have come.
struct Gathering {
    named: Point,
    /// Repeats whose verdicts are not all in yet.
    unjudged: u32,
    /// Repeats whose cleanup has not run out yet.
    unfinished: u32,
    started: u32,
    verdicts: Vec<(u32, Verdict)>,
    attempts: Vec<Attempt>,
}

impl Gathering {
    /// The cell's record from the attempts it has, in the order they started.
    fn cell(&mut self) -> Cell {
        let mut attempts = std::mem::take(&mut self.attempts);
        attempts.sort_by_key(|a| a.attempt);
        aggregate(self.named.clone(), attempts)
    }
}

impl Gather {
    /// Gathers the cells of `repeats`, one name per repeat of a cell.
    pub(super) fn new(repeats: impl IntoIterator<Item = CellName>) -> Gather {
        let mut cells: HashMap<usize, Gathering> = HashMap::new();
        for name in repeats {
            let gathering = cells.entry(name.index).or_insert_with(|| Gathering {
                named: name.named,
                unjudged: 0,
                unfinished: 0,
                started: 0,
                verdicts: Vec::new(),
                attempts: Vec::new(),
            });
            gathering.unjudged += 1;
            gathering.unfinished += 1;
        }
        Gather {
            cells: Mutex::new(cells),
        }
    }

    fn with<R>(&self, index: usize, f: impl FnOnce(&mut Gathering) -> R) -> R {
        let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        f(cells
            .get_mut(&index)
            .expect("every job's cell is gathered from the start"))
    }

    /// The number of cell `index`'s next attempt (1 for its first).
    pub(super) fn next_number(&self, index: usize) -> u32 {
        self.with(index, |g| {
            g.started += 1;
            g.started
        })
    }

    /// One repeat of cell `index` has its verdicts; once every repeat's
    /// are in, the cell's verdicts in attempt order.
    pub(super) fn judged(
        &self,
        index: usize,
        verdicts: impl IntoIterator<Item = (u32, Verdict)>,
    ) -> Option<Vec<Verdict>> {
        self.with(index, |g| {
            g.verdicts.extend(verdicts);
            g.unjudged = g.unjudged.saturating_sub(1);
            (g.unjudged == 0).then(|| {
                g.verdicts.sort_by_key(|(number, _)| *number);
                g.verdicts.iter().map(|(_, v)| *v).collect()
            })
        })
    }

    /// One repeat of cell `index` has run out; once every repeat has, the
    /// cell's record.
    pub(super) fn finished(&self, index: usize, attempts: Vec<Attempt>) -> Option<Cell> {
        self.with(index, |g| {
            g.attempts.extend(attempts);
            g.unfinished = g.unfinished.saturating_sub(1);
            (g.unfinished == 0).then(|| g.cell())
        })
    }

    /// The cells a stopped run cut short: each with the attempts that ran
    /// (a cell none of whose attempts ran has no record).
    pub(super) fn cut_short(self) -> Vec<(usize, Cell)> {
        let cells = self.cells.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut cut: Vec<(usize, Cell)> = cells
            .into_iter()
            .filter(|(_, g)| g.unfinished > 0 && !g.attempts.is_empty())
            .map(|(index, mut g)| (index, g.cell()))
            .collect();
        cut.sort_by_key(|(index, _)| *index);
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::{CellName, Gather};
    use crate::report::{Point, Verdict};
    use crate::runner::attempts::skipped_attempt;

    /// A repeat of cell `index`.
    fn repeat_of(index: usize) -> CellName {
        CellName {
            index,
            named: Point::new("gateway", "native-continuity"),
        }
    }

    fn attempt(number: u32, verdict: Verdict) -> crate::report::Attempt {
        let mut a = skipped_attempt(number, "scripted");
        a.verdict = verdict;
        a
    }

    /// Repeats that end out of order (another worker's second repeat
    /// before this one's first) still make one cell, its attempts in the
    /// order they started.
    #[test]
    fn a_cells_repeats_make_one_record_in_the_order_they_started() {
        let jobs = [repeat_of(1), repeat_of(1), repeat_of(2), repeat_of(2)];
        let gather = Gather::new(jobs);
        let first = gather.next_number(1);
        let second = gather.next_number(1);
        assert_eq!((first, second), (1, 2));
        assert_eq!(gather.judged(1, [(second, Verdict::Fail)]), None);
        assert_eq!(
            gather.judged(1, [(first, Verdict::Pass)]),
            Some(vec![Verdict::Pass, Verdict::Fail])
        );
        assert!(gather
            .finished(1, vec![attempt(second, Verdict::Fail)])
            .is_none());
        let cell = gather
            .finished(1, vec![attempt(first, Verdict::Pass)])
            .expect("both repeats ran out");
        assert_eq!(cell.verdict, Verdict::Flaky);
        let numbers: Vec<u32> = cell.attempts.iter().map(|a| a.attempt).collect();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(
            gather.next_number(2),
            1,
            "each cell counts its own attempts"
        );
    }

    /// A stopped run keeps what ran of a cell it cut short, and nothing of
    /// a cell that never started or one already recorded.
    #[test]
    fn a_stopped_run_keeps_the_attempts_that_ran() {
        let jobs = [repeat_of(1), repeat_of(1), repeat_of(2), repeat_of(3)];
        let gather = Gather::new(jobs);
        let n = gather.next_number(1);
        gather.judged(1, [(n, Verdict::Pass)]);
        assert!(gather
            .finished(1, vec![attempt(n, Verdict::Pass)])
            .is_none());
        let n = gather.next_number(3);
        gather.judged(3, [(n, Verdict::Pass)]);
        assert!(gather
            .finished(3, vec![attempt(n, Verdict::Pass)])
            .is_some());
        let cut = gather.cut_short();
        assert_eq!(cut.len(), 1);
        assert_eq!(cut[0].0, 1);
        assert_eq!(cut[0].1.verdict, Verdict::Pass);
    }
}
