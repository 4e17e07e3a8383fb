//! `report.md`: what a user pastes into a bug report. Each scenario reads
//! like the seed issue's "Results (inline)" (total, failure boundary, per
//! target), followed by the distinct error signatures, the run's metadata
//! and restart/readiness timings.
//!
//! Over 400 lines on purpose: `report.md` is one document whose sections
//! (per scenario, expectations, integrity, signatures, metadata, restarts)
//! share its escaping (`clean`) and its order; each section is short, and
//! apart they would only be read in that order again.

use std::fmt::Write as _;

use crate::untrusted::Untrusted;

use super::model::{
    AxisPoint, Cell, Outcome, PointSource, Report, Signature, SignatureKind, Verdict,
};

/// Long server messages would swamp a pasted issue; the JSON keeps them whole.
const MAX_MESSAGE_CHARS: usize = 300;

pub(crate) fn render_markdown(report: &Report) -> String {
    let report = &*super::inert::in_form(report, super::inert::Form::Markdown);
    let mut out = String::new();
    let _ = writeln!(out, "# continuity report `{}`", report.run.id);
    for (scenario, cells) in report.by_scenario() {
        out.push('\n');
        scenario_section(&mut out, report, scenario, &cells);
    }
    if let Some(versions) = super::axis_compare::render_axis_comparison(report) {
        out.push('\n');
        out.push_str(&versions);
    }
    if let Some(clients) = super::clients::render_client_sections(report) {
        out.push('\n');
        out.push_str(&clients);
    }
    if let Some(fix) = super::fix_location::render_fix_location(report) {
        out.push('\n');
        out.push_str(&fix);
    }
    if report.run.expect_file.is_some() {
        out.push('\n');
        expectations_section(&mut out, report);
    }
    out.push('\n');
    signatures_section(&mut out, report);
    out.push('\n');
    if integrity_section(&mut out, report) {
        out.push('\n');
    }
    metadata_section(&mut out, report);
    out.push('\n');
    restarts_section(&mut out, report);
    if let Some(section) = super::floor::markdown_section(report) {
        out.push('\n');
        out.push_str(&section);
    }
    out
}

fn scenario_section(out: &mut String, report: &Report, scenario: &str, cells: &[&Cell]) {
    let repeat = report.run.repeat;
    let runs = if repeat == 1 { "run" } else { "runs" };
    let _ = writeln!(
        out,
        "## {} diagnostic ({repeat} {runs}/target)\n",
        title(scenario)
    );
    // A cell with no verdict on its restart is no success and no failure:
    // out of the count, named beside it.
    let judged = cells
        .iter()
        .filter(|c| c.verdict != Verdict::NotApplicable)
        .count();
    let passed = cells.iter().filter(|c| c.verdict == Verdict::Pass).count();
    let _ = write!(out, "- total: {passed}/{judged} success");
    let others: Vec<String> = [
        (Verdict::Error, "error", "errors"),
        (Verdict::Skipped, "skipped", "skipped"),
        (Verdict::Flaky, "flaky", "flaky"),
        (Verdict::Interrupted, "interrupted", "interrupted"),
        (Verdict::NotApplicable, "not applicable", "not applicable"),
    ]
    .iter()
    .filter_map(|(v, one, many)| {
        let n = cells.iter().filter(|c| c.verdict == *v).count();
        (n > 0).then(|| format!("{n} {}", if n == 1 { one } else { many }))
    })
    .collect();
    if !others.is_empty() {
        let _ = write!(out, " ({})", others.join(", "));
    }
    out.push('\n');

    let mut boundaries: Vec<(&str, usize)> = Vec::new();
    for cell in cells {
        if let Some(b) = cell.failure_boundary.as_deref() {
            match boundaries.iter_mut().find(|(name, _)| *name == b) {
                Some((_, n)) => *n += 1,
                None => boundaries.push((b, 1)),
            }
        }
    }
    if boundaries.is_empty() {
        out.push_str("- failure boundary phase: none\n");
    }
    for (name, n) in boundaries {
        let _ = writeln!(out, "- failure boundary phase: {name} in {n}/{judged}");
    }

    out.push_str("- per target:\n");
    for cell in cells {
        let _ = writeln!(
            out,
            "  - {}: {}{}",
            clean(&cell.label()),
            per_target(cell),
            judgement_suffix(cell)
        );
    }
}

