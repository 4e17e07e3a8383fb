//! Timeout targets: a timeout on the path the cell's requests take, where
//! a restart target restarts a component and a fault target puts a toxic
//! on a hop for a window. A timeout is part of the path, so it is in force
//! for the whole cell: its window opens when the cell begins and closes
//! when its phases end (the cleanup runs without it), and a `restart`
//! step of the cell restarts nothing. Three kinds:
//!
//! - the gateway's read timeout: nginx's `proxy_read_timeout` on a
//!   gateway of its own, the cell's base URL being that gateway's;
//! - an idle cut on a hop: the hop's fault proxy closes a connection
//!   silent both ways for the limit (`idle_cut`, a load balancer's idle
//!   timeout);
//! - the client's header timeout: the client gives up on a response
//!   whose headers have not come within the limit (the hosted SDK's
//!   `fetch` through an undici dispatcher with `headersTimeout`, as a user
//!   would lower it; continuity's client bounds its POST the same way).
//!
//! The window is written into the trace as a fault window (`fault_start`
//! … `fault_end`) on its hop, named after the timeout, so the timeline and
//! `report.html` show it and a failure inside it names it.
//! [`TimeoutWindow`] is a timeout target's kind: the timeout, what it
//! needs on the path (its hop's proxy, its gateway) and its open window.

use super::fault::{FaultAction, OpenWindow};
use super::fmt_duration;
use crate::faults::{FaultControl, Hop, LocalHop, ProxyError, Toxic, ToxicSpec};
use crate::trace::Trace;
use std::time::Duration;

/// One timeout on the path, and its limit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PathTimeout {
    /// nginx's `proxy_read_timeout` on a gateway of its own.
    GatewayRead { limit: Duration },
    /// The fault proxy of `hop` closes a connection silent for `limit`.
    IdleCut { hop: Hop, limit: Duration },
    /// The client's wait for a response's headers.
    ClientHeaders { limit: Duration },
}

/// The longest a window may be held: the fault proxy's longest duration.
const WHOLE_CELL: Duration = Duration::from_secs(600);

impl PathTimeout {
    pub(crate) fn limit(&self) -> Duration {
        match self {
            PathTimeout::GatewayRead { limit }
            | PathTimeout::IdleCut { limit, .. }
            | PathTimeout::ClientHeaders { limit } => *limit,
        }
    }

    /// One line for `continuity list` and the restart's detail.
    pub(crate) fn describe(&self) -> String {
        let limit = fmt_duration(self.limit());
        let what = match self {
            PathTimeout::GatewayRead { .. } => {
                format!("nginx's proxy_read_timeout {limit} on a gateway of its own")
            }
            PathTimeout::IdleCut { hop, .. } => format!(
                "the {hop} hop's fault proxy closes a connection silent both ways for {limit} (idle_cut)"
            ),
            PathTimeout::ClientHeaders { .. } => format!(
                "the client gives up on a response's headers after {limit} (the hosted SDK's fetch through an undici Agent with headersTimeout; continuity's client alike)"
            ),
        };
        format!("timeout: {what}, in force for the whole cell")
    }

    /// Where the window sits in the trace and what it is called there.
    fn marker(&self) -> (&str, &'static str) {
        match self {
            PathTimeout::GatewayRead { .. } => (LocalHop::Gateway.name(), "proxy_read_timeout"),
            PathTimeout::IdleCut { hop, .. } => (hop.name(), "idle_cut"),
            PathTimeout::ClientHeaders { .. } => ("client", "headers_timeout"),
        }
    }

    /// The client's header timeout, for the cell's clients.
    pub(crate) fn client_headers(&self) -> Option<Duration> {
        match self {
            PathTimeout::ClientHeaders { limit } => Some(*limit),
            _ => None,
        }
    }

    /// The idle cut as its toxic on its hop, held for the whole cell.
    fn fault(&self) -> Option<FaultAction> {
        let PathTimeout::IdleCut { hop, limit } = self else {
            return None;
        };
        let toxic = ToxicSpec::new(
            Toxic::IdleCut { idle: *limit },
            crate::faults::Stream::Downstream,
        );
        Some(FaultAction {
            hop: hop.clone(),
            toxic,
            hold: WHOLE_CELL,
        })
    }
}

