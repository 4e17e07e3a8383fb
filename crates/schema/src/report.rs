//! The matrix as data: what `report.json` holds (schema `continuity.report/v2`)
//! and what every renderer reads. Nothing here renders or prints.
//!
//! v2 over v1: a cell is one point of the matrix (target × scenario, and the
//! server version when the run has a version axis) whatever the number of
//! attempts; its `attempts` keep every run of it (`--repeat`, `--retries`),
//! `flaky` is a verdict, and a cell may carry its judgement against an
//! expectations file. `continuity-report`'s `upgrade` reads v1 reports.
//!
//! Over 400 lines on purpose: it is the document's nested shape, read
//! top-down as `report.json` nests it, from `Report` and its `RunInfo` to
//! each `Cell`, `Attempt` and `PhaseResult` (with a long turn's `TurnFate`
//! and the `Totals`), and the few readings every renderer shares
//! (`CellIndex`, `phase_columns`, a cell's verdict rules); what has a life
//! of its own is apart: a point and its axes (`point.rs`, `axis.rs`), the
//! failure's signature (`signature.rs`), the judgement (`judgement.rs`), the
//! recipe (`recipe.rs`), the checker's verdict (`checked.rs`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;

pub use super::point::{Axis, AxisValue, Named, Point, RowPoint, UnknownAxis};

pub use super::judgement::{ExpectOutcome, FlakyResult, Judgement, ShardInfo, Verdict};
use super::recipe::Recipe;
pub use super::signature::{mask_ids, Cause, FaultCause, Signature, SignatureKind};

/// What one restart did, stamped with the scenario phase that asked for it:
/// the one restart type, from the target up to a cell's `restarts` in
/// `report.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartResult {
    /// The phase that restarted the target.
    pub phase: String,
    /// The restart kind (`managed`, `command`, `signal`, `http`).
    pub action: String,
    pub ok: bool,
    /// How long the restart action itself took.
    pub restart_ms: u64,
    /// From the end of the action until the probe passed; `None` when the
    /// restart failed or the target has no probe.
    pub ready_ms: Option<u64>,
    /// How the harness saw the target go down (its process exited and its
    /// listener refused, its probe failed during the restart, its pid file's
    /// process renewed its children); `None` when the restart failed or
    /// restarts no process (clients, faults), and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<String>,
    /// On failure, what failed: the command and its exit code and stderr,
    /// the target that never went down and what was seen instead, or the
    /// probe, its deadline and its last error.
    pub detail: Option<String>,
}

/// An attempt's (or a sum of attempts') physical floor (restart-to-ready
/// plus the server's own answer times) and the harness overhead above it,
/// in milliseconds; computed in `report::floor`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Floor {
    pub floor_ms: u64,
    pub overhead_ms: u64,
}

impl Floor {
    /// The sum of the floors given; `None` when there is none.
    pub fn sum<'a>(floors: impl IntoIterator<Item = &'a Option<Floor>>) -> Option<Floor> {
        floors.into_iter().flatten().fold(None, |total, f| {
            let t = total.unwrap_or_default();
            Some(Floor {
                floor_ms: t.floor_ms + f.floor_ms,
                overhead_ms: t.overhead_ms + f.overhead_ms,
            })
        })
    }

    /// A run's: the sum over its cells.
    pub fn of_cells(cells: &[Cell]) -> Option<Floor> {
        Floor::sum(cells.iter().map(|c| &c.timing))
    }

    /// The overhead as a share of the floor, in percent.
    pub fn overhead_percent(&self) -> Option<f64> {
        (self.floor_ms > 0).then(|| self.overhead_ms as f64 * 100.0 / self.floor_ms as f64)
    }

    /// `floor 12.3 s, overhead 1.2 s (+10%)`.
    pub fn describe(&self) -> String {
        let percent = self
            .overhead_percent()
            .map(|p| format!(" (+{p:.0}%)"))
            .unwrap_or_default();
        format!(
            "floor {:.1} s, overhead {:.1} s{percent}",
            self.floor_ms as f64 / 1000.0,
            self.overhead_ms as f64 / 1000.0
        )
    }
}

