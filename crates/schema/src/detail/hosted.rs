//! Details only the real SDK's cells record (hosted or in a browser page):
//! the rejections no SDK caller could catch, which its host (the actor app,
//! the page) records instead of dying.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A phase's `unhandledRejections`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HostedFaults {
    pub unhandled_rejections: Vec<UnhandledRejection>,
}

/// One rejection (or uncaught exception). `kind`, `name`, `status` and
/// `problemType` are the actor app's own values, passed through as it sent
/// them (`null` when it sent none); `message` is redacted and id-masked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct UnhandledRejection {
    pub kind: Value,
    pub phase: String,
    pub name: Value,
    pub message: String,
    pub status: Value,
    pub problem_type: Value,
}
