//! A `chaos` cell's schedule of faults, as `report.json` records it:
//! Jepsen's combined nemesis, for one cell. The schedule is drawn from the
//! run's seed and the cell (never from the attempt, so every repeat runs
//! the same one), and `rerun` draws it again from the recorded seed and the
//! user's own settings to check it is the one that ran. This crate holds
//! it as data only; the drawing and the running are the targets layer's.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The faults of one cell, in the order they start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// The seed it was drawn from: the run's, mixed with the cell's point.
    pub seed: u64,
    /// Every fault starts and heals within this many milliseconds of the
    /// cell's restart step.
    pub window_ms: u64,
    pub faults: Vec<ScheduledFault>,
}

/// One fault of a schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledFault {
    /// When it starts, from the cell's restart step.
    pub at_ms: u64,
    /// How long it lasts (0 for a restart: it is over once the component
    /// is back).
    pub hold_ms: u64,
    pub fault: FaultKind,
    /// What it acts on: a component (`agent`, `gateway`, `rivet`,
    /// `rivet-engine`, `store`) for a restart or a pause, a hop (`gateway`,
    /// `agent`, `persist`) for the network's faults.
    pub on: String,
}

/// The kinds of fault a schedule draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The component stopped and started again (its restart target's action).
    Restart,
    /// The component's process group stopped (SIGSTOP) and continued.
    Pause,
    /// The hop's `partition` toxic.
    Partition,
    /// The hop's `reset_peer` toxic (downstream, at once).
    Reset,
    /// The hop's `latency` toxic (downstream, 1 s a chunk).
    Latency,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Restart => "restart",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::Reset => "reset",
            FaultKind::Latency => "latency",
        }
    }

    /// Whether it acts on a hop (else on a component's process).
    pub fn on_hop(self) -> bool {
        matches!(
            self,
            FaultKind::Partition | FaultKind::Reset | FaultKind::Latency
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ScheduledFault {
    /// When it ends, from the cell's restart step.
    pub fn end_ms(&self) -> u64 {
        self.at_ms + self.hold_ms
    }

    /// `at 1.2 s: pause of gateway for 2 s`; `on` as written (a report
    /// read back prints it through the sanitiser).
    pub fn describe(&self) -> String {
        let what = match self.fault.on_hop() {
            true => format!("{} on the {} hop", self.fault, self.on),
            false => format!("{} of {}", self.fault, self.on),
        };
        match self.hold_ms {
            0 => format!("at {}: {what}", seconds(self.at_ms)),
            hold => format!("at {}: {what} for {}", seconds(self.at_ms), seconds(hold)),
        }
    }
}

impl Schedule {
    /// One line: `seed 42, 3 faults in 8 s: at 0.4 s: …; at 2.1 s: …`.
    pub fn describe(&self) -> String {
        let faults: Vec<String> = self.faults.iter().map(ScheduledFault::describe).collect();
        format!(
            "seed {}, {} fault{} in {}: {}",
            self.seed,
            self.faults.len(),
            if self.faults.len() == 1 { "" } else { "s" },
            seconds(self.window_ms),
            faults.join("; ")
        )
    }
}

/// `1.2 s`, `2 s`.
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_reads_as_a_line_and_round_trips_as_json() {
        let schedule = Schedule {
            seed: 7,
            window_ms: 8000,
            faults: vec![
                ScheduledFault {
                    at_ms: 400,
                    hold_ms: 2000,
                    fault: FaultKind::Pause,
                    on: "gateway".into(),
                },
                ScheduledFault {
                    at_ms: 2100,
                    hold_ms: 0,
                    fault: FaultKind::Restart,
                    on: "agent".into(),
                },
                ScheduledFault {
                    at_ms: 3000,
                    hold_ms: 1500,
                    fault: FaultKind::Partition,
                    on: "persist".into(),
                },
            ],
        };
        assert_eq!(
            schedule.describe(),
            "seed 7, 3 faults in 8 s: at 0.4 s: pause of gateway for 2 s; at 2.1 s: restart of agent; at 3 s: partition on the persist hop for 1.5 s"
        );
        let json = serde_json::to_value(&schedule).unwrap();
        assert_eq!(json["faults"][0]["atMs"], 400);
        assert_eq!(json["faults"][2]["fault"], "partition");
        let back: Schedule = serde_json::from_value(json).unwrap();
        assert_eq!(back, schedule);
    }
}
