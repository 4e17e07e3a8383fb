//! What the user sees while a run goes: one line per finished cell on
//! stderr (coloured only on a terminal without `NO_COLOR`), and the signal
//! handling (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT alike): the first stops after
//! cleanup, the second kills everything and keeps what finished.

use super::partial::PartialRun;
use crate::report::Verdict;
use crate::runner::RunEvent;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

pub(super) fn print_progress(event: &RunEvent, color: bool) {
    if let RunEvent::OverallTimeout { timeout_ms } = event {
        crate::console::errln(&format!(
            "\nthe overall timeout ({timeout_ms} ms, --overall-timeout-ms) ran out: stopping, cleaning up and writing the partial report"
        ));
        return;
    }
    if let RunEvent::Retrying {
        index,
        total,
        attempt,
        target,
        scenario,
    } = event
    {
        let at = attempt
            .failure_boundary
            .as_deref()
            .map(|b| format!(" @ {b}"))
            .unwrap_or_default();
        crate::console::errln(&format!(
            "[{index}/{total}] {target} × {scenario} attempt {}: {}{at}; retrying",
            attempt.attempt,
            paint(attempt.verdict.as_str(), "33", color)
        ));
        return;
    }
    let RunEvent::CellFinished { index, total, cell } = event else {
        return;
    };
    let verdict = match cell.verdict {
        Verdict::Flaky => paint(
            &format!(
                "FLAKY @ {} ({})",
                cell.failure_boundary.as_deref().unwrap_or("?"),
                crate::report::gate::attempts_text(cell)
            ),
            "33",
            color,
        ),
        Verdict::Pass => paint("pass", "32", color),
        Verdict::Fail => paint(
            &format!("FAIL @ {}", cell.failure_boundary.as_deref().unwrap_or("?")),
            "31",
            color,
        ),
        Verdict::Error => match &cell.failure_boundary {
            Some(b) => paint(&format!("ERROR @ {b}"), "33", color),
            None => paint(
                &format!("ERROR: {}", first_line(cell.reason.as_deref())),
                "33",
                color,
            ),
        },
        Verdict::Interrupted => paint(
            &format!(
                "interrupted @ {}",
                cell.failure_boundary.as_deref().unwrap_or("?")
            ),
            "33",
            color,
        ),
        Verdict::Skipped => paint(
            &format!("skipped: {}", first_line(cell.reason.as_deref())),
            "33",
            color,
        ),
    };
    let signature = cell
        .phases
        .iter()
        .find(|p| Some(&p.name) == cell.failure_boundary.as_ref())
        .and_then(|p| p.signature.as_ref())
        .map(|s| format!(" ({})", s.short()))
        .unwrap_or_default();
    let attempts = if cell.attempts.len() > 1 && cell.verdict != Verdict::Flaky {
        format!(" ({})", crate::report::gate::attempts_text(cell))
    } else {
        String::new()
    };
    crate::console::errln(&format!(
        "[{index}/{total}] {} × {}: {verdict}{signature}{attempts} in {:.1} s",
        cell.label(),
        cell.scenario,
        cell.duration_ms as f64 / 1000.0
    ));
}

fn first_line(text: Option<&str>) -> &str {
    text.and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("")
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The signals that stop a run: Ctrl-C, `kill`, a closed terminal or a
/// dropped SSH session (SIGHUP), Ctrl-\ (SIGQUIT); nextest treats them alike.
const STOPPING: [(SignalKind, &str); 4] = [
    (SignalKind::interrupt(), "Ctrl-C"),
    (SignalKind::terminate(), "SIGTERM"),
    (SignalKind::hangup(), "SIGHUP"),
    (SignalKind::quit(), "SIGQUIT"),
];

/// The first stopping signal: the running cell stops where it is
/// (recorded as interrupted), cleans up, and the partial report is
/// written. The second: every process group is killed at once, the
/// report of the cells that finished is written, and the harness exits.
pub(super) fn spawn_signal_handler(cancel: watch::Sender<bool>, partial: PartialRun) {
    let mut streams = Vec::new();
    for (kind, name) in STOPPING {
        match signal(kind) {
            Ok(stream) => streams.push((stream, name)),
            Err(e) => crate::console::errln(&format!("warning: cannot handle {name}: {e}")),
        }
    }
    tokio::spawn(async move {
        let mut presses = 0;
        loop {
            let next =
                futures_util::future::select_all(streams.iter_mut().map(|(stream, name)| {
                    Box::pin(async move { stream.recv().await.map(|_| *name) })
                }));
            let (received, _, _) = next.await;
            let Some(name) = received else { return };
            presses += 1;
            if presses == 1 {
                crate::console::errln(&format!("\ninterrupted ({name}): stopping, cleaning up and writing the partial report (Ctrl-C again to kill everything now)"));
                let _ = cancel.send(true);
            } else {
                crate::supervise::kill_all_groups();
                crate::scenario::sandbox_root::remove_run(partial.id());
                match partial.write() {
                    Ok(Some(cells)) => crate::console::errln(&format!(
                        "killed ({name}): the report holds the {cells} cell(s) that had finished"
                    )),
                    Ok(None) => {}
                    Err(e) => crate::console::errln(&format!(
                        "killed ({name}): cannot write the partial report: {e}"
                    )),
                }
                std::process::exit(i32::from(super::Outcome::Killed.exit_code()));
            }
        }
    });
}
