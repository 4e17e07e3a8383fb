//! "Where the fix belongs": for each target × agent (× version) that ran
//! both native-continuity (the SDK as it is) and native-load (a client that
//! opens a new server id and loads the agent's session), one line that
//! reads the pair — e.g. "SDK fails, load recovers → client-side fix".

use super::model::{Cell, Report, Verdict};
use std::fmt::Write;

const SDK: &str = "native-continuity";
const LOAD: &str = "native-load";

/// The section, or `None` when no row ran both scenarios.
pub fn render_fix_location(report: &Report) -> Option<String> {
    let mut lines = Vec::new();
    for (target, suffix) in report.row_order() {
        let find = |scenario: &str| -> Option<&Cell> {
            report
                .cells
                .iter()
                .find(|c| c.target == target && c.scenario == scenario && c.row_suffix() == suffix)
        };
        let (Some(sdk), Some(load)) = (find(SDK), find(LOAD)) else {
            continue;
        };
        let label = format!("{target}{}", suffix.unwrap_or_default());
        lines.push(format!("- **{label}**: {}", verdict_line(sdk, load)));
    }
    if lines.is_empty() {
        return None;
    }
    let mut out = String::from("## Where the fix belongs\n\n");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    Some(out)
}

fn recovery_ms(load: &Cell) -> Option<u64> {
    load.phases
        .iter()
        .find_map(|p| p.detail.get("restartToFirstGoodPromptMs"))
        .and_then(|v| v.as_u64())
}

/// The reading of one SDK cell and its load cell.
pub fn verdict_line(sdk: &Cell, load: &Cell) -> String {
    let passed = |c: &Cell| matches!(c.verdict, Verdict::Pass);
    match (passed(sdk), passed(load)) {
        (false, true) => {
            let took = recovery_ms(load)
                .map(|ms| format!(" (first good prompt {ms} ms after the restart)"))
                .unwrap_or_default();
            format!(
                "SDK fails{}, load recovers{took} → client-side fix",
                sdk.failure_boundary
                    .as_deref()
                    .map(|b| format!(" @ {b}"))
                    .unwrap_or_default()
            )
        }
        (false, false) => "SDK fails, load fails too → server- or agent-side fix".into(),
        (true, true) => "SDK passes, load passes → nothing to fix".into(),
        (true, false) => {
            "SDK passes, load fails → the recovering client is wrong, not the stack".into()
        }
    }
}
