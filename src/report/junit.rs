//! `junit.xml` for CI dashboards: one testsuite per scenario, one testcase
//! per cell. Following nextest, a failed check (verdict `fail`) is a
//! `<failure>`, a cell the harness could not run (verdict `error`) is an
//! `<error>`, and a skipped cell is `<skipped>`.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::model::{Cell, Outcome, Report, Verdict};

pub fn render_junit(report: &Report) -> Result<String, String> {
    let run = &report.run;
    let mut junit = quick_junit::Report::new(format!("continuity {}", run.id));
    junit.set_time(Duration::from_millis(run.duration_ms));
    for scenario in report.scenario_order() {
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
        let cells = report.cells_of(scenario);
        let time: u64 = cells.iter().map(|c| c.duration_ms).sum();
        suite.set_time(Duration::from_millis(time));
        for cell in cells {
            suite.add_test_case(test_case(cell, scenario, run.repeat));
        }
        junit.add_test_suite(suite);
    }
    junit.to_string().map_err(|e| e.to_string())
}

fn test_case(cell: &Cell, scenario: &str, repeat: u32) -> TestCase {
    let status = match cell.verdict {
        Verdict::Pass => TestCaseStatus::success(),
        Verdict::Fail => {
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
    };
    let mut case = TestCase::new(cell.label(repeat), status);
    case.set_classname(scenario);
    case.set_time(Duration::from_millis(cell.duration_ms));
    case
}

fn boundary_phase(cell: &Cell) -> Option<&super::model::PhaseResult> {
    cell.failure_boundary.as_deref().and_then(|b| cell.phase(b))
}

/// `fail @ <boundary>: <signature message>`: what a CI summary shows first.
fn failure_message(cell: &Cell) -> String {
    let boundary = cell.failure_boundary.as_deref().unwrap_or("unknown phase");
    match boundary_phase(cell).and_then(|p| p.signature.as_ref()) {
        Some(sig) => format!("fail @ {boundary}: {} ({})", sig.message, sig.short()),
        None => format!("fail @ {boundary}"),
    }
}

/// Every phase with its outcome, so the XML alone explains the verdict.
fn phase_lines(cell: &Cell) -> String {
    let mut lines = Vec::with_capacity(cell.phases.len());
    for p in &cell.phases {
        let outcome = match p.outcome {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Timeout => "timeout",
            Outcome::NotRun => "not run",
            Outcome::Interrupted => "interrupted",
        };
        let cleanup = if p.cleanup { " (cleanup)" } else { "" };
        let mut line = format!("{}{cleanup}: {outcome} in {} ms", p.name, p.duration_ms);
        if let Some(sig) = &p.signature {
            line.push_str(&format!(" [{}] {}", sig.short(), sig.message));
            if let Some(pending) = &sig.pending {
                line.push_str(&format!(" (pending: {pending})"));
            }
        }
        lines.push(line);
    }
    lines.join("\n")
}
