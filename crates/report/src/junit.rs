//! `junit.xml` for CI dashboards: one testsuite per scenario, one testcase
//! per cell. Following nextest, a failed check (verdict `fail`) is a
//! `<failure>`, a cell the harness could not run (verdict `error`) is an
//! `<error>`, and a skipped cell is `<skipped>`, as is a cell with no
//! verdict on its restart (`not_applicable`, type `not_applicable`): it
//! is neither a failure nor an error. A cell with several
//! attempts keeps the others in the Surefire shape nextest and Playwright
//! write: a flaky cell counted as passed is a success with a
//! `<flakyFailure>` per failed attempt; a failed cell lists its other failed
//! attempts as `<rerunFailure>` (`Error` kinds for harness errors).

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestRerun, TestSuite};

use super::model::{Attempt, Cell, FlakyResult, Outcome, PhaseResult, Report, Verdict};

pub(crate) fn render_junit(report: &Report) -> Result<String, quick_junit::SerializeError> {
    let report = &*super::inert::of(report);
    let run = &report.run;
    let mut junit = quick_junit::Report::new(format!("continuity {}", run.id));
    junit.set_time(Duration::from_millis(run.duration_ms));
    for (scenario, cells) in report.by_scenario() {
        let mut suite = TestSuite::new(scenario);
        suite.add_properties([
            Property::new("run.id", run.id.as_str()),
            Property::new("harness.version", run.harness_version.as_str()),
            Property::new(
                "server.version",
                run.server_version.as_deref().unwrap_or("unknown"),
            ),
            Property::new("base.url", run.base_url.as_str()),
            Property::new("agent", run.agent.as_str()),
            Property::new("persist", run.persist.as_str()),
        ]);
        let time: u64 = cells.iter().map(|c| c.duration_ms).sum();
        suite.set_time(Duration::from_millis(time));
        for cell in cells {
            suite.add_test_case(test_case(cell, scenario, run.flaky_result));
        }
        junit.add_test_suite(suite);
    }
    junit.to_string()
}

fn test_case(cell: &Cell, scenario: &str, flaky: FlakyResult) -> TestCase {
    let mut status = match cell.verdict {
        Verdict::Pass => TestCaseStatus::success(),
        Verdict::Flaky if flaky == FlakyResult::Pass => TestCaseStatus::success(),
        Verdict::Fail | Verdict::Flaky => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(failure_message(cell));
            if let Some(sig) = boundary_phase(cell).and_then(|p| p.signature.as_ref()) {
                status.set_type(sig.kind.as_str());
            }
            status.set_description(phase_lines(cell));
            status
        }
        Verdict::Error => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_message(
                cell.reason
                    .clone()
                    .unwrap_or_else(|| "the harness could not run this cell".to_string()),
            );
            status.set_type("harness");
            status.set_description(phase_lines(cell));
            status
        }
        Verdict::Interrupted => {
            // Neither passed nor failed: CI shows it as skipped, with why.
            let mut status = TestCaseStatus::skipped();
            status.set_message(
                cell.reason
                    .clone()
                    .unwrap_or_else(|| "interrupted".to_string()),
            );
            status.set_description(phase_lines(cell));
            status
        }
        Verdict::Skipped => {
            let mut status = TestCaseStatus::skipped();
            if let Some(reason) = &cell.reason {
                status.set_message(reason.as_str());
            }
            status
        }
        // No verdict on the restart: neither a failure nor an error. CI
        // shows it skipped, its message naming the call that was missing.
        Verdict::NotApplicable => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(match &cell.reason {
                Some(reason) => format!("not applicable: {reason}"),
                None => "not applicable".to_string(),
            });
            status.set_type("not_applicable");
            status.set_description(phase_lines(cell));
            status
        }
    };
    let passed = matches!(status, TestCaseStatus::Success { .. });
    status.add_reruns(
        cell.attempts
            .iter()
            .filter(|a| matches!(a.verdict, Verdict::Fail | Verdict::Error))
            // A failing test case already shows its deciding attempt.
            .filter(|a| passed || a.attempt != cell.attempt)
            .map(rerun),
    );
    let mut case = TestCase::new(cell.label(), status);
    case.set_classname(scenario);
    case.set_time(Duration::from_millis(cell.duration_ms));
    case
}