/// `native-continuity` → `Native continuity`.
fn title(scenario: &str) -> String {
    let words = scenario.replace(['-', '_'], " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn per_target(cell: &Cell) -> String {
    let marks: Vec<String> = cell
        .phases
        .iter()
        .filter(|p| !p.cleanup)
        .map(|p| {
            let mark = match p.outcome {
                Outcome::Ok => "✅",
                Outcome::Fail | Outcome::Timeout => "❌",
                Outcome::NotRun => "–",
                Outcome::Interrupted => "⏸",
                Outcome::NotApplicable => "n/a",
            };
            format!("{} {mark}", clean(&p.name))
        })
        .collect();
    let reason = cell
        .reason
        .as_deref()
        .map(clean)
        .filter(|r| !r.is_empty())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let noted = matches!(
        cell.verdict,
        Verdict::Skipped | Verdict::Error | Verdict::Interrupted | Verdict::NotApplicable
    );
    match cell.verdict {
        _ if noted && marks.is_empty() => {
            format!("{} {}{reason}", cell.verdict.glyph(), cell.verdict.words())
        }
        _ if noted => format!(
            "{}; {} {}{reason}",
            marks.join(", "),
            cell.verdict.glyph(),
            cell.verdict.words()
        ),
        Verdict::Flaky => format!(
            "{}; {} flaky ({})",
            marks.join(", "),
            cell.verdict.glyph(),
            super::gate::attempts_text(cell)
        ),
        Verdict::Pass | Verdict::Fail if cell.pass_rate.is_some() => format!(
            "{} ({})",
            marks.join(", "),
            super::gate::attempts_text(cell)
        ),
        _ => marks.join(", "),
    }
}

/// ` — **regressed** (expected pass): reason`, when the cell was judged.
fn judgement_suffix(cell: &Cell) -> String {
    let Some(j) = &cell.expectation else {
        return String::new();
    };
    let text = super::gate::judgement_text(j);
    let text = if j.fails_run {
        format!("**{text}**")
    } else {
        text
    };
    match j.reason.as_deref().map(clean).filter(|r| !r.is_empty()) {
        Some(reason) => format!(" — {text}: {reason}"),
        None => format!(" — {text}"),
    }
}

/// What the gate decided and why, cell by cell, when `--expect` judged the run.
fn expectations_section(out: &mut String, report: &Report) {
    let Some(line) = super::gate::gate_line(report) else {
        return;
    };
    let _ = writeln!(out, "## Expectations\n\n{line}\n");
    out.push_str("| target | scenario | verdict | expected | outcome | reason |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for (scenario, cells) in report.by_scenario() {
        for cell in cells {
            let Some(j) = &cell.expectation else { continue };
            let mut verdict = cell.verdict.as_str().to_string();
            if let Some(b) = &cell.failure_boundary {
                verdict.push_str(&format!(" @ {b}"));
            }
            let expected = j
                .verdict
                .map(|v| v.as_str().to_string())
                .unwrap_or_else(|| "–".into());
            let outcome = if j.fails_run {
                format!("**{}**", j.outcome.as_str())
            } else {
                j.outcome.as_str().to_string()
            };
            let _ = writeln!(
                out,
                "| {} | {scenario} | {} | {expected} | {outcome} | {} |",
                clean(&cell.label()),
                clean(&verdict),
                clean(j.reason.as_deref().unwrap_or(""))
            );
        }
    }
}

/// The invariants the always-on checker found broken, cell by cell, with
/// their evidence (`continuity check` prints the same); nothing when every
/// checked cell held them all.
fn integrity_section(out: &mut String, report: &Report) -> bool {
    let broken: Vec<(&super::Cell, &continuity_check::Violation)> = report
        .cells
        .iter()
        .filter_map(|c| c.checked.as_ref().map(|checked| (c, checked)))
        .flat_map(|(c, checked)| checked.violations.iter().map(move |v| (c, v)))
        .collect();
    if broken.is_empty() {
        return false;
    }
    out.push_str(
        "## Integrity

",
    );
    out.push_str(
        "| target | scenario | invariant | breach | first at | since | phase | what |
",
    );
    out.push_str(
        "|---|---|---|---|---|---|---|---|
",
    );
    for (cell, v) in broken {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            clean(&cell.label()),
            clean(&cell.point.scenario),
            v.invariant,
            v.breach.as_str(),
            v.hop.as_str(),
            v.since.map_or("–", |s| s.as_str()),
            clean(v.phase.as_deref().unwrap_or("–")),
            clean(&v.detail),
        );
    }
    true
}

/// One distinct signature and where it was seen, in first-seen order.
struct Seen<'a> {
    sig: &'a Signature,
    count: usize,
    /// phase → targets (labels), both in first-seen order.
    at: Vec<(&'a str, Vec<String>)>,
}

fn same(a: &Signature, b: &Signature) -> bool {
    // `pending` differs from one timeout to the next (request ids), so it
    // is left out of what makes two signatures the same.
    a.kind == b.kind
        && a.http_status == b.http_status
        && a.problem_type == b.problem_type
        && a.rpc_code == b.rpc_code
        && a.message == b.message
}

