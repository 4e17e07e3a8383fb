//! A cell's attempts (`--repeat`, `--retries`) folded into one cell: its
//! verdict (`flaky` when attempts disagree), its pass rate, and which
//! attempt's phases it shows. The runner and the v1 upgrade share it.

use super::model::{Attempt, Cell, Point, Verdict};

/// One cell from its attempts, in the order they ran (at least one).
///
/// The cell shows the first attempt that did not pass, so a flaky or failed
/// cell shows where it broke; a passing cell shows its last attempt. An
/// attempt with no verdict on the restart (`not_applicable`) is left out of
/// the verdict and the pass rate: the cell is judged on the attempts that
/// had one, and is `not_applicable` only when none had.
pub fn aggregate(point: Point, mut attempts: Vec<Attempt>) -> Cell {
    let verdict = verdict_of(&attempts);
    let shown = match verdict {
        Verdict::Pass => attempts
            .iter()
            .rposition(|a| a.verdict == Verdict::Pass)
            .unwrap_or(0),
        Verdict::NotApplicable => 0,
        _ => attempts
            .iter()
            .position(|a| !matches!(a.verdict, Verdict::Pass | Verdict::NotApplicable))
            .unwrap_or(0),
    };
    let judged = attempts
        .iter()
        .filter(|a| a.verdict != Verdict::NotApplicable)
        .count();
    let passed = attempts
        .iter()
        .filter(|a| a.verdict == Verdict::Pass)
        .count();
    let many = attempts.len() > 1;
    let pass_rate = (many && judged > 0).then(|| passed as f64 / judged as f64);
    let deciding = attempts.get(shown).cloned();
    if !many {
        attempts.clear();
    }
    let deciding = deciding.unwrap_or_else(|| Attempt {
        attempt: 1,
        retry: false,
        verdict: Verdict::Skipped,
        failure_boundary: None,
        reason: Some("no attempt ran".into()),
        duration_ms: 0,
        phases: Vec::new(),
        restarts: Vec::new(),
        trace: None,
        timing: None,
        checked: None,
        schedule: None,
    });
    let timing = if many {
        super::Floor::sum(attempts.iter().map(|a| &a.timing))
    } else {
        deciding.timing
    };
    Cell {
        turn: super::fate_of_turn(&deciding.phases),
        point,
        attempt: deciding.attempt,
        verdict,
        failure_boundary: deciding.failure_boundary,
        reason: deciding.reason,
        duration_ms: if many {
            attempts.iter().map(|a| a.duration_ms).sum()
        } else {
            deciding.duration_ms
        },
        phases: deciding.phases,
        restarts: deciding.restarts,
        trace: deciding.trace,
        pass_rate,
        attempts,
        expectation: None,
        timing,
        checked: deciding.checked,
        schedule: deciding.schedule,
    }
}

