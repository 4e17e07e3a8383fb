//! Details of the terminal steps: attach, send, expect and reattach with
//! the old socket's end and the scrollback the new one replayed.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TerminalAttachDetail {
    pub process_id: String,
    pub ready: bool,
}

/// `terminal_send`: the line's bytes with its newline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TerminalSendDetail {
    pub bytes: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TerminalExpectDetail {
    pub expected: String,
    pub bytes_seen: usize,
}

/// `terminal_reattach`: the old socket (`open` or `closed`, with its close
/// frame; `gone` when the SDK's host restarted and took it along), then
/// what the new socket replayed (whether it kept the first line sent is
/// unknown when the host forgot what was sent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TerminalReattachDetail {
    pub old_socket: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_close_code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_close_clean: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_close_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrollback_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrollback_kept: Option<bool>,
    /// What ended the watch for a replay: `firstLine` (the first line
    /// sent came back), `pong` (the server answered a ping sent after
    /// `ready`: what it wrote on attach had all arrived), `closed`, or
    /// `bound` (neither within the watch's bound; a later replay is not
    /// ruled out). Absent where the client does not say (the SDK's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrollback_watch_ended: Option<String>,
}