/// The schema id written into every report.
pub const SCHEMA_ID: &str = "continuity.report/v2";
/// The previous schema, still readable (`continuity-report`'s `upgrade` reads it).
pub const SCHEMA_V1: &str = "continuity.report/v1";

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema: String,
    pub run: RunInfo,
    pub cells: Vec<Cell>,
    pub totals: Totals,
}

/// What was run, against what, with which limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInfo {
    pub id: String,
    pub harness_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    /// Without credentials.
    pub base_url: String,
    pub agent: String,
    /// What the server reported about itself, when it did.
    pub server_version: Option<String>,
    pub timeout_ms: u64,
    pub overall_timeout_ms: u64,
    pub repeat: u32,
    pub persist: String,
    /// Each client's store when the run named none and the clients' own
    /// defaults differ (`rivet` for `rust`, `indexeddb` for `browser`):
    /// its cells then name no store of their own. Absent otherwise, and in
    /// older reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_stores: Vec<ClientStore>,
    pub targets: Vec<crate::TargetName>,
    pub scenarios: Vec<String>,
    /// The run stopped early (Ctrl-C or the overall deadline); unfinished cells are missing.
    pub interrupted: bool,
    /// Component logs, relative to the report folder when inside it.
    pub logs: Vec<LogFile>,
    /// `--retries`: how many times a failed attempt was run again.
    #[serde(default)]
    pub retries: u32,
    /// `--flaky-result`: whether a flaky cell counts as passed or failed.
    #[serde(default)]
    pub flaky_result: FlakyResult,
    /// `--partition`, e.g. `count:1/2`: this run holds one shard of the matrix.
    #[serde(default)]
    pub partition: Option<String>,
    /// The shard runs a merged report was made from.
    #[serde(default)]
    pub shards: Vec<ShardInfo>,
    /// The expectations file the cells were judged against (`--expect`).
    #[serde(default)]
    pub expect_file: Option<String>,
    /// `--allow-fixed`: a cell that passes against an expected failure does not fail the run.
    #[serde(default)]
    pub allow_fixed: bool,
    /// The run's floor and overhead: the sums over its cells (`continuity-report`'s `floor`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Floor>,
    /// The points of the server and SDK axes on the local stack, and where
    /// each came from (a registry release or a candidate build).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<AxisPoint>,
    /// The seed every random choice of the run derived from (`--seed`);
    /// absent from reports written before it was recorded, and from merges
    /// of shards that ran with different seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// What `continuity rerun` needs to run the cells again as they ran;
    /// absent from reports written before it was recorded, and from merges
    /// of shards whose settings differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<Recipe>,
}

/// A client and the store its cells kept their sessions in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStore {
    pub client: Named<crate::ClientKind>,
    pub store: Named<crate::Store>,
}

/// One point of the server or the SDK axis: its label (what cells carry
/// in `serverVersion` / `sdkVersion` on that axis) and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AxisPoint {
    /// [`Axis::Server`] or [`Axis::Sdk`].
    pub axis: Axis,
    pub label: String,
    pub source: PointSource,
    /// What it reports about itself: the registry version, the binary's
    /// `--version` (`sandbox-agent 0.4.2`), the SDK package's version.
    pub version: String,
    /// The candidate's binary, or its packages (the SDK first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// A candidate's SHA-256, as the run checked it: the binary's bytes, or
    /// everything its packages hold (a folder's files but `node_modules`
    /// and `.git`). `rerun` refuses a candidate that no longer has it.
    /// Absent for registry points and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Where an [`AxisPoint`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointSource {
    /// A published version from the npm registry.
    Registry,
    /// A sandbox-agent binary on disk (`--server-bin`).
    Binary,
    /// An SDK's packages on disk (`--sdk`).
    Package,
}

impl AxisPoint {
    /// A build under test rather than a published release.
    pub fn is_candidate(&self) -> bool {
        self.source != PointSource::Registry
    }
}

impl RunInfo {
    /// The points of `axis`, in run order.
    pub fn points_of(&self, axis: Axis) -> impl Iterator<Item = &AxisPoint> {
        self.points.iter().filter(move |p| p.axis == axis)
    }

    /// The store the cells of `client` kept their sessions in, when
    /// `client_stores` says it.
    pub fn store_of(&self, client: &Named<crate::ClientKind>) -> Option<&Named<crate::Store>> {
        self.client_stores
            .iter()
            .find(|s| s.client == *client)
            .map(|s| &s.store)
    }

