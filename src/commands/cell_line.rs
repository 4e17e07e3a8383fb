//! The line a finished cell gets while the run goes:
//! `[7/20] gateway × native-load: FAIL @ phase (http 400) in 3.1 s`,
//! numbered by how many cells have finished. Given a width (a terminal),
//! the cell's reason is cut to fit, with an ellipsis; the rest is short.

use crate::fit;
use crate::report::{Cell, Verdict};
use crate::untrusted::Untrusted;

/// The line for `cell`, the `done`th of `total` to finish.
pub(super) fn finished_line(
    cell: &Cell,
    (done, total): (usize, usize),
    color: bool,
    width: Option<usize>,
) -> String {
    let head = format!(
        "[{done}/{total}] {} × {}: ",
        cell.label(),
        cell.point.scenario
    );
    let signature = cell
        .phases
        .iter()
        .find(|p| Some(&p.name) == cell.failure_boundary.as_ref())
        .and_then(|p| p.signature.as_ref())
        .map(|s| format!(" ({})", Untrusted::new(&s.short()).terminal()))
        .unwrap_or_default();
    let attempts = if cell.attempts.len() > 1 && cell.verdict != Verdict::Flaky {
        format!(" ({})", crate::report::gate::attempts_text(cell))
    } else {
        String::new()
    };
    let took = format!(" in {:.1} s", cell.duration_ms as f64 / 1000.0);
    let (verdict, code) = verdict_text(cell);
    // Redacted before it may be cut: a secret cut in half would not be found.
    let reason =
        crate::secret::redact_known(&Untrusted::new(reason(cell).unwrap_or("")).terminal());
    let verdict = format!("{verdict}{reason}");
    let Some(width) = width else {
        return format!(
            "{head}{}{signature}{attempts}{took}",
            paint(&verdict, code, color)
        );
    };
    // On a terminal, within its width: the signature goes first, then the
    // verdict (its reason, or its boundary) is cut.
    let mut tail = format!("{signature}{attempts}{took}");
    if fit::width(&head) + fit::width(&verdict) + fit::width(&tail) > width {
        tail = format!("{attempts}{took}");
    }
    let room = width.saturating_sub(fit::width(&head) + fit::width(&tail));
    format!(
        "{head}{}{tail}",
        paint(&fit::cut(&verdict, room), code, color)
    )
}

/// The verdict words and their colour; a reason follows those ending in `: `.
fn verdict_text(cell: &Cell) -> (String, &'static str) {
    let boundary = cell.failure_boundary.as_deref().unwrap_or("?");
    match cell.verdict {
        Verdict::Flaky => (
            format!(
                "FLAKY @ {boundary} ({})",
                crate::report::gate::attempts_text(cell)
            ),
            "33",
        ),
        Verdict::Pass => ("pass".to_string(), "32"),
        Verdict::Fail => (format!("FAIL @ {boundary}"), "31"),
        Verdict::Error => match &cell.failure_boundary {
            Some(b) => (format!("ERROR @ {b}"), "33"),
            None => ("ERROR: ".to_string(), "33"),
        },
        Verdict::Interrupted => (format!("interrupted @ {boundary}"), "33"),
        Verdict::Skipped => ("skipped: ".to_string(), "33"),
        Verdict::NotApplicable => ("not applicable: ".to_string(), "33"),
    }
}

/// The first line of the reason the verdict words end asking for.
fn reason(cell: &Cell) -> Option<&str> {
    let wants = match cell.verdict {
        Verdict::Skipped | Verdict::NotApplicable => true,
        Verdict::Error => cell.failure_boundary.is_none(),
        _ => false,
    };
    wants.then(|| {
        cell.reason
            .as_deref()
            .and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
            .unwrap_or("")
    })
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Cell;

    fn cell(verdict: &str, reason: Option<&str>) -> Cell {
        serde_json::from_value(serde_json::json!({
            "target": "gateway", "scenario": "native-load", "attempt": 1,
            "verdict": verdict, "failureBoundary": null, "reason": reason,
            "durationMs": 3100, "phases": [], "restarts": []
        }))
        .unwrap()
    }

    #[test]
    fn numbered_by_completion_and_cut_only_on_a_terminal() {
        let pass = cell("pass", None);
        assert_eq!(
            finished_line(&pass, (11, 20), false, None),
            "[11/20] gateway × native-load: pass in 3.1 s"
        );
        let long = "nginx is not installed (Debian: apt-get install -y nginx-light), so the gateway targets cannot run here";
        let skipped = cell("skipped", Some(long));
        let plain = finished_line(&skipped, (1, 20), false, None);
        assert!(plain.contains(long), "{plain}");
        let cut = finished_line(&skipped, (1, 20), false, Some(80));
        assert_eq!(fit::width(&cut), 80, "{cut}");
        assert!(cut.starts_with("[1/20] gateway × native-load: skipped: nginx is not installed"));
        assert!(cut.ends_with("… in 3.1 s"), "{cut}");
        let painted = finished_line(&skipped, (1, 20), true, Some(80));
        assert_eq!(
            fit::width(&painted),
            80,
            "colour takes no column: {painted}"
        );
    }

    #[test]
    fn a_failure_too_wide_for_the_terminal_drops_its_signature_first() {
        let mut failed: Cell = serde_json::from_value(serde_json::json!({
            "target": "agent", "scenario": "native-continuity", "attempt": 1,
            "verdict": "fail", "failureBoundary": "promptSameHandleAfterRestart",
            "reason": null, "durationMs": 2100, "restarts": [],
            "phases": [{"name": "promptSameHandleAfterRestart", "step": "prompt", "verdict": true,
                        "cleanup": false, "outcome": "fail", "ok": false, "durationMs": 3,
                        "deadlineMs": 1000, "detail": {},
                        "signature": {"kind": "http", "httpStatus": 400, "problemType": "invalid_request",
                                      "rpcCode": null, "message": "x", "pending": null}}]
        }))
        .unwrap();
        let whole = "[1/20] agent × native-continuity: FAIL @ promptSameHandleAfterRestart (http 400 invalid_request) in 2.1 s";
        assert_eq!(finished_line(&failed, (1, 20), false, None), whole);
        assert_eq!(finished_line(&failed, (1, 20), false, Some(120)), whole);
        assert_eq!(
            finished_line(&failed, (1, 20), false, Some(100)),
            "[1/20] agent × native-continuity: FAIL @ promptSameHandleAfterRestart in 2.1 s"
        );
        let narrow = finished_line(&failed, (1, 20), false, Some(60));
        assert_eq!(fit::width(&narrow), 60, "{narrow}");
        failed.point.target = "gateway-reload".into();
        assert!(fit::width(&finished_line(&failed, (1, 20), true, Some(70))) <= 70);
    }
}
