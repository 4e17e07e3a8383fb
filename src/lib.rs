//! continuity: tells whether sandbox-agent sessions survive a restart of each
//! component of their stack, and if not, where and why they break.
//!
//! Layers, top to bottom: a module uses only modules on lines below its
//! own, and no files import each other in a circle (`cargo test --test
//! layers` checks both against this list, so keep it true):
//!
//! - `commands`: the CLI edge, one function per subcommand; exit codes
//! - `cli`: the command line as clap parses it
//! - `runner`: the matrix (targets × scenarios × agents × clients ×
//!   servers × SDKs × stores, built whole; attempts as they run), cells
//!   handed to `--jobs` workers from one queue, events out, a report back
//! - `scenario`: scenario files to phases, and the executor with deadlines
//! - `stack`: the real components (sandbox-agent, nginx, Rivet Engine and
//!   RivetKit runner, Postgres, Chromium and the browser client's page app,
//!   real agents and the fake provider they talk to)
//! - `diagnose`: a failure to its signature (kind, layer, status, code)
//! - `client`: the TypeScript SDK's semantics (sessions, resume, replay),
//!   the hosted SDK's actor and the browser client's page (DevTools protocol)
//! - `agent`: the scripted ACP agent the stack runs over stdio
//! - `provider`: the fake model provider real agents talk to
//! - `config`: `continuity.toml`, read in two stages
//! - `persist`: session stores (memory, SQLite, Postgres, the Rivet actor)
//!   and the choice of one per cell
//! - `targets`: restart actions (command, managed process, signal, HTTP
//!   hook, network fault) and readiness probes; the built-in targets and
//!   which targets a run has
//! - `acp`: ACP over HTTP (POST, SSE, DELETE) with typed envelopes
//! - `console`: every printed line, redacted
//! - `http`, `exit_codes`: leaves: the HTTP client builder, exit codes
//! - `clock`, `stop_flag`, `digest`: leaves: durations in ms, waiting on a
//!   stop flag, the SHA-256 of a file a run depended on
//!
//! Below them all, crates of their own, re-exported here under the names
//! the modules above use (a crate cannot import one that depends on it,
//! so cargo keeps these edges):
//! * `supervise` and `signal` (crates/supervise): child processes in their
//!   own groups, proof of ownership before any signal, nothing left when
//!   the harness dies; the signal table; every libc call and `unsafe`
//!   block of the workspace (`supervise::os`)
//! * `faults` (crates/faults): the fault proxy on a hop (loopback TCP)
//!   and its toxics
//! * `report` and `partition` (crates/report): the report model, its
//!   renderers, judgement against expectations; which shard a cell
//!   belongs to
//! * `schema` (crates/schema): the published shape under `report`,
//!   `check` and `trace` (serde alone): the JSON events `events.rs`
//!   prints, besides the report's, the verdict's and the trace's types
//!   those crates re-export
//! * `check` (crates/check): the always-on checker, the invariants every
//!   cell's history holds (streams, application, store, requests, ground truth)
//! * `trace` (crates/trace): each cell's wire history (what transport,
//!   client and targets saw)
//! * crates/base: `errors`, `secret`, `untrusted`, `fit`, `file_name`,
//!   `wire_name`, `source_line`, `run_path`, `user_file`, `folder_lock`,
//!   `seed`

#![forbid(unsafe_code)]
// The crate's public surface is what `main.rs` and `tests/` name as
// `continuity::…` (and the types those items' signatures carry); every
// other item is `pub(crate)` or narrower, so the dead-code lint sees what
// nothing calls. The lint keeps it so: a `pub` nothing outside reaches
// fails clippy.
#![warn(unreachable_pub)]

pub mod acp;
pub mod agent;
pub mod cli;
pub mod client;
mod clock;
pub mod commands;
mod config;
pub mod console;
pub mod diagnose;
pub mod digest;
pub mod exit_codes;
pub mod http;
pub mod persist;
mod provider;
mod runner;
pub mod scenario;
pub mod stack;
mod stop_flag;
mod targets;

// The leaves, by the names the modules above have always used.
pub use continuity_base::secret;
pub(crate) use continuity_base::{errors, fit, seed, untrusted};
pub(crate) use continuity_base::{
    file_name, folder_lock, run_path, source_line, user_file, wire_name,
};
pub(crate) use continuity_check as check;
pub(crate) use continuity_faults as faults;
pub use continuity_report as report;
pub(crate) use continuity_report::partition;
pub(crate) use continuity_schema as schema;
pub use continuity_supervise as supervise;
pub(crate) use continuity_supervise::signal;
pub use continuity_trace as trace;

#[cfg(test)]
mod toml_props;
