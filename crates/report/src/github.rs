//! GitHub Actions output: the compact Markdown appended to
//! `$GITHUB_STEP_SUMMARY` (targets × scenarios with expectation outcomes,
//! the cells to look at with their boundary and signature, where the run
//! folder is) and the `::error` / `::warning` workflow commands that turn
//! into annotations.

use std::fmt::Write as _;

use crate::untrusted::{command_line, CommandLine, Untrusted};

use super::gate::{attempts_text, expiring_lines, gate_line, judgement_text, notable_cells};
use super::model::{Cell, ExpectOutcome, Report, Verdict};
use super::table::totals_line;

/// The step summary; `artifact` names the run folder (what CI uploads).
pub fn render_step_summary(report: &Report, artifact: &str) -> String {
    let report = &*super::inert::in_form(report, super::inert::Form::Markdown);
    let mut out = String::new();
    let run = &report.run;
    let _ = writeln!(
        out,
        "### continuity run `{}` · server {} · agent {}\n",
        run.id,
        md(run.server_version.as_deref().unwrap_or("unknown")),
        md(&run.agent)
    );
    let _ = writeln!(out, "{}", totals_line(report));
    if let Some(line) = gate_line(report) {
        let _ = writeln!(out, "\n{line}");
    }
    if let Some((head, entries)) = expiring_lines(report, md).split_first() {
        let _ = writeln!(out, "\n{head}\n");
        for entry in entries {
            let _ = writeln!(out, "- {entry}");
        }
    }
    if run.interrupted {
        out.push_str("\n**interrupted**: unfinished cells are missing\n");
    }
    summary_grid(&mut out, report);
    let notable = notable_cells(report);
    if !notable.is_empty() {
        out.push_str(
            "\n| cell | verdict | boundary | signature | expectation |\n|---|---|---|---|---|\n",
        );
        for cell in notable {
            let _ = writeln!(
                out,
                "| {} × {} | {} | {} | {} | {} |",
                md(&cell.label()),
                md(&cell.point.scenario),
                verdict_words(cell),
                md(cell.failure_boundary.as_deref().unwrap_or("–")),
                signature_text(cell, md),
                md(&cell
                    .expectation
                    .as_ref()
                    .map(|j| {
                        let mut t = judgement_text(j);
                        if let Some(r) = &j.reason {
                            t.push_str(": ");
                            t.push_str(r);
                        }
                        t
                    })
                    .unwrap_or_else(|| "–".into())),
            );
        }
    }
    let _ = writeln!(
        out,
        "\nRun folder: `{artifact}` (report.md, report.json, junit.xml, component logs)."
    );
    out
}

/// One `::error` per cell that fails the run, one `::warning` per flaky or
/// fixed cell that does not.
pub fn annotations(report: &Report) -> Vec<CommandLine> {
    let report = &*super::inert::of(report);
    notable_cells(report)
        .into_iter()
        .map(|cell| {
            let fails = match &cell.expectation {
                Some(j) => j.fails_run,
                None => cell.fails_run_alone(report.run.flaky_result),
            };
            let what = match &cell.expectation {
                Some(j) if j.outcome != ExpectOutcome::Expected => judgement_text(j),
                _ => verdict_words(cell),
            };
            let title = format!(
                "continuity: {} × {} {what}",
                cell.label(),
                cell.point.scenario
            );
            let mut message = verdict_words(cell);
            if let Some(b) = &cell.failure_boundary {
                message.push_str(&format!(" @ {b}"));
            }
            let signature = signature_text(cell, terminal);
            if !signature.is_empty() {
                message.push_str(&format!(": {signature}"));
            }
            if let Some(reason) = cell.expectation.as_ref().and_then(|j| j.reason.as_ref()) {
                message.push_str(&format!(" (expectation: {reason})"));
            }
            command_line(if fails { "error" } else { "warning" }, &title, &message)
        })
        .collect()
}

