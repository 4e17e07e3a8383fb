//! `--message-format json`: the run as one JSON object per line on stdout,
//! as nextest's machine-readable output, so other tools can follow it live.
//! Each line is a typed message of the schema crate
//! (`schema::events::RunMessage`), made here from the runner's event;
//! `cell-finished` carries the cell exactly as `report.json` holds it.

use crate::report::{Axis, Report, TargetName};
use crate::runner::{CellPoint, RunEvent};
use crate::schema::events::{
    AttemptJudged, ByAxis, CellFinished, CellJudged, CellRetrying, CellStarted, OverallTimeout,
    RunFinished, RunMessage, RunStarted,
};
use std::path::Path;

/// The line for a runner event; none for `RunEnded`, whose line is the
/// command's `run-finished`, written once the report is (with its folder
/// and the exit code, see [`run_finished`]).
pub(super) fn message(event: &RunEvent) -> Option<RunMessage> {
    Some(match event {
        RunEvent::RunStarted {
            id,
            total,
            repeat,
            targets,
            scenarios,
            partition,
            axes,
        } => RunMessage::RunStarted(RunStarted {
            id: id.clone(),
            cells: *total,
            repeat: *repeat,
            targets: targets.iter().map(TargetName::from).collect(),
            scenarios: scenarios.clone(),
            partition: partition.clone(),
            axes: ByAxis(axes.clone()),
        }),
        RunEvent::CellStarted {
            index,
            total,
            target,
            scenario,
            attempt,
            point,
        } => RunMessage::CellStarted(CellStarted {
            index: *index,
            total: *total,
            target: target.into(),
            scenario: scenario.clone(),
            attempt: *attempt,
            point: whole_point(point),
        }),
        RunEvent::Retrying {
            index,
            total,
            attempt,
            target,
            scenario,
            point,
        } => RunMessage::CellRetrying(CellRetrying {
            index: *index,
            total: *total,
            target: target.into(),
            scenario: scenario.clone(),
            attempt: attempt.clone(),
            point: whole_point(point),
        }),
        RunEvent::AttemptJudged {
            index,
            total,
            attempt,
            verdict,
        } => RunMessage::AttemptJudged(AttemptJudged {
            index: *index,
            total: *total,
            attempt: *attempt,
            verdict: *verdict,
        }),
        RunEvent::CellJudged {
            index,
            total,
            verdicts,
        } => RunMessage::CellJudged(CellJudged {
            index: *index,
            total: *total,
            verdicts: verdicts.clone(),
        }),
        RunEvent::OverallTimeout { timeout_ms } => RunMessage::OverallTimeout(OverallTimeout {
            timeout_ms: *timeout_ms,
        }),
        RunEvent::CellFinished { index, total, cell } => RunMessage::CellFinished(CellFinished {
            index: *index,
            total: *total,
            cell: cell.clone(),
        }),
        RunEvent::RunEnded { .. } => return None,
    })
}

/// A cell's whole point: every axis, by `report.json`'s names for them.
fn whole_point(point: &CellPoint) -> ByAxis<Option<String>> {
    ByAxis(
        Axis::ALL
            .into_iter()
            .map(|axis| (axis, point.value(axis).map(|v| v.name().to_string())))
            .collect(),
    )
}

/// The last line: totals, where the reports are, and the exit code.
pub(super) fn run_finished(report: &Report, dir: &Path, exit_code: u8) -> RunMessage {
    RunMessage::RunFinished(RunFinished {
        id: report.run.id.clone(),
        dir: dir.display().to_string(),
        totals: report.totals.clone(),
        interrupted: report.run.interrupted,
        exit_code,
    })
}

/// One line on stdout, flushed so a reader sees it at once. The messages
/// are structs and maps with string keys: serde_json writes every one.
pub(super) fn emit(message: &RunMessage) {
    if let Ok(line) = serde_json::to_string(message) {
        crate::console::outln(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::Store;
    use crate::runner::ClientKind;

    /// Today's axes, each under its key with the test point's value, in
    /// `report.json`'s order: pinned here byte for byte.
    const PINNED: [(&str, &str); 5] = [
        ("serverVersion", r#""0.4.2""#),
        ("agent", r#""mock""#),
        ("client", r#""ts-sdk""#),
        ("sdkVersion", "null"),
        ("persist", r#""postgres""#),
    ];

    /// The point object a `cell-started` line must carry for `point`:
    /// every axis of `Axis::ALL` under its key, in that order; today's
    /// with the values [`PINNED`] writes, an axis added since with the
    /// point's own value on it (a string, or null), so a new axis needs
    /// no line here.
    fn expected_point(point: &CellPoint) -> String {
        let pairs: Vec<String> = Axis::ALL
            .into_iter()
            .map(|axis| {
                let value = match PINNED.iter().find(|(key, _)| *key == axis.field()) {
                    Some((_, pinned)) => pinned.to_string(),
                    None => {
                        serde_json::to_string(&point.value(axis).map(|v| v.to_string())).unwrap()
                    }
                };
                format!(r#""{}":{value}"#, axis.field())
            })
            .collect();
        format!("{{{}}}", pairs.join(","))
    }

    #[test]
    fn a_cells_point_names_every_axis_as_report_json_does() {
        // Today's axes are all still there, in their order.
        let fields: Vec<&str> = Axis::ALL
            .map(Axis::field)
            .into_iter()
            .filter(|field| PINNED.iter().any(|(key, _)| key == field))
            .collect();
        assert_eq!(fields, PINNED.map(|(key, _)| key));
        let point = CellPoint {
            client: ClientKind::TsSdk,
            persist: Store::Postgres,
            ..crate::runner::matrix_tests::point("agent", "0.4.2")
        };
        let expected = expected_point(&point);
        assert_eq!(
            serde_json::to_string(&whole_point(&point)).unwrap(),
            expected
        );
        let started = RunEvent::CellStarted {
            index: 3,
            total: 4,
            target: point.target.clone(),
            scenario: point.scenario.clone(),
            attempt: 2,
            point: Box::new(point),
        };
        assert_eq!(
            serde_json::to_string(&message(&started).unwrap()).unwrap(),
            format!(
                r#"{{"type":"cell-started","index":3,"total":4,"target":"agent","scenario":"native-continuity","attempt":2,"point":{expected}}}"#
            )
        );
    }
}
