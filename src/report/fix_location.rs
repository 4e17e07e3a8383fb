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
        // A skipped cell (e.g. the hosted client, which cannot load) did not run.
        if [sdk, load].iter().any(|c| c.verdict == Verdict::Skipped) {
            continue;
        }
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
        .filter_map(|p| super::detail::read::<super::detail::RecoverDetail>(&p.detail))
        .find_map(|d| d.restart_to_first_good_prompt_ms)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cell(scenario: &str, verdict: &str, boundary: Option<&str>, ms: Option<u64>) -> Cell {
        let detail = ms
            .map(|ms| json!({"restartToFirstGoodPromptMs": ms}))
            .unwrap_or(json!({}));
        serde_json::from_value(json!({
            "target": "agent", "scenario": scenario, "serverVersion": null, "agent": "claude",
            "attempt": 1, "verdict": verdict, "failureBoundary": boundary, "reason": null,
            "durationMs": 1, "restarts": [], "passRate": null, "attempts": [], "expectation": null,
            "phases": [{"name": "loadSessionAfterRestart", "step": "recover_session", "verdict": true,
                        "cleanup": false, "ok": true, "durationMs": 1, "deadlineMs": 1000,
                        "detail": detail, "outcome": "ok", "signature": null}]
        }))
        .unwrap()
    }

    #[test]
    fn each_pairing_of_verdicts_names_where_the_fix_belongs() {
        let sdk_fail = cell(SDK, "fail", Some("promptSameHandleAfterRestart"), None);
        let load_pass = cell(LOAD, "pass", None, Some(840));
        assert_eq!(
            verdict_line(&sdk_fail, &load_pass),
            "SDK fails @ promptSameHandleAfterRestart, load recovers (first good prompt 840 ms after the restart) → client-side fix"
        );
        let load_fail = cell(LOAD, "fail", Some("loadSessionAfterRestart"), None);
        assert!(verdict_line(&sdk_fail, &load_fail).ends_with("→ server- or agent-side fix"));
        let sdk_pass = cell(SDK, "pass", None, None);
        assert!(verdict_line(&sdk_pass, &load_pass).ends_with("→ nothing to fix"));
    }

    #[test]
    fn a_row_whose_load_cell_was_skipped_gets_no_line() {
        let mut report = crate::report::fixture::report();
        report.cells = vec![
            cell(SDK, "fail", Some("promptSameHandleAfterRestart"), None),
            cell(LOAD, "skipped", None, None),
        ];
        assert_eq!(render_fix_location(&report), None);
        report.cells[1] = cell(LOAD, "pass", None, Some(5));
        assert!(render_fix_location(&report)
            .unwrap()
            .contains("client-side fix"));
    }
}
