//! The recovering client's detail (`recover_session`): each field appears
//! once the recovery got that far, in the order it got there.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RecoverDetail {
    /// Whether the old handle's prompt met HTTP 400 (the server lost the id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_id_lost: Option<bool>,
    /// Whether it met HTTP 502 `stream_error` instead: the server id is
    /// known, its agent process is gone (the server cannot write to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_lost: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detect_ms: Option<u64>,
    /// `session/load` or `session/resume`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_user_chunks: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_agent_chunks: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_chunks: Option<u64>,
    /// The reply's first 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_to_first_good_prompt_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_calls: Option<usize>,
    /// `null` without a fake provider to ask.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earlier_turns_in_context: Option<Option<bool>>,
}
