//! What `continuity check` found, after its verdict table: each violation
//! cell by cell, the invariants the traces could not tell, the losses let
//! pass by why, and the traces that could not be read.
//! The run is one from anywhere (a downloaded artifact), so the report is
//! taken in its inert form, as every human rendering takes it: no field of
//! it, nor of a trace (a phase name), can break a line or act on a terminal.

use crate::untrusted::Untrusted;
use crate::Report;
use continuity_check::Status;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The `checker` block: `unreadable` holds why each trace the report
/// names could not be read (any text; shown in its terminal form).
pub fn render_checker(report: &Report, unreadable: &[String]) -> String {
    let report = &*crate::inert::of(report);
    let mut out = String::from("\nchecker\n");
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let (mut checked_cells, mut violations) = (0, 0);
    let mut excused = continuity_check::Excused::default();
    for cell in &report.cells {
        let Some(checked) = &cell.checked else {
            continue;
        };
        checked_cells += 1;
        violations += checked.violations.len();
        excused.add(checked.excused);
        for v in &checked.violations {
            let _ = writeln!(
                out,
                "  {} × {}: {} — {} ({}{:.1} s)",
                cell.label(),
                cell.point.scenario,
                v.short(),
                v.detail,
                v.phase
                    .as_deref()
                    .map_or(String::new(), |p| format!("{p}, ")),
                v.t / 1000.0,
            );
        }
        for c in checked
            .checked
            .iter()
            .filter(|c| c.status == Status::Unknown)
        {
            let why = c.why.as_deref().unwrap_or_default();
            *unknown
                .entry(format!("{}: {why}", c.invariant))
                .or_default() += 1;
        }
    }
    let _ = writeln!(
        out,
        "  {checked_cells} of {} cells checked, {violations} violations",
        report.cells.len()
    );
    if !excused.is_none() {
        let _ = writeln!(
            out,
            "  losses let pass: {} never read by the client (its stream cut and not resumed, closed, or the cell over), {} cut turns' tails the scenario allows, {} while the SDK's host restarted (its records went with it), {} writes the store refused (the client saw them fail)",
            excused.unread, excused.lost_tail, excused.host_restart, excused.refused
        );
        if excused.untold > 0 {
            let _ = writeln!(
                out,
                "  and {} more let pass by an older checker that did not say why",
                excused.untold
            );
        }
    }
    for (what, n) in unknown {
        let _ = writeln!(out, "  not checkable in {n} cells — {what}");
    }
    for why in unreadable {
        let _ = writeln!(out, "  unreadable: {}", Untrusted::new(why).terminal());
    }
    if !unreadable.is_empty() {
        out.push_str(
            "  a trace the run names could not be read: its cell keeps the verdict it was \
             recorded with, unchecked",
        );
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use continuity_check::{Allowance, Breach, Checked, Hop, Invariant, Verdict, Violation};

    const FORGING: &str = "x\n::error::FORGED\r\u{1b}[31m\u{202e}";

    #[test]
    fn a_checked_cell_reads_inert_with_what_its_allow_list_excused() {
        let mut report = crate::fixture::report();
        report.cells[0].point.target = format!("agent{FORGING}").into();
        report.cells[0].checked = Some(Verdict {
            checked: vec![Checked {
                invariant: Invariant::Store,
                status: Status::Unknown,
                why: Some(format!("why{FORGING}")),
            }],
            violations: vec![Violation {
                invariant: Invariant::Stream,
                breach: Breach::Gap,
                hop: Hop::Gateway,
                since: None,
                stream: None,
                session: None,
                ids: vec![],
                event_index: None,
                t: 1500.0,
                phase: Some(format!("phase{FORGING}")),
                detail: format!("detail{FORGING}"),
            }],
            allowed: vec![Allowance::LostTail],
            excused: continuity_check::Excused {
                lost_tail: 2,
                refused: 1,
                ..Default::default()
            },
        });
        let shown = render_checker(&report, &[format!("gone{FORGING}")]);
        for bad in ['\r', '\u{1b}', '\u{202e}'] {
            assert!(!shown.contains(bad), "{bad:?} raw in {shown}");
        }
        for line in shown.lines() {
            assert!(!line.trim_start().starts_with("::"), "{shown}");
        }
        assert!(
            shown.contains("stream gap at gateway — detailx\\n::error::FORGED"),
            "{shown}"
        );
        assert!(
            shown.contains(&format!(
                "1 of {} cells checked, 1 violations",
                report.cells.len()
            )),
            "{shown}"
        );
        assert!(
            shown.contains("2 cut turns' tails the scenario allows")
                && shown.contains("1 writes the store refused"),
            "{shown}"
        );
        assert!(shown.contains("unreadable: gonex\\n"), "{shown}");
    }
}
