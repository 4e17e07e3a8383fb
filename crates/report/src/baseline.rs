//! `continuity baseline RUN`: an expectations file that records what a
//! finished run saw, one entry per cell, scoped to its server version, so
//! the next run is judged against it (`--expect`). Reasons are left for a
//! person to write: the file is meant to be reviewed and committed. It
//! writes only verdicts `--expect` reads ([`EXPECTABLE`]): a flaky cell is
//! recorded as passing, and an interrupted one is left out (the run was
//! stopped, the component said nothing), so the next run reports it `new`.

use std::fmt::Write as _;

use super::expect::{parse_version, EXPECTABLE};
use super::model::{Axis, Cell, Report, Verdict};
use crate::untrusted::Untrusted;

/// `baseline --until DATE --issue URL`: the entries of cells that did not
/// pass become a quarantine that expires (see [`super::expect`]).
#[derive(Debug, Clone, Default)]
pub struct Quarantine {
    pub until: Option<jiff::civil::Date>,
    pub issue: Option<String>,
}

/// The expectations file, and the cells it leaves out (interrupted ones).
pub struct Baseline {
    pub text: String,
    pub left_out: Vec<String>,
}

/// The verdict an expectation records for `cell`, if it can record one.
fn expected(cell: &Cell) -> Option<Verdict> {
    let verdict = match cell.verdict {
        // A flaky cell is recorded as passing: the gate then follows --flaky-result.
        Verdict::Flaky => Verdict::Pass,
        v => v,
    };
    EXPECTABLE.contains(&verdict).then_some(verdict)
}

pub fn render_baseline(report: &Report, quarantine: &Quarantine) -> Baseline {
    let mut left_out = Vec::new();
    let run = &report.run;
    let mut out = String::new();
    // Comments hold the report's text in its one-line form: a line break
    // in a field must not become a TOML line (an entry of its own).
    let _ = writeln!(
        out,
        "# Expectations recorded from run {} (continuity {}, server {}, agent {}).\n# Use with `continuity run --expect FILE`; replace each `reason` with why the result is known.",
        shown(&run.id),
        shown(&run.harness_version),
        shown(run.server_version.as_deref().unwrap_or("unknown")),
        shown(&run.agent)
    );
    for (_, cells) in report.by_scenario() {
        for cell in cells {
            match expected(cell) {
                Some(verdict) => write_entry(&mut out, report, cell, verdict, quarantine),
                None => left_out.push(shown(&format!(
                    "{} × {}",
                    cell.label(),
                    cell.point.scenario
                ))),
            }
        }
    }
    if !left_out.is_empty() {
        let _ = write!(
            out,
            "\n# Left out, interrupted in run {} (no verdict to expect; the next run reports them new):\n",
            shown(&run.id)
        );
        for name in &left_out {
            let _ = writeln!(out, "#   {name}");
        }
    }
    Baseline {
        text: out,
        left_out,
    }
}

/// One cell's `[[expect]]` entry: where it ran, what it ended in, why.
fn write_entry(
    out: &mut String,
    report: &Report,
    cell: &Cell,
    verdict: Verdict,
    quarantine: &Quarantine,
) {
    let run = &report.run;
    out.push('\n');
    out.push_str("[[expect]]\n");
    let _ = writeln!(
        out,
        "target = {}",
        quoted(&glob_literal(&cell.point.target))
    );
    let _ = writeln!(
        out,
        "scenario = {}",
        quoted(&glob_literal(&cell.point.scenario))
    );
    // Every axis the cell names, so entries of one target and scenario on
    // two values of an axis (two stores, two agents) do not shadow each
    // other; an entry's key for an axis is the axis's name. The server and
    // SDK points come after the verdict, the server by its recorded point
    // ([`write_server`]).
    for axis in before_the_verdict() {
        write_axis(out, cell, axis);
    }
    let _ = writeln!(out, "verdict = {}", quoted(verdict.as_str()));
    if matches!(verdict, Verdict::Fail | Verdict::Error) {
        if let Some(b) = &cell.failure_boundary {
            let _ = writeln!(out, "boundary = {}", quoted(b));
        }
        if let Some(sig) = cell.boundary_signature() {
            let _ = writeln!(out, "signature = {}", quoted(&sig.short()));
        }
    }
    write_server(out, report, cell);
    write_axis(out, cell, Axis::Sdk);
    let reason = match (cell.verdict, &cell.reason) {
        (Verdict::Flaky, _) => format!(
            "flaky in run {}: {} (recorded as pass)",
            run.id,
            super::gate::attempts_text(cell)
        ),
        (Verdict::Pass, _) => String::new(),
        (_, Some(reason)) => format!("seen in run {}: {}", run.id, first_line(reason)),
        (_, None) => format!("seen in run {}", run.id),
    };
    if !reason.is_empty() {
        let _ = writeln!(out, "reason = {}", quoted(&reason));
    }
    // A quarantine excuses failures; a pass or a cell with no verdict on
    // its restart needs no excuse.
    if !matches!(verdict, Verdict::Pass | Verdict::NotApplicable) {
        if let Some(until) = quarantine.until {
            let _ = writeln!(out, "until = {}", quoted(&until.to_string()));
        }
        if let Some(issue) = &quarantine.issue {
            let _ = writeln!(out, "issue = {}", quoted(issue));
        }
    }
}

