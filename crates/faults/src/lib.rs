//! Network faults between the pieces of a stack: a userspace TCP proxy per
//! hop, loopback only, that applies Toxiproxy's toxics (with their names,
//! parameters and units) plus `partition` and `down`.
//!
//! Theory of operation. A [`FaultProxy`] listens on one loopback port and
//! forwards each connection to its upstream, a pipe each way. The toxics in
//! force sit in a watch channel: setting or removing one through a
//! [`FaultControl`] wakes every connection's writers at once, so a toxic
//! acts on open connections as well as new ones, also in the middle of a
//! write. With no toxic set a chunk is written as soon as it is read. What
//! a toxic makes the proxy itself do (reset a connection, close it) is
//! counted and told to the observer given with the toxic, so a failure can
//! be told apart from one the server caused. The accept loop owns every
//! connection's task; dropping the proxy aborts them all, and a proxy that
//! stops serving says why ([`FaultControl::check`]).
//!
//! Why not the `noxious` crate (a Rust port of Toxiproxy, 1.0.4): its last
//! release is from 2021 on tokio-util 0.6, it has no `reset_peer`, no way
//! to hold or refuse connections, and spawns connection tasks nothing
//! owns, so they could outlive a cell.

#![forbid(unsafe_code)]

mod connection;
mod hop;
mod proxy;
mod state;
mod tap;
mod toxic;
mod writer;

#[cfg(test)]
mod tests;

pub use hop::{Hop, LocalHop};
pub use proxy::{FaultControl, FaultProxy, ProxyError};
pub use state::{Observer, ProxyAction, ProxyStats, ToxicId};
pub use tap::{Tap, TapEvent};
pub use toxic::{closest, parse_toxic, Param, Stream, Toxic, ToxicError, ToxicSpec, TOXIC_NAMES};
