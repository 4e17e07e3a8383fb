//! "Where the fix belongs": for each target × agent (× version) that ran
//! both native-continuity (the SDK as it is) and native-load (a client that
//! opens a new server id and loads the agent's session), one line that
//! reads the pair — e.g. "SDK fails, load recovers → client-side fix"; and
//! for each cell of a candidate build (`--server-bin`, `--sdk`) that passes
//! where the release fails (or was expected to fail), or fails where it
//! passes, a line that says the candidate fixes it, or breaks it; and for
//! each long turn that did not go through cleanly, its fate (lost,
//! unfinished, session unusable: [`super::TurnFate`]) and where that puts
//! the fix; and for each cell whose history broke an invariant, the hop
//! where it first showed ([`super::integrity_fix`]).

use super::model::{Axis, AxisPoint, Cell, ExpectOutcome, Report, Verdict};
use std::fmt::Write;

const SDK: &str = "native-continuity";
const LOAD: &str = "native-load";

/// The section, or `None` when no row ran both scenarios.
pub(crate) fn render_fix_location(report: &Report) -> Option<String> {
    let mut lines = Vec::new();
    for (target, suffix) in report.row_order() {
        let find = |scenario: &str| -> Option<&Cell> {
            report.cells.iter().find(|c| {
                c.point.target == target && c.point.scenario == scenario && c.row_suffix() == suffix
            })
        };
        let (Some(sdk), Some(load)) = (find(SDK), find(LOAD)) else {
            continue;
        };
        // A skipped cell (e.g. the hosted client, which cannot load) did not run.
        if [sdk, load].iter().any(|c| c.verdict == Verdict::Skipped) {
            continue;
        }
        let label = format!("{target}{}", suffix.unwrap_or_default());
        lines.push(format!("- **{label}**: {}", verdict_line(sdk, load)));
    }
    lines.extend(candidate_lines(report));
    lines.extend(turn_lines(report));
    lines.extend(super::integrity_fix::lines(report));
    if lines.is_empty() {
        return None;
    }
    let mut out = String::from("## Where the fix belongs\n\n");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    Some(out)
}

/// One line per long turn whose result did not reach the client or whose
/// session was left unusable: its fate and where that puts the fix.
fn turn_lines(report: &Report) -> Vec<String> {
    report
        .cells
        .iter()
        .filter_map(|cell| {
            let turn = cell.turn.as_ref()?;
            let clean = turn.fate == super::Fate::Delivered && turn.session_usable != Some(false);
            (!clean).then(|| {
                format!(
                    "- **{}** × {}: turn {} → {}",
                    cell.label(),
                    cell.point.scenario,
                    turn.words(),
                    turn.fix()
                )
            })
        })
        .collect()
}

/// One line per cell of a candidate point whose verdict differs from the
/// release's: its twin on the axis's first registry point in this run, or
/// else what the expectations said.
fn candidate_lines(report: &Report) -> Vec<String> {
    let run = &report.run;
    let mut lines = Vec::new();
    for axis in [Axis::Server, Axis::Sdk] {
        let release = run.points_of(axis).find(|p| !p.is_candidate());
        for candidate in run.points_of(axis).filter(|p| p.is_candidate()) {
            for cell in report
                .cells
                .iter()
                .filter(|c| c.point_label(run, axis) == Some(candidate.label.as_str()))
            {
                let twin = release.and_then(|r| report.counterpart(cell, axis, Some(&r.label)));
                if let Some(line) = candidate_line(cell, candidate, twin, release) {
                    lines.push(line);
                }
            }
        }
    }
    lines
}

