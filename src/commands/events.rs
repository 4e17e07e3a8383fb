//! `--message-format json`: the run as one JSON object per line on stdout,
//! as nextest's machine-readable output, so other tools can follow it live.
//! `cell-finished` carries the cell exactly as `report.json` holds it.

use crate::report::{Axis, Report};
use crate::runner::{CellPoint, RunEvent};
use crate::targets::TargetId;
use serde_json::{json, Value};
use std::path::Path;

/// The line for a runner event.
pub(super) fn event_json(event: &RunEvent) -> Value {
    match event {
        RunEvent::RunStarted {
            id,
            total,
            repeat,
            targets,
            scenarios,
            partition,
            axes,
        } => run_started_json(id, *total, *repeat, targets, scenarios, partition, axes),
        RunEvent::CellStarted {
            index,
            total,
            target,
            scenario,
            attempt,
            point,
        } => cell_attempt_json(
            "cell-started",
            (*index, *total),
            target,
            scenario,
            json!(attempt),
            point,
        ),
        RunEvent::Retrying {
            index,
            total,
            attempt,
            target,
            scenario,
            point,
        } => cell_attempt_json(
            "cell-retrying",
            (*index, *total),
            target,
            scenario,
            json!(attempt),
            point,
        ),
        RunEvent::AttemptJudged {
            index,
            total,
            attempt,
            verdict,
        } => json!({
            "type": "attempt-judged",
            "index": index,
            "total": total,
            "attempt": attempt,
            "verdict": verdict.as_str(),
        }),
        RunEvent::CellJudged {
            index,
            total,
            verdicts,
        } => json!({
            "type": "cell-judged",
            "index": index,
            "total": total,
            "verdicts": verdicts.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
        }),
        RunEvent::OverallTimeout { timeout_ms } => json!({
            "type": "overall-timeout",
            "timeoutMs": timeout_ms,
        }),
        RunEvent::CellFinished { index, total, cell } => json!({
            "type": "cell-finished",
            "index": index,
            "total": total,
            "cell": cell,
        }),
    }
}

/// The run's header: what it will run, and its axes.
fn run_started_json(
    id: &str,
    total: usize,
    repeat: u32,
    targets: &[TargetId],
    scenarios: &[String],
    partition: &Option<String>,
    axes: &[(&'static str, Vec<String>)],
) -> Value {
    let axes: serde_json::Map<String, Value> = axes
        .iter()
        .map(|(name, values)| (name.to_string(), json!(values)))
        .collect();
    json!({
        "type": "run-started",
        "id": id,
        "cells": total,
        "repeat": repeat,
        "targets": targets.iter().map(TargetId::name).collect::<Vec<_>>(),
        "scenarios": scenarios,
        "partition": partition,
        "axes": axes,
    })
}

/// A cell's attempt starting (`cell-started`: its number) or starting
/// again (`cell-retrying`: the attempt that failed, whole).
fn cell_attempt_json(
    kind: &str,
    (index, total): (usize, usize),
    target: &TargetId,
    scenario: &str,
    attempt: Value,
    point: &CellPoint,
) -> Value {
    json!({
        "type": kind,
        "index": index,
        "total": total,
        "target": target.name(),
        "scenario": scenario,
        "attempt": attempt,
        "point": point_json(point),
    })
}

/// A cell's whole point, with `report.json`'s names for its axes.
fn point_json(point: &CellPoint) -> Value {
    let axes: serde_json::Map<String, Value> = Axis::ALL
        .into_iter()
        .map(|axis| (axis.field().to_string(), json!(point.value(axis))))
        .collect();
    Value::Object(axes)
}

/// The last line: totals, where the reports are, and the exit code.
pub(super) fn run_finished_json(report: &Report, dir: &Path, exit_code: u8) -> Value {
    json!({
        "type": "run-finished",
        "id": report.run.id,
        "dir": dir.display().to_string(),
        "totals": report.totals,
        "interrupted": report.run.interrupted,
        "exitCode": exit_code,
    })
}

/// One line on stdout, flushed so a reader sees it at once.
pub(super) fn emit(value: &Value) {
    crate::console::outln(&value.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::Store;
    use crate::runner::ClientKind;

    #[test]
    fn a_cells_point_names_every_axis_as_report_json_does() {
        let point = CellPoint {
            client: ClientKind::TsSdk,
            persist: Store::Postgres,
            ..crate::runner::matrix_tests::point("agent", "0.4.2")
        };
        let json = point_json(&point);
        let expected = json!({"serverVersion": "0.4.2", "agent": "mock", "client": "ts-sdk",
               "sdkVersion": null, "persist": "postgres"});
        for (key, value) in expected.as_object().unwrap() {
            assert_eq!(&json[key], value, "{key}");
        }
        // Every axis, each under its key (an axis added since too).
        let keys: Vec<&str> = Axis::ALL.map(Axis::field).to_vec();
        let written: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(written, keys);
    }
}
