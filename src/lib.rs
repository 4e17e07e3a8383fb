//! continuity: tells whether sandbox-agent sessions survive a restart of each
//! component of their stack, and if not, where and why they break.
//!
//! Layers, each using only the ones below it: `client` (the TypeScript SDK's
//! semantics) over `acp` (ACP over HTTP) and `persist` (session stores);
//! `stack` runs the real components; `targets` restarts them (a command, a
//! managed process, a signal, an HTTP hook) and probes their readiness;
//! `agent` is the scripted ACP agent; `provider` the fake model provider
//! real agents talk to; `trace` is each cell's wire history (what
//! transport, client and targets saw), below all of them; `secret` and
//! `console` are what every writer and every printed line go through.
//! Above them: `scenario` (phases and their executor), `runner` (the
//! matrix: targets × scenarios × versions × agents × attempts, `partition`
//! picks shards, `--jobs` workers run cells side by side), `report` (the model and its renderers, judgement against
//! expectations), and `commands` at the CLI edge.

pub mod acp;
pub mod agent;
pub mod cli;
pub mod client;
pub mod commands;
pub mod config;
pub mod console;
pub mod diagnose;
pub mod exit_codes;
pub mod http;
pub mod partition;
pub mod persist;
pub mod provider;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod secret;
pub mod stack;
pub mod targets;
pub mod trace;

#[cfg(test)]
mod toml_props;
