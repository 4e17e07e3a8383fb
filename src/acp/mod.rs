//! ACP over HTTP: the transport of the `acp-http-client` package, in Rust.
//!
//! One [`Transport`] talks to one ACP server id at `/v1/acp/{serverId}`: it
//! POSTs JSON-RPC envelopes (the first one with `?agent=NAME`), reads the
//! server's SSE stream, correlates responses by id, de-duplicates responses
//! that arrive on both paths, reports every envelope in order to an observer,
//! and DELETEs the server id on close. Failures are [`AcpError`]s that keep
//! what a diagnosis needs.

mod error;
mod transport;

pub(crate) use error::Problem;
pub use error::{AcpError, ConnectFailure};
pub(crate) use transport::read_bounded;
pub(crate) use transport::MAX_ENVELOPE_BYTES;
pub use transport::{Direction, Observed, Transport, TransportConfig};
pub(crate) use transport::{RpcResponse, StreamStats};

/// JSON-RPC "method not found".
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
