//! The integration suite, one test binary with a module per area.
//!
//! - `quick::` needs nothing but the built `continuity` binary and tiny
//!   in-test servers that send what no real server sends: seconds.
//! - `real::` starts the real programs: the sandbox-agent server, the local
//!   stack (nginx, Rivet Engine, RivetKit runner), real agents, Chromium.
//!
//! `cargo test` runs both; `cargo test -- --skip real::` leaves the real
//! ones out (see CONTRIBUTING.md).

mod quick;
mod real;
mod support;
