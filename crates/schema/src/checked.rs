//! What the checker says of a cell: each invariant valid, broken or not
//! checkable from the history it had, and each violation with its
//! evidence (the invariant, what broke, the hop where it first shows, the
//! ids, session and event index, and when the offending event arrived).
//! These are the types `report.json` carries under a cell's signature.
//!
//! Over 400 lines on purpose: the checker's vocabulary in `report.json`
//! (invariants, hops, breaches, violations, statuses, allowances) is one
//! part of the schema, each type a few lines with its wire name.

use serde::{Deserialize, Serialize};

/// One invariant every cell's history must hold, whatever its scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    /// On each server id's event stream, across every reconnect: each SSE
    /// id once, increasing, and a resume from `Last-Event-ID: n` goes on at n+1.
    Stream,
    /// Each `session/update` the client received is handed to the
    /// application once, in the order it came.
    Application,
    /// Each session's stored events are the events delivered: once, in
    /// order, with contiguous indexes, none never delivered.
    Store,
    /// No JSON-RPC request answered twice to the application, no answer
    /// to a request never made.
    Requests,
    /// What the agent sent (its record, else what the server sent on the
    /// agent hop) against what reached the client: nothing lost,
    /// duplicated, reordered or invented on the way.
    GroundTruth,
}

impl Invariant {
    pub const ALL: [Invariant; 5] = [
        Invariant::Stream,
        Invariant::Application,
        Invariant::Store,
        Invariant::Requests,
        Invariant::GroundTruth,
    ];

    /// As `report.json` and expectations spell it: `stream`, `ground_truth`.
    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::Stream => "stream",
            Invariant::Application => "application",
            Invariant::Store => "store",
            Invariant::Requests => "requests",
            Invariant::GroundTruth => "ground_truth",
        }
    }
}

impl std::fmt::Display for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Invariant {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Invariant::ALL
            .into_iter()
            .find(|i| i.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "invariant",
                name: s.to_string(),
                known: Invariant::ALL.iter().map(|i| i.as_str()).collect(),
            })
    }
}

/// A name that is no invariant or allowance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
    pub known: Vec<&'static str>,
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, name) = (self.what, &self.name);
        write!(
            f,
            "unknown {what} {name:?}: one of {}",
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// Where an event is seen, in the order it travels: what the server sent
/// (the fault proxy on the agent hop), what left the gateway (the proxy on
/// the gateway hop), what the client read, what it handed the
/// application, what the store holds. A violation names the first of
/// them where it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hop {
    /// The scripted agent's own record of what it wrote.
    Agent,
    Server,
    Gateway,
    Client,
    Application,
    Store,
}

impl Hop {
    pub fn as_str(self) -> &'static str {
        match self {
            Hop::Agent => "agent",
            Hop::Server => "server",
            Hop::Gateway => "gateway",
            Hop::Client => "client",
            Hop::Application => "application",
            Hop::Store => "store",
        }
    }

    /// Where a violation first seen here was made, in words.
    pub fn words(self) -> &'static str {
        match self {
            Hop::Agent => "by the agent",
            Hop::Server => "by the server (on the agent hop)",
            Hop::Gateway => "between the server and the client (the gateway hop)",
            Hop::Client => "as the client read it",
            Hop::Application => "as the client handed it to the application",
            Hop::Store => "in the store",
        }
    }
}

/// What broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Breach {
    /// The same event (SSE id, or the same envelope) more than once.
    Duplicate,
    /// Ids skipped: events missing from a stream.
    Gap,
    /// Ids at or below the `Last-Event-ID` a resume asked to go on from.
    Replay,
    /// Events in another order than they were sent.
    Reordered,
    /// An event sent and never seen here.
    Lost,
    /// An event seen here and never sent.
    Invented,
    /// A JSON-RPC request answered more than once.
    AnsweredTwice,
    /// An answer to a request never made.
    Unrequested,
    /// Stored events whose indexes skip or repeat.
    Index,
}

impl Breach {
    pub fn as_str(self) -> &'static str {
        match self {
            Breach::Duplicate => "duplicate",
            Breach::Gap => "gap",
            Breach::Replay => "replay",
            Breach::Reordered => "reordered",
            Breach::Lost => "lost",
            Breach::Invented => "invented",
            Breach::AnsweredTwice => "answered_twice",
            Breach::Unrequested => "unrequested",
            Breach::Index => "index",
        }
    }
}

/// One broken invariant, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    pub invariant: Invariant,
    pub breach: Breach,
    /// The first place it shows.
    pub hop: Hop,
    /// The last place the event was still right, when one was observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Hop>,
    /// The ACP server id whose stream carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The session: the agent's, or the application's for the store's indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The SSE ids, JSON-RPC ids or digests involved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// The stored event's index, for the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_index: Option<u64>,
    /// When the offending event arrived (ms since the cell started).
    pub t: f64,
    /// The phase during which it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// What happened, in one sentence.
    pub detail: String,
}

// Its time is never NaN (a trace's `t` is a number it read), so equality is total.
impl Eq for Violation {}

