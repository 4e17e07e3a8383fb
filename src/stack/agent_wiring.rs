//! The local stack's part for real agents: the fake model provider they
//! talk to, their install and wiring into sandbox-agent's data folder (an
//! agent that cannot be installed is recorded, not fatal), and the sweep
//! for agent processes that outlive a stopped sandbox-agent.

use super::agents::{self, Wiring};
use super::progress::{blocking_with_notes, Note, Progress};
use super::StackError;
use crate::provider::FakeProvider;
use crate::targets::AfterStop;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What wiring real agents added to the stack: the running provider, its
/// call log, and the agents that could not be installed or wired.
pub(super) struct WiredAgents {
    pub provider: FakeProvider,
    pub log: PathBuf,
    /// (agent, reason), reported as skipped cells.
    pub skips: Vec<(String, String)>,
}

/// Starts the provider and installs + wires each requested real agent
/// (of `agent_names`; `None` when there is none) into
/// `sandbox_agent_dir/data`, their processes marked with `owner`.
pub(super) async fn wire_agents(
    agent_names: &[String],
    run_dir: &Path,
    sandbox_agent_dir: &Path,
    owner: &str,
    progress: &mut Progress<'_>,
) -> Result<Option<WiredAgents>, StackError> {
    let real: Vec<agents::RealAgent> = agent_names
        .iter()
        .filter_map(|name| agents::real(name))
        .collect();
    if real.is_empty() {
        return Ok(None);
    }
    let log = run_dir.join("provider").join("model-calls.jsonl");
    let provider = FakeProvider::start(&log).await?;
    progress(Note::step(format!(
        "fake model provider on {}",
        provider.base_url()
    )));
    let mut skips = Vec::new();
    let port = provider.port();
    let data = sandbox_agent_dir.join("data");
    let state = run_dir.join("agents");
    for agent in real {
        let installed = blocking_with_notes(progress, move |note| agent.install(note)).await?;
        let wired = installed.and_then(|dir| {
            agents::wire(
                agent,
                &dir,
                &Wiring {
                    data: &data,
                    state: &state,
                    provider_port: port,
                    owner,
                },
            )
        });
        match wired {
            Ok(()) => progress(Note::step(format!(
                "agent {} ({}) wired",
                agent.name,
                agent.spec()
            ))),
            Err(reason) => {
                let reason = format!("{reason}; retry with: {}", agent.retry_command());
                progress(Note::step(format!("agent {}: {reason}", agent.name)));
                skips.push((agent.name.to_string(), reason));
            }
        }
    }
    Ok(Some(WiredAgents {
        provider,
        log,
        skips,
    }))
}

/// Around each sandbox-agent stop: SIGTERM the server alone (as a service
/// manager stopping only its main process would), wait for it to exit, and
/// count the agent processes (marked with this stack's owner) still alive —
/// those outlived the server, a finding for users. Then the stack stops the
/// whole group, and a last sweep kills anything marked that escaped it.
pub(super) fn sweep(owner: &str) -> AfterStop {
    let before_owner = owner.to_string();
    let after_owner = owner.to_string();
    AfterStop {
        before: Arc::new(move |pid| {
            let pid = pid? as i32;
            // The server process this stack started and still owns.
            let _ = crate::supervise::os::signal_process(pid, crate::signal::Signal::TERM.number());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            while agents::is_running(pid) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            // Agents that exit on their own when stdin closes get a moment
            // (up to 300 ms); one that is gone already costs no wait.
            let grace = std::time::Instant::now() + std::time::Duration::from_millis(300);
            let mut outlived = agents::owned_processes(&before_owner).len();
            while outlived > 0 && std::time::Instant::now() < grace {
                std::thread::sleep(std::time::Duration::from_millis(10));
                outlived = agents::owned_processes(&before_owner).len();
            }
            Some(format!(
                "agent processes that outlived the server: {outlived}"
            ))
        }),
        after: Arc::new(move || {
            let left = agents::reap(&after_owner);
            (left > 0).then(|| format!("{left} escaped the process group and were killed"))
        }),
    }
}
