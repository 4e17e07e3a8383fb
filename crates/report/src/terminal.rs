//! What a person reads at the end of `continuity run` and from
//! `continuity show RUN`, fitted to a terminal's width: the run's header
//! lines, the summary matrix ([`super::summary`]), one line per reason
//! cells were skipped for, then one block per failed or unexpected cell in
//! cargo-nextest's failure-output spirit (a status line, then its phases
//! top-down, each with its outcome, time and signature), and where the full
//! grids are (report.txt, report.md, report.html keep every column).
//!
//! No line is wider than [`Layout::width`] display columns: prose lines
//! wrap at word boundaries, signatures and messages are cut with an
//! ellipsis, never wrapped into fragments. Colour is added after fitting.
//!
//! Over 400 lines on purpose: every line here is fitted by the same `Out`
//! (the width, wrapping at words, the ellipsis, colour added after fitting),
//! from the header to each failed cell's block; the summary matrix is apart
//! (`summary.rs`), the tests in `terminal_tests.rs`.

use super::model::{
    Axis, Cell, ExpectOutcome, Outcome, PhaseResult, Report, SignatureKind, Verdict,
};
use crate::fit;
use crate::untrusted::Untrusted;

/// How the text is laid out.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The columns no line may pass.
    pub width: usize,
    /// ANSI colours on the status words and failed phases.
    pub color: bool,
    /// The run folder, as the reader would type it (`show`'s argument, or
    /// the folder `run` wrote), for the pointers to the files and to `--cell`.
    pub folder: String,
}

/// The narrowest layout worth making: below it the columns still fit, but
/// names are cut to nothing useful.
const MIN_WIDTH: usize = 40;

/// The whole terminal text, ending with a newline.
pub fn render_terminal(report: &Report, layout: &Layout) -> String {
    let report = &*super::inert::of(report);
    let width = layout.width.max(MIN_WIDTH);
    let mut out = Out::new(width);
    let header = super::table::header_line(report);
    if fit::width(&header) <= width {
        out.line(&header);
    } else {
        // The base URL on a line of its own, so the version is not cut off.
        let run = &report.run;
        out.wrap(&format!(
            "run {} · agent {} · server {}",
            run.id,
            run.agent,
            shown(run.server_version.as_deref().unwrap_or("unknown"))
        ));
        out.line(&fit::cut_middle(&format!("  at {}", run.base_url), width));
    }
    out.wrap(&super::table::totals_line(report));
    if let Some(line) = super::floor::run_line(report) {
        out.wrap(&line);
    }
    if report.run.interrupted {
        out.line("interrupted: unfinished cells are missing");
    }
    if let Some(line) = super::gate::gate_line(report) {
        out.wrap(&line);
    }
    for line in super::gate::expiring_lines(report, shown) {
        out.wrap(&line);
    }
    out.blank();
    out.line("summary");
    out.text(&super::summary::fitted_summary(report, width));
    let skips = skip_lines(report);
    if !skips.is_empty() {
        out.blank();
        for line in skips {
            out.wrap(&line);
        }
    }
    let blocks: Vec<&Cell> = report.cells.iter().filter(|c| needs_block(c)).collect();
    for cell in &blocks {
        out.blank();
        block(&mut out, cell, layout.color);
    }
    let schedules: Vec<&Cell> = report
        .cells
        .iter()
        .filter(|c| c.schedule.is_some())
        .collect();
    if !schedules.is_empty() {
        out.blank();
        for cell in schedules {
            if let Some(schedule) = &cell.schedule {
                out.wrap(&format!(
                    "schedule of {} × {}: {}",
                    shown(&cell.point.scenario),
                    shown(&cell.label()),
                    shown(&schedule.describe())
                ));
            }
        }
    }
    out.blank();
    // The folder is one word of the wrapped lines: moved whole to a line
    // of its own rather than cut, unless it is wider than any line.
    let folder = fit::cut_middle(&layout.folder, width - 20);
    out.wrap(&format!("full grids: {folder}/report.{{txt,md,html}}"));
    let cell = if blocks.is_empty() {
        "TARGET/SCENARIO[/CLIENT][#ATTEMPT]"
    } else {
        // Each block ends with its own `--cell`.
        "CELL"
    };
    out.wrap(&format!(
        "a cell's timeline: continuity show {folder} --cell {cell}"
    ));
    out.text
}

