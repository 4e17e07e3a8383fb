//! Details of the sandbox steps: files written and read back, processes
//! spawned and checked.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WriteFileDetail {
    pub path: String,
    pub bytes: usize,
}

/// `read_file`: the path, then (when it read) whether the bytes are the
/// ones written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ReadFileDetail {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_bytes: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SpawnDetail {
    pub process_id: String,
    pub status: String,
    pub pid: Option<i64>,
}

/// `process_status`: each field once the check got that far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProcessStatusDetail {
    pub process_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listed: Option<bool>,
    /// When the server forgot the process: the cell's marked OS processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphan_pids: Option<Vec<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `null` while the process runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<Option<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_entries: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs_retained: Option<bool>,
}

/// The sandbox teardown's cleanup phase: what it removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TeardownDetail {
    pub processes: usize,
    pub files: usize,
    pub orphans_killed: usize,
}
