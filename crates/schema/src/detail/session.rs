//! Details of the session steps: create, prompt, rehydrate, events, resume,
//! health and the liveness probe.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CreateSessionDetail {
    pub session_id: String,
    pub agent_session_id: String,
}

/// `prompt`: the last prompt's stop reason (none when it sent no text).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PromptDetail {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    pub prompts: usize,
}

/// One prompt's stop reason, where a step writes more between prompts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StopDetail {
    pub stop_reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RehydrateDetail {
    pub stop_reason: String,
    pub rehydrated_prompts: usize,
}

/// `get_events`: how many the page held (the integrity figures follow).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EventsDetail {
    pub events_observed: usize,
}

/// `resume_session`: `same_handle` or `recreated`, with the replay's size
/// when recreated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResumeDetail {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_events: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_chars: Option<usize>,
    pub action: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HealthDetail {
    pub health: Value,
}

/// `probe`: the seed's status (`connected`, `expired`, `no_sandbox`,
/// `error`) and, when connected, what `pwd` printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProbeDetail {
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<Value>,
}

impl ProbeDetail {
    /// A failed probe: its status, no output.
    pub fn failed(status: &str) -> Self {
        ProbeDetail {
            status: status.into(),
            stdout: None,
        }
    }
}
