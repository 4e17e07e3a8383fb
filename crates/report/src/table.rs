//! The `report.txt` rendering: a header, a totals line and one comfy-table
//! per scenario (targets × phases + verdict), every column whole, however
//! wide. The terminal gets the fitted summary of [`super::terminal`]
//! instead. Colour is the caller's decision; with it off the output holds
//! no ANSI escape at all.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell as TableCell, Color, ContentArrangement, Table};

use crate::untrusted::Untrusted;

use super::model::{Cell, ExpectOutcome, Outcome, PhaseResult, Report, SignatureKind, Verdict};

/// Placeholder for a phase that was not reached or is absent from a cell.
const NOT_RUN: &str = "–";

/// The run header, totals and one table per scenario.
pub(crate) fn render_text(report: &Report, color: bool) -> String {
    let report = &*super::inert::of(report);
    let mut out = String::new();
    out.push_str(&header_line(report));
    out.push('\n');
    out.push_str(&totals_line(report));
    out.push('\n');
    if let Some(line) = super::floor::run_line(report) {
        out.push_str(&line);
        out.push('\n');
    }
    if report.run.interrupted {
        out.push_str("interrupted: unfinished cells are missing\n");
    }
    if let Some(line) = super::gate::gate_line(report) {
        out.push_str(&line);
        out.push('\n');
    }
    for line in
        super::gate::expiring_lines(report, |t| crate::untrusted::Untrusted::new(t).terminal())
    {
        out.push_str(&line);
        out.push('\n');
    }
    for (scenario, cells) in report.by_scenario() {
        out.push('\n');
        out.push_str(scenario);
        out.push('\n');
        out.push_str(&scenario_table(report, &cells, color).to_string());
        out.push('\n');
    }
    if let Some(rows) = super::floor::cell_rows(report) {
        let mut table = new_table(false);
        table.set_header(super::floor::CELL_COLUMNS);
        for row in rows {
            table.add_row(row);
        }
        out.push_str(&format!("\nfloor and overhead\n{table}\n"));
    }
    out
}

/// `run <id> · <base URL> · agent <name> · server <version>`.
pub(crate) fn header_line(report: &Report) -> String {
    let run = &report.run;
    format!(
        "run {} · {} · agent {} · server {}",
        run.id,
        run.base_url,
        run.agent,
        Untrusted::new(run.server_version.as_deref().unwrap_or("unknown")).terminal()
    )
}

/// `N/M cells passed (F failed, E errors, S skipped)`, counted from the
/// cells rather than trusting `totals`, so a hand-edited report cannot
/// lie. Cells with no verdict on their restart are out of `M`, named after.
pub(crate) fn totals_line(report: &Report) -> String {
    let t = super::model::Totals::of(&report.cells);
    let mut more = String::new();
    if t.flaky > 0 {
        more.push_str(&format!(", {} flaky", t.flaky));
    }
    if t.not_applicable > 0 {
        more.push_str(&format!(", {} not applicable", t.not_applicable));
    }
    format!(
        "{}/{} cells passed ({} failed, {} errors, {} skipped{more})",
        t.passed,
        t.judged(),
        t.failed,
        t.errored,
        t.skipped
    )
}

fn scenario_table(report: &Report, cells: &[&Cell], color: bool) -> Table {
    let phases = super::model::phase_columns(cells);
    let mut table = new_table(color);
    let mut header = vec![TableCell::new("target")];
    header.extend(phases.iter().map(|p| TableCell::new(*p)));
    header.push(TableCell::new("verdict"));
    let judged = report.cells.iter().any(|c| c.expectation.is_some());
    if judged {
        header.push(TableCell::new("expectation"));
    }
    table.set_header(header);

    for cell in cells {
        let mut row = vec![TableCell::new(cell.label())];
        for name in &phases {
            row.push(phase_cell(cell.phase(name), color));
        }
        row.push(paint(
            TableCell::new(verdict_text(cell)),
            verdict_color(cell.verdict),
            color,
        ));
        if judged {
            let (text, fg) = expectation_text(cell);
            row.push(paint(TableCell::new(text), fg, color));
        }
        table.add_row(row);
    }
    table
}

// UTF8_FULL_CONDENSED: box-drawing lines read well in a terminal and in a
// UTF-8 text file, and the cells already hold ✅/❌, so ASCII-only borders
// would buy no portability; "condensed" drops the rule between rows, which
// keeps a many-target table compact. Width detection is switched off so a
// file and a pipe get the same layout as a wide terminal.
pub(super) fn new_table(color: bool) -> Table {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .force_no_tty();
    if color {
        table.enforce_styling();
    }
    table
}

