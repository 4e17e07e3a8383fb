//! Details of the turn steps: a turn started, awaited, and its chunks
//! against what the agent sent.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TurnStartDetail {
    pub turn: String,
    pub session_id: String,
    pub turn_tag: String,
}

/// What the event stream did during a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StreamDetail {
    pub streams_opened: u32,
    pub streams_resumed: u32,
    /// Written when a stream resumed, `null` when it resumed without an id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<Option<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stream_ends: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport_closed_by: Option<String>,
}

/// `await_turn`: how the turn ended (`completed`, `failed`, `lost`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AwaitTurnDetail {
    #[serde(flatten)]
    pub stream: StreamDetail,
    pub turn_ms: u64,
    /// A failed turn's signature message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// A lost turn: what the transport saw, and whether cancelling ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<bool>,
    pub turn_outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `stream`, `resumed stream`, `post` or `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_via: Option<String>,
}

/// One turn's chunks in the store; `chunksSent` is `null` without the
/// agent's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ChunkDetail {
    pub chunks_sent: Option<usize>,
    pub chunks_stored: usize,
    pub chunks_duplicated: usize,
    pub chunks_missing: usize,
    pub chunks_out_of_order: usize,
}
