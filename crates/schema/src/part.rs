//! A part of continuity's own that a cell runs on ([`HarnessPart`]): what
//! a failure's signature names as its `component` when continuity's own
//! part failed under the cell, never sandbox-agent.

/// A part of continuity's own that a cell runs on, and that can fail
/// under it without sandbox-agent being at fault.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum HarnessPart {
    /// The session store's Postgres server.
    Postgres,
    /// The headless Chromium holding the browser client's page.
    Chromium,
    /// The Rivet app: the RivetKit runner and the Rivet Engine, as the
    /// hosted SDK's host or as the session store.
    RivetApp,
    /// The nginx gateway of the local stack.
    Nginx,
    /// The fault proxy on a hop.
    FaultProxy,
}

impl HarnessPart {
    /// How a message names it: `chromium (the browser client's page)`.
    pub fn describe(self) -> &'static str {
        match self {
            HarnessPart::Postgres => "postgres (the session store)",
            HarnessPart::Chromium => "chromium (the browser client's page)",
            HarnessPart::RivetApp => "the Rivet app (RivetKit runner and Engine)",
            HarnessPart::Nginx => "nginx (the gateway)",
            HarnessPart::FaultProxy => "the fault proxy",
        }
    }
}
