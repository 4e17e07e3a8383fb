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
//! - `faults`: the fault proxy on a hop (loopback TCP) and its toxics
//! - `acp`: ACP over HTTP (POST, SSE, DELETE) with typed envelopes
//! - `report`: the report model, its renderers, judgement against
//!   expectations
//! - `partition`: which shard a cell belongs to
//! - `supervise`: child processes in their own groups, proof of ownership
//!   before any signal, nothing left when the harness dies
//! - `trace`: each cell's wire history (what transport, client and
//!   targets saw)
//! - `console`: every printed line, redacted
//! - `http`, `secret`, `signal`, `exit_codes`, `errors`, `untrusted`:
//!   leaves: the HTTP client builder, redaction of secrets, the signal
//!   table, exit codes, what every layer's errors share (the cause chain
//!   on one line, a rejected value's reason), text continuity did not
//!   write as each output may show it
//! - `folder_lock`, `run_path`, `user_file`: leaves: one command at a time
//!   per folder, paths a report names confined to its run folder, a user's
//!   file checked for its type (and size) before anything reads it
//! - `clock`, `source_line`, `stop_flag`, `fit`, `file_name`, `wire_name`, `seed`, `digest`:
//!   leaves: durations in ms, a byte offset's line, waiting on a stop
//!   flag, text cut to a display width, file names from user text, an
//!   enum's name as serde writes it, a run's seed and what derives from
//!   it, the SHA-256 of a file a run depended on

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
pub mod errors;
pub mod exit_codes;
pub mod faults;
mod file_name;
pub mod fit;
mod folder_lock;
pub mod http;
mod partition;
pub mod persist;
mod provider;
pub mod report;
mod run_path;
mod runner;
pub mod scenario;
pub mod secret;
pub mod seed;
mod signal;
mod source_line;
pub mod stack;
mod stop_flag;
pub mod supervise;
mod targets;
pub mod trace;
pub mod untrusted;
mod user_file;
mod wire_name;

#[cfg(test)]
mod toml_props;