fn signatures_section(out: &mut String, report: &Report) {
    let mut seen: Vec<Seen<'_>> = Vec::new();
    for cell in &report.cells {
        let label = cell.label();
        for phase in &cell.phases {
            let Some(sig) = &phase.signature else {
                continue;
            };
            let entry = match seen.iter().position(|s| same(s.sig, sig)) {
                Some(i) => &mut seen[i],
                None => {
                    seen.push(Seen {
                        sig,
                        count: 0,
                        at: Vec::new(),
                    });
                    let last = seen.len() - 1;
                    &mut seen[last]
                }
            };
            entry.count += 1;
            match entry.at.iter_mut().find(|(p, _)| *p == phase.name) {
                Some((_, targets)) => {
                    if !targets.contains(&label) {
                        targets.push(label.clone());
                    }
                }
                None => entry.at.push((&phase.name, vec![label.clone()])),
            }
        }
    }

    out.push_str("## Error signatures\n\n");
    if seen.is_empty() {
        out.push_str("none\n");
        return;
    }
    out.push_str("| kind | HTTP status | problem type | RPC code | message | count | seen at |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for s in &seen {
        let at: Vec<String> =
            s.at.iter()
                .map(|(phase, targets)| format!("{phase} ({})", targets.join(", ")))
                .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            kind_name(s.sig.kind),
            opt(s.sig.http_status),
            s.sig.problem_type.as_deref().map(clean).unwrap_or_default(),
            opt(s.sig.rpc_code),
            clean(&s.sig.message),
            s.count,
            clean(&at.join("; ")),
        );
    }
}

fn kind_name(kind: SignatureKind) -> String {
    format!("`{}`", kind.as_str())
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn metadata_section(out: &mut String, report: &Report) {
    let run = &report.run;
    out.push_str("## Run\n\n");
    let _ = writeln!(out, "- harness version: {}", run.harness_version);
    let _ = writeln!(
        out,
        "- server version: {}",
        clean(run.server_version.as_deref().unwrap_or("unknown"))
    );
    for point in &run.points {
        let _ = writeln!(out, "- {}", point_line(point));
    }
    let _ = writeln!(out, "- base URL: {}", run.base_url);
    let _ = writeln!(out, "- agent: {}", clean(&run.agent));
    let _ = writeln!(
        out,
        "- timeout: {} ms per phase, {} ms overall",
        run.timeout_ms, run.overall_timeout_ms
    );
    let _ = writeln!(out, "- repeat: {}", run.repeat);
    let _ = writeln!(out, "- persist: {}", clean(&run.stores_text()));
    let _ = writeln!(out, "- run id: {}", run.id);
    let _ = writeln!(
        out,
        "- started: {}, finished: {} ({} ms)",
        run.started_at, run.finished_at, run.duration_ms
    );
    if run.interrupted {
        out.push_str("- interrupted: yes, unfinished cells are missing\n");
    }
}

/// `server fix: binary /path/sandbox-agent (sandbox-agent 0.4.2)`.
fn point_line(point: &AxisPoint) -> String {
    let axis = point.axis.title();
    let (label, version) = (clean(&point.label), clean(&point.version));
    match point.source {
        PointSource::Registry => format!("{axis} {label}: the registry's {version}"),
        PointSource::Binary | PointSource::Package => format!(
            "{axis} {label}: candidate {} ({version})",
            clean(&point.paths.join(", ")),
        ),
    }
}

fn restarts_section(out: &mut String, report: &Report) {
    out.push_str("## Restart timings\n\n");
    let mut rows = Vec::new();
    // Target by target, each target's cells scenario by scenario: grouped
    // in one pass (a pass per target and scenario was cubic).
    let mut by_target: std::collections::HashMap<&crate::TargetName, Vec<&Cell>> =
        Default::default();
    for (_, cells) in report.by_scenario() {
        for cell in cells {
            by_target.entry(&cell.point.target).or_default().push(cell);
        }
    }
    for target in report.target_order() {
        for cell in by_target.remove(target).unwrap_or_default() {
            for r in &cell.restarts {
                rows.push(format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    clean(&cell.label()),
                    clean(&cell.point.scenario),
                    clean(&r.phase),
                    clean(&r.action),
                    if r.ok { "✅" } else { "❌" },
                    r.restart_ms,
                    opt(r.ready_ms),
                    // How it went down may quote a probe's error.
                    r.down.as_deref().map(clean).unwrap_or_default(),
                    r.detail.as_deref().map(clean).unwrap_or_default(),
                ));
            }
        }
    }
    if rows.is_empty() {
        out.push_str("none\n");
        return;
    }
    out.push_str(
        "| target | scenario | phase | action | ok | restart ms | ready ms | down | detail |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for row in rows {
        out.push_str(&row);
        out.push('\n');
    }
}

/// Text continuity did not write (or may not have), as Markdown shows it
/// ([`Untrusted::markdown`]: one line, no markup, pipes escaped for a
/// table cell), bounded in length.
fn clean(s: &str) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = one_line.chars().take(MAX_MESSAGE_CHARS).collect();
        format!("{}…", Untrusted::new(&cut).markdown())
    } else {
        Untrusted::new(&one_line).markdown()
    }
}
