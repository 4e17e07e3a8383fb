//! The settings of a cell the suite runs through the library
//! (`continuity::scenario::run_cell`) rather than the binary.

use continuity::scenario::{CellSettings, CellStore};
use std::time::Duration;

/// A cell on the server at `base_url` with the `mock` agent, its session
/// labels ending in `suffix`, each phase under `timeout`; each client
/// keeps its own memory store, and there is no trace file, log, provider,
/// sandbox, header timeout, hang grace or interrupt.
pub fn cell_settings(base_url: String, suffix: &str, timeout: Duration) -> CellSettings {
    CellSettings {
        trace: continuity::trace::Trace::detached(),
        agent_sent_log: None,
        headers_timeout: None,
        hang_grace: None,
        model_calls: None,
        sandboxes: None,
        interrupt: tokio::sync::watch::channel(false).1,
        base_url,
        token: None,
        headers: vec![],
        agent: "mock".into(),
        default_timeout: timeout,
        session_suffix: suffix.into(),
        store: CellStore::PerClientMemory,
    }
}
