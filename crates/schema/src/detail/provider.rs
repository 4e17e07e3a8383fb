//! The SDK's provider path: `start_sandbox`, `reattach_sandbox` and
//! `destroy_sandbox` (the SDK's `SandboxAgent.start` with the stack's own
//! `SandboxProvider`): the sandbox, the reconnect route's status, and every
//! call the SDK made of the provider with what its back end answered.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One provider call as the phase records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProviderCallDetail {
    /// `create`, `reconnect`, `getUrl`, `ensureServer`, `destroy`.
    pub call: String,
    /// `start` (inside `SandboxAgent.start`), `health-wait` (the client's
    /// health wait, after three failed checks) or `client` (`destroySandbox`).
    pub caller: String,
    /// The back end's HTTP status (none: the call did not get one).
    pub status: Option<u16>,
    /// For `ensureServer`: `running` (left alone), `started` (the server
    /// was down and answers again, with its new pid) or `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// A `started` server: how it stood before (the harness saw it down)
    /// and how long it took to answer `/v1/health` again (it came back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub was_down: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_ms: Option<u64>,
}

/// A provider step's detail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SandboxDetail {
    /// The SDK's `sandboxId` (`continuity/sbx-…`): what the application persists.
    pub sandbox_id: Option<String>,
    /// `reattach_sandbox`: `connected`, `expired` or `no_sandbox`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reattach_ms: Option<u64>,
    /// What the `pwd` probe printed, when connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_stdout: Option<Value>,
    /// Why the sandbox counts as expired: the SDK's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expired_because: Option<String>,
    /// Whether an `ensureServer` the SDK called found the server down and
    /// brought it back, and which of its calls did (`start`, `health-wait`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_brought_back_by: Option<String>,
    pub provider_calls: Vec<ProviderCallDetail>,
}
