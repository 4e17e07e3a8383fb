//! The search of `bisect`, as data: over `n` ordered points whose first
//! (index 0) is the reference, which point to try next and what the tries
//! found. It assumes one change along the list (as the first up to some
//! point, changed from it on). Each try halves what is left, rounding up,
//! with the point after the last standing for "changed" until a point is
//! seen changed: six points with the change at the fourth take three tries
//! (1, 4, 3), and no list of six more than four. A point whose runs
//! disagree (flaky) or that could not run is neither as the first nor
//! changed: it is left out, and the nearest other point of the range is
//! tried instead; the result then says the change lies among them.

/// What a try of one point found, against the first point's verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Judged {
    /// Every cell's runs agree, as the first point's.
    Same,
    /// A cell's runs agree on a verdict other than the first point's.
    Changed,
    /// A cell's runs disagree (and none changed): neither.
    Flaky,
    /// The point could not be run or judged (its build would not start, a
    /// cell was skipped or an error): neither.
    NotRun,
}

/// Where the search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Found {
    /// The first point (an index) whose verdict differs from the first's:
    /// the point before it was tried and found as the first.
    First(usize),
    /// The first change lies in `from..=to` (indices), which holds points
    /// left out (flaky or not run); `changed`: `to` was seen changed, else
    /// perhaps nothing changed.
    Among {
        from: usize,
        to: usize,
        left_out: Vec<usize>,
        changed: bool,
    },
    /// Every point tried is as the first, up to the last.
    NoChange,
}

/// The state of one search.
#[derive(Debug, Clone)]
pub(super) struct Search {
    n: usize,
    /// The last point known to be as the first.
    same: usize,
    /// The first point known to be changed; `n` until one is.
    changed: usize,
    left_out: Vec<usize>,
}

impl Search {
    /// A search over `n` points, the first of them judged already.
    pub(super) fn new(n: usize) -> Search {
        Search {
            n,
            same: 0,
            changed: n,
            left_out: Vec::new(),
        }
    }

    /// The next point to try, `None` when the search is over: the
    /// untried point of the range nearest to its middle (rounded up).
    pub(super) fn next(&self) -> Option<usize> {
        let middle = (self.same + self.changed).div_ceil(2);
        (self.same + 1..self.changed)
            .filter(|i| !self.left_out.contains(i))
            .min_by_key(|i| (i.abs_diff(middle), *i))
    }

    /// What trying point `index` found.
    pub(super) fn record(&mut self, index: usize, judged: Judged) {
        match judged {
            Judged::Same => self.same = self.same.max(index),
            Judged::Changed => self.changed = self.changed.min(index),
            Judged::Flaky | Judged::NotRun => self.left_out.push(index),
        }
    }

    /// Where the search ended (once [`Search::next`] is `None`).
    pub(super) fn found(&self) -> Found {
        let mut left_out: Vec<usize> = self
            .left_out
            .iter()
            .copied()
            .filter(|i| (self.same + 1..self.changed).contains(i))
            .collect();
        left_out.sort_unstable();
        let changed = self.changed < self.n;
        match (left_out.is_empty(), changed) {
            (true, true) => Found::First(self.changed),
            (true, false) => Found::NoChange,
            (false, _) => Found::Among {
                from: self.same + 1,
                to: self.changed.min(self.n - 1),
                left_out,
                changed,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search over `n` points judged by `judge`: the points tried
    /// (the first included) and where it ended.
    fn search(n: usize, judge: impl Fn(usize) -> Judged) -> (Vec<usize>, Found) {
        let mut search = Search::new(n);
        let mut tried = vec![0];
        while let Some(i) = search.next() {
            assert!(!tried.contains(&i), "{i} tried twice: {tried:?}");
            tried.push(i);
            search.record(i, judge(i));
        }
        (tried, search.found())
    }

    fn change_at(at: usize) -> impl Fn(usize) -> Judged {
        move |i| match i >= at {
            true => Judged::Changed,
            false => Judged::Same,
        }
    }

    #[test]
    fn six_points_with_the_change_at_the_fourth_take_three_tries() {
        let (tried, found) = search(6, change_at(3));
        assert_eq!(tried, [0, 3, 2], "points 1, 4, 3");
        assert_eq!(found, Found::First(3));
    }

    #[test]
    fn every_place_of_the_change_is_found_in_few_tries() {
        for n in 2..=16 {
            let most = (n as f64).log2().ceil() as usize + 1;
            for at in 1..n {
                let (tried, found) = search(n, change_at(at));
                assert_eq!(found, Found::First(at), "{n} points, change at {at}");
                assert!(tried.len() <= most, "{n} points, at {at}: {tried:?}");
            }
            let (tried, found) = search(n, |_| Judged::Same);
            assert_eq!(found, Found::NoChange, "{n} points, no change");
            assert!(tried.len() <= most, "{n}: {tried:?}");
        }
    }

    #[test]
    fn a_flaky_point_is_left_out_and_a_neighbour_tried() {
        // Point 4 (index 3) flaky, the change at point 5.
        let judge = |i: usize| match i {
            3 => Judged::Flaky,
            i if i >= 4 => Judged::Changed,
            _ => Judged::Same,
        };
        let (tried, found) = search(6, judge);
        assert!(tried.contains(&3) && tried.contains(&4), "{tried:?}");
        assert_eq!(
            found,
            Found::Among {
                from: 3,
                to: 4,
                left_out: vec![3],
                changed: true
            }
        );
        // Flaky next to a point as the first: the change is still found.
        let judge = |i: usize| match i {
            1 => Judged::NotRun,
            i if i >= 3 => Judged::Changed,
            _ => Judged::Same,
        };
        assert_eq!(search(6, judge).1, Found::First(3));
        // Everything after the first flaky: the change may be anywhere.
        let (_, found) = search(4, |_| Judged::Flaky);
        assert_eq!(
            found,
            Found::Among {
                from: 1,
                to: 3,
                left_out: vec![1, 2, 3],
                changed: false
            }
        );
    }
}
