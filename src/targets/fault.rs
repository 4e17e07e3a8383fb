//! The `fault` action: a toxic on one hop's fault proxy for a window.
//! Where a restart would stop and start a component, a fault target puts
//! the toxic in force and its phase ends at once: the window goes on under
//! the phases that follow (a prompt sent into a partition, a turn whose
//! stream is reset), and heals after `hold` or when the cell's phases are
//! over, whichever comes first. A window never outlives its target.
//! [`FaultWindow`] is a fault target's kind: its toxic, its hop's proxy
//! and the window in force (also the window a restart opens along its
//! action).

use super::{fmt_duration, ActionError};
use crate::faults::{FaultControl, Hop, Observer, ProxyAction, ProxyError, ToxicId, ToxicSpec};
use crate::trace::event::ConnAction;
use crate::trace::Trace;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// A toxic on a hop for a window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FaultAction {
    pub hop: Hop,
    pub toxic: ToxicSpec,
    /// How long the toxic stays in force (at most: the cell's phases may end first).
    pub hold: Duration,
}

impl FaultAction {
    /// `fault: reset_peer downstream (timeout 0 ms) on the gateway hop for 1 s`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "fault: {} on the {} hop for {}",
            self.toxic.describe(),
            self.hop,
            fmt_duration(self.hold)
        )
    }
}

/// A toxic on a hop, the proxy of that hop, and the window while the
/// toxic is in force: a fault target's kind, or the window along a
/// restart ([`super::Target::with_window_along`]).
#[derive(Debug)]
pub(crate) struct FaultWindow {
    fault: FaultAction,
    /// The control of its hop's proxy.
    proxy: Option<FaultControl>,
    /// The window while its toxic is in force.
    open: Option<OpenWindow>,
}

impl FaultWindow {
    pub(super) fn new(fault: FaultAction, proxy: Option<FaultControl>) -> FaultWindow {
        FaultWindow {
            fault,
            proxy,
            open: None,
        }
    }

    /// The toxic, its hop and its hold.
    pub(crate) fn fault(&self) -> &FaultAction {
        &self.fault
    }

    pub(super) fn proxy(&self) -> Option<&FaultControl> {
        self.proxy.as_ref()
    }

    pub(super) fn set_proxy(&mut self, control: FaultControl) {
        self.proxy = Some(control);
    }

    fn proxy_error(&self, error: ProxyError) -> ActionError {
        ActionError::Proxy {
            hop: self.fault.hop.clone(),
            error,
        }
    }

    fn control(&self) -> Result<&FaultControl, ActionError> {
        self.proxy.as_ref().ok_or_else(|| ActionError::NoHop {
            hop: self.fault.hop.clone(),
        })
    }

    /// Before any cell: its hop has a proxy, and the proxy serves.
    pub(super) fn check(&self) -> Result<(), ActionError> {
        self.control()?
            .check()
            .map_err(|error| self.proxy_error(error))
    }

    /// Puts the toxic in force, recorded into `trace`. One window at a
    /// time: a second restart in the cell heals the first.
    pub(super) fn open(&mut self, trace: &Trace) -> Result<(), ActionError> {
        if let Some(window) = self.open.take() {
            window.close().map_err(|error| self.proxy_error(error))?;
        }
        let window = OpenWindow::open(&self.fault, self.control()?, trace)
            .map_err(|error| self.proxy_error(error))?;
        self.open = Some(window);
        Ok(())
    }

    /// Whether the toxic of the open window acted on a connection within `within`.
    pub(super) async fn acted_within(&self, within: Duration) -> bool {
        match &self.open {
            Some(window) => window.acted_within(within).await,
            None => false,
        }
    }

    /// A restart whose toxic along never acted within `within`.
    pub(super) fn never_acted(&self, within: Duration) -> ActionError {
        ActionError::ToxicNeverActed {
            hop: self.fault.hop.clone(),
            toxic: self.fault.toxic.describe(),
            within: fmt_duration(within),
        }
    }

    /// The window in force, taken to be healed.
    pub(super) fn take_open(&mut self) -> Option<OpenWindow> {
        self.open.take()
    }

