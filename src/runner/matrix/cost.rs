//! What a cell is expected to take, in milliseconds, for `--partition
//! cost:K/N`: its duration in a previous run's report (`--timings`), else
//! the built-in estimate of its point, the sum of one weight per coordinate
//! ([`WEIGHTS`], the one table of them, each figure with its source in
//! bench/README.md). Cells of a previous run are matched by their whole
//! point, so timings from a run of the same matrix (its merged report)
//! cover every cell; cells it lacks get the estimate.

use super::CellPoint;
use crate::report::{Point, Report};
use std::collections::HashMap;

/// Which coordinate of a cell a weight is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coordinate {
    /// The whole cell on the rust client with the mock agent.
    Target,
    /// What the scenario adds.
    Scenario,
    /// What the client adds (`rust` adds nothing).
    Client,
    /// What the agent adds (`mock` adds nothing).
    Agent,
}

/// One coordinate value's share of a cell's expected duration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Weight {
    pub coordinate: Coordinate,
    pub value: &'static str,
    pub ms: u64,
}

const fn weight(coordinate: Coordinate, value: &'static str, ms: u64) -> Weight {
    Weight {
        coordinate,
        value,
        ms,
    }
}

use Coordinate::{Agent, Client, Scenario, Target};

/// The built-in weights, the one table. docs/ci.md#shards quotes each row
/// with its source (a test keeps the two equal); the figures are
/// bench/README.md's, release build, 2 cores.
pub(crate) const WEIGHTS: &[Weight] = &[
    // agent × native-continuity, 0.7 s (matrix.sh).
    weight(Target, "agent", 700),
    // gateway × native-continuity, 2.8 s (the first attempt of `--repeat 3`).
    weight(Target, "gateway", 2_800),
    // No figure of its own: its restart is ready in 2 ms, so as agent's.
    weight(Target, "gateway-reload", 700),
    // The rivet cells' median, 8.5–10.0 s (soak).
    weight(Target, "rivet", 9_000),
    // The rivet-engine cells' median, 2.0–4.7 s (soak).
    weight(Target, "rivet-engine", 3_400),
    // Its observation windows: 150 ms of quiet, 300 ms for a replay.
    weight(Scenario, "sandbox-reconnect", 450),
    // A ts-sdk cell's median, 9.7 s, less a rust cell's mean, 3.0 s (shards).
    weight(Client, "ts-sdk", 6_700),
    // No figure of its own: the same SDK in a page, so as ts-sdk's.
    weight(Client, "browser", 6_700),
    // Restart → first good prompt, 5.3–6.4 s, less mock's 0.15 s.
    weight(Agent, "opencode", 5_700),
    // Restart → first good prompt, 2.0–6.8 s, less mock's 0.15 s.
    weight(Agent, "claude", 4_300),
    // Restart → first good prompt, 0.3–0.9 s, less mock's 0.15 s.
    weight(Agent, "codex", 450),
];

/// A target the table lacks (a deployment's own): a rust cell's mean,
/// count:1/4's 300.4 s over 100 cells.
pub(crate) const OTHER_TARGET_MS: u64 = 3_000;
/// A fault target: its hold, plus what an agent cell takes around it.
const FAULT_TARGET_BASE_MS: u64 = 700;
/// A real agent the table lacks: claude's.
const OTHER_REAL_AGENT_MS: u64 = 4_300;

fn table(coordinate: Coordinate, value: &str) -> Option<u64> {
    WEIGHTS
        .iter()
        .find(|w| w.coordinate == coordinate && w.value == value)
        .map(|w| w.ms)
}

/// A cell's built-in estimate, in milliseconds.
pub(crate) fn estimate_ms(point: &CellPoint) -> u64 {
    let target = table(Target, point.target.name())
        .or_else(|| {
            point
                .target
                .builtin()
                .and_then(crate::targets::BuiltinTarget::fault)
                .map(|f| crate::clock::millis(f.hold) + FAULT_TARGET_BASE_MS)
        })
        .unwrap_or(OTHER_TARGET_MS);
    let agent = table(Agent, &point.agent).unwrap_or(match point.real_agent {
        true => OTHER_REAL_AGENT_MS,
        false => 0,
    });
    target
        + table(Scenario, &point.scenario).unwrap_or(0)
        + table(Client, point.client.name()).unwrap_or(0)
        + agent
}

/// Each cell's duration in a previous run, by its point.
#[derive(Debug, Clone, Default)]
pub(crate) struct Timings {
    by_point: HashMap<Point, u64>,
}

impl Timings {
    /// The durations of `report`'s cells (a merged report's: the whole matrix).
    pub(crate) fn from_report(report: &Report) -> Timings {
        Timings {
            by_point: report
                .cells
                .iter()
                .map(|c| (c.point.clone(), c.duration_ms))
                .collect(),
        }
    }

    /// What the cell at `named` (its point as its record names it) is
    /// expected to take: its previous duration, else its estimate.
    pub(crate) fn expected_ms(&self, point: &CellPoint, named: &Point) -> u64 {
        self.by_point
            .get(named)
            .copied()
            .unwrap_or_else(|| estimate_ms(point))
    }
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