    /// `rivet (rust, ts-sdk), indexeddb (browser)` when the clients kept
    /// their sessions in stores of their own, else `run.persist`.
    pub fn stores_text(&self) -> String {
        let mut stores: Vec<(&str, Vec<&str>)> = Vec::new();
        for s in &self.client_stores {
            match stores
                .iter_mut()
                .find(|(store, _)| *store == s.store.name())
            {
                Some((_, clients)) => clients.push(s.client.name()),
                None => stores.push((s.store.name(), vec![s.client.name()])),
            }
        }
        match stores.is_empty() {
            true => self.persist.clone(),
            false => stores
                .iter()
                .map(|(store, clients)| format!("{store} ({})", clients.join(", ")))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The point of `axis` a cell that names none ran on: the axis's only
    /// point, when the run recorded it.
    pub fn only_point(&self, axis: Axis) -> Option<&AxisPoint> {
        let mut points = self.points_of(axis);
        match (points.next(), points.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogFile {
    pub name: String,
    pub path: String,
}

/// One point of the matrix: target × scenario, and each other axis's
/// value when the run had that axis (server version, agent, client, SDK,
/// store). Its phases are those of its deciding attempt; `attempts` holds
/// every run of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// Target × scenario and the cell's value on each axis the run had:
    /// `target`, `scenario`, `serverVersion`, `agent`, `client`,
    /// `sdkVersion`, `persist` in `report.json`.
    #[serde(flatten)]
    pub point: Point,
    /// 1-based: which attempt the phases below come from.
    pub attempt: u32,
    pub verdict: Verdict,
    /// The first verdict phase that failed.
    pub failure_boundary: Option<String>,
    /// Why the cell was skipped or could not run.
    pub reason: Option<String>,
    pub duration_ms: u64,
    pub phases: Vec<PhaseResult>,
    pub restarts: Vec<RestartResult>,
    /// Passed attempts / attempts, when there was more than one.
    #[serde(default)]
    pub pass_rate: Option<f64>,
    /// Every attempt, in order, when there was more than one.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// The cell judged against the expectations file (`--expect`).
    #[serde(default)]
    pub expectation: Option<Judgement>,
    /// The cell's wire trace (`trace.jsonl`), relative to the run folder;
    /// absent when the cell never ran or `--trace off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The physical floor of the cell's attempts and the harness overhead above it.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Floor>,
    /// The fate of the long turn its phases awaited (the `long-turn`
    /// scenarios): delivered, lost, unfinished; absent for other cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnFate>,
    /// The always-on checker's verdict on the shown attempt's history:
    /// each invariant valid, broken or unknown, and every violation.
    /// Absent in reports written before it, and with `--trace off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<crate::checked::Verdict>,
    /// A `chaos` cell's schedule of faults (every attempt runs the same);
    /// absent for other cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::Schedule>,
}

/// What became of a turn's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// The result reached the client.
    Delivered,
    /// The agent finished the turn; the client never got the result.
    Lost,
    /// The agent never finished the turn.
    Unfinished,
    /// The client never got the result, and nothing says whether the
    /// agent finished (no agent record, nowhere to recover it from).
    Unknown,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Delivered => "delivered",
            Fate::Lost => "lost",
            Fate::Unfinished => "unfinished",
            Fate::Unknown => "unknown",
        }
    }
}

/// One long turn's fate, as `report.json` writes it under a cell's `turn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnFate {
    pub fate: Fate,
    /// How a delivered result came: `post`, `stream`, `resumed stream`,
    /// `unknown`; `null` when it never came.
    pub channel: Option<String>,
    /// The agent's own record: it finished the turn, or not; `null`
    /// without a record (a deployment's agent).
    pub agent_finished: Option<bool>,
    /// Where a client could still find the result: `history`, `stream`.
    pub recoverable_via: Vec<String>,
    /// Whether the same session took the next prompt; `null` when none ran.
    pub session_usable: Option<bool>,
}

