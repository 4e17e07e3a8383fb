//! Details of the restart steps: a restart, and one timed into a turn.

use serde::{Deserialize, Serialize};

/// `restart`: what the target's restart did and how long it took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RestartDetail {
    /// Clients the `client` target retired and connected again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients_renewed: Option<usize>,
    pub action: String,
    pub restart_ms: u64,
    /// `null` when the restart failed or the target has no probe.
    pub ready_ms: Option<u64>,
}

/// `restart_during_turn`'s addition to a failed restart's detail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RestartAfter {
    pub after_ms: u64,
}

/// `restart_during_turn`: the restart, when it was asked for and how far
/// into the turn it began (`null` when no turn had started).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TurnRestartDetail {
    #[serde(flatten)]
    pub restart: RestartDetail,
    pub after_ms: u64,
    pub started_into_turn_ms: Option<u64>,
}
