//! A fault proxy: one loopback listener in front of one upstream address,
//! its accept loop and every connection in one task tree the
//! [`FaultProxy`] owns (dropping it aborts them all), and a
//! [`FaultControl`] to set and remove toxics from anywhere.

use super::connection;
use super::state::{Observer, ProxyStats, Shared, ToxicId};
use super::toxic::ToxicSpec;
use super::Hop;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket};
use tokio::task::{JoinHandle, JoinSet};

/// Why a proxy could not start, or can no longer apply a toxic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    #[error("the fault proxy of the {hop} hop must be on loopback (127.0.0.0/8), not {addr}")]
    NotLoopback { hop: String, addr: SocketAddr },
    #[error("the fault proxy of the {hop} hop cannot listen on {addr}: the port is taken")]
    PortTaken { hop: String, addr: SocketAddr },
    #[error("the fault proxy of the {hop} hop cannot listen on {addr}: {reason}")]
    Listen {
        hop: String,
        addr: SocketAddr,
        reason: String,
    },
    #[error("the fault proxy of the {hop} hop has stopped: {reason}")]
    Stopped { hop: String, reason: String },
}

/// A running proxy; dropping it closes its listener and every connection.
pub struct FaultProxy {
    control: FaultControl,
    task: JoinHandle<()>,
}

/// Sets and removes a proxy's toxics; cheap to clone.
#[derive(Clone)]
pub struct FaultControl {
    shared: Arc<Shared>,
    addr: SocketAddr,
    upstream: SocketAddr,
}

impl std::fmt::Debug for FaultControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FaultControl({} hop, {} -> {})",
            self.shared.hop, self.addr, self.upstream
        )
    }
}

impl FaultProxy {
    /// Listens on `listen` (port 0: any free port) and forwards to
    /// `upstream`, both on loopback. Needs a tokio runtime.
    pub fn start(
        hop: Hop,
        listen: SocketAddr,
        upstream: SocketAddr,
    ) -> Result<FaultProxy, ProxyError> {
        for addr in [listen, upstream] {
            if !addr.ip().is_loopback() {
                return Err(ProxyError::NotLoopback {
                    hop: hop.to_string(),
                    addr,
                });
            }
        }
        let listener = bind(&hop, listen)?;
        let addr = listener.local_addr().map_err(|e| ProxyError::Listen {
            hop: hop.to_string(),
            addr: listen,
            reason: e.to_string(),
        })?;
        let shared = Shared::new(hop);
        let task = tokio::spawn(accept_loop(listener, addr, upstream, Arc::clone(&shared)));
        Ok(FaultProxy {
            control: FaultControl {
                shared,
                addr,
                upstream,
            },
            task,
        })
    }

    pub fn control(&self) -> FaultControl {
        self.control.clone()
    }

    pub fn addr(&self) -> SocketAddr {
        self.control.addr
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.control.shared.stop("the proxy was shut down");
        self.task.abort();
    }
}

impl FaultControl {
    pub fn hop(&self) -> &Hop {
        &self.shared.hop
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Puts `spec` in force on every connection, open ones included;
    /// `observer` hears what it makes the proxy do.
    pub fn set(&self, spec: ToxicSpec, observer: Option<Observer>) -> Result<ToxicId, ProxyError> {
        self.check()?;
        Ok(self.shared.add(spec, observer))
    }

    /// Removes one toxic; what it held flows on.
    pub fn remove(&self, id: ToxicId) {
        self.shared.remove(Some(id));
    }

    /// Removes every toxic.
    pub fn heal(&self) {
        self.shared.remove(None);
    }

    /// Whether the proxy still serves (its accept loop is alive).
    pub fn check(&self) -> Result<(), ProxyError> {
        match self.shared.stopped() {
            None => Ok(()),
            Some(reason) => Err(ProxyError::Stopped {
                hop: self.shared.hop.to_string(),
                reason,
            }),
        }
    }

    pub fn stats(&self) -> ProxyStats {
        self.shared.stats()
    }

    /// A cell with `seed` begins: the toxics it sets and the connections it
    /// opens from now on draw from `seed` (with the hop's name), counted
    /// from here, so the same seed gives the same toxic decisions in the
    /// same order on the cell's connections, whatever ran before.
    pub fn begin_cell(&self, seed: u64) {
        self.shared.begin_cell(seed);
    }

    /// Tells `tap` of every event-stream GET the hop carries and every SSE
    /// event on it, from now on (`None`: no one, and nothing is read).
    pub fn tap(&self, tap: Option<super::tap::Tap>) {
        self.shared.set_tap(tap);
    }
}

fn bind(hop: &Hop, addr: SocketAddr) -> Result<TcpListener, ProxyError> {
    let error = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::AddrInUse => ProxyError::PortTaken {
            hop: hop.to_string(),
            addr,
        },
        _ => ProxyError::Listen {
            hop: hop.to_string(),
            addr,
            reason: e.to_string(),
        },
    };
    let socket = TcpSocket::new_v4().map_err(error)?;
    // `down` closes the listener and opens it again on the same port.
    socket.set_reuseaddr(true).map_err(error)?;
    socket.bind(addr).map_err(error)?;
    socket.listen(1024).map_err(error)
}

/// Marks the proxy stopped however its accept loop ends (a panic included).
struct StopGuard(Arc<Shared>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.stop("its accept loop ended");
    }
}

async fn accept_loop(
    listener: TcpListener,
    addr: SocketAddr,
    upstream: SocketAddr,
    shared: Arc<Shared>,
) {
    let _guard = StopGuard(Arc::clone(&shared));
    let mut listener = Some(listener);
    let mut connections = JoinSet::new();
    let mut toxics = shared.toxics.subscribe();
    loop {
        let down = toxics.borrow_and_update().down().is_some();
        if down {
            // New connections are refused while the hop is down.
            listener = None;
        } else if listener.is_none() {
            match bind(&shared.hop, addr) {
                Ok(again) => listener = Some(again),
                Err(e) => {
                    shared.stop(format!("cannot listen again after `down`: {e}"));
                    return;
                }
            }
        }
        tokio::select! {
            changed = toxics.changed() => if changed.is_err() { return },
            accepted = accept(listener.as_ref()) => match accepted {
                Ok(socket) => {
                    let conn = shared.next_conn();
                    connections.spawn(connection::serve(socket, conn, upstream, Arc::clone(&shared)));
                }
                // Out of descriptors and the like: a moment later may do.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
            },
            Some(joined) = connections.join_next(), if !connections.is_empty() => {
                if let Err(e) = joined {
                    if e.is_panic() {
                        shared.stop("a connection's task panicked");
                        return;
                    }
                }
            }
        }
    }
}

async fn accept(listener: Option<&TcpListener>) -> std::io::Result<tokio::net::TcpStream> {
    match listener {
        Some(l) => l.accept().await.map(|(socket, _)| socket),
        None => std::future::pending().await,
    }
}
