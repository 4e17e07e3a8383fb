//! Details of the integrity check: the session's history in the store
//! against what its clients recorded.

use serde::{Deserialize, Serialize};

/// How the missing writes were lost: `intact`, `failedLoudly` (the store
/// raised), `lostSilently` (the store accepted them and lost them),
/// `neverWritten` (the client dropped them before any write) or `both`
/// (more than one of these).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WriteLoss {
    pub writes: String,
    pub writes_failed_loudly: usize,
    pub writes_lost_silently: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct IntegrityDetail {
    /// Hosted cells: chunks the agent sent that never reached the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_never_written: Option<usize>,
    #[serde(flatten)]
    pub writes: WriteLoss,
    pub events_total: usize,
    pub events_recorded: usize,
    pub events_lost: usize,
    pub events_duplicated: usize,
    pub index_gaps: usize,
}

impl IntegrityDetail {
    pub fn is_clean(&self) -> bool {
        self.events_lost == 0 && self.events_duplicated == 0 && self.index_gaps == 0
    }
}
