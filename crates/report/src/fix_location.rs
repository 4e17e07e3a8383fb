//! "Where the fix belongs": for each target × agent (× version) that ran
//! both native-continuity (the SDK as it is) and native-load (a client that
//! opens a new server id and loads the agent's session), one line that
//! reads the pair — e.g. "SDK fails, load recovers → client-side fix". It
//! reasons only from what was observed: a cell with no verdict on its
//! restart (a client with no call for `session/load`) is "cannot tell",
//! naming the call, never "load recovers". Where the clients of one
//! target read it differently, their readings stand side by side, each
//! with the cells it rests on. Then, for each cell of a candidate build
//! (`--server-bin`, `--sdk`) that passes where the release fails (or was
//! expected to fail), or fails where it passes, a line that says the
//! candidate fixes it, or breaks it; and for each long turn that did not
//! go through cleanly, its fate (lost, unfinished, session unusable:
//! [`super::TurnFate`]) and where that puts the fix; and for each target
//! that went down and never came back, that the fix belongs in the
//! component it restarts; and for each cell whose history broke an
//! invariant, the hop where it first showed ([`super::integrity_fix`]).
//!
//! Over 400 lines on purpose: every line of the section reads cells through
//! the same observed-only rules (`observed`, `cannot_tell`, `evidence`,
//! `outcome_words`), so the pair, candidate, long-turn and not-back readings
//! never claim more than the cells show, and the tests below hold each
//! reading to them; the integrity hop's line is apart (`integrity_fix.rs`).

use super::model::{
    Axis, AxisPoint, AxisValue, Cell, ExpectOutcome, Point, Report, RowPoint, SignatureKind,
    Verdict,
};
use crate::untrusted::Untrusted;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

const SDK: &str = "native-continuity";
const LOAD: &str = "native-load";

/// One row's reading of its pair: its row label, the client it ran, the
/// line and where it puts the fix.
struct Reading {
    label: String,
    client: String,
    /// The target and every other axis but the client's: rows read side
    /// by side when they share it.
    place: Point,
    line: String,
    conclusion: &'static str,
    evidence: String,
}

