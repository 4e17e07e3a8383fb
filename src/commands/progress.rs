//! What the user sees while a run goes: one line per finished cell on
//! stderr (coloured only on a terminal without `NO_COLOR`), and the Ctrl-C
//! handling: the first stops after cleanup, the second kills everything.

use crate::report::Verdict;
use crate::runner::RunEvent;
use tokio::sync::watch;

pub(super) fn print_progress(event: &RunEvent, color: bool) {
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

/// First Ctrl-C (or SIGTERM): the running cell stops where it is (recorded
/// as interrupted), cleans up, and the partial report is written.
/// Second: kill every process group at once and exit.
pub(super) fn spawn_signal_handler(cancel: watch::Sender<bool>) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut presses = 0;
        loop {
            tokio::select! {
                r = tokio::signal::ctrl_c() => { if r.is_err() { return; } }
                Some(_) = async { match term.as_mut() { Some(t) => t.recv().await, None => std::future::pending().await } } => {}
            }
            presses += 1;
            if presses == 1 {
                crate::console::errln("\ninterrupted: stopping, cleaning up and writing the partial report (Ctrl-C again to kill everything now)");
                let _ = cancel.send(true);
            } else {
                crate::supervise::kill_all_groups();
                std::process::exit(i32::from(super::Outcome::Killed.exit_code()));
            }
        }
    });
}