impl TurnFate {
    /// `lost (the agent finished; recoverable from the stream); session unusable`.
    pub fn words(&self) -> String {
        let mut text = match (self.fate, &self.channel) {
            (Fate::Delivered, Some(channel)) => format!("delivered by {channel}"),
            (fate, _) => fate.as_str().to_string(),
        };
        let mut notes = Vec::new();
        if self.fate != Fate::Delivered {
            match self.agent_finished {
                Some(true) => notes.push("the agent finished".to_string()),
                Some(false) => notes.push("the agent never finished".to_string()),
                None => {}
            }
            notes.push(match self.recoverable_via.as_slice() {
                [] => "recoverable from nowhere".to_string(),
                via => format!("recoverable from the {}", via.join(" and the ")),
            });
        }
        if !notes.is_empty() {
            text.push_str(&format!(" ({})", notes.join("; ")));
        }
        match self.session_usable {
            Some(false) => text.push_str("; session unusable"),
            Some(true) => text.push_str("; session usable"),
            None => {}
        }
        text
    }

    /// Where the fix belongs: what the result's fate says, then what an
    /// unusable session adds.
    pub fn fix(&self) -> String {
        let stream = self.recoverable_via.iter().any(|v| v == "stream");
        let history = self.recoverable_via.iter().any(|v| v == "history");
        let result = match self.fate {
            Fate::Delivered => None,
            Fate::Lost if history => Some("client-side fix: the result is in the client's own history"),
            Fate::Lost if stream => Some("client- or server-side fix: the server still replays the result on its stream, the client gave up with the POST (take the answer from a re-attached stream, or answer the POST 202 and deliver on the stream, sandbox-agent#308)"),
            Fate::Lost => Some("server-side fix: the result went with the POST, nothing replays it"),
            Fate::Unfinished => Some("server- or agent-side fix: the turn ended with its POST"),
            Fate::Unknown => Some("unknown: nothing says whether the agent finished"),
        };
        let session = (self.session_usable == Some(false)).then_some(
            "client-side fix: the session must take the next prompt (the client closed its transport with the POST, sandbox-agent#306/#307)",
        );
        match (result, session) {
            (None, None) => "nothing to fix".into(),
            (Some(one), None) | (None, Some(one)) => one.into(),
            (Some(result), Some(session)) => format!("{result}; {session}"),
        }
    }
}

/// One run of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// 1-based.
    pub attempt: u32,
    /// A rerun of a failed attempt (`--retries`) rather than one of `--repeat`.
    pub retry: bool,
    pub verdict: Verdict,
    pub failure_boundary: Option<String>,
    pub reason: Option<String>,
    pub duration_ms: u64,
    pub phases: Vec<PhaseResult>,
    pub restarts: Vec<RestartResult>,
    /// This attempt's wire trace (`trace.jsonl`), relative to the run folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The physical floor on the attempt's path and the harness overhead above it.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Floor>,
    /// The always-on checker's verdict on this attempt's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<crate::checked::Verdict>,
    /// The schedule of faults this attempt ran (a `chaos` cell's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::Schedule>,
}

impl Attempt {
    /// The attempt a single-attempt cell holds (its phases are the cell's).
    pub fn of_cell(cell: &Cell, retry: bool) -> Attempt {
        Attempt {
            attempt: cell.attempt,
            retry,
            verdict: cell.verdict,
            failure_boundary: cell.failure_boundary.clone(),
            reason: cell.reason.clone(),
            duration_ms: cell.duration_ms,
            phases: cell.phases.clone(),
            restarts: cell.restarts.clone(),
            trace: cell.trace.clone(),
            timing: cell.timing,
            checked: cell.checked.clone(),
            schedule: cell.schedule.clone(),
        }
    }
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Fail,
    Timeout,
    /// Not reached: an earlier phase stopped the cell.
    NotRun,
    /// The run was interrupted while this phase ran.
    Interrupted,
    /// The cell's client cannot take this step: its detail's
    /// `notApplicable` names the API the client lacks. Never a verdict.
    NotApplicable,
}

