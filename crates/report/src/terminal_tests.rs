//! The terminal layout pinned at 80 and 120 columns: the fixture judged so
//! that it holds a failed cell (expected), an errored one that regressed,
//! a passing one that was expected to fail (fixed) and a skipped one; a
//! report with agent, client and version axes and long names, whose summary
//! falls back to the list form at 80 columns. No line passes the width.

use super::expect::{Expectations, GateOptions};
use super::fixture;
use super::model::*;
use super::terminal::{render_terminal, Layout};

const EXPECTATIONS: &str = r#"
[[expect]]
target = "agent"
scenario = "native-continuity"
verdict = "fail"
boundary = "promptSameHandleAfterRestart"
signature = "http 400 invalid_request"
reason = "sandbox-agent #189: the server forgets ACP server ids on restart"

[[expect]]
target = "agent"
scenario = "recreate-rehydrate"
verdict = "fail"
reason = "was broken before 0.4.2"

[[expect]]
target = "gateway"
scenario = "native-continuity"
verdict = "pass"
reason = "nginx restarts are transparent"
"#;

fn judged() -> Report {
    let mut r = fixture::report();
    // A message longer than any line: it is cut, never wrapped.
    if let Some(sig) = r.cells[0].phases[3].signature.as_mut() {
        sig.message = "invalid request: missing required 'agent' query parameter for first POST to /v1/acp/sdk-mock-<id> (the server forgot the session on restart)".into();
    }
    Expectations::parse(std::path::Path::new("ci/expect.toml"), EXPECTATIONS)
        .expect("parses")
        .judge(&mut r, GateOptions::default());
    r
}

/// Every axis, long names and five scenarios: too wide for a grid at 80.
fn axes() -> Report {
    let mut r = fixture::report();
    let scenarios = [
        "native-continuity",
        "recreate-rehydrate",
        "sandbox-reconnect",
        "native-load",
        "terminal-reattach-after-gateway-reload",
    ];
    r.run.scenarios = scenarios.iter().map(|s| s.to_string()).collect();
    r.run.targets = vec!["gateway-reload".into(), "rivet-engine".into()];
    r.run.base_url =
        "http://127.0.0.1:41234/a/very/long/prefix/that/a/gateway/puts/in/front/of/sandbox-agent"
            .into();
    r.cells.clear();
    for target in ["gateway-reload", "rivet-engine"] {
        for client in ["rust", "ts-sdk"] {
            for (n, scenario) in scenarios.iter().enumerate() {
                let mut cell = fixture::report().cells[if n == 2 { 0 } else { 2 }].clone();
                cell.point.target = target.into();
                cell.point.scenario = scenario.to_string();
                cell.point.set(AxisValue::Agent("opencode".into()));
                cell.point.set(AxisValue::parse(Axis::Client, client));
                cell.point.set(AxisValue::Server("0.4.2".into()));
                r.cells.push(cell);
            }
        }
    }
    r.totals = Totals::of(&r.cells);
    r
}

fn shown(report: &Report, width: usize) -> String {
    let text = render_terminal(
        report,
        &Layout {
            width,
            color: false,
            folder: "reports/20261129T120102Z-ab12cd".into(),
        },
    );
    for line in text.lines() {
        assert!(
            crate::fit::width(line) <= width,
            "{} columns at {width}: {line}",
            crate::fit::width(line)
        );
    }
    text
}

#[test]
fn terminal_at_80_columns() {
    insta::assert_snapshot!(shown(&judged(), 80));
}

#[test]
fn terminal_at_120_columns() {
    insta::assert_snapshot!(shown(&judged(), 120));
}

#[test]
fn axes_at_80_columns_fall_back_to_the_list() {
    insta::assert_snapshot!(shown(&axes(), 80));
}

#[test]
fn axes_at_120_columns_keep_the_grid_with_an_axis_column_each() {
    let text = shown(&axes(), 120);
    assert!(
        text.contains("│ target         ┆ agent    ┆ client ┆ server ┆"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn the_blocks_are_the_cells_to_look_at() {
    let text = shown(&judged(), 120);
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()) && l.contains(" × "))
        .collect();
    assert_eq!(heads.len(), 4, "{text}");
    assert!(heads[0]
        .starts_with("FAIL [  4.2 s] agent × native-continuity @ promptSameHandleAfterRestart"));
    assert!(heads[1].starts_with("ERROR [ 31.4 s] gateway × native-continuity"));
    assert!(heads[2].starts_with("PASS [  3.9 s] agent × recreate-rehydrate"));
    // Skipped, and no expectation said so: it fails the gate, so it is looked at.
    assert!(heads[3].starts_with("SKIP [  0.0 s] gateway × recreate-rehydrate"));
    assert!(
        text.contains("  fixed (expected fail): was broken before 0.4.2"),
        "{text}"
    );
    assert!(text.contains("…"), "the long message is cut: {text}");
    // Unjudged, a skipped cell shares a line with the others of its reason.
    let text = shown(&fixture::report(), 120);
    assert!(!text.contains("SKIP"), "{text}");
    assert!(
        text.contains("\nskipped: gateway did not recover in an earlier cell (gateway: 1 cell)\n"),
        "{text}"
    );
}

#[test]
fn colour_is_added_after_fitting() {
    let text = render_terminal(
        &judged(),
        &Layout {
            width: 80,
            color: true,
            folder: "run".into(),
        },
    );
    assert!(text.contains("\x1b[31mFAIL\x1b[0m"), "{text}");
    for line in text.lines() {
        assert!(crate::fit::width(line) <= 80, "{line}");
    }
}

#[test]
fn a_narrow_terminal_still_gets_every_line_within_it() {
    for width in [40, 50, 63, 79] {
        shown(&judged(), width);
        shown(&axes(), width);
    }
}
