//! The client axis in `report.md`: where continuity's own client (`rust`)
//! and the real TypeScript SDK (`ts-sdk`, or `browser`: the same SDK in
//! Chromium) disagree on a cell, by verdict and
//! failure boundary, never by signature (continuity names the 400 the SDK
//! hides behind a timeout: that difference is the point). A disagreement is
//! a finding about the SDK-faithful client, shown with both phase traces.
//! Also the unhandled rejections the real SDK raised in each of its
//! clients (hosted or in the browser: [`ClientKind::runs_real_sdk`]), with
//! their phase, which report.md and report.html list.

use crate::untrusted::Untrusted;

use super::detail::{self, HostedFaults, UnhandledRejection};
use super::model::{Axis, AxisValue, Cell, Outcome, Report};
use crate::ClientKind;
use std::fmt::Write as _;

/// A cell both clients ran whose verdict or failure boundary differs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Disagreement<'a> {
    pub rust: &'a Cell,
    /// The real SDK's cell: `ts-sdk`, or `browser`.
    pub ts_sdk: &'a Cell,
}

/// The real SDK's client of a cell (`ts-sdk`, `browser`), if it is one's.
fn sdk_client(cell: &Cell) -> Option<ClientKind> {
    cell.point.client().known().filter(|c| c.runs_real_sdk())
}

/// Pairs each `ts-sdk` (and `browser`) cell with its `rust` counterpart:
/// the same point (target × scenario × agent × server × store) on the
/// other client, which runs no SDK. Keeps the pairs that disagree, in the
/// order of the `rust` cells. Skipped cells on either side are not
/// compared: nothing ran; nor are cells with no verdict on their restart
/// (`not_applicable`): a client that lacks a call says nothing of how
/// the other one judges.
pub(crate) fn disagreements(report: &Report) -> Vec<Disagreement<'_>> {
    let index = super::model::CellIndex::of(report);
    let mut found: Vec<Disagreement<'_>> = report
        .cells
        .iter()
        .filter(|c| sdk_client(c).is_some())
        .filter_map(|ts_sdk| {
            let rust_point = ts_sdk.point.with(ClientKind::Rust).without(Axis::Sdk);
            let rust = index.at(&rust_point)?;
            let ran = |c: &Cell| {
                !matches!(
                    c.verdict,
                    super::Verdict::Skipped | super::Verdict::NotApplicable
                )
            };
            let differs =
                rust.verdict != ts_sdk.verdict || rust.failure_boundary != ts_sdk.failure_boundary;
            (ran(rust) && ran(ts_sdk) && differs).then_some(Disagreement { rust, ts_sdk })
        })
        .collect();
    found.sort_by_key(|d| index.position(&d.rust.point));
    found
}

/// `## Where the clients disagree` and `## Unhandled rejections in the
/// SDK`, when the run had a client axis.
pub(crate) fn render_client_sections(report: &Report) -> Option<String> {
    let has_axis = report
        .cells
        .iter()
        .any(|c| c.point.get(Axis::Client).is_some());
    let ran = |client: ClientKind| {
        let named = AxisValue::from(client);
        report
            .cells
            .iter()
            .any(|c| c.point.get(Axis::Client) == Some(&named))
    };
    let sdk_clients = || ClientKind::all().iter().filter(|c| c.runs_real_sdk());
    let both = ran(ClientKind::Rust) && sdk_clients().any(|c| ran(*c));
    if !has_axis {
        return None;
    }
    let mut out = String::new();
    if both {
        out.push_str("## Where the clients disagree\n\n");
        let found = disagreements(report);
        if found.is_empty() {
            let sdks: Vec<String> = sdk_clients()
                .filter(|c| ran(**c))
                .map(|c| format!("`{}`", c.name()))
                .collect();
            let _ = writeln!(out, "continuity's client (`rust`) and the TypeScript SDK ({}) agree on every cell both ran: same verdict, same failure boundary (signatures may differ: the SDK reports a timeout where continuity names the HTTP error).", sdks.join(", "));
        } else {
            let _ = writeln!(
                out,
                "**Finding about continuity's SDK-faithful client**: on {} cell(s) it does not judge as the real TypeScript SDK does (verdict or failure boundary). Both phase traces follow.\n",
                found.len()
            );
            for d in &found {
                let sdk = sdk_client(d.ts_sdk).unwrap_or(ClientKind::TsSdk).name();
                let _ = writeln!(out, "### {}\n", d.ts_sdk.point.without(Axis::Client));
                let _ = writeln!(out, "- rust: {}", verdict_text(d.rust));
                let _ = writeln!(out, "- {sdk}: {}\n", verdict_text(d.ts_sdk));
                let _ = writeln!(out, "| phase | rust | {sdk} |\n|---|---|---|");
                for phase in &d.rust.phases {
                    let other = d.ts_sdk.phase(&phase.name);
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} |",
                        phase.name,
                        phase_text(Some(phase)),
                        phase_text(other)
                    );
                }
                out.push('\n');
            }
        }
    }
    let faults = sdk_rejections(report);
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str("## Unhandled rejections in the SDK\n\n");
    if faults.is_empty() {
        out.push_str("none recorded.\n");
    } else {
        out.push_str("The SDK's host records them instead of dying (the actor app for `ts-sdk`, where Node's default would end the runner; the page for `browser`); each is a rejection no SDK caller could catch.\n\n| cell | phase | error |\n|---|---|---|\n");
        for fault in faults {
            let _ = writeln!(
                out,
                "| {} × {} | {} | {} |",
                fault.cell.label(),
                fault.cell.point.scenario,
                fault.phase,
                Untrusted::new(&fault.error()).markdown()
            );
        }
    }
    Some(out)
}