/// One phase of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseResult {
    /// The scenario's name for it (the seed script's camelCase names).
    pub name: String,
    /// The step kind: `prompt`, `restart`, `get_events`, …
    pub step: String,
    /// Whether it decides the cell's verdict (`verdict` in `report.json`).
    #[serde(rename = "verdict")]
    pub decides_verdict: bool,
    /// Part of the cleanup that never changes the verdict.
    pub cleanup: bool,
    pub outcome: Outcome,
    pub ok: bool,
    pub duration_ms: u64,
    pub deadline_ms: u64,
    /// stopReason, eventsObserved, resume action, …
    pub detail: Map<String, Value>,
    pub signature: Option<Signature>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub cells: u32,
    pub passed: u32,
    pub failed: u32,
    pub errored: u32,
    pub skipped: u32,
    #[serde(default)]
    pub flaky: u32,
    /// Absent in reports written before the verdict existed.
    #[serde(default)]
    pub interrupted: u32,
    /// Cells with no verdict on the restart (`not_applicable`): counted in
    /// `cells`, never among the cells judged ([`Totals::judged`]). Absent
    /// in reports written before the verdict existed, and when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_applicable: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Totals {
    pub fn of(cells: &[Cell]) -> Totals {
        let mut t = Totals::default();
        for cell in cells {
            t.cells += 1;
            match cell.verdict {
                Verdict::Pass => t.passed += 1,
                Verdict::Fail => t.failed += 1,
                Verdict::Error => t.errored += 1,
                Verdict::Skipped => t.skipped += 1,
                Verdict::Flaky => t.flaky += 1,
                Verdict::Interrupted => t.interrupted += 1,
                Verdict::NotApplicable => t.not_applicable += 1,
            }
        }
        t
    }

    /// The cells that have a verdict on their restart: all but the
    /// `not_applicable` ones, what "N/M passed" counts against.
    pub fn judged(&self) -> u32 {
        self.cells.saturating_sub(self.not_applicable)
    }
}

impl Cell {
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// The label of this cell's point on `axis`: its own on that axis,
    /// else the run's only point there (server and SDK points); none on
    /// the SDK axis for a client that runs no SDK.
    pub fn point_label<'a>(&'a self, run: &'a RunInfo, axis: Axis) -> Option<&'a str> {
        let hosts_sdk = self
            .point
            .client()
            .known()
            .is_some_and(crate::ClientKind::hosts_sdk);
        if axis == Axis::Sdk && !hosts_sdk {
            return None;
        }
        let own = self.point.name_on(axis);
        own.or_else(|| run.only_point(axis).map(|p| p.label.as_str()))
    }

    /// The row label renderers share: the target and the cell's values on
    /// the run's axes ([`Point::label`]). Attempts are inside the cell, not rows.
    pub fn label(&self) -> String {
        self.point.label()
    }

    /// What identifies a cell across runs, shards and expectations.
    pub fn key(&self) -> &Point {
        &self.point
    }

    /// The signature of the failure boundary, if any.
    pub fn boundary_signature(&self) -> Option<&Signature> {
        self.failure_boundary
            .as_deref()
            .and_then(|b| self.phase(b))
            .and_then(|p| p.signature.as_ref())
    }

    /// Whether the cell counts as passed when deciding the exit code.
    pub fn counts_as_pass(&self, flaky: FlakyResult) -> bool {
        match self.verdict {
            Verdict::Pass => true,
            Verdict::Flaky => flaky == FlakyResult::Pass,
            _ => false,
        }
    }

    /// Whether the cell fails the run by its own verdict (no expectation
    /// judged it): anything but a pass, a flaky cell counted as passed, or
    /// a cell with no verdict on its restart (`not_applicable`), which is
    /// no pass and no failure either.
    pub fn fails_run_alone(&self, flaky: FlakyResult) -> bool {
        !self.counts_as_pass(flaky) && self.verdict != Verdict::NotApplicable
    }
}

impl Report {
    /// The cell at `point`, when the report holds it.
    pub fn cell_at(&self, point: &Point) -> Option<&Cell> {
        self.cells.iter().find(|c| c.point == *point)
    }

    /// Scenarios in the order the run declared them, then any that only
    /// appear in cells, so a hand-edited or partial report still renders whole.
    pub fn scenario_order(&self) -> Vec<&str> {
        ordered(
            self.run.scenarios.iter().map(String::as_str),
            self.cells.iter().map(|c| c.point.scenario.as_str()),
        )
    }

    /// Targets in run order, then any only found in cells.
    pub fn target_order(&self) -> Vec<&crate::TargetName> {
        ordered(
            self.run.targets.iter(),
            self.cells.iter().map(|c| &c.point.target),
        )
    }

