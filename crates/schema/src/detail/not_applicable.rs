//! The detail of a phase whose step the cell's client cannot take.

use serde::{Deserialize, Serialize};

/// A `not_applicable` phase's detail: why (`notApplicable`: the client and
/// the API it lacks) and the missing call in a few words (`missingCall`,
/// absent in reports written before it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotApplicableDetail {
    pub not_applicable: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_call: Option<String>,
}