/// One unhandled rejection the real SDK raised, in the phase it came in.
pub(crate) struct SdkRejection<'a> {
    pub cell: &'a Cell,
    pub phase: &'a str,
    pub fault: UnhandledRejection,
}

impl SdkRejection<'_> {
    /// `name: message (HTTP status problem)`: the error as the SDK raised
    /// it. Untrusted: each output passes it through its own form.
    pub fn error(&self) -> String {
        let fault = &self.fault;
        let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
        let mut error = format!("{}: {}", text(&fault.name), fault.message);
        if let Some(status) = fault.status.as_u64() {
            let _ = write!(error, " (HTTP {status}");
            if !text(&fault.problem_type).is_empty() {
                let _ = write!(error, " {}", text(&fault.problem_type));
            }
            error.push(')');
        }
        error
    }
}

/// Every unhandled rejection of every cell whose client runs the real SDK
/// (hosted or in a browser page), in cell and phase order.
pub(crate) fn sdk_rejections(report: &Report) -> Vec<SdkRejection<'_>> {
    report
        .cells
        .iter()
        .filter(|c| sdk_client(c).is_some())
        .flat_map(|cell| {
            cell.phases.iter().flat_map(move |p| {
                detail::read::<HostedFaults>(&p.detail)
                    .unwrap_or_default()
                    .unhandled_rejections
                    .into_iter()
                    .map(move |fault| SdkRejection {
                        cell,
                        phase: p.name.as_str(),
                        fault,
                    })
            })
        })
        .collect()
}

fn verdict_text(cell: &Cell) -> String {
    let mut text = cell.verdict.as_str().to_string();
    if let Some(b) = &cell.failure_boundary {
        let _ = write!(text, " @ {b}");
    }
    text
}