    /// The window heals, whatever its proxy says.
    pub(super) fn shutdown(&mut self) {
        if let Some(window) = self.open.take() {
            let _ = window.close();
        }
    }

    pub(crate) fn describe(&self) -> String {
        self.fault.describe()
    }
}

/// A window in force; it heals once, by its timer or by whoever closes it.
struct Window {
    control: FaultControl,
    id: ToxicId,
    trace: Trace,
    toxic: &'static str,
    healed: AtomicBool,
    /// Why the proxy could not heal (it had stopped serving).
    failure: Mutex<Option<ProxyError>>,
}

impl Window {
    fn heal(&self) {
        if self.healed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.control.remove(self.id);
        let stopped = self.control.check().err();
        let reason = stopped.as_ref().map(ToString::to_string);
        self.trace.fault_end(
            self.control.hop().name(),
            self.toxic,
            stopped.is_none(),
            reason.as_deref(),
        );
        if let Some(error) = stopped {
            *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
        }
    }

    fn failure(&self) -> Option<ProxyError> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The open window of a fault target, healed on drop.
pub(super) struct OpenWindow {
    window: Arc<Window>,
    timer: JoinHandle<()>,
    /// How many times the toxic acted on a connection (reset, closed, held a close).
    acted: Arc<AtomicU64>,
}

impl OpenWindow {
    /// Puts the action's toxic in force on `control`'s proxy, recording
    /// the window and what the proxy does in it into `trace`; an error
    /// says why the proxy could not.
    pub(super) fn open(
        action: &FaultAction,
        control: &FaultControl,
        trace: &Trace,
    ) -> Result<OpenWindow, ProxyError> {
        control.check()?;
        let toxic = action.toxic.name();
        let describe = action.toxic.describe();
        trace.fault_start(
            control.hop().name(),
            toxic,
            &describe,
            action.hold.as_millis() as u64,
        );
        let seen = trace.clone();
        let hop = control.hop().name().to_string();
        let acted = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&acted);
        let observer: Observer = Arc::new(move |_, conn, what| {
            if what != ProxyAction::Spared {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            match what {
                ProxyAction::Reset { toward } => {
                    seen.fault_action(&hop, toxic, ConnAction::Reset, Some(toward.as_str()), conn)
                }
                ProxyAction::Closed => {
                    seen.fault_action(&hop, toxic, ConnAction::Closed, None, conn)
                }
                ProxyAction::CloseHeld => {
                    seen.fault_action(&hop, toxic, ConnAction::CloseHeld, None, conn)
                }
                ProxyAction::Spared => {
                    seen.fault_action(&hop, toxic, ConnAction::Spared, None, conn)
                }
            }
        });
        let id = match control.set(action.toxic.clone(), Some(observer)) {
            Ok(id) => id,
            Err(e) => {
                trace.fault_end(control.hop().name(), toxic, false, Some(&e.to_string()));
                return Err(e);
            }
        };
        let window = Arc::new(Window {
            control: control.clone(),
            id,
            trace: trace.clone(),
            toxic,
            healed: AtomicBool::new(false),
            failure: Mutex::new(None),
        });
        let timed = Arc::clone(&window);
        let hold = action.hold;
        let timer = tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            timed.heal();
        });
        Ok(OpenWindow {
            window,
            timer,
            acted,
        })
    }

    /// Waits until the toxic has acted on a connection, for at most
    /// `within`; whether it did.
    pub(super) async fn acted_within(&self, within: Duration) -> bool {
        let until = tokio::time::Instant::now() + within;
        loop {
            if self.acted.load(Ordering::SeqCst) > 0 {
                return true;
            }
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Heals now if the timer has not; says why the proxy could not
    /// (which makes the cell a harness error, not the server's failure).
    pub(super) fn close(self) -> Result<(), ProxyError> {
        self.timer.abort();
        self.window.heal();
        match self.window.failure() {
            None => Ok(()),
            Some(error) => Err(error),
        }
    }
}

impl std::fmt::Debug for OpenWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "OpenWindow({} on the {} hop)",
            self.window.toxic,
            self.window.control.hop()
        )
    }
}

impl Drop for OpenWindow {
    fn drop(&mut self) {
        self.timer.abort();
        self.window.heal();
    }
}
