//! The baseline's tests (`baseline.rs`): a run judged against its own baseline is all expected, over every axis, verdict and quarantine.

use super::*;
use crate::expect::{gate_fails, Expectations, GateOptions};
use crate::fixture;
use crate::ExpectOutcome;

/// The run's targets as `check_names` takes them.
fn target_names(report: &Report) -> Vec<String> {
    report.run.targets.iter().map(|t| t.to_string()).collect()
}

#[test]
fn a_run_judged_against_its_own_baseline_is_all_expected() {
    // On a client axis the same target × scenario differs by client.
    let mut two_clients = fixture::report();
    let mut hosted = two_clients.cells.clone();
    for cell in &mut hosted {
        cell.point.set(crate::ClientKind::TsSdk.into());
        cell.verdict = Verdict::Pass;
        cell.failure_boundary = None;
    }
    for cell in &mut two_clients.cells {
        cell.point.set(crate::ClientKind::Rust.into());
    }
    two_clients.cells.extend(hosted);
    // On the server and SDK axes of a candidate's run, points by label.
    let candidates = fixture::candidates("sandbox-agent 0.4.2");
    // Two clients × two stores, where one store fails and the other
    // passes (the committed v2 report): an entry without the store
    // would shadow its twin.
    let stores: Report = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/report-v2/report.json"
    ))
    .unwrap();
    // Two agents, one failing where the other passes.
    let mut two_agents = fixture::report();
    let mut codex = two_agents.cells.clone();
    for cell in &mut codex {
        cell.point.set(crate::AxisValue::Agent("codex".into()));
        cell.verdict = Verdict::Pass;
        cell.failure_boundary = None;
    }
    for cell in &mut two_agents.cells {
        cell.point.set(crate::AxisValue::Agent("mock".into()));
    }
    two_agents.cells.extend(codex);
    two_agents.run.agent = "mock, codex".into();
    for mut report in [
        fixture::report(),
        fixture::repeated_report(),
        two_clients,
        candidates,
        stores,
        two_agents,
    ] {
        let text = render_baseline(&report, &Quarantine::default()).text;
        let x = Expectations::parse(std::path::Path::new("b.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        x.check_names(&target_names(&report), &report.run.scenarios)
            .unwrap();
        assert!(x.shadowed(&report).is_empty(), "{text}");
        x.judge(&mut report, GateOptions::default());
        for cell in &report.cells {
            assert_eq!(
                cell.expectation.as_ref().unwrap().outcome,
                ExpectOutcome::Expected,
                "{} × {}\n{text}",
                cell.point.target,
                cell.point.scenario
            );
        }
        assert!(!gate_fails(&report));
    }
    let text = render_baseline(&fixture::report(), &Quarantine::default()).text;
    assert!(
        text.contains("signature = \"http 400 invalid_request\""),
        "{text}"
    );
    assert!(text.contains("server_version = \"=0.4.2\""), "{text}");
    let text = render_baseline(
        &fixture::candidates("sandbox-agent 0.4.2"),
        &Quarantine::default(),
    )
    .text;
    assert!(
        text.contains("server = \"fix\"\nserver_version = \"=0.4.2\"\nsdk = \"fix\""),
        "{text}"
    );
}

/// Two cells that differ only on one axis, whichever, get an entry
/// each, and each entry decides its own cell: a baseline once wrote
/// only the axes it listed, so two cells on two values of another
/// axis got one entry twice, the second shadowed by the first.
#[test]
fn cells_differing_on_any_one_axis_get_an_entry_each() {
    for axis in crate::Axis::ALL {
        let mut report = fixture::report();
        let template = report.cells[0].clone();
        let values = axis.known_names().unwrap_or(vec!["0.4.0", "0.4.2"]);
        report.cells = [(values[0], Verdict::Pass), (values[1], Verdict::Fail)]
            .map(|(value, verdict)| {
                let mut cell = template.clone();
                if axis == crate::Axis::Sdk {
                    // A value on the SDK axis is a hosted client's.
                    cell.point.set(crate::ClientKind::TsSdk.into());
                }
                cell.point.set(crate::AxisValue::parse(axis, value));
                cell.verdict = verdict;
                cell
            })
            .to_vec();
        let text = render_baseline(&report, &Quarantine::default()).text;
        let entries: Vec<&str> = text.split("[[expect]]").skip(1).collect();
        assert_eq!(entries.len(), 2, "{axis:?}\n{text}");
        assert_ne!(
            entries[0].replace("pass", "fail"),
            entries[1].replace("pass", "fail"),
            "{axis:?}: one entry twice\n{text}"
        );
        let x = Expectations::parse(std::path::Path::new("b.toml"), &text)
            .unwrap_or_else(|e| panic!("{axis:?}: {e}\n{text}"));
        assert!(x.shadowed(&report).is_empty(), "{axis:?}\n{text}");
        x.judge(&mut report, GateOptions::default());
        for cell in &report.cells {
            let outcome = cell.expectation.as_ref().unwrap().outcome;
            assert_eq!(outcome, ExpectOutcome::Expected, "{axis:?}\n{text}");
        }
    }
}

/// `baseline --until --issue`: each entry of a cell that did not pass
/// is a quarantine, which excuses the cell through that day and not
/// after; a passing cell's entry carries neither.
#[test]
fn a_baseline_with_until_writes_a_quarantine_that_expires() {
    let quarantine = Quarantine {
        until: Some(jiff::civil::date(2026, 12, 31)),
        issue: Some("https://github.com/rivet-dev/sandbox-agent/issues/189".into()),
    };
    let report = fixture::report();
    let text = render_baseline(&report, &quarantine).text;
    let x = Expectations::parse(std::path::Path::new("b.toml"), &text).unwrap();
    let entries: Vec<&str> = text.split("[[expect]]").skip(1).collect();
    for (entry, cell) in entries.iter().zip(&report.cells) {
        let quarantined = entry.contains("until = \"2026-12-31\"")
            && entry.contains("issue = \"https://github.com/rivet-dev/sandbox-agent/issues/189\"");
        assert_eq!(quarantined, cell.verdict != Verdict::Pass, "{entry}");
    }
    let on = |day| GateOptions {
        today: Some(day),
        ..GateOptions::default()
    };
    let mut before = report.clone();
    x.judge(&mut before, on(jiff::civil::date(2026, 12, 31)));
    assert!(!gate_fails(&before));
    let mut after = report.clone();
    x.judge(&mut after, on(jiff::civil::date(2027, 1, 1)));
    assert!(after
        .cells
        .iter()
        .any(|c| c.expectation.as_ref().unwrap().outcome == ExpectOutcome::Expired));
    assert!(gate_fails(&after));
}

/// An interrupted run's baseline once wrote `verdict = "interrupted"`,
/// which `--expect` then refused ("is not a verdict").
#[test]
fn every_verdict_a_baseline_writes_is_one_expect_reads() {
    let mut report = fixture::repeated_report();
    let verdicts = [
        Verdict::Pass,
        Verdict::Fail,
        Verdict::Error,
        Verdict::Skipped,
        Verdict::Flaky,
        Verdict::Interrupted,
    ];
    let template = report.cells[0].clone();
    report.cells = verdicts
        .iter()
        .enumerate()
        .map(|(n, v)| {
            let mut cell = template.clone();
            cell.point.target = format!("t{n}").into();
            cell.verdict = *v;
            cell
        })
        .collect();
    report.run.targets = (0..verdicts.len())
        .map(|n| format!("t{n}").into())
        .collect();
    let baseline = render_baseline(&report, &Quarantine::default());
    let x = Expectations::parse(std::path::Path::new("b.toml"), &baseline.text)
        .unwrap_or_else(|e| panic!("{e}\n{}", baseline.text));
    x.check_names(&target_names(&report), &report.run.scenarios)
        .unwrap();
    assert_eq!(
        baseline.left_out,
        [format!("t5 × {}", template.point.scenario)],
        "the interrupted cell"
    );
    assert!(
        !baseline.text.contains("\"interrupted\""),
        "{}",
        baseline.text
    );
    x.judge(&mut report, GateOptions::default());
    let outcomes: Vec<ExpectOutcome> = report
        .cells
        .iter()
        .map(|c| c.expectation.as_ref().unwrap().outcome)
        .collect();
    assert_eq!(outcomes[..5], [ExpectOutcome::Expected; 5]);
    assert_eq!(outcomes[5], ExpectOutcome::New);
}

#[test]
fn glob_characters_in_names_match_only_themselves() {
    let g = glob_literal("odd*name[1]");
    let m = globset::Glob::new(&g).unwrap().compile_matcher();
    assert!(m.is_match("odd*name[1]"));
    assert!(!m.is_match("oddXname1"));
}