fn phase_cell(phase: Option<&PhaseResult>, color: bool) -> TableCell {
    let Some(phase) = phase else {
        return TableCell::new(NOT_RUN);
    };
    let (text, fg) = match phase.outcome {
        Outcome::Ok => ("✅".to_string(), Color::Green),
        // A timeout the session store caused says so; otherwise what the waits saw.
        Outcome::Timeout => match phase.signature.as_ref() {
            Some(sig) if sig.kind == SignatureKind::Persist => {
                ("❌ persist timeout".to_string(), Color::Red)
            }
            Some(sig) if sig.cause.is_some() => (
                format!(
                    "⏱ {}",
                    shown(&sig.cause.as_ref().map(|c| c.short()).unwrap_or_default())
                ),
                Color::Red,
            ),
            _ => ("❌ timeout".to_string(), Color::Red),
        },
        Outcome::Fail => match &phase.signature {
            Some(sig) => (format!("❌ {}", shown(&sig.short())), Color::Red),
            None => ("❌".to_string(), Color::Red),
        },
        Outcome::NotRun => (NOT_RUN.to_string(), Color::DarkGrey),
        Outcome::NotApplicable => ("n/a".to_string(), Color::DarkGrey),
        Outcome::Interrupted => ("⏸ interrupted".to_string(), Color::Yellow),
    };
    paint(TableCell::new(text), fg, color)
}

fn paint(cell: TableCell, fg: Color, color: bool) -> TableCell {
    if color {
        cell.fg(fg)
    } else {
        cell
    }
}

/// The verdict column; comfy-table has no column spans, so a skipped or
/// errored cell's reason goes here rather than across the phase columns.
fn verdict_text(cell: &Cell) -> String {
    let head = verdict_head(cell);
    match cell.pass_rate {
        Some(_) => format!("{head} ({})", super::gate::attempts_text(cell)),
        None => head,
    }
}

fn verdict_head(cell: &Cell) -> String {
    match cell.verdict {
        Verdict::Flaky => match &cell.failure_boundary {
            Some(b) => format!("〰 flaky @ {b}"),
            None => "〰 flaky".to_string(),
        },
        Verdict::Pass => "✅ pass".to_string(),
        Verdict::Fail => match &cell.failure_boundary {
            Some(b) => format!("❌ fail @ {b}"),
            None => "❌ fail".to_string(),
        },
        Verdict::Error => match (&cell.failure_boundary, &cell.reason) {
            (Some(b), None) => format!("⚠ error @ {b}"),
            _ => with_reason("⚠ error", cell.reason.as_deref()),
        },
        Verdict::Skipped => with_reason("– skipped", cell.reason.as_deref()),
        Verdict::Interrupted => with_reason("⏸ interrupted", cell.reason.as_deref()),
        Verdict::NotApplicable => with_reason("n/a not applicable", cell.reason.as_deref()),
    }
}

fn with_reason(head: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) if !r.trim().is_empty() => format!("{head}: {}", one_line(r)),
        _ => head.to_string(),
    }
}

/// The first line of a reason, at most [`REASON_CHARS`] characters: a table
/// cell is a pointer, report.json and report.md keep the whole text.
fn one_line(s: &str) -> String {
    let first = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = first.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= REASON_CHARS {
        return shown(&line);
    }
    let cut: String = line.chars().take(REASON_CHARS - 1).collect();
    format!("{}…", shown(&cut))
}

/// Text continuity did not write, in its terminal form.
fn shown(text: &str) -> String {
    Untrusted::new(text).terminal()
}

const REASON_CHARS: usize = 80;

/// The expectation column: the outcome, what was expected, and the entry's reason.
fn expectation_text(cell: &Cell) -> (String, Color) {
    let Some(j) = &cell.expectation else {
        return (NOT_RUN.to_string(), Color::DarkGrey);
    };
    let fg = match j.outcome {
        ExpectOutcome::Expected => Color::Green,
        ExpectOutcome::Fixed | ExpectOutcome::New if !j.fails_run => Color::Yellow,
        _ => Color::Red,
    };
    let mut text = super::gate::judgement_text(j);
    if let Some(reason) = &j.reason {
        text.push_str(": ");
        text.push_str(&one_line(reason));
    }
    (text, fg)
}

fn verdict_color(verdict: Verdict) -> Color {
    match verdict {
        Verdict::Flaky => Color::Yellow,
        Verdict::Pass => Color::Green,
        Verdict::Fail => Color::Red,
        Verdict::Error => Color::Yellow,
        Verdict::Skipped => Color::DarkGrey,
        Verdict::Interrupted => Color::Yellow,
        Verdict::NotApplicable => Color::DarkGrey,
    }
}
