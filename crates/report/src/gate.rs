//! The words every renderer uses for attempts and expectations: `1/2
//! passed`, `regressed (expected pass)`, and the one-line gate summary
//! (`expectations ci/expect.toml: 9 expected, 1 fixed → fails the gate`).

use super::expect::{expiring_soon, gate_fails, EXPIRES_SOON_DAYS};
use super::model::{Cell, ExpectOutcome, Judgement, Report, Verdict};

/// `1/2 passed`: a cell's attempts, those with no verdict on their
/// restart (`not_applicable`) left out of the count.
pub fn attempts_text(cell: &Cell) -> String {
    let total = cell
        .attempts
        .iter()
        .filter(|a| a.verdict != Verdict::NotApplicable)
        .count()
        .max(1);
    let passed = cell
        .attempts
        .iter()
        .filter(|a| a.verdict == Verdict::Pass)
        .count();
    format!("{passed}/{total} passed")
}

/// The outcome with what was expected when it differs: `expected`,
/// `regressed (expected pass)`, `changed (expected fail @ phase)`, `new`.
pub(crate) fn judgement_text(j: &Judgement) -> String {
    let word = j.outcome.as_str();
    let Some(verdict) = j.verdict else {
        return word.to_string();
    };
    if j.outcome == ExpectOutcome::Expected {
        return word.to_string();
    }
    let mut expected = format!("expected {}", verdict.as_str());
    if matches!(verdict, Verdict::Fail | Verdict::Error) {
        if let Some(b) = &j.boundary {
            expected.push_str(&format!(" @ {b}"));
        }
        if let Some(s) = &j.signature {
            expected.push_str(&format!(" ({s})"));
        }
    }
    match (&j.until, j.outcome) {
        (Some(until), ExpectOutcome::Expired) => format!("{word} (until {until}; {expected})"),
        _ => format!("{word} ({expected})"),
    }
}

/// How many cells have each outcome, in a fixed order, zero counts left out.
pub(crate) fn outcome_counts(report: &Report) -> Vec<(ExpectOutcome, usize)> {
    [
        ExpectOutcome::Expected,
        ExpectOutcome::Regressed,
        ExpectOutcome::Changed,
        ExpectOutcome::Fixed,
        ExpectOutcome::New,
        ExpectOutcome::Expired,
    ]
    .into_iter()
    .map(|o| {
        let n = report
            .cells
            .iter()
            .filter(|c| c.expectation.as_ref().is_some_and(|j| j.outcome == o))
            .count();
        (o, n)
    })
    .filter(|(_, n)| *n > 0)
    .collect()
}

/// `expectations FILE: 9 expected, 1 new → passes the gate`, when the cells were judged.
pub(crate) fn gate_line(report: &Report) -> Option<String> {
    let file = report.run.expect_file.as_deref()?;
    let counts: Vec<String> = outcome_counts(report)
        .into_iter()
        .map(|(o, n)| format!("{n} {}", o.as_str()))
        .collect();
    let verdict = if gate_fails(report) {
        "fails the gate"
    } else {
        "passes the gate"
    };
    Some(format!(
        "expectations {file}: {} → {verdict}",
        if counts.is_empty() {
            "no cells".to_string()
        } else {
            counts.join(", ")
        }
    ))
}

/// `expectations expiring within 14 days:` and one line per entry
/// (`ci/expect.toml:12 until 2026-03-01 (in 10 days): ISSUE: reason`),
/// each passed through `shown` (the output's way of showing text), or
/// nothing when none expires soon.
pub(crate) fn expiring_lines(report: &Report, shown: impl Fn(&str) -> String) -> Vec<String> {
    let soon = expiring_soon(report);
    if soon.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "expectations expiring within {EXPIRES_SOON_DAYS} days:"
    )];
    for e in soon {
        let when = match e.days_left {
            0 => "today, its last day".to_string(),
            1 => "in 1 day".to_string(),
            n => format!("in {n} days"),
        };
        let mut line = format!("{} until {} ({when})", e.entry, e.until);
        for more in [e.issue, e.reason].into_iter().flatten() {
            line.push_str(": ");
            line.push_str(more.lines().next().unwrap_or(""));
        }
        lines.push(shown(&line));
    }
    lines
}

/// The cells that fail the gate, or that a reader must look at (flaky,
/// fixed even when allowed): what CI annotations and summaries list.
pub(crate) fn notable_cells(report: &Report) -> Vec<&Cell> {
    report
        .cells
        .iter()
        .filter(|c| {
            c.verdict == Verdict::Flaky
                || match &c.expectation {
                    Some(j) => j.fails_run || j.outcome == ExpectOutcome::Fixed,
                    None => c.fails_run_alone(report.run.flaky_result),
                }
        })
        .collect()
}