/// Lines no wider than a width.
struct Out {
    width: usize,
    text: String,
}

impl Out {
    fn new(width: usize) -> Out {
        Out {
            width,
            text: String::new(),
        }
    }

    /// A line already fitted (or cut here, as a last resort).
    fn line(&mut self, line: &str) {
        if fit::width(line) <= self.width || line.contains('\x1b') {
            self.text.push_str(line);
        } else {
            self.text.push_str(&fit::cut(line, self.width));
        }
        self.text.push('\n');
    }

    /// Lines of text that fit already (the summary).
    fn text(&mut self, text: &str) {
        for line in text.lines() {
            self.line(line);
        }
    }

    fn blank(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
    }

    /// Prose, wrapped at spaces; continuation lines are indented by two.
    fn wrap(&mut self, text: &str) {
        let mut line = String::new();
        for word in text.split(' ') {
            let next = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if fit::width(&next) > self.width && !line.trim().is_empty() {
                self.line(&line);
                line = format!("  {word}");
            } else {
                line = next;
            }
        }
        self.line(&line);
    }
}

/// Whether a cell gets a block: it did not pass, or it is not what the
/// expectations said (a fixed cell passes, and still must be looked at).
/// Skipped cells get one only when unexpected; the others share a line
/// per reason.
fn needs_block(cell: &Cell) -> bool {
    match cell.verdict {
        Verdict::Fail | Verdict::Error | Verdict::Flaky | Verdict::Interrupted => true,
        Verdict::Pass | Verdict::Skipped | Verdict::NotApplicable => unexpected(cell),
    }
}

fn unexpected(cell: &Cell) -> bool {
    cell.expectation.as_ref().is_some_and(|j| {
        j.fails_run || !matches!(j.outcome, ExpectOutcome::Expected | ExpectOutcome::New)
    })
}

/// `skipped: REASON (ROWS: N cells)`, one per reason, in report order;
/// then `not applicable: REASON (…)` for the cells with no verdict on
/// their restart, which name the call their client lacks.
fn skip_lines(report: &Report) -> Vec<String> {
    [Verdict::Skipped, Verdict::NotApplicable]
        .into_iter()
        .flat_map(|verdict| reason_lines(report, verdict))
        .collect()
}

/// One line per reason the expected cells of `verdict` give.
fn reason_lines(report: &Report, verdict: Verdict) -> Vec<String> {
    let mut groups: Vec<(String, Vec<String>, usize)> = Vec::new();
    for cell in report
        .cells
        .iter()
        .filter(|c| c.verdict == verdict && !unexpected(c))
    {
        let reason = shown(first_line(cell.reason.as_deref()));
        let label = cell.label();
        match groups.iter_mut().find(|(r, _, _)| *r == reason) {
            Some((_, labels, n)) => {
                if !labels.contains(&label) {
                    labels.push(label);
                }
                *n += 1;
            }
            None => groups.push((reason, vec![label], 1)),
        }
    }
    groups
        .into_iter()
        .map(|(reason, labels, n)| {
            let cells = if n == 1 { "cell" } else { "cells" };
            let reason = if reason.is_empty() {
                "no reason given".to_string()
            } else {
                reason
            };
            format!(
                "{}: {reason} ({}: {n} {cells})",
                verdict.words(),
                labels.join(", ")
            )
        })
        .collect()
}