/// The axes an entry names before its verdict: the client, the agent and
/// the store (in the order baselines have always written them), then
/// every other axis but the server and the SDK, in `report.json`'s order.
fn before_the_verdict() -> impl Iterator<Item = Axis> {
    const FIRST: [Axis; 3] = [Axis::Client, Axis::Agent, Axis::Persist];
    let after = |axis: &Axis| matches!(axis, Axis::Server | Axis::Sdk);
    let others = Axis::ALL
        .into_iter()
        .filter(move |axis| !FIRST.contains(axis) && !after(axis));
    FIRST.into_iter().chain(others)
}

/// `AXIS = "VALUE"`, the cell's value on `axis` when it names one.
fn write_axis(out: &mut String, cell: &Cell, axis: Axis) {
    if let Some(value) = cell.point.name_on(axis) {
        let _ = writeln!(out, "{} = {}", axis.name(), quoted(&glob_literal(value)));
    }
}

/// The entry's server: on a server axis of recorded points, its point by
/// label (a candidate may report a release's version), and the version
/// the point reports.
fn write_server(out: &mut String, report: &Report, cell: &Cell) {
    let run = &report.run;
    let point = cell
        .point
        .name_on(Axis::Server)
        .and_then(|label| run.points_of(Axis::Server).find(|p| p.label == label));
    if let Some(point) = point {
        let _ = writeln!(out, "server = {}", quoted(&glob_literal(&point.label)));
    }
    let version = point
        .map(|p| p.version.as_str())
        .or(cell.point.name_on(Axis::Server))
        .or(run.server_version.as_deref());
    if let Some(v) = version.and_then(parse_version) {
        let _ = writeln!(out, "server_version = {}", quoted(&format!("={v}")));
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// A TOML basic string, exact, with every character a terminal or a
/// reader would act on (bidi controls, separators, controls) as its
/// `\uXXXX` escape, so the file shows none of them raw.
fn quoted(text: &str) -> String {
    let quoted = toml::Value::String(text.to_string()).to_string();
    if !quoted.chars().any(acts) {
        return quoted;
    }
    let mut out = String::with_capacity(quoted.len());
    for ch in quoted.chars() {
        match acts(ch) {
            true => {
                let _ = write!(out, "\\u{:04X}", ch as u32);
            }
            false => out.push(ch),
        }
    }
    out
}

/// What [`quoted`] escapes: what `Untrusted` shows as an escape.
fn acts(ch: char) -> bool {
    Untrusted::new(ch.encode_utf8(&mut [0; 4]))
        .terminal()
        .chars()
        .count()
        != 1
}

/// A report's text in a comment: one line.
fn shown(text: &str) -> String {
    Untrusted::new(text).terminal()
}

/// A name as a glob that matches only itself.
fn glob_literal(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('[');
            out.push(c);
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
            "../../../tests/fixtures/report-v2/report.json"
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
                && entry
                    .contains("issue = \"https://github.com/rivet-dev/sandbox-agent/issues/189\"");
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
}
