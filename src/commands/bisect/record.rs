//! `bisect.json`: what a bisect was asked and each point it tried, with
//! every cell's runs, written again (atomically, redacted) after each try
//! so that a bisect cut short keeps what it found.

use super::search::{Found, Judged};
use super::{words, BisectPoint, Verdicts};
use crate::cli::BisectArgs;
use crate::report::Verdict;
use serde::Serialize;
use std::path::Path;

/// The schema id of `bisect.json`.
pub(super) const SCHEMA: &str = "continuity.bisect/v1";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BisectRecord {
    schema: &'static str,
    axis: &'static str,
    /// The points as given, in order.
    points: Vec<String>,
    /// The cells judged, `TARGET/SCENARIO`.
    cells: Vec<String>,
    /// Runs of each point tried.
    runs: u32,
    seed: u64,
    /// Each point tried, in the order tried.
    tries: Vec<Try>,
    /// Where the search ended; absent until it has.
    #[serde(skip_serializing_if = "Option::is_none")]
    found: Option<FoundRecord>,
}

/// One point tried.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Try {
    /// 1-based, in the list.
    point: usize,
    /// `reference` (the first point), `same`, `changed`, `flaky`, `not_run`.
    judged: &'static str,
    /// Its run's folder, relative to the bisect's.
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<String>,
    /// Each cell's verdict and its runs' verdicts.
    cells: Vec<CellRuns>,
    /// Why it could not be run.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct CellRuns {
    cell: String,
    verdict: Verdict,
    runs: Vec<Verdict>,
}

#[derive(Debug, Serialize)]
#[serde(
    tag = "outcome",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum FoundRecord {
    /// `point` (1-based) is the first whose verdict differs.
    First {
        point: usize,
    },
    /// The first change lies in `from..=to` (1-based), `leftOut` flaky or not run.
    Among {
        from: usize,
        to: usize,
        left_out: Vec<usize>,
        changed: bool,
    },
    NoChange,
}

impl BisectRecord {
    pub(super) fn new(args: &BisectArgs, points: &[BisectPoint], seed: u64) -> BisectRecord {
        BisectRecord {
            schema: SCHEMA,
            axis: args.axis.name(),
            points: points.iter().map(|p| p.spec.clone()).collect(),
            cells: args.cells.clone(),
            runs: args.runs,
            seed,
            tries: Vec::new(),
            found: None,
        }
    }

    /// How many points were tried.
    pub(super) fn tries(&self) -> usize {
        self.tries.len()
    }

    /// Records a try and writes the file again.
    pub(super) fn tried(&mut self, dir: &Path, tried: Try) -> Result<(), super::CommandError> {
        self.tries.push(tried);
        self.write(dir)
    }

    /// Records where the search ended and writes the file again.
    pub(super) fn found(&mut self, dir: &Path, found: &Found) -> Result<(), super::CommandError> {
        self.found = Some(match found {
            Found::First(i) => FoundRecord::First { point: i + 1 },
            Found::NoChange => FoundRecord::NoChange,
            Found::Among {
                from,
                to,
                left_out,
                changed,
            } => FoundRecord::Among {
                from: from + 1,
                to: to + 1,
                left_out: left_out.iter().map(|i| i + 1).collect(),
                changed: *changed,
            },
        });
        self.write(dir)
    }

    fn write(&self, dir: &Path) -> Result<(), super::CommandError> {
        let path = dir.join("bisect.json");
        let cannot = |e: &dyn std::fmt::Display| {
            super::CommandError::incomplete(format!("cannot write {}: {e}", path.display()))
        };
        let text = serde_json::to_string_pretty(self).map_err(|e| cannot(&e))?;
        let text = crate::secret::redact_known(&text);
        crate::report::write_atomic(&path, text.as_bytes()).map_err(|e| cannot(&e))
    }
}

impl Try {
    /// The first point, whose verdicts the others are compared with.
    pub(super) fn reference(index: usize, verdicts: &Verdicts) -> Try {
        Try::with(index, "reference", Some(verdicts), None)
    }

    /// A later point that ran, judged against the first.
    pub(super) fn ran(index: usize, verdicts: &Verdicts, judged: Judged) -> Try {
        let word = match judged {
            Judged::Same => "same",
            Judged::Changed => "changed",
            Judged::Flaky => "flaky",
            Judged::NotRun => "not_run",
        };
        Try::with(index, word, Some(verdicts), None)
    }

    /// A point that could not be run, and why.
    pub(super) fn not_run(index: usize, why: &str) -> Try {
        Try::with(index, "not_run", None, Some(why.to_string()))
    }

    fn with(
        index: usize,
        judged: &'static str,
        verdicts: Option<&Verdicts>,
        reason: Option<String>,
    ) -> Try {
        Try {
            point: index + 1,
            judged,
            run: verdicts.map(|v| v.run.clone()),
            cells: verdicts
                .map(|v| {
                    v.cells
                        .iter()
                        .map(|(cell, verdict, runs)| CellRuns {
                            cell: cell.clone(),
                            verdict: *verdict,
                            runs: runs.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            reason,
        }
    }

    /// `changed: agent × native-continuity: pass pass pass`.
    pub(super) fn describe(&self) -> String {
        let cells = self
            .cells
            .iter()
            .map(|c| format!("{}: {}", c.cell, words(&c.runs)))
            .collect::<Vec<_>>()
            .join("; ");
        match &self.reason {
            Some(why) => format!("{} ({why})", self.judged.replace('_', " ")),
            None => format!("{}: {cells}", self.judged.replace('_', " ")),
        }
    }
}
