//! The words a report judges cells with (schema v2): a cell's verdict,
//! whether flaky cells count as passed, the shards a merged run came from, and a
//! cell's judgement against an expectations file (a cell's identity is its
//! `Point`). Plain data below the model, which re-exports it; it uses nothing
//! of the model.

use serde::{Deserialize, Serialize};

/// A cell's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// The harness could not run the cell (a target would not restart, a setup step failed).
    Error,
    /// Not run, with a reason (a missing program).
    Skipped,
    /// Its attempts disagree: some passed, some did not.
    Flaky,
    /// Cut short by Ctrl-C, SIGTERM or the overall deadline: the phases it
    /// finished, the one it was in (`interrupted`), and its cleanup.
    Interrupted,
    /// Run, but it says nothing about the restart: every verdict phase
    /// after the restart (or in the fault's or timeout's window) was a step
    /// the cell's client or store cannot take, or the target is not one its
    /// client or store has. Its `reason` names the missing call. Neither a
    /// pass nor a failure: kept out of pass counts and totals, and it does
    /// not fail the run by itself.
    NotApplicable,
}

impl Verdict {
    /// The word used in reports and JUnit: `pass`, `fail`, `error`,
    /// `skipped`, `interrupted`, `not_applicable`, as serialized.
    pub fn as_str(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// The verdict as prose reads it: its wire name with spaces
    /// (`not applicable`).
    pub fn words(self) -> String {
        self.as_str().replace('_', " ")
    }

    pub fn glyph(self) -> &'static str {
        match self {
            Verdict::Pass => "✅",
            Verdict::Fail => "❌",
            Verdict::Error => "⚠",
            Verdict::Skipped => "–",
            Verdict::Flaky => "〰",
            Verdict::Interrupted => "⏸",
            // Plain text, apart from every other mark: no verdict to show.
            Verdict::NotApplicable => "n/a",
        }
    }
}

/// Whether a flaky cell counts as passed (nextest's default, with a
/// warning) or failed when the exit code is decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlakyResult {
    #[default]
    Pass,
    Fail,
}

/// A shard a merged report was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardInfo {
    pub id: String,
    pub partition: Option<String>,
    /// The shard's run folder, as given to `merge`.
    pub dir: String,
    pub cells: u32,
}

/// How a cell compares with what the expectations file says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectOutcome {
    /// As expected.
    Expected,
    /// Expected to pass, and did not.
    Regressed,
    /// Expected to fail, and failed elsewhere or differently (or errored, or was skipped).
    Changed,
    /// Expected not to pass, and passed: the baseline needs updating.
    Fixed,
    /// No entry: judged by its own verdict.
    New,
    /// As its entry expected, but the entry's `until` date has passed: a
    /// quarantine no longer excuses the cell.
    Expired,
}

/// A cell's judgement: the outcome, the entry it was judged against, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Judgement {
    pub outcome: ExpectOutcome,
    /// The expected verdict; `None` for `new`.
    pub verdict: Option<Verdict>,
    #[serde(default)]
    pub boundary: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    /// The entry's `reason`.
    #[serde(default)]
    pub reason: Option<String>,
    /// `file:line` of the entry.
    #[serde(default)]
    pub entry: Option<String>,
    /// Whether this cell fails the run (after `--allow-fixed` and `--flaky-result`).
    pub fails_run: bool,
    /// The entry's `until`: the last day it excuses the cell (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The entry's `issue`: where the quarantined failure is tracked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// Days from the day the cell was judged to `until` (negative: expired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days_left: Option<i32>,
}

impl ExpectOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectOutcome::Expected => "expected",
            ExpectOutcome::Regressed => "regressed",
            ExpectOutcome::Changed => "changed",
            ExpectOutcome::Fixed => "fixed",
            ExpectOutcome::New => "new",
            ExpectOutcome::Expired => "expired",
        }
    }
}
