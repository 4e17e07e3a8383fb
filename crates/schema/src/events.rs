//! The lines `run --message-format json` prints, one JSON object per
//! line as nextest's machine-readable output, typed: [`RunMessage`], one
//! variant per `type`, each with its fields in the order they are
//! written. `cell-finished` carries the cell exactly as `report.json`
//! holds it, `run-finished` the run's totals.

use crate::axis::Axis;
use crate::report::{Attempt, Cell, Totals, Verdict};
use crate::TargetName;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// One line of `--message-format json`, by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum RunMessage {
    /// Before the first cell: what the run (or shard) will run.
    RunStarted(RunStarted),
    /// An attempt of a cell starts.
    CellStarted(CellStarted),
    /// An attempt did not pass and the cell runs again (`--retries`).
    CellRetrying(CellRetrying),
    /// An attempt has its verdict; its cleanup may still be running.
    AttemptJudged(AttemptJudged),
    /// All of a cell's attempts have their verdicts.
    CellJudged(CellJudged),
    /// The overall timeout ran out: the running cells stop.
    OverallTimeout(OverallTimeout),
    /// A cell with all its attempts, as `report.json` holds it.
    CellFinished(CellFinished),
    /// The last line: totals, where the reports are, the exit code.
    RunFinished(RunFinished),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    pub id: String,
    /// How many cells the run (or shard) holds.
    pub cells: usize,
    /// Each cell's attempts before retries (`--repeat`).
    pub repeat: u32,
    pub targets: Vec<TargetName>,
    pub scenarios: Vec<String>,
    /// `--partition`, e.g. `count:1/2`; `null` for a whole run.
    pub partition: Option<String>,
    /// The axes the cells name, each with its values, under its key in
    /// `report.json` (`serverVersion`, `client`…).
    pub axes: ByAxis<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellStarted {
    /// 1-based, of `total`.
    pub index: usize,
    pub total: usize,
    pub target: TargetName,
    pub scenario: String,
    /// 1-based, retries counted.
    pub attempt: u32,
    /// The cell's whole point: every axis, `null` where it has no value.
    pub point: ByAxis<Option<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRetrying {
    pub index: usize,
    pub total: usize,
    pub target: TargetName,
    pub scenario: String,
    /// The attempt that did not pass, whole.
    pub attempt: Box<Attempt>,
    pub point: ByAxis<Option<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptJudged {
    pub index: usize,
    pub total: usize,
    pub attempt: u32,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellJudged {
    pub index: usize,
    pub total: usize,
    /// Each attempt's verdict, in order.
    pub verdicts: Vec<Verdict>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OverallTimeout {
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellFinished {
    pub index: usize,
    pub total: usize,
    pub cell: Box<Cell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinished {
    pub id: String,
    /// The run folder.
    pub dir: String,
    pub totals: Totals,
    pub interrupted: bool,
    pub exit_code: u8,
}

/// A value for each of some axes, in order: a JSON object keyed by each
/// axis's key in `report.json` ([`Axis::field`]). A key this version does
/// not know is left out when read.
#[derive(Debug, Clone, PartialEq)]
pub struct ByAxis<V>(pub Vec<(Axis, V)>);

impl<V: Serialize> Serialize for ByAxis<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (axis, value) in &self.0 {
            map.serialize_entry(axis.field(), value)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for ByAxis<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ByAxis<V>, D::Error> {
        deserializer.deserialize_map(ByAxisVisitor(PhantomData))
    }
}

struct ByAxisVisitor<V>(PhantomData<V>);

impl<'de, V: Deserialize<'de>> Visitor<'de> for ByAxisVisitor<V> {
    type Value = ByAxis<V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value for each axis, by its key in report.json")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ByAxis<V>, A::Error> {
        let mut values = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match Axis::of_field(&key) {
                Some(axis) => values.push((axis, map.next_value::<V>()?)),
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(ByAxis(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Point;

    /// Each message as a line, and read back the same.
    fn line(message: &RunMessage) -> String {
        let text = serde_json::to_string(message).unwrap();
        let back: RunMessage = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, message, "{text}");
        text
    }

    #[test]
    fn each_message_is_written_with_its_type_first_and_its_fields_in_order() {
        let started = RunMessage::RunStarted(RunStarted {
            id: "r1".into(),
            cells: 2,
            repeat: 1,
            targets: vec!["agent".into()],
            scenarios: vec!["native-continuity".into()],
            partition: None,
            axes: ByAxis(vec![(Axis::Client, vec!["rust".into(), "ts-sdk".into()])]),
        });
        assert_eq!(
            line(&started),
            r#"{"type":"run-started","id":"r1","cells":2,"repeat":1,"targets":["agent"],"scenarios":["native-continuity"],"partition":null,"axes":{"client":["rust","ts-sdk"]}}"#
        );
        let cell = RunMessage::CellStarted(CellStarted {
            index: 1,
            total: 2,
            target: "agent".into(),
            scenario: "native-continuity".into(),
            attempt: 1,
            point: ByAxis(vec![
                (Axis::Server, Some("0.4.2".into())),
                (Axis::Sdk, None),
            ]),
        });
        assert_eq!(
            line(&cell),
            r#"{"type":"cell-started","index":1,"total":2,"target":"agent","scenario":"native-continuity","attempt":1,"point":{"serverVersion":"0.4.2","sdkVersion":null}}"#
        );
        let judged = RunMessage::CellJudged(CellJudged {
            index: 1,
            total: 2,
            verdicts: vec![Verdict::Fail, Verdict::Pass],
        });
        assert_eq!(
            line(&judged),
            r#"{"type":"cell-judged","index":1,"total":2,"verdicts":["fail","pass"]}"#
        );
        let timeout = RunMessage::OverallTimeout(OverallTimeout { timeout_ms: 5 });
        assert_eq!(
            line(&timeout),
            r#"{"type":"overall-timeout","timeoutMs":5}"#
        );
        let finished = RunMessage::RunFinished(RunFinished {
            id: "r1".into(),
            dir: "/tmp/r1".into(),
            totals: Totals::default(),
            interrupted: false,
            exit_code: 0,
        });
        assert!(line(&finished).starts_with(
            r#"{"type":"run-finished","id":"r1","dir":"/tmp/r1","totals":{"cells":0,"#
        ));
        assert!(line(&finished).ends_with(r#""interrupted":false,"exitCode":0}"#));
    }

    #[test]
    fn a_finished_cell_is_the_cell_as_report_json_writes_it() {
        let report: crate::Report = serde_json::from_str(
            r#"{"schema":"continuity.report/v2","run":{"id":"r","harnessVersion":"0","startedAt":"","finishedAt":"","durationMs":0,"baseUrl":"","agent":"mock","serverVersion":null,"timeoutMs":1,"overallTimeoutMs":1,"repeat":1,"persist":"memory","targets":["agent"],"scenarios":["s"],"interrupted":false,"logs":[]},
                "cells":[{"target":"agent","scenario":"s","serverVersion":null,"attempt":1,"verdict":"pass","failureBoundary":null,"reason":null,"durationMs":3,"phases":[],"restarts":[]}],
                "totals":{"cells":1,"passed":1,"failed":0,"errored":0,"skipped":0}}"#,
        )
        .unwrap();
        let cell = report.cells[0].clone();
        assert_eq!(cell.point, Point::new("agent", "s"));
        let message = RunMessage::CellFinished(CellFinished {
            index: 1,
            total: 1,
            cell: Box::new(cell.clone()),
        });
        let text = line(&message);
        let cell_json = serde_json::to_string(&cell).unwrap();
        assert_eq!(
            text,
            format!(r#"{{"type":"cell-finished","index":1,"total":1,"cell":{cell_json}}}"#)
        );
    }

    #[test]
    fn a_key_that_is_no_axis_is_left_out_when_read() {
        let axes: ByAxis<Vec<String>> =
            serde_json::from_str(r#"{"client":["rust"],"planet":["mars"]}"#).unwrap();
        assert_eq!(axes, ByAxis(vec![(Axis::Client, vec!["rust".to_string()])]));
    }
}
