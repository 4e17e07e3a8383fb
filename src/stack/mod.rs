//! The local stack: real programs as child processes (sandbox-agent today;
//! the nginx gateway and the Rivet layer join it), with the installation and
//! supervision they need.

pub mod agent_wiring;
pub mod agents;
pub mod local;
pub mod nginx;
pub mod npm;
pub mod orphans;
pub mod rivet;
pub mod sandbox_agent;
pub mod state;
