//! Reading `report.json` of either schema: v2 as is, v1 (one cell per
//! attempt) folded into v2 cells, so `compare`, `merge` and `baseline` work
//! on runs written before the schema changed. What v2 gained since (the
//! `not_applicable` verdict, `totals.notApplicable`) is optional on read: a
//! report written before it reads as it was written, its verdicts as that
//! version judged them.

use std::collections::HashMap;

use super::attempts::aggregate;
use super::model::{Attempt, Cell, Point, Report, Totals, SCHEMA_ID, SCHEMA_V1};

/// The largest `report.json` continuity reads (64 MiB; a run of thousands
/// of cells writes a few MiB): parsing one takes several times its size in
/// memory, so a larger file is refused with this limit named.
pub const MAX_REPORT_BYTES: u64 = 64 << 20;

/// Why a text is not a report of a schema this build reads.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("schema {found:?}, expected {SCHEMA_ID} (or {SCHEMA_V1})")]
    Schema { found: String },
}

/// A report from its JSON text, upgraded to the current schema.
pub(crate) fn parse_report(text: &str) -> Result<Report, UpgradeError> {
    let mut report: Report = serde_json::from_str(text)?;
    match report.schema.as_str() {
        SCHEMA_ID => Ok(report),
        SCHEMA_V1 => {
            report.cells = fold_attempts(std::mem::take(&mut report.cells));
            report.totals = Totals::of(&report.cells);
            report.schema = SCHEMA_ID.into();
            Ok(report)
        }
        other => Err(UpgradeError::Schema {
            found: other.to_string(),
        }),
    }
}

/// v1 wrote `--repeat N` as N cells with the same point (target and
/// scenario: v1 had no axes), which fold into one.
fn fold_attempts(cells: Vec<Cell>) -> Vec<Cell> {
    let mut order: Vec<Point> = Vec::new();
    let mut groups: HashMap<Point, Vec<Cell>> = HashMap::new();
    for cell in cells {
        let key = cell.point.clone();
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(cell);
    }
    order
        .into_iter()
        .filter_map(|key| {
            let mut group = groups.remove(&key)?;
            if group.len() == 1 {
                return group.pop();
            }
            group.sort_by_key(|c| c.attempt);
            let attempts = group.iter().map(|c| Attempt::of_cell(c, false)).collect();
            Some(aggregate(key, attempts))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fixture, Verdict};

    #[test]
    fn a_v1_report_with_repeats_becomes_one_cell_per_target_and_scenario() {
        let mut v1 = fixture::report();
        v1.schema = SCHEMA_V1.into();
        let mut second = v1.cells[0].clone();
        second.attempt = 2;
        second.verdict = Verdict::Pass;
        second.failure_boundary = None;
        v1.cells.push(second);
        let text = serde_json::to_string(&v1).unwrap();
        let v2 = parse_report(&text).unwrap();
        assert_eq!(v2.schema, SCHEMA_ID);
        assert_eq!(v2.cells.len(), v1.cells.len() - 1);
        let folded = &v2.cells[0];
        assert_eq!(folded.verdict, Verdict::Flaky);
        assert_eq!(folded.attempts.len(), 2);
        assert_eq!(v2.totals.flaky, 1);
    }

    /// v1 had no axes; a "v1" report from elsewhere whose cells name two
    /// clients keeps each client's cell, its attempts folded: the fold
    /// keyed cells by target and scenario and dropped the client.
    #[test]
    fn a_v1_fold_keeps_the_cells_of_other_points_apart() {
        let mut v1 = fixture::report();
        v1.schema = SCHEMA_V1.into();
        let mut rust = v1.cells[0].clone();
        rust.point.set(crate::ClientKind::Rust.into());
        let mut again = rust.clone();
        again.attempt = 2;
        let mut hosted = rust.clone();
        hosted.point.set(crate::ClientKind::TsSdk.into());
        v1.cells = vec![rust.clone(), again, hosted.clone()];
        let v2 = parse_report(&serde_json::to_string(&v1).unwrap()).unwrap();
        let points: Vec<&Point> = v2.cells.iter().map(|c| &c.point).collect();
        assert_eq!(points, [&rust.point, &hosted.point]);
        assert_eq!(v2.cells[0].attempts.len(), 2);
    }

    /// A v2 report written before `not_applicable` existed (no count in
    /// its totals) reads as written; one with such a cell reads it back,
    /// and the count, written only when non-zero, round-trips.
    #[test]
    fn the_not_applicable_verdict_and_its_count_are_optional_on_read() {
        let before = fixture::report();
        let mut text = serde_json::to_value(&before).unwrap();
        assert!(text["totals"].get("notApplicable").is_none());
        text["totals"]
            .as_object_mut()
            .unwrap()
            .remove("notApplicable");
        let read = parse_report(&text.to_string()).unwrap();
        assert_eq!(read, before);
        assert_eq!(read.totals.not_applicable, 0);
        let mut after = fixture::report();
        after.cells[0].verdict = Verdict::NotApplicable;
        after.totals = Totals::of(&after.cells);
        let text = serde_json::to_string(&after).unwrap();
        assert!(text.contains("\"verdict\":\"not_applicable\""), "{text}");
        assert!(text.contains("\"notApplicable\":1"), "{text}");
        assert_eq!(parse_report(&text).unwrap(), after);
    }

    #[test]
    fn an_unknown_schema_is_refused_by_name() {
        let mut r = fixture::report();
        r.schema = "something/v9".into();
        let e = parse_report(&serde_json::to_string(&r).unwrap()).unwrap_err();
        assert!(
            matches!(&e, UpgradeError::Schema { found } if found == "something/v9"),
            "{e}"
        );
        assert!(e.to_string().contains("something/v9"), "{e}");
    }
}