/// `flaky` when some attempts passed and some failed or errored; otherwise
/// `pass` when all passed, or the verdict of the first attempt that did not.
/// Attempts with no verdict on the restart (`not_applicable`) are left
/// out: the cell is `not_applicable` only when every attempt was.
pub(crate) fn verdict_of(attempts: &[Attempt]) -> Verdict {
    let judged: Vec<&Attempt> = attempts
        .iter()
        .filter(|a| a.verdict != Verdict::NotApplicable)
        .collect();
    if judged.is_empty() && !attempts.is_empty() {
        return Verdict::NotApplicable;
    }
    let passed = judged.iter().any(|a| a.verdict == Verdict::Pass);
    let broke = judged
        .iter()
        .any(|a| matches!(a.verdict, Verdict::Fail | Verdict::Error));
    if passed && broke {
        return Verdict::Flaky;
    }
    judged
        .iter()
        .find(|a| a.verdict != Verdict::Pass)
        .map(|a| a.verdict)
        .unwrap_or(if attempts.is_empty() {
            Verdict::Skipped
        } else {
            Verdict::Pass
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: u32, verdict: Verdict, retry: bool) -> Attempt {
        Attempt {
            checked: None,
            attempt: n,
            retry,
            verdict,
            failure_boundary: (verdict == Verdict::Fail).then(|| format!("phase{n}")),
            reason: None,
            duration_ms: 10 * u64::from(n),
            phases: Vec::new(),
            restarts: Vec::new(),
            trace: None,
            timing: Some(crate::Floor {
                floor_ms: u64::from(n),
                overhead_ms: 9 * u64::from(n),
            }),
            schedule: None,
        }
    }

    #[test]
    fn one_attempt_is_the_cell_itself() {
        let cell = aggregate(
            Point::new("agent", "s"),
            vec![attempt(1, Verdict::Fail, false)],
        );
        assert_eq!(cell.verdict, Verdict::Fail);
        assert_eq!(cell.failure_boundary.as_deref(), Some("phase1"));
        assert!(cell.attempts.is_empty());
        assert_eq!(cell.pass_rate, None);
    }

    #[test]
    fn a_pass_on_retry_is_flaky_and_shows_the_failure() {
        let cell = aggregate(
            Point::new("agent", "s"),
            vec![
                attempt(1, Verdict::Fail, false),
                attempt(2, Verdict::Pass, true),
            ],
        );
        assert_eq!(cell.verdict, Verdict::Flaky);
        assert_eq!(cell.attempt, 1);
        assert_eq!(cell.failure_boundary.as_deref(), Some("phase1"));
        assert_eq!(cell.attempts.len(), 2);
        assert_eq!(cell.pass_rate, Some(0.5));
        assert_eq!(cell.duration_ms, 30);
    }

    #[test]
    fn agreeing_attempts_keep_their_verdict() {
        let all_pass = aggregate(
            Point::new("a", "s"),
            (1..=3).map(|n| attempt(n, Verdict::Pass, false)).collect(),
        );
        assert_eq!(all_pass.verdict, Verdict::Pass);
        assert_eq!(all_pass.attempt, 3);
        assert_eq!(all_pass.pass_rate, Some(1.0));
        let broken = vec![
            attempt(1, Verdict::Error, false),
            attempt(2, Verdict::Fail, true),
        ];
        assert_eq!(verdict_of(&broken), Verdict::Error);
        let skipped = vec![attempt(1, Verdict::Skipped, false)];
        assert_eq!(verdict_of(&skipped), Verdict::Skipped);
        assert_eq!(verdict_of(&[]), Verdict::Skipped);
    }

    /// An attempt with no verdict on the restart is kept out of the flaky
    /// logic and the pass rate: a failure beside it is a failure, not
    /// flaky, and a cell is `not_applicable` only when every attempt is.
    #[test]
    fn not_applicable_attempts_are_kept_out_of_the_verdict_and_the_pass_rate() {
        let na = |n| attempt(n, Verdict::NotApplicable, false);
        let all = aggregate(Point::new("a", "s"), vec![na(1), na(2)]);
        assert_eq!(all.verdict, Verdict::NotApplicable);
        assert_eq!(all.pass_rate, None, "no attempt had a verdict to pass");
        let with_fail = aggregate(
            Point::new("a", "s"),
            vec![na(1), attempt(2, Verdict::Fail, false), na(3)],
        );
        assert_eq!(with_fail.verdict, Verdict::Fail);
        assert_eq!(with_fail.attempt, 2, "the cell shows its failure");
        assert_eq!(with_fail.pass_rate, Some(0.0));
        let with_pass = aggregate(
            Point::new("a", "s"),
            vec![attempt(1, Verdict::Pass, false), na(2)],
        );
        assert_eq!(with_pass.verdict, Verdict::Pass);
        assert_eq!((with_pass.attempt, with_pass.pass_rate), (1, Some(1.0)));
    }
}