fn candidate_line(
    cell: &Cell,
    candidate: &AxisPoint,
    twin: Option<&Cell>,
    release: Option<&AxisPoint>,
) -> Option<String> {
    let what = candidate.axis.title();
    let passed = |c: &Cell| c.verdict == Verdict::Pass;
    let before = match (twin, release) {
        (Some(twin), Some(release)) => Some(format!(
            "{} on {what} {}",
            outcome_words(twin),
            release.label
        )),
        _ => None,
    };
    let judged = cell.expectation.as_ref().map(|j| j.outcome);
    let (was_passing, now_passing) = match twin {
        Some(twin) => (passed(twin), passed(cell)),
        None => match judged {
            Some(ExpectOutcome::Fixed) => (false, true),
            Some(ExpectOutcome::Regressed) => (true, false),
            _ => return None,
        },
    };
    if was_passing == now_passing {
        return None;
    }
    let before = before.unwrap_or_else(|| match was_passing {
        true => "expected to pass".into(),
        false => format!(
            "expected to fail{}",
            cell.expectation
                .as_ref()
                .and_then(|j| j.reason.as_deref())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
    });
    let (now, verdict) = match now_passing {
        true => ("passes", "the candidate fixes it"),
        false => ("fails", "the candidate breaks it"),
    };
    let now = match now_passing {
        true => now.to_string(),
        false => outcome_words(cell),
    };
    Some(format!(
        "- **{}** × {}: {before}, {now} with the candidate {what} `{}` → {verdict}",
        cell.label(),
        cell.point.scenario,
        candidate.label
    ))
}

/// `fails @ boundary (signature)`, `passes`, or the verdict.
fn outcome_words(cell: &Cell) -> String {
    match cell.verdict {
        Verdict::Pass => "passes".into(),
        Verdict::Fail => format!(
            "fails{}{}",
            cell.failure_boundary
                .as_deref()
                .map(|b| format!(" @ {b}"))
                .unwrap_or_default(),
            cell.boundary_signature()
                .map(|s| format!(" ({})", s.short()))
                .unwrap_or_default()
        ),
        other => format!("is {}", other.as_str()),
    }
}

fn recovery_ms(load: &Cell) -> Option<u64> {
    load.phases
        .iter()
        .filter_map(|p| super::detail::read::<super::detail::RecoverDetail>(&p.detail))
        .find_map(|d| d.restart_to_first_good_prompt_ms)
}

/// The reading of one SDK cell and its load cell.
pub(crate) fn verdict_line(sdk: &Cell, load: &Cell) -> String {
    let passed = |c: &Cell| matches!(c.verdict, Verdict::Pass);
    match (passed(sdk), passed(load)) {
        (false, true) => {
            let took = recovery_ms(load)
                .map(|ms| format!(" (first good prompt {ms} ms after the restart)"))
                .unwrap_or_default();
            format!(
                "SDK fails{}, load recovers{took} → client-side fix",
                sdk.failure_boundary
                    .as_deref()
                    .map(|b| format!(" @ {b}"))
                    .unwrap_or_default()
            )
        }
        (false, false) => "SDK fails, load fails too → server- or agent-side fix".into(),
        (true, true) => "SDK passes, load passes → nothing to fix".into(),
        (true, false) => {
            "SDK passes, load fails → the recovering client is wrong, not the stack".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cell(scenario: &str, verdict: &str, boundary: Option<&str>, ms: Option<u64>) -> Cell {
        let detail = ms
            .map(|ms| json!({"restartToFirstGoodPromptMs": ms}))
            .unwrap_or(json!({}));
        serde_json::from_value(json!({
            "target": "agent", "scenario": scenario, "serverVersion": null, "agent": "claude",
            "attempt": 1, "verdict": verdict, "failureBoundary": boundary, "reason": null,
            "durationMs": 1, "restarts": [], "passRate": null, "attempts": [], "expectation": null,
            "phases": [{"name": "loadSessionAfterRestart", "step": "recover_session", "verdict": true,
                        "cleanup": false, "ok": true, "durationMs": 1, "deadlineMs": 1000,
                        "detail": detail, "outcome": "ok", "signature": null}]
        }))
        .unwrap()
    }

    #[test]
    fn each_pairing_of_verdicts_names_where_the_fix_belongs() {
        let sdk_fail = cell(SDK, "fail", Some("promptSameHandleAfterRestart"), None);
        let load_pass = cell(LOAD, "pass", None, Some(840));
        assert_eq!(
            verdict_line(&sdk_fail, &load_pass),
            "SDK fails @ promptSameHandleAfterRestart, load recovers (first good prompt 840 ms after the restart) → client-side fix"
        );
        let load_fail = cell(LOAD, "fail", Some("loadSessionAfterRestart"), None);
        assert!(verdict_line(&sdk_fail, &load_fail).ends_with("→ server- or agent-side fix"));
        let sdk_pass = cell(SDK, "pass", None, None);
        assert!(verdict_line(&sdk_pass, &load_pass).ends_with("→ nothing to fix"));
    }

    /// The fixture's SDK axis: 0.4.2 fails, the candidate `fix` passes.
    /// The lines about a candidate say which build it was: a report pasted
    /// into an issue names the binary and the SDK's packages by path.
    #[test]
    fn the_report_names_each_point_and_where_a_candidate_came_from() {
        let report = crate::fixture::candidates("sandbox-agent 0.4.2");
        let md = crate::render_markdown(&report);
        for line in [
            "- server 0.4.2: the registry's 0.4.2",
            "- server fix: candidate /build/sandbox-agent (sandbox-agent 0.4.2)",
            "- SDK fix: candidate ../fix (0.4.2)",
        ] {
            assert!(md.contains(line), "{line:?} not in\n{md}");
        }
    }

    #[test]
    fn a_candidate_that_passes_where_the_release_fails_fixes_it() {
        let mut report = crate::fixture::candidates("sandbox-agent 0.4.2");
        let md = render_fix_location(&report).expect("the candidate's lines");
        assert!(
            md.contains("- **agent · ts-sdk · sdk fix @ 0.4.2** × native-continuity: fails @ promptSameHandleAfterRestart (http 400 invalid_request) on SDK 0.4.2, passes with the candidate SDK `fix` → the candidate fixes it"),
            "{md}"
        );
        // The server candidate changes nothing here: no line for it.
        assert!(!md.contains("candidate server"), "{md}");
        // Alone in its run, the candidate is read against the expectations.
        report
            .cells
            .retain(|c| c.point.get(Axis::Sdk) == Some("fix"));
        report
            .run
            .points
            .retain(|p| p.axis == Axis::Server || p.label == "fix");
        assert!(
            render_fix_location(&report).is_none(),
            "no expectations, no line"
        );
        crate::expect::Expectations::parse(
            std::path::Path::new("x.toml"),
            "[[expect]]\nverdict = \"fail\"\nreason = \"sandbox-agent #189\"\n",
        )
        .unwrap()
        .judge(&mut report, Default::default());
        let md = render_fix_location(&report).unwrap();
        assert!(
            md.contains("native-continuity: expected to fail (sandbox-agent #189), passes with the candidate SDK `fix` → the candidate fixes it"),
            "{md}"
        );
        // And a candidate that fails where the release passes breaks it.
        let mut report = crate::fixture::candidates("sandbox-agent 0.4.2");
        for cell in &mut report.cells {
            if cell.point.get(Axis::Sdk) == Some("0.4.2")
                && cell.point.get(Axis::Server) == Some("0.4.2")
            {
                cell.verdict = Verdict::Pass;
                cell.failure_boundary = None;
            }
        }
        let md = render_fix_location(&report).unwrap();
        assert!(md.contains("passes on server 0.4.2, fails @ promptSameHandleAfterRestart (http 400 invalid_request) with the candidate server `fix` → the candidate breaks it"), "{md}");
    }

    #[test]
    fn a_row_whose_load_cell_was_skipped_gets_no_line() {
        let mut report = crate::fixture::report();
        report.cells = vec![
            cell(SDK, "fail", Some("promptSameHandleAfterRestart"), None),
            cell(LOAD, "skipped", None, None),
        ];
        assert_eq!(render_fix_location(&report), None);
        report.cells[1] = cell(LOAD, "pass", None, Some(5));
        assert!(render_fix_location(&report)
            .unwrap()
            .contains("client-side fix"));
    }
}