fn phase_text(phase: Option<&super::PhaseResult>) -> String {
    let Some(phase) = phase else {
        return "–".into();
    };
    match (&phase.outcome, &phase.signature) {
        (Outcome::Ok, _) => "ok".into(),
        (Outcome::NotRun, _) => "not run".into(),
        (Outcome::NotApplicable, _) => "not applicable".into(),
        (_, Some(sig)) => Untrusted::new(&sig.short()).markdown(),
        (outcome, None) => format!("{outcome:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn with_client(mut cell: Cell, client: &str) -> Cell {
        cell.point.set(AxisValue::parse(Axis::Client, client));
        cell
    }

    #[test]
    fn a_boundary_that_differs_is_a_finding_and_a_signature_that_differs_is_not() {
        let mut report = fixture::report();
        let base = report.cells[0].clone();
        let mut ts = with_client(base.clone(), "ts-sdk");
        let rust = with_client(base.clone(), "rust");
        report.cells = vec![rust.clone(), ts.clone()];
        assert!(disagreements(&report).is_empty(), "same cell, no finding");
        let text = render_client_sections(&report).unwrap();
        assert!(text.contains("agree on every cell"), "{text}");

        ts.failure_boundary = Some("somewhereElse".into());
        ts.verdict = crate::Verdict::Fail;
        report.cells = vec![rust, ts];
        let found = disagreements(&report);
        assert_eq!(found.len(), 1);
        let text = render_client_sections(&report).unwrap();
        assert!(
            text.contains("Finding about continuity's SDK-faithful client"),
            "{text}"
        );
        assert!(text.contains("| phase | rust | ts-sdk |"), "{text}");
    }

    /// The SDK in Chromium is compared with continuity's client as the
    /// hosted one is: a boundary that differs is listed under its name.
    #[test]
    fn a_browser_cell_that_disagrees_is_listed_under_the_browsers_name() {
        let mut report = fixture::report();
        let base = report.cells[0].clone();
        let rust = with_client(base.clone(), "rust");
        let mut browser = with_client(base, "browser");
        report.cells = vec![rust.clone(), browser.clone()];
        let text = render_client_sections(&report).unwrap();
        assert!(
            text.contains("TypeScript SDK (`browser`) agree on every cell"),
            "{text}"
        );
        browser.failure_boundary = Some("elsewhere".into());
        browser.verdict = crate::Verdict::Fail;
        report.cells = vec![rust, browser];
        assert_eq!(disagreements(&report).len(), 1);
        let text = render_client_sections(&report).unwrap();
        assert!(text.contains("| phase | rust | browser |"), "{text}");
        assert!(text.contains("- browser: fail @ elsewhere"), "{text}");
    }

    /// Two clients × two stores: each `rust` cell is paired with the
    /// `ts-sdk` cell of its own store, never with the other store's.
    #[test]
    fn each_rust_cell_is_paired_with_the_ts_sdk_cell_of_its_own_store() {
        let mut report = fixture::report();
        let base = report.cells[0].clone();
        let cell = |client: &str, store: &str, pass: bool| {
            let mut cell = with_client(base.clone(), client);
            cell.point.set(AxisValue::parse(Axis::Persist, store));
            if pass {
                cell.verdict = crate::Verdict::Pass;
                cell.failure_boundary = None;
            }
            cell
        };
        // Memory loses the session on a restart, SQLite keeps it: both
        // clients agree on each store.
        report.cells = vec![
            cell("rust", "memory", false),
            cell("rust", "sqlite", true),
            cell("ts-sdk", "memory", false),
            cell("ts-sdk", "sqlite", true),
        ];
        assert_eq!(disagreements(&report), [], "the clients agree per store");
        let text = render_client_sections(&report).unwrap();
        assert!(text.contains("agree on every cell"), "{text}");

        // The SDK breaks on SQLite only: one finding, on SQLite's pair.
        report.cells[3] = cell("ts-sdk", "sqlite", false);
        let found = disagreements(&report);
        assert_eq!(found.len(), 1, "{found:?}");
        let store = |c: &Cell| c.point.name_on(Axis::Persist).map(str::to_string);
        assert_eq!(store(found[0].rust).as_deref(), Some("sqlite"));
        assert_eq!(store(found[0].ts_sdk).as_deref(), Some("sqlite"));
        let text = render_client_sections(&report).unwrap();
        assert!(
            text.contains("### agent × native-continuity · sqlite\n"),
            "{text}"
        );
    }

    /// On an SDK axis every SDK point's cell has the one `rust` cell as
    /// its counterpart.
    #[test]
    fn every_sdk_point_is_paired_with_the_rust_cell() {
        let mut report = fixture::report();
        let base = report.cells[0].clone();
        let rust = with_client(base.clone(), "rust");
        let mut fixed = with_client(base.clone(), "ts-sdk");
        fixed.point.set(AxisValue::Sdk("fix".into()));
        fixed.verdict = crate::Verdict::Pass;
        fixed.failure_boundary = None;
        let mut release = with_client(base, "ts-sdk");
        release.point.set(AxisValue::Sdk("0.4.2".into()));
        report.cells = vec![rust, release, fixed];
        let found = disagreements(&report);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].ts_sdk.point.name_on(Axis::Sdk), Some("fix"));
    }

    /// Every client that runs the real SDK has its unhandled rejections
    /// listed (the browser's were left out: only `ts-sdk` cells were read).
    #[test]
    fn every_sdk_clients_rejections_are_listed() {
        let mut report = fixture::report();
        let base = report.cells[0].clone();
        let rejected = |client: &str, message: &str| {
            let mut cell = with_client(base.clone(), client);
            cell.phases[0].detail.insert(
                "unhandledRejections".into(),
                serde_json::json!([{"kind": "unhandledRejection", "phase": "createSession",
                    "name": "AcpHttpError", "message": message, "status": 400,
                    "problemType": "invalid_request"}]),
            );
            cell
        };
        report.cells = vec![
            with_client(base.clone(), "rust"),
            rejected("ts-sdk", "hosted"),
            rejected("browser", "in the page"),
        ];
        let text = render_client_sections(&report).unwrap();
        for row in [
            "| agent · ts-sdk × native-continuity | createSession | AcpHttpError: hosted (HTTP 400 invalid_request) |",
            "| agent · browser × native-continuity | createSession | AcpHttpError: in the page (HTTP 400 invalid_request) |",
        ] {
            assert!(text.contains(row), "{row} not in\n{text}");
        }
        // continuity's client runs no SDK: nothing of its is listed.
        let mut rust = rejected("rust", "not an SDK's");
        rust.point.set(crate::Store::Sqlite.into());
        report.cells = vec![rust];
        let text = render_client_sections(&report).unwrap();
        assert!(text.contains("none recorded."), "{text}");
    }

    #[test]
    fn no_client_axis_no_section() {
        assert_eq!(render_client_sections(&fixture::report()), None);
    }
}
