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

pub use error::{AcpError, ConnectFailure, Problem};
pub(crate) use transport::read_bounded;
pub use transport::MAX_ENVELOPE_BYTES;
pub use transport::{Direction, Observed, RpcResponse, StreamStats, Transport, TransportConfig};

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