/// An earlier (or later) failed attempt of the cell.
fn rerun(attempt: &Attempt) -> TestRerun {
    let kind = match attempt.verdict {
        Verdict::Error => NonSuccessKind::Error,
        _ => NonSuccessKind::Failure,
    };
    let mut rerun = TestRerun::new(kind);
    let boundary = attempt.failure_boundary.as_deref();
    let message = match (boundary, &attempt.reason) {
        (Some(b), _) => attempt_message(b, boundary_of(&attempt.phases, Some(b))),
        (None, Some(reason)) => reason.clone(),
        (None, None) => attempt.verdict.as_str().to_string(),
    };
    rerun
        .set_message(format!("attempt {}: {message}", attempt.attempt))
        .set_time(Duration::from_millis(attempt.duration_ms))
        .set_description(lines_of(&attempt.phases));
    if let Some(sig) = boundary_of(&attempt.phases, boundary).and_then(|p| p.signature.as_ref()) {
        rerun.set_type(sig.kind.as_str());
    }
    rerun
}

fn boundary_of<'a>(phases: &'a [PhaseResult], boundary: Option<&str>) -> Option<&'a PhaseResult> {
    boundary.and_then(|b| phases.iter().find(|p| p.name == b))
}

fn boundary_phase(cell: &Cell) -> Option<&PhaseResult> {
    boundary_of(&cell.phases, cell.failure_boundary.as_deref())
}

/// `fail @ <boundary>: <signature message>`: what a CI summary shows first.
fn failure_message(cell: &Cell) -> String {
    let boundary = cell.failure_boundary.as_deref().unwrap_or("unknown phase");
    let message = attempt_message(boundary, boundary_phase(cell));
    match cell.verdict {
        Verdict::Flaky => format!("flaky ({}): {message}", super::gate::attempts_text(cell)),
        _ => message,
    }
}

fn attempt_message(boundary: &str, phase: Option<&PhaseResult>) -> String {
    match phase.and_then(|p| p.signature.as_ref()) {
        Some(sig) => format!("fail @ {boundary}: {} ({})", sig.message, sig.short()),
        None => format!("fail @ {boundary}"),
    }
}

/// Every phase with its outcome, so the XML alone explains the verdict.
fn phase_lines(cell: &Cell) -> String {
    lines_of(&cell.phases)
}

fn lines_of(phases: &[PhaseResult]) -> String {
    let mut lines = Vec::with_capacity(phases.len());
    for p in phases {
        let outcome = match p.outcome {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Timeout => "timeout",
            Outcome::NotRun => "not run",
            Outcome::Interrupted => "interrupted",
            Outcome::NotApplicable => "not applicable",
        };
        let cleanup = if p.cleanup { " (cleanup)" } else { "" };
        let mut line = format!("{}{cleanup}: {outcome} in {} ms", p.name, p.duration_ms);
        if let Some(sig) = &p.signature {
            line.push_str(&format!(" [{}] {}", sig.short(), sig.message));
            if let Some(pending) = &sig.pending {
                line.push_str(&format!(" (pending: {pending})"));
            }
            if let Some(observed) = &sig.observed {
                line.push_str(&format!(" (observed: {observed})"));
            }
            if let Some(evidence) = sig.evidence() {
                let evidence = crate::untrusted::Untrusted::new(&evidence).terminal();
                line.push_str(&format!(" (evidence: {evidence})"));
            }
        }
        lines.push(line);
    }
    lines.join("\n")
}
