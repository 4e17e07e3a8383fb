//! The replay check's detail (`replay_check`): whether the client restored
//! the session and, when it did, the replay it sent against its caps.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ReplayDetail {
    pub restored: bool,
    pub history_events: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_events: Option<usize>,
    /// In JavaScript string length (UTF-16 units), as the SDK caps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_chars: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_truncated: Option<bool>,
    /// Whether the history held more events than the replay may carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_cut_by_events: Option<bool>,
}