impl Violation {
    /// The failure in words that stay the same across runs (no ids, no
    /// times): `stream: an event delivered twice, between the server and
    /// the client (the gateway hop)`.
    pub fn message(&self) -> String {
        let what = match (self.invariant, self.breach) {
            (Invariant::Stream, Breach::Duplicate) => "an SSE event delivered twice",
            (Invariant::Stream, Breach::Gap) => "SSE ids skipped: events never delivered",
            (Invariant::Stream, Breach::Replay) => {
                "a resume replayed events at or below its Last-Event-ID"
            }
            (Invariant::Stream, Breach::Reordered) => "SSE events out of order",
            (Invariant::Requests, Breach::AnsweredTwice) => {
                "a JSON-RPC request answered twice to the application"
            }
            (Invariant::Requests, Breach::Unrequested) => "an answer to a request never made",
            (Invariant::Store, Breach::Index) => "stored event indexes skip or repeat",
            (_, Breach::Duplicate) => "a session update duplicated",
            (_, Breach::Lost) => "a session update lost",
            (_, Breach::Reordered) => "session updates reordered",
            (_, Breach::Invented) => "a session update that was never sent",
            (_, other) => other.as_str(),
        };
        format!("{}: {what}, {}", self.invariant, self.hop.words())
    }

    /// `stream duplicate at gateway`: stable across runs (no ids, no times).
    pub fn short(&self) -> String {
        format!(
            "{} {} at {}",
            self.invariant,
            self.breach.as_str(),
            self.hop.as_str()
        )
    }
}

/// How an invariant fared on one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Valid,
    Broken,
    /// The history lacks what it takes (a trace from an older continuity,
    /// `--trace off`, a client that records no application events).
    Unknown,
}

/// One invariant's status, and why when it could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    pub invariant: Invariant,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What a scenario whose point is a loss allows (its `allow` list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Allowance {
    /// A turn cut by the restart may miss its tail: events lost from some
    /// point of a turn to its end. Never a duplicate, never a hole.
    LostTail,
}

impl Allowance {
    pub const ALL: [Allowance; 1] = [Allowance::LostTail];

    pub fn as_str(self) -> &'static str {
        match self {
            Allowance::LostTail => "lost_tail",
        }
    }
}

impl std::str::FromStr for Allowance {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Allowance::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "allowance",
                name: s.to_string(),
                known: Allowance::ALL.iter().map(|a| a.as_str()).collect(),
            })
    }
}

/// The checker's verdict on one cell: every invariant's status, and the
/// violations, first the one that shows earliest on the path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub checked: Vec<Checked>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// What the scenario allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<Allowance>,
    /// The losses let pass, by why (a bare count, as this field was
    /// written while the checker was being built, is kept as `untold`).
    #[serde(
        default,
        skip_serializing_if = "Excused::is_none",
        deserialize_with = "excused_or_count"
    )]
    pub excused: Excused,
}

/// Losses that are no violation, counted by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Excused {
    /// A cut turn's tail, where the scenario allows it (`lost_tail`).
    pub lost_tail: usize,
    /// What the client never read on: its stream was cut and not
    /// resumed, closed, or the cell ended first.
    pub unread: usize,
    /// What the SDK did while its host restarted, whose records went with it.
    pub host_restart: usize,
    /// An event whose write the store refused, the client seeing the
    /// refusal (a failed write need not be there: no silent loss).
    pub refused: usize,
    /// A bare count read from a report written before the losses were
    /// told apart by why: kept, so a merge or a rewrite loses none.
    #[serde(skip_serializing_if = "is_zero")]
    pub untold: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn excused_or_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Excused, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Counted(Excused),
        Count(usize),
    }
    Ok(match Either::deserialize(d)? {
        Either::Counted(excused) => excused,
        Either::Count(untold) => Excused {
            untold,
            ..Excused::default()
        },
    })
}

impl Excused {
    pub fn is_none(&self) -> bool {
        self.total() == 0
    }

    pub fn total(&self) -> usize {
        self.lost_tail + self.unread + self.host_restart + self.refused + self.untold
    }

    pub fn add(&mut self, other: Excused) {
        self.lost_tail += other.lost_tail;
        self.unread += other.unread;
        self.host_restart += other.host_restart;
        self.refused += other.refused;
        self.untold += other.untold;
    }
}

impl Verdict {
    /// The violation that decides the cell: the one first on the path.
    pub fn first(&self) -> Option<&Violation> {
        self.violations.first()
    }

    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }

    pub fn status(&self, invariant: Invariant) -> Option<Status> {
        self.checked
            .iter()
            .find(|c| c.invariant == invariant)
            .map(|c| c.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excused_is_told_by_why_and_an_older_bare_count_is_kept() {
        let by_why: Verdict =
            serde_json::from_str(r#"{"checked":[],"excused":{"lostTail":1,"unread":2}}"#).unwrap();
        assert_eq!(
            (
                by_why.excused.lost_tail,
                by_why.excused.unread,
                by_why.excused.total()
            ),
            (1, 2, 3)
        );
        let older: Verdict = serde_json::from_str(r#"{"checked":[],"excused":5}"#).unwrap();
        assert_eq!(older.excused.untold, 5);
        // Written again, the count survives: a merge loses nothing.
        let again: Verdict = serde_json::from_str(&serde_json::to_string(&older).unwrap()).unwrap();
        assert_eq!(again.excused, older.excused);
        let none: Verdict = serde_json::from_str(r#"{"checked":[]}"#).unwrap();
        assert!(none.excused.is_none());
        assert!(!serde_json::to_string(&none).unwrap().contains("excused"));
    }
}