    /// The summary's rows: targets in run order, each once per row point
    /// its cells carry ([`Point::row`]: every axis value), in first-seen
    /// order (once naming no axis for a target no cell names).
    pub fn row_order(&self) -> Vec<RowPoint<'_>> {
        // One pass over the cells, each target's rows in first-seen order.
        let mut of_target: HashMap<&crate::TargetName, Vec<RowPoint<'_>>> = HashMap::new();
        for cell in &self.cells {
            let row = cell.point.row();
            let seen = of_target.entry(row.target).or_default();
            if !seen.contains(&row) {
                seen.push(row);
            }
        }
        let mut rows: Vec<RowPoint<'_>> = Vec::new();
        for target in self.target_order() {
            let of = of_target
                .remove(target)
                .unwrap_or_else(|| vec![RowPoint::bare(target)]);
            rows.extend(of);
        }
        rows
    }

    /// Each scenario in [`Report::scenario_order`] with its cells, sorted
    /// by target order then attempt, whatever order the runner finished
    /// them in. One pass over the cells: a report holding as many
    /// scenarios as cells (one from elsewhere may) costs no more than
    /// sorting them, where a pass per scenario was quadratic.
    pub fn by_scenario(&self) -> Vec<(&str, Vec<&Cell>)> {
        let targets: HashMap<&crate::TargetName, usize> = self
            .target_order()
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i))
            .collect();
        let rank = |t: &crate::TargetName| targets.get(t).copied().unwrap_or(usize::MAX);
        let mut groups: HashMap<&str, Vec<&Cell>> = HashMap::new();
        for cell in &self.cells {
            groups
                .entry(cell.point.scenario.as_str())
                .or_default()
                .push(cell);
        }
        self.scenario_order()
            .into_iter()
            .map(|scenario| {
                let mut cells = groups.remove(scenario).unwrap_or_default();
                cells.sort_by_key(|c| {
                    (
                        rank(&c.point.target),
                        c.point.name_on(Axis::Server).map(str::to_string),
                        c.attempt,
                    )
                });
                (scenario, cells)
            })
            .collect()
    }
}

/// A report's cells by their point (the first of each, as
/// [`Report::cell_at`] finds it), with their place in the report: built in
/// one pass for a join that looks many cells up, where a scan per lookup
/// was quadratic.
pub struct CellIndex<'a>(HashMap<&'a Point, (usize, &'a Cell)>);

impl<'a> CellIndex<'a> {
    pub fn of(report: &'a Report) -> CellIndex<'a> {
        let mut cells = HashMap::with_capacity(report.cells.len());
        for (i, cell) in report.cells.iter().enumerate() {
            cells.entry(&cell.point).or_insert((i, cell));
        }
        CellIndex(cells)
    }

    pub fn at(&self, point: &Point) -> Option<&'a Cell> {
        self.0.get(point).map(|(_, cell)| *cell)
    }

    /// The same cell as `cell` with `value` on its axis (another client,
    /// version, SDK or store).
    pub fn counterpart(&self, cell: &Cell, value: AxisValue) -> Option<&'a Cell> {
        self.at(&cell.point.with(value))
    }

    /// Where the cell at `point` is in the report.
    pub fn position(&self, point: &Point) -> Option<usize> {
        self.0.get(point).map(|(i, _)| *i)
    }
}

/// A scenario's non-cleanup phase names: those of its first cell, then any
/// later cells add. A skipped first cell has no phases, and taking only the
/// first cell would then leave the table without columns.
pub fn phase_columns<'a>(cells: &[&'a Cell]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for cell in cells {
        for phase in cell.phases.iter().filter(|p| !p.cleanup) {
            if seen.insert(phase.name.as_str()) {
                names.push(&phase.name);
            }
        }
    }
    names
}

fn ordered<'a, T: Eq + std::hash::Hash + ?Sized>(
    declared: impl Iterator<Item = &'a T>,
    seen: impl Iterator<Item = &'a T>,
) -> Vec<&'a T> {
    let mut out: Vec<&T> = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for name in declared.chain(seen) {
        if taken.insert(name) {
            out.push(name);
        }
    }
    out
}
