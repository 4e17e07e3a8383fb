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

/// `recover_turn`: whether the agent finished the turn, and where a client
/// could still find its result after the await: the persisted history
/// (`getEvents`) and a stream re-attached with the `Last-Event-ID` the
/// client last had.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RecoverTurnDetail {
    /// The agent's own record (the scripted agent's sent record): the stop
    /// reason it answered with, `false` when it never did, `null` without
    /// a record (a deployment's agent).
    pub agent_finished: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_stop_reason: Option<String>,
    /// The client's store holds the turn's last chunk (the end of its answer).
    pub history_has_end: bool,
    /// … and the prompt's answer (its `stopReason`) after it.
    pub history_has_result: bool,
    /// The `Last-Event-ID` the re-attached stream sent (`null`: none, the
    /// whole stream).
    pub last_event_id: Option<String>,
    /// Events the re-attached stream replayed within its bound.
    pub stream_events: usize,
    /// The re-attached stream carried the turn's last chunk and its answer.
    pub stream_has_result: bool,
    /// Why the re-attach failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_error: Option<String>,
    /// Where the result can be recovered from: `history`, `stream`.
    pub recoverable_via: Vec<String>,
}