/// A cell's block: `FAIL [  4.2 s] agent × native-continuity @ phase`,
/// then its phases and what else explains it.
fn block(out: &mut Out, cell: &Cell, color: bool) {
    let width = out.width;
    let (word, code) = status(cell);
    let mut head = format!(
        "[{}] {} × {}",
        fit::pad_left(&seconds(cell.duration_ms), 7),
        cell.label(),
        cell.point.scenario
    );
    let room = width - fit::width(word) - 1;
    // The boundary is the first failed phase below: left out rather than cut.
    if let Some(b) = &cell.failure_boundary {
        let with = format!("{head} @ {b}");
        if fit::width(&with) <= room {
            head = with;
        }
    }
    let head = fit::cut(&head, room);
    out.line(&format!("{} {head}", paint(word, code, color)));

    let phases: Vec<&PhaseResult> = cell.phases.iter().filter(|p| !p.cleanup).collect();
    // Names beyond half the width are cut, so the signatures keep their room.
    let name_width = phases
        .iter()
        .map(|p| fit::width(&p.name))
        .max()
        .unwrap_or(0)
        .min(width / 2 - 4);
    for phase in phases {
        phase_lines(out, phase, name_width, color);
    }
    let indent = "  ";
    let room = width - indent.len();
    if cell.attempts.len() > 1 {
        let retries = cell.attempts.iter().filter(|a| a.retry).count();
        let retried = match retries {
            0 => String::new(),
            1 => ", 1 retry".to_string(),
            n => format!(", {n} retries"),
        };
        out.line(&format!(
            "{indent}attempts: {}{retried}; phases of attempt {}",
            super::gate::attempts_text(cell),
            cell.attempt
        ));
    }
    if matches!(
        cell.verdict,
        Verdict::Error | Verdict::Skipped | Verdict::Interrupted | Verdict::NotApplicable
    ) {
        let reason = shown(first_line(cell.reason.as_deref()));
        if !reason.is_empty() {
            let text = format!("{}: {reason}", cell.verdict.words());
            out.line(&format!("{indent}{}", fit::cut(&text, room)));
        }
    }
    if let Some(j) = &cell.expectation {
        let mut text = match j.outcome {
            ExpectOutcome::New => "new: the expectations file has no entry for it".to_string(),
            _ => super::gate::judgement_text(j),
        };
        if let Some(reason) = &j.reason {
            text.push_str(": ");
            text.push_str(&shown(first_line(Some(reason))));
        }
        let code = if j.fails_run { "31" } else { "33" };
        let fitted = fit::cut(&text, room);
        let painted = if j.outcome == ExpectOutcome::Expected {
            fitted.into_owned()
        } else {
            paint(&fitted, code, color)
        };
        out.line(&format!("{indent}{painted}"));
    }
    out.line(&fit::cut(
        &format!(
            "{indent}timeline: --cell {}{}",
            cell_spec(cell),
            cell_pick_flags(cell)
        ),
        width,
    ));
}

/// One phase: `  ❌ name     95 ms  http 400 invalid_request`, and under a
/// failed one its message (and for a timeout what was pending and what
/// the waits saw), each cut to the width.
fn phase_lines(out: &mut Out, phase: &PhaseResult, name_width: usize, color: bool) {
    let width = out.width;
    let (glyph, failed) = match phase.outcome {
        Outcome::Ok => ("✅", false),
        Outcome::Fail => ("❌", true),
        Outcome::Timeout => ("⏱", true),
        Outcome::NotRun => ("–", false),
        Outcome::Interrupted => ("⏸", true),
        Outcome::NotApplicable => ("n/a", false),
    };
    let time = match phase.outcome {
        Outcome::NotRun | Outcome::NotApplicable => String::new(),
        _ => millis(phase.duration_ms),
    };
    let name = fit::cut(&phase.name, name_width);
    let lead = format!(
        "  {} {} {}",
        fit::pad(glyph, 2),
        fit::pad(&name, name_width),
        fit::pad_left(&time, 7)
    );
    let Some(what) = signature_text(phase) else {
        out.line(lead.trim_end());
        return;
    };
    let room = width.saturating_sub(fit::width(&lead) + 2);
    let what = fit::cut(&what, room);
    out.line(&format!("{lead}  {}", paint(&what, "31", color && failed)));
    let Some(sig) = &phase.signature else {
        return;
    };
    let indent = "       ";
    let room = width - indent.len();
    let mut details: Vec<String> = Vec::new();
    let message = shown(first_line(Some(&sig.message)));
    if !message.is_empty() && !message.eq_ignore_ascii_case(&what) {
        details.push(message);
    }
    if let Some(evidence) = sig.evidence() {
        details.push(format!("evidence: {}", shown(&evidence)));
    }
    // A hang says what it waited on and saw, as a timeout does.
    if phase.outcome == Outcome::Timeout || sig.kind == SignatureKind::Hung {
        if let Some(p) = &sig.pending {
            details.push(format!("pending: {}", shown(first_line(Some(p)))));
        }
        if let Some(o) = &sig.observed {
            details.push(format!("observed: {}", shown(first_line(Some(o)))));
        }
    }
    for detail in details {
        out.line(&format!("{indent}{}", fit::cut(&detail, room)));
    }
}

