//! A hung phase's evidence (`hang` in its `detail`): the call that never
//! settled, from when nothing was in flight that could settle it and for
//! how long, and what the wire showed last. Times are milliseconds into
//! the phase (negative: before it began).

use serde::{Deserialize, Serialize};

/// The `hang` of a hung phase's detail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HungDetail {
    pub hang: HangEvidence,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HangEvidence {
    /// The pending call (`prompt`, `createSession`).
    pub call: String,
    /// The grace the run gave (`--hang-grace-ms`).
    pub grace_ms: u64,
    /// Nothing was in flight from here…
    pub quiet_from_ms: f64,
    /// …for this long (at least the grace).
    pub quiet_ms: f64,
    /// The last exchange, stream event or store call, if any.
    pub last_wire: Option<WireSeen>,
    /// The server's last answer (a status), if any.
    pub last_answer: Option<WireSeen>,
    /// The last failure (an exchange, a stream, a store call), if any.
    pub last_failure: Option<WireSeen>,
}

/// A moment on the wire: when, and what.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireSeen {
    pub at_ms: f64,
    pub what: String,
}