/// Targets × scenarios, each square its first cell's glyph; when most
/// squares would be empty (see [`super::summary::Grid::sparse`]), one
/// line per square that has a cell instead.
fn summary_grid(out: &mut String, report: &Report) {
    let matrix = super::summary::Grid::of(report);
    if matrix.sparse() {
        out.push_str("\n| target | scenario | verdict |\n|---|---|---|\n");
        let mut listed = 0;
        for (row, squares) in matrix.occupied() {
            for (scenario, cells) in squares {
                listed += 1;
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    md(&row.label()),
                    md(scenario),
                    cells
                        .first()
                        .map_or_else(|| "–".into(), |c| summary_cell(c))
                );
            }
        }
        let _ = writeln!(out, "\n{}", matrix.left_out(listed));
        return;
    }
    let header: Vec<String> = matrix.scenarios().iter().map(|s| md(s)).collect();
    let _ = writeln!(out, "\n| target | {} |", header.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(header.len()));
    for row in matrix.rows() {
        let squares: Vec<String> = matrix
            .scenarios()
            .iter()
            .map(|s| {
                matrix
                    .at(row, s)
                    .first()
                    .map_or_else(|| "–".into(), |c| summary_cell(c))
            })
            .collect();
        let _ = writeln!(out, "| {} | {} |", md(&row.label()), squares.join(" | "));
    }
}

fn summary_cell(cell: &Cell) -> String {
    let mut text = cell.verdict.glyph().to_string();
    if cell.pass_rate.is_some() {
        text.push_str(&format!(" {}", attempts_text(cell)));
    }
    if let Some(j) = &cell.expectation {
        if j.fails_run {
            text.push_str(&format!(" **{}**", j.outcome.as_str()));
        } else {
            text.push_str(&format!(" {}", j.outcome.as_str()));
        }
    }
    text
}

fn verdict_words(cell: &Cell) -> String {
    match cell.verdict {
        Verdict::Flaky => format!("flaky ({})", attempts_text(cell)),
        v => v.as_str().to_string(),
    }
}

/// The boundary's signature and the first line of its message (or the
/// cell's reason), each in the output's form of untrusted text.
fn signature_text(cell: &Cell, form: fn(&str) -> String) -> String {
    match cell.boundary_signature() {
        Some(sig) => format!(
            "{} — {}",
            form(&sig.short()),
            form(&first_line(&sig.message))
        ),
        None => cell
            .reason
            .as_deref()
            .map(|r| form(&first_line(r)))
            .unwrap_or_default(),
    }
}

fn md(text: &str) -> String {
    Untrusted::new(text).markdown()
}

fn terminal(text: &str) -> String {
    Untrusted::new(text).terminal()
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > 200 {
        format!("{}…", line.chars().take(199).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::{Expectations, GateOptions};
    use crate::fixture;

    fn judged() -> Report {
        let mut r = fixture::report();
        let text = "[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nverdict = \"fail\"\nreason = \"known: bug, #189\"\n";
        Expectations::parse(std::path::Path::new("ci/expect.toml"), text)
            .unwrap()
            .judge(&mut r, GateOptions::default());
        r
    }

    #[test]
    fn the_summary_has_the_matrix_the_unexpected_cells_and_the_folder() {
        let md = render_step_summary(&judged(), "reports/run-1");
        assert!(
            md.contains("| target | native-continuity | recreate-rehydrate |"),
            "{md}"
        );
        assert!(md.contains("| agent | ❌ expected | ✅ new |"), "{md}");
        assert!(md.contains("| gateway | ⚠ **new** |"), "{md}");
        assert!(md.contains("expectations ci/expect.toml:"), "{md}");
        assert!(md.contains("`reports/run-1`"), "{md}");
        // The expected failure is not listed among the cells to look at.
        assert!(!md.contains("| agent × native-continuity |"), "{md}");
    }

    #[test]
    fn annotations_are_errors_for_what_fails_and_escaped() {
        let notes = annotations(&judged());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes
                .iter()
                .all(|n| n.as_str().starts_with("::error title=continuity%3A ")),
            "{notes:?}"
        );
        let mut r = fixture::repeated_report();
        r.cells.retain(|c| c.verdict == Verdict::Flaky);
        let notes = annotations(&r);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].as_str().starts_with("::warning "), "{notes:?}");
        assert!(
            notes[0].as_str().contains("flaky (1/2 passed)"),
            "{notes:?}"
        );
    }
}
