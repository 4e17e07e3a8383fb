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
mod tests;
