//! Typed phase details: one struct per kind of `detail` a step records,
//! camelCase on the wire. A phase's `detail` in `report.json` stays one JSON
//! object; these types are written into it at the edge ([`Detail::write_to`])
//! and read back from it ([`read`]), so the schema does not change.
//!
//! Field order is the wire order (`serde_json` preserves it), and a field
//! the old report always wrote, `null` included, is never skipped.

mod hang;
mod hosted;
mod integrity;
mod not_applicable;
mod provider;
mod recover;
mod replay;
mod restart;
mod sandbox;
mod session;
mod terminal;
mod turn;

pub use hang::{HangEvidence, HungDetail, WireSeen};
pub use hosted::{HostedFaults, UnhandledRejection};
pub use integrity::{IntegrityDetail, WriteLoss};
pub use not_applicable::NotApplicableDetail;
pub use provider::{ProviderCallDetail, SandboxDetail};
pub use recover::RecoverDetail;
pub use replay::ReplayDetail;
pub use restart::{RestartAfter, RestartDetail, TurnRestartDetail};
pub use sandbox::{
    ProcessStatusDetail, ReadFileDetail, SpawnDetail, TeardownDetail, WriteFileDetail,
};
pub use session::{
    CreateSessionDetail, EventsDetail, HealthDetail, ProbeDetail, PromptDetail, RehydrateDetail,
    ResumeDetail, StopDetail,
};
pub use terminal::{
    TerminalAttachDetail, TerminalExpectDetail, TerminalReattachDetail, TerminalSendDetail,
};
pub use turn::{AwaitTurnDetail, ChunkDetail, RecoverTurnDetail, StreamDetail, TurnStartDetail};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// A typed detail, serialised into a phase's `detail` object.
pub trait Detail: Serialize {
    /// The detail as the JSON object a phase records.
    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // Every detail is a struct of plain fields: this cannot fail.
            other => unreachable!("a phase detail serialised to {other:?}"),
        }
    }

    /// Adds the detail's fields to `map`: a key already there keeps its
    /// place and takes the new value, as a second insert did.
    fn write_to(&self, map: &mut Map<String, Value>) {
        map.extend(self.to_map());
    }
}

impl<T: Serialize> Detail for T {}

/// Reads a typed detail back from a phase's `detail` object; `None` when the
/// object is not that kind of detail (a field of another type).
pub fn read<T: DeserializeOwned>(map: &Map<String, Value>) -> Option<T> {
    serde_json::from_value(Value::Object(map.clone())).ok()
}

#[cfg(test)]
mod tests;