/// What a phase's line says after its time: its signature in a few words,
/// or `timeout`/`interrupted` without one; nothing for a phase that passed.
fn signature_text(phase: &PhaseResult) -> Option<String> {
    signature_words(phase).map(|words| shown(&words))
}

fn signature_words(phase: &PhaseResult) -> Option<String> {
    match (phase.outcome, &phase.signature) {
        (Outcome::Timeout, Some(sig)) if sig.kind == SignatureKind::Persist => {
            Some("persist timeout".to_string())
        }
        (Outcome::Timeout, Some(sig)) if sig.kind != SignatureKind::Timeout => {
            Some(format!("timeout: {}", sig.short()))
        }
        (Outcome::Timeout, Some(sig)) => Some(sig.short()),
        (Outcome::Timeout, None) => Some("timeout".to_string()),
        (Outcome::Interrupted, _) => Some("interrupted".to_string()),
        (Outcome::Fail, Some(sig)) => Some(sig.short()),
        (Outcome::Fail, None) => Some("failed".to_string()),
        (Outcome::Ok | Outcome::NotRun, _) => None,
        (Outcome::NotApplicable, _) => Some("not applicable".to_string()),
    }
}

/// The status word and its colour: nextest's upper-case words.
fn status(cell: &Cell) -> (&'static str, &'static str) {
    match cell.verdict {
        Verdict::Fail => ("FAIL", "31"),
        Verdict::Error => ("ERROR", "31"),
        Verdict::Flaky => ("FLAKY", "33"),
        Verdict::Interrupted => ("INTERRUPTED", "33"),
        Verdict::Skipped => ("SKIP", "33"),
        Verdict::NotApplicable => ("N/A", "33"),
        Verdict::Pass => ("PASS", "32"),
    }
}

/// What `show --cell` takes for this cell: `TARGET[@VERSION]/SCENARIO[/CLIENT]`.
pub fn cell_spec(cell: &Cell) -> String {
    let mut spec = cell.point.target.to_string();
    if let Some(v) = cell.point.name_on(Axis::Server) {
        spec.push_str(&format!("@{v}"));
    }
    spec.push_str(&format!("/{}", cell.point.scenario));
    if let Some(c) = cell.point.name_on(Axis::Client) {
        spec.push_str(&format!("/{c}"));
    }
    if let Some(sdk) = cell.point.name_on(Axis::Sdk) {
        spec.push_str(&format!("@{sdk}"));
    }
    spec
}

/// Whether `show --cell`'s path names the cell's value on `axis` (the
/// server after the target, the client and its SDK after the scenario:
/// [`cell_spec`]); every other axis is picked by a flag called as the
/// axis (`--persist`, `--agent`, any axis added since).
pub fn named_in_cell_path(axis: Axis) -> bool {
    matches!(axis, Axis::Server | Axis::Client | Axis::Sdk)
}

/// The flags `show --cell` needs beside the path: ` --AXIS VALUE` for each
/// axis the path does not name on which the cell names a value (a cell
/// names one only on an axis of several values: ` --persist postgres`),
/// in `report.json`'s order reversed, as `show` asks. A cell names its
/// agent whenever it is a real one, so `--agent` is left to `show`'s own
/// question on an agent axis.
pub(crate) fn cell_pick_flags(cell: &Cell) -> String {
    Axis::ALL
        .into_iter()
        .rev()
        .filter(|axis| !named_in_cell_path(*axis) && *axis != Axis::Agent)
        .filter_map(|axis| {
            let value = cell.point.name_on(axis)?;
            Some(format!(" --{} {value}", axis.name()))
        })
        .collect()
}

/// Text continuity did not write, in its terminal form.
fn shown(text: &str) -> String {
    Untrusted::new(text).terminal()
}

fn first_line(text: Option<&str>) -> &str {
    text.and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("")
}

fn millis(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        seconds(ms)
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}