/// A timeout target's kind: its timeout, where it is in force, and its
/// window for the running cell.
#[derive(Debug)]
pub(crate) struct TimeoutWindow {
    timeout: PathTimeout,
    /// The idle cut's hop's proxy.
    proxy: Option<FaultControl>,
    /// Where the cell's clients connect instead of the stack's base URL
    /// (the gateway of its own of `gateway-read-timeout`).
    gateway_url: Option<String>,
    /// Its window for the running cell, or why it could not open.
    open: Option<Result<OpenTimeout, ProxyError>>,
}

impl TimeoutWindow {
    pub(super) fn new(timeout: PathTimeout) -> TimeoutWindow {
        TimeoutWindow {
            timeout,
            proxy: None,
            gateway_url: None,
            open: None,
        }
    }

    pub(super) fn describe(&self) -> String {
        self.timeout.describe()
    }

    /// The header timeout it gives the cell's clients.
    pub(super) fn client_headers(&self) -> Option<Duration> {
        self.timeout.client_headers()
    }

    pub(super) fn gateway_url(&self) -> Option<&str> {
        self.gateway_url.as_deref()
    }

    pub(super) fn set_gateway_url(&mut self, url: String) {
        self.gateway_url = Some(url);
    }

    pub(super) fn proxy(&self) -> Option<&FaultControl> {
        self.proxy.as_ref()
    }

    pub(super) fn set_proxy(&mut self, control: FaultControl) {
        self.proxy = Some(control);
    }

    /// The timeout comes into force for the cell whose trace is `trace`
    /// (a window left from an earlier cell closes first).
    pub(super) fn begin_cell(&mut self, trace: &Trace) {
        if let Some(Ok(stale)) = self.open.take() {
            let _ = stale.close();
        }
        self.open = Some(OpenTimeout::open(&self.timeout, self.proxy.as_ref(), trace));
    }

    /// When the cell's phases are over: the window closes; an error is the
    /// idle cut's proxy's (it had stopped, or the window never opened).
    pub(super) fn close(&mut self) -> Result<(), ProxyError> {
        match self.open.take() {
            Some(window) => window.and_then(OpenTimeout::close),
            None => Ok(()),
        }
    }

    /// The window closes, whatever its proxy says.
    pub(super) fn shutdown(&mut self) {
        if let Some(Ok(window)) = self.open.take() {
            let _ = window.close();
        }
    }
}

/// A timeout in force for one cell.
pub(super) enum OpenTimeout {
    /// The idle cut: its toxic on its hop's proxy.
    Toxic(OpenWindow),
    /// A timeout the path itself has (the gateway's, the client's): the
    /// window only marks it in the trace.
    Marked {
        trace: Trace,
        hop: String,
        name: &'static str,
    },
}

impl OpenTimeout {
    /// Puts `timeout` in force for the cell whose trace is `trace`;
    /// `control` is the idle cut's hop's proxy.
    pub(super) fn open(
        timeout: &PathTimeout,
        control: Option<&FaultControl>,
        trace: &Trace,
    ) -> Result<OpenTimeout, ProxyError> {
        if let Some(fault) = timeout.fault() {
            let control = control.ok_or_else(|| ProxyError::Stopped {
                hop: fault.hop.to_string(),
                reason: "the hop has no fault proxy here".into(),
            })?;
            return OpenWindow::open(&fault, control, trace).map(OpenTimeout::Toxic);
        }
        let (hop, name) = timeout.marker();
        trace.fault_start(hop, name, &timeout.describe(), 0);
        Ok(OpenTimeout::Marked {
            trace: trace.clone(),
            hop: hop.to_string(),
            name,
        })
    }

    /// Ends the window; an error is the idle cut's proxy's, which had stopped.
    pub(super) fn close(self) -> Result<(), ProxyError> {
        match self {
            OpenTimeout::Toxic(window) => window.close(),
            OpenTimeout::Marked { trace, hop, name } => {
                trace.fault_end(&hop, name, true, None);
                Ok(())
            }
        }
    }
}

impl std::fmt::Debug for OpenTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenTimeout::Toxic(window) => write!(f, "TimeoutWindow({window:?})"),
            OpenTimeout::Marked { hop, name, .. } => write!(f, "TimeoutWindow({name} on {hop})"),
        }
    }
}