/// The section, or `None` when no row ran both scenarios.
pub(crate) fn render_fix_location(report: &Report) -> Option<String> {
    let mut lines = pair_lines(&readings(report));
    lines.extend(not_back_lines(report));
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

/// Each row's reading of its native-continuity and native-load cells.
fn readings(report: &Report) -> Vec<Reading> {
    // The first cell of each row and scenario of the pair, found in one pass.
    let mut pair: HashMap<(RowPoint<'_>, &str), &Cell> = HashMap::new();
    for cell in report.cells.iter() {
        let scenario = cell.point.scenario.as_str();
        if scenario == SDK || scenario == LOAD {
            pair.entry((cell.point.row(), scenario)).or_insert(cell);
        }
    }
    let mut readings = Vec::new();
    for row in report.row_order() {
        let find = |scenario: &str| pair.get(&(row, scenario)).copied();
        let (Some(sdk), Some(load)) = (find(SDK), find(LOAD)) else {
            continue;
        };
        // A skipped cell (a client or store that could not be set up) did not run.
        if [sdk, load].iter().any(|c| c.verdict == Verdict::Skipped) {
            continue;
        }
        // A target that never came back says so on a line of its own.
        if [sdk, load].iter().any(|c| not_back(c).is_some()) {
            continue;
        }
        let (line, conclusion) = reading(sdk, load);
        readings.push(Reading {
            label: row.label(),
            client: sdk.point.client().name().to_string(),
            place: sdk.point.without(Axis::Client).without(Axis::Sdk),
            line,
            conclusion,
            evidence: format!("{SDK} {}; {LOAD} {}", evidence(sdk), evidence(load)),
        });
    }
    readings
}

/// One line per row; the rows of one place whose clients read it
/// differently as one entry, each client's reading under it with the
/// cells it rests on.
fn pair_lines(readings: &[Reading]) -> Vec<String> {
    // Each place's readings, and whether they all conclude alike.
    let mut places: HashMap<&Point, (Vec<&Reading>, bool)> = HashMap::new();
    for reading in readings {
        let (same, alike) = places.entry(&reading.place).or_insert((Vec::new(), true));
        *alike &= same
            .first()
            .is_none_or(|r| r.conclusion == reading.conclusion);
        same.push(reading);
    }
    let mut lines = Vec::new();
    let mut done: HashSet<&Point> = HashSet::new();
    for reading in readings {
        if done.contains(&reading.place) {
            continue;
        }
        let (same_place, alike) = &places[&reading.place];
        if *alike {
            lines.push(format!("- **{}**: {}", reading.label, reading.line));
            continue;
        }
        done.insert(&reading.place);
        lines.push(format!(
            "- **{}**: the clients read it differently; each reading rests on its own cells:",
            reading.place.label()
        ));
        for r in same_place {
            lines.push(format!(
                "  - {}: {} (rests on {})",
                r.client, r.line, r.evidence
            ));
        }
    }
    lines
}

/// One line per row whose target went down and did not come back (its
/// cells failed at the restart, `not_back`): the fix belongs in the
/// component the target restarts, whatever the client does.
fn not_back_lines(report: &Report) -> Vec<String> {
    let mut rows: Vec<(RowPoint<'_>, Vec<&str>, String)> = Vec::new();
    let mut row_of: HashMap<RowPoint<'_>, usize> = HashMap::new();
    for cell in &report.cells {
        let Some(sig) = not_back(cell) else {
            continue;
        };
        let row = cell.point.row();
        match row_of.get(&row) {
            Some(&i) => rows[i].1.push(&cell.point.scenario),
            None => {
                row_of.insert(row, rows.len());
                rows.push((row, vec![&cell.point.scenario], sig.short()));
            }
        }
    }
    rows.into_iter()
        .map(|(row, scenarios, short)| {
            format!(
                "- **{}**: did not come back after its restart ({}; in {}) → the fix belongs in the component `{}` restarts: it must start again and answer its readiness probe, whatever the client does",
                Untrusted::new(&row.label()).markdown(),
                Untrusted::new(&short).markdown(),
                Untrusted::new(&scenarios.join(", ")).markdown(),
                Untrusted::new(row.target.as_str()).markdown(),
            )
        })
        .collect()
}

/// The signature of a cell that failed because its target did not come back.
fn not_back(cell: &Cell) -> Option<&super::model::Signature> {
    cell.boundary_signature()
        .filter(|s| cell.verdict == Verdict::Fail && s.kind == SignatureKind::NotBack)
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
    let index = super::model::CellIndex::of(report);
    let mut lines = Vec::new();
    for axis in [Axis::Server, Axis::Sdk] {
        let release = run.points_of(axis).find(|p| !p.is_candidate());
        // Each point's cells, in one pass (a pass per point was quadratic).
        let mut of_point: HashMap<&str, Vec<&Cell>> = HashMap::new();
        for cell in &report.cells {
            if let Some(label) = cell.point_label(run, axis) {
                of_point.entry(label).or_default().push(cell);
            }
        }
        for candidate in run.points_of(axis).filter(|p| p.is_candidate()) {
            let cells = of_point.get(candidate.label.as_str());
            for cell in cells.into_iter().flatten().copied() {
                let twin =
                    release.and_then(|r| index.counterpart(cell, AxisValue::parse(axis, &r.label)));
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
    // A cell with no verdict on its restart observed nothing to compare.
    let unobserved = |c: &Cell| c.verdict == Verdict::NotApplicable;
    if unobserved(cell) || twin.is_some_and(unobserved) {
        return None;
    }
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
        other => format!("is {}", other.words()),
    }
}

fn recovery_ms(load: &Cell) -> Option<u64> {
    load.phases
        .iter()
        .filter_map(|p| super::detail::read::<super::detail::RecoverDetail>(&p.detail))
        .find_map(|d| d.restart_to_first_good_prompt_ms)
}

/// What one cell shows, as evidence: `fail @ phase (signature)`, `pass`,
/// `not applicable (phase: no call for …)`.
fn evidence(cell: &Cell) -> String {
    match cell.verdict {
        Verdict::NotApplicable => match &cell.reason {
            Some(reason) => format!("not applicable ({reason})"),
            None => "not applicable".into(),
        },
        _ => outcome_words(cell),
    }
}

/// Whether the cell's verdict is an observation of the restart: a pass or
/// a failure (a flaky cell failed at least once). A cell that could not
/// take its steps, or that the harness could not run, observed nothing.
fn observed(cell: &Cell) -> bool {
    matches!(cell.verdict, Verdict::Pass | Verdict::Fail | Verdict::Flaky)
}

/// `cannot tell: the SDK has no call for session/load on a new server id`,
/// or why else the cell observed nothing.
fn cannot_tell(cell: &Cell) -> String {
    let who = match cell.point.client().known() {
        Some(kind) if kind.runs_real_sdk() => "the SDK",
        _ => "continuity's client",
    };
    let call = super::fold::restart_deciding(&cell.phases, &cell.restarts)
        .find_map(super::fold::missing_call);
    match (cell.verdict, call) {
        (Verdict::NotApplicable, Some(call)) => {
            format!("cannot tell: {who} has no call for {call}")
        }
        (Verdict::NotApplicable, None) => format!(
            "cannot tell: {who} could not take its steps ({})",
            cell.reason.as_deref().unwrap_or("not applicable")
        ),
        (other, _) => format!("cannot tell: the cell is {}", other.words()),
    }
}

/// The reading of one SDK cell and its load cell, and its conclusion.
fn reading(sdk: &Cell, load: &Cell) -> (String, &'static str) {
    if observed(sdk) && observed(load) {
        return verdict_line(sdk, load);
    }
    const UNKNOWN: &str = "cannot tell where the fix belongs";
    match (observed(sdk), sdk.verdict == Verdict::Pass) {
        (true, true) => {
            const NOTHING: &str = "nothing to fix";
            let line = format!("SDK passes, load {} → {NOTHING}", cannot_tell(load));
            (line, NOTHING)
        }
        (true, false) => {
            let line = format!(
                "SDK {}, load {} → {UNKNOWN}",
                outcome_words(sdk),
                cannot_tell(load)
            );
            (line, UNKNOWN)
        }
        (false, _) => {
            let load_words = match observed(load) {
                true => outcome_words(load),
                false => cannot_tell(load),
            };
            let line = format!("SDK {}, load {load_words} → {UNKNOWN}", cannot_tell(sdk));
            (line, UNKNOWN)
        }
    }
}

/// The reading of one SDK cell and its load cell, both observed.
pub(crate) fn verdict_line(sdk: &Cell, load: &Cell) -> (String, &'static str) {
    let passed = |c: &Cell| matches!(c.verdict, Verdict::Pass);
    match (passed(sdk), passed(load)) {
        (false, true) => {
            let took = recovery_ms(load)
                .map(|ms| format!(" (first good prompt {ms} ms after the restart)"))
                .unwrap_or_default();
            const CLIENT: &str = "client-side fix";
            let line = format!(
                "SDK fails{}, load recovers{took} → {CLIENT}",
                sdk.failure_boundary
                    .as_deref()
                    .map(|b| format!(" @ {b}"))
                    .unwrap_or_default()
            );
            (line, CLIENT)
        }
        (false, false) => {
            const SERVER: &str = "server- or agent-side fix";
            (format!("SDK fails, load fails too → {SERVER}"), SERVER)
        }
        (true, true) => {
            const NOTHING: &str = "nothing to fix";
            (format!("SDK passes, load passes → {NOTHING}"), NOTHING)
        }
        (true, false) => {
            const WRONG: &str = "the recovering client is wrong, not the stack";
            (format!("SDK passes, load fails → {WRONG}"), WRONG)
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

    /// Both cells of a row failed at the restart: the target never came
    /// back. One line names the component, none reads the pair.
    #[test]
    fn a_target_that_never_came_back_puts_the_fix_in_its_component() {
        let mut report = crate::fixture::report();
        report.cells.retain(|c| c.point.target == "agent");
        let not_back = |scenario: &str| {
            let mut c = cell(scenario, "fail", Some("restart"), None);
            c.phases[0].name = "restart".into();
            c.phases[0].ok = false;
            c.phases[0].outcome = crate::model::Outcome::Fail;
            c.phases[0].signature = Some(
                serde_json::from_value(json!({"kind": "not_back",
                    "message": "the target did not come back within 30 s",
                    "cause": {"kind": "connect", "error": "refused"}}))
                .unwrap(),
            );
            c
        };
        report.cells = vec![not_back(SDK), not_back(LOAD)];
        let md = render_fix_location(&report).unwrap();
        assert_eq!(
            md,
            "## Where the fix belongs\n\n- **agent · claude**: did not come back after its restart (not back: refused; in native-continuity, native-load) → the fix belongs in the component `agent` restarts: it must start again and answer its readiness probe, whatever the client does\n"
        );
    }

    #[test]
    fn each_pairing_of_verdicts_names_where_the_fix_belongs() {
        let sdk_fail = cell(SDK, "fail", Some("promptSameHandleAfterRestart"), None);
        let load_pass = cell(LOAD, "pass", None, Some(840));
        assert_eq!(
            verdict_line(&sdk_fail, &load_pass).0,
            "SDK fails @ promptSameHandleAfterRestart, load recovers (first good prompt 840 ms after the restart) → client-side fix"
        );
        let load_fail = cell(LOAD, "fail", Some("loadSessionAfterRestart"), None);
        assert!(verdict_line(&sdk_fail, &load_fail)
            .0
            .ends_with("→ server- or agent-side fix"));
        let sdk_pass = cell(SDK, "pass", None, None);
        assert!(verdict_line(&sdk_pass, &load_pass)
            .0
            .ends_with("→ nothing to fix"));
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
            .retain(|c| c.point.name_on(Axis::Sdk) == Some("fix"));
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
            if cell.point.name_on(Axis::Sdk) == Some("0.4.2")
                && cell.point.name_on(Axis::Server) == Some("0.4.2")
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
