//! After a run or a merge: judge the report against the expectations, write
//! the run folder, print the tables, feed CI (GitHub step summary and
//! annotations), warn about flaky and fixed cells, and pick the exit code.
//! `run` and `merge` share it so they gate the same way.

use super::{CommandError, Outcome};
use crate::cli::{GateArgs, MessageFormat};
use crate::console;
use crate::report::expect::{gate_fails, Expectations, GateOptions};
use crate::report::RunFolder;
use crate::report::{self, ExpectOutcome, Report, Verdict};
use std::path::{Path, PathBuf};

/// The expectations file to judge with (`--expect`, else `[run] expect`), loaded and checked.
pub(super) fn load_expectations(
    gate: &GateArgs,
    from_config: Option<&Path>,
) -> Result<Option<Expectations>, CommandError> {
    let path: Option<PathBuf> = gate.expect.clone().or(from_config.map(Path::to_path_buf));
    path.map(|p| Expectations::load(&p).map_err(CommandError::from))
        .transpose()
}

/// Judges the report, warning about entries that never get to decide.
pub(super) fn judge(expectations: &Expectations, report: &mut Report, gate: &GateArgs) {
    for warning in expectations.shadowed(report) {
        console::errln(&format!("warning: {warning}"));
    }
    expectations.judge(report, options(gate));
}

fn options(gate: &GateArgs) -> GateOptions {
    GateOptions {
        allow_fixed: gate.allow_fixed,
        flaky_result: gate.flaky_result.into(),
        today: None,
    }
}

/// Prints a human-readable block: on stdout, or on stderr when stdout carries JSON lines.
pub(super) fn print_table(format: MessageFormat, text: &str) {
    match format {
        MessageFormat::Human => console::outln(text),
        MessageFormat::Json => console::errln(text),
    }
}

/// Writes the run folder and everything around it; returns the exit code.
/// `empty_ok`: a shard may hold no cell at all.
pub(super) fn finish(
    report: &Report,
    folder: &RunFolder,
    format: MessageFormat,
    empty_ok: bool,
) -> Result<Outcome, CommandError> {
    let stream = match format {
        MessageFormat::Human => console::Stream::Stdout,
        MessageFormat::Json => console::Stream::Stderr,
    };
    let color = console::color(stream);
    let cannot_write = |e: std::io::Error| {
        CommandError::incomplete(format!(
            "cannot write the report into {}: {e}",
            folder.dir().display()
        ))
    };
    let files = folder.write_report(report).map_err(cannot_write)?;
    // What the components and session stores wrote there, now that they have stopped.
    folder.scrub().map_err(cannot_write)?;
    folder
        .check_report(&files)
        .map_err(|e| CommandError::incomplete(e.to_string()))?;
    let layout = report::Layout {
        width: console::width(stream),
        color,
        folder: shown_folder(&files.dir),
    };
    // Redacted before it is fitted: a secret cut by an ellipsis would no longer be found.
    let text = report::render_terminal(&folder.redacted_report(report), &layout);
    print_table(format, folder.redactor().redact(&text).trim_end());
    github_outputs(report, folder.dir(), format);
    warn_about(report);
    if report.run.interrupted {
        let cut = report
            .cells
            .iter()
            .filter(|c| c.verdict == Verdict::Interrupted)
            .count();
        let held = match cut {
            0 => "the cells that finished (none was cut short)".to_string(),
            1 => "the cells that finished and the one it cut short (`interrupted`)".to_string(),
            n => format!("the cells that finished and the {n} it cut short (`interrupted`)"),
        };
        console::errln(&format!("the run was interrupted: the report holds {held}"));
        return Ok(Outcome::Interrupted);
    }
    if report.cells.is_empty() && !empty_ok {
        return Ok(Outcome::Failed);
    }
    if let Some(lost) = lost_parts(report) {
        console::errln(&lost);
        return Ok(Outcome::HarnessFailed);
    }
    Ok(Outcome::failed_if(gate_fails(report)))
}

/// `continuity's own postgres (the session store) failed under 2 cells: …`
/// when a part of the harness failed under cells (they are `error`), which
/// makes the run incomplete whatever the gate says.
fn lost_parts(report: &Report) -> Option<String> {
    let mut parts: Vec<(crate::errors::HarnessPart, usize)> = Vec::new();
    for cell in report.cells.iter().filter(|c| c.verdict == Verdict::Error) {
        let Some(part) = cell.boundary_signature().and_then(|s| s.component) else {
            continue;
        };
        match parts.iter_mut().find(|(p, _)| *p == part) {
            Some((_, n)) => *n += 1,
            None => parts.push((part, 1)),
        }
    }
    let named: Vec<String> = parts
        .iter()
        .map(|(part, n)| {
            let cells = if *n == 1 { "cell" } else { "cells" };
            format!("{} failed under {n} {cells}", part.describe())
        })
        .collect();
    (!named.is_empty()).then(|| {
        format!(
            "continuity's own {}: the run could not be completed (those cells are `error`, no verdict on sandbox-agent)",
            named.join("; ")
        )
    })
}

/// Flaky cells counted as passed and allowed fixes pass quietly otherwise.
fn warn_about(report: &Report) {
    let flaky = report
        .cells
        .iter()
        .filter(|c| c.verdict == Verdict::Flaky)
        .count();
    if flaky > 0 && report.run.flaky_result == report::FlakyResult::Pass {
        console::errln(&format!("warning: {flaky} flaky cell(s) counted as passed (--flaky-result pass); their attempts are in report.json"));
    }
    let fixed: Vec<String> = report
        .cells
        .iter()
        .filter(|c| {
            c.expectation
                .as_ref()
                .is_some_and(|j| j.outcome == ExpectOutcome::Fixed)
        })
        .map(|c| format!("{} × {}", c.label(), c.point.scenario))
        .collect();
    if !fixed.is_empty() {
        let how = if report.run.allow_fixed {
            "allowed by --allow-fixed"
        } else {
            "this fails the run: update the expectations (`continuity baseline`) or pass --allow-fixed"
        };
        console::errln(&format!(
            "warning: expected failures now pass: {} ({how})",
            fixed.join(", ")
        ));
    }
}

/// `$GITHUB_STEP_SUMMARY` gets the compact summary appended; with
/// `GITHUB_ACTIONS=true` the annotations go to stdout (stderr when stdout carries JSON).
fn github_outputs(report: &Report, run_dir: &Path, format: MessageFormat) {
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let artifact = run_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| run_dir.display().to_string());
        // Outside the run folder, so it does not pass through `RunFolder`: redact here.
        let text =
            crate::secret::redact_known(&report::github::render_step_summary(report, &artifact));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        if let Err(e) = appended {
            console::errln(&format!(
                "warning: cannot append to GITHUB_STEP_SUMMARY ({}): {e}",
                Path::new(&path).display()
            ));
        }
    }
    if std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true") {
        let stream = match format {
            MessageFormat::Human => console::Stream::Stdout,
            MessageFormat::Json => console::Stream::Stderr,
        };
        for line in report::github::annotations(report) {
            console::command(&line, stream);
        }
    }
}

/// The run folder as the reader would type it: relative to the working
/// folder when it is under it.
pub(super) fn shown_folder(dir: &Path) -> String {
    let relative = std::env::current_dir()
        .ok()
        .and_then(|cwd| dir.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty());
    relative
        .unwrap_or_else(|| dir.to_path_buf())
        .display()
        .to_string()
}
