//! Fault windows in a cell's trace: when a fault target set a toxic on a
//! hop (`fault_start`), what the fault proxy itself did to connections
//! meanwhile (`fault_action`: a reset, a close, a close held back, a
//! connection its draw spared), and when it healed (`fault_end`). Beside the file, the windows are kept in memory for the
//! whole cell, so a phase that fails during or after one can name the hop
//! and the toxic, and tell a reset the proxy sent from one the server did.

use super::event::{self, ConnAction, Event};
use super::Trace;

/// One fault window of the cell, as a failure's diagnosis reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSeen {
    pub hop: String,
    /// Toxiproxy's name of the toxic (`reset_peer`, `partition`).
    pub toxic: String,
    /// Still in force.
    pub active: bool,
    /// Connections the proxy reset because of it.
    pub resets: u32,
    /// Connections the proxy closed because of it.
    pub closes: u32,
}

/// Fault windows remembered per cell; a scenario has a few restarts at most.
const MAX_WINDOWS: usize = 16;

impl Trace {
    /// A toxic is in force on `hop` from now; `describe` says it whole.
    pub fn fault_start(&self, hop: &str, toxic: &str, describe: &str, hold_ms: u64) {
        {
            let mut seen = self.observations();
            if seen.faults.len() < MAX_WINDOWS {
                seen.faults.push(FaultSeen {
                    hop: hop.into(),
                    toxic: toxic.into(),
                    active: true,
                    resets: 0,
                    closes: 0,
                });
            }
        }
        self.emit(Event::FaultStart(event::FaultStart {
            hop: hop.into(),
            toxic: toxic.into(),
            fault: describe.into(),
            hold_ms,
        }));
    }

    /// The proxy reset or closed connection `conn` because of the toxic in
    /// force on `hop`.
    pub fn fault_action(
        &self,
        hop: &str,
        toxic: &str,
        action: ConnAction,
        toward: Option<&str>,
        conn: u64,
    ) {
        {
            let mut seen = self.observations();
            if let Some(window) = seen
                .faults
                .iter_mut()
                .rev()
                .find(|w| w.hop == hop && w.toxic == toxic)
            {
                match action {
                    ConnAction::Reset => window.resets += 1,
                    ConnAction::Closed => window.closes += 1,
                    // The connection stays open: nothing the proxy cut.
                    ConnAction::CloseHeld | ConnAction::Spared => {}
                }
            }
        }
        self.emit(Event::FaultAction(event::FaultAction {
            hop: hop.into(),
            toxic: toxic.into(),
            action,
            conn,
            toward: toward.map(str::to_string),
        }));
    }

    /// The toxic on `hop` is removed; `stopped` says why the proxy could
    /// no longer serve, when it could not.
    pub fn fault_end(&self, hop: &str, toxic: &str, ok: bool, stopped: Option<&str>) {
        let (resets, closes) = {
            let mut seen = self.observations();
            match seen
                .faults
                .iter_mut()
                .rev()
                .find(|w| w.hop == hop && w.toxic == toxic && w.active)
            {
                Some(window) => {
                    window.active = false;
                    (window.resets, window.closes)
                }
                None => (0, 0),
            }
        };
        self.emit(Event::FaultEnd(event::FaultEnd {
            hop: hop.into(),
            toxic: toxic.into(),
            ok,
            resets,
            closes,
            detail: stopped.map(str::to_string),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_what_the_proxy_did_until_it_heals() {
        let trace = Trace::detached();
        trace.fault_start("gateway", "reset_peer", "reset_peer downstream", 1000);
        trace.fault_action(
            "gateway",
            "reset_peer",
            ConnAction::Reset,
            Some("downstream"),
            3,
        );
        trace.fault_action(
            "gateway",
            "reset_peer",
            ConnAction::Reset,
            Some("downstream"),
            4,
        );
        assert_eq!(
            trace.snapshot().faults,
            vec![FaultSeen {
                hop: "gateway".into(),
                toxic: "reset_peer".into(),
                active: true,
                resets: 2,
                closes: 0
            }]
        );
        trace.fault_end("gateway", "reset_peer", true, None);
        // Kept after the heal, and across phases.
        trace.phase_start("next", "prompt");
        assert!(!trace.snapshot().faults[0].active);
        assert_eq!(trace.snapshot().faults[0].resets, 2);
    }
}
