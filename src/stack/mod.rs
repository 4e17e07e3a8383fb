//! The local stack: real programs as child processes — sandbox-agent, the
//! nginx gateway in front of it, the Rivet Engine and RivetKit runner that
//! persist session history, real agents and the fake model provider they
//! talk to — with the installation they need, each a restart target. Their
//! processes are supervised by `crate::supervise`, below this module.

pub(crate) mod agent_wiring;
pub(crate) mod agents;
pub(crate) mod browser;
mod error;
pub(crate) mod fault_targets;
pub(crate) mod hops;
pub(crate) mod local;
mod nemesis_targets;
pub(crate) mod nginx;
pub(crate) mod npm;
pub(crate) mod orphans;
pub(crate) mod postgres;
pub(crate) mod progress;
pub(crate) mod reload_race;
pub(crate) mod rivet;
pub mod sandbox_agent;
pub(crate) mod sandboxes;
pub(crate) mod sdk;
pub(crate) mod state;

pub(crate) use error::StackError;
