//! The `kill_agent` action: the ACP agent process under sandbox-agent dies
//! (an OOM kill, a crash of opencode, claude-agent-acp or codex-acp) while
//! the server stays up. The agent processes are the server's children in
//! its own process group (its terminals' processes run in sessions of their
//! own), proven the run's by its owner tag; each gets SIGKILL with
//! everything it started, and the kill takes only when each is seen gone
//! and the server is still the process it was (same pid, same start time).
//! When the cell's phases are over, what runs under the server is looked
//! at again: whether the server started an agent process anew.

use super::process_of::{NotOurs, ProcessOf};
use crate::signal::Signal;
use crate::supervise::owner::{self, Pinned};
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use std::time::{Duration, Instant};

/// How long a killed process may take to be seen gone.
const GONE_WITHIN: Duration = Duration::from_secs(2);

/// SIGKILL to the agent processes under a server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentKill {
    /// The server whose agent processes die.
    pub server: ProcessOf,
    /// The run's owner tag, which the agent processes inherit.
    pub owner: Option<String>,
}

/// Why an agent kill did not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum KillError {
    #[error(transparent)]
    NotOurs(#[from] NotOurs),
    #[error("{what} (pid {pid}) runs no ACP agent process (no child of it in its process group carries this run's owner tag): nothing to kill")]
    NoAgent { what: String, pid: i32 },
    #[error("agent process{} {} still running {} after SIGKILL", if .pids.len() == 1 { "" } else { "es" }, pid_list(.pids), super::fmt_duration(GONE_WITHIN))]
    NotGone { pids: Vec<i32> },
    #[error("{what} (pid {pid}) did not stay up through the agent kill: {seen}")]
    ServerWent {
        what: String,
        pid: i32,
        seen: String,
    },
}

impl AgentKill {
    /// `kill the agent: SIGKILL to the ACP agent processes under the sandbox-agent server, the server kept`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "kill the agent: SIGKILL to the ACP agent processes under {} (and what they started); the server keeps running",
            self.server.what()
        )
    }

    /// Kills them and sees them gone, the server up; records it into `trace`.
    pub(super) async fn act(&self, trace: &Trace) -> Result<Killed, KillError> {
        let what = self.server.what().to_string();
        let server = self.server.proven()?;
        let started = server.start_time();
        let agents = agents_of(&server, self.owner.as_deref());
        if agents.is_empty() {
            return Err(KillError::NoAgent {
                what,
                pid: server.pid(),
            });
        }
        // Everything an agent started dies with it, as in a crash of its container.
        let mut doomed: Vec<Pinned> = Vec::new();
        for agent in agents {
            doomed.extend(descendants(&agent));
            doomed.push(agent);
        }
        for process in &doomed {
            process.send(Signal::KILL.number());
        }
        let killed: Vec<i32> = doomed.iter().map(Pinned::pid).collect();
        let until = Instant::now() + GONE_WITHIN;
        loop {
            let left: Vec<i32> = doomed
                .iter()
                .filter(|p| p.running())
                .map(Pinned::pid)
                .collect();
            if left.is_empty() {
                break;
            }
            if Instant::now() >= until {
                return Err(KillError::NotGone { pids: left });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let same = server.running() && server.start_time() == started;
        if !same {
            return Err(KillError::ServerWent {
                what,
                pid: server.pid(),
                seen: "its process is gone or replaced".into(),
            });
        }
        trace.emit(Event::AgentKill(event::AgentKill {
            server_pid: server.pid() as u32,
            pids: killed.iter().map(|p| *p as u32).collect(),
        }));
        Ok(Killed {
            what,
            server,
            started,
            killed,
            owner: self.owner.clone(),
        })
    }
}

/// An agent kill that took: what it killed and the server it left up.
pub(super) struct Killed {
    what: String,
    server: Pinned,
    started: Option<u64>,
    killed: Vec<i32>,
    owner: Option<String>,
}

impl Killed {
    /// For the restart's `down`.
    pub(super) fn taken(&self) -> String {
        format!(
            "agent process{} {} under {} (pid {}) SIGKILLed and seen gone; the server kept running (same pid, same start time)",
            if self.killed.len() == 1 { "" } else { "es" },
            pid_list(&self.killed),
            self.what,
            self.server.pid()
        )
    }

    /// Once the phases are over: is the server the same process, and does
    /// it run agent processes again (which ones)? Recorded into `trace`.
    pub(super) fn after(&self, trace: &Trace) -> String {
        let same = self.server.running() && self.server.start_time() == self.started;
        let now: Vec<i32> = match same {
            true => agents_of(&self.server, self.owner.as_deref())
                .iter()
                .map(Pinned::pid)
                .collect(),
            false => Vec::new(),
        };
        trace.emit(Event::AgentAfter(event::AgentAfter {
            server_pid: self.server.pid() as u32,
            server_same: same,
            pids: now.iter().map(|p| *p as u32).collect(),
        }));
        match (same, now.is_empty()) {
            (false, _) => format!(
                "{} (pid {}) is gone or replaced",
                self.what,
                self.server.pid()
            ),
            (true, true) => format!(
                "no agent process runs under {} (pid {}) after the kill",
                self.what,
                self.server.pid()
            ),
            (true, false) => format!(
                "{} (pid {}) runs agent process{} {} started after the kill",
                self.what,
                self.server.pid(),
                if now.len() == 1 { "" } else { "es" },
                pid_list(&now)
            ),
        }
    }
}

impl std::fmt::Debug for Killed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.taken())
    }
}

/// The server's ACP agent processes: its children in its own process
/// group (a terminal's process runs in a session of its own), carrying
/// the owner tag when there is one, pinned.
fn agents_of(server: &Pinned, tag: Option<&str>) -> Vec<Pinned> {
    owner::children_of(server.pid())
        .into_iter()
        .filter_map(Pinned::open)
        .filter(|child| child_in_group(child.pid(), server.pid()))
        .filter(|child| tag.is_none_or(|tag| child.owned_by(tag)))
        .collect()
}

/// Whether `pid` runs in the process group `pgid`.
fn child_in_group(pid: i32, pgid: i32) -> bool {
    crate::supervise::group_members(pgid).contains(&pid)
}

/// Every live descendant of `process`, pinned, deepest last.
fn descendants(process: &Pinned) -> Vec<Pinned> {
    let mut found = Vec::new();
    let mut next = vec![process.pid()];
    while let Some(pid) = next.pop() {
        for child in owner::children_of(pid) {
            if let Some(pinned) = Pinned::open(child) {
                next.push(child);
                found.push(pinned);
            }
        }
    }
    found
}

fn pid_list(pids: &[i32]) -> String {
    pids.iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::process_of::tests::{Fixed, Sleeper};
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn the_agents_die_and_the_server_stays() {
        // A "server" whose two children stand in for its agent processes.
        let dir = tempfile::tempdir().unwrap();
        // Once both are gone it starts one anew, as a server may.
        let server = Sleeper::running(dir.path(), "sleep 300 & sleep 300 & wait; sleep 300");
        let kill = AgentKill {
            server: server.recorded(),
            owner: None,
        };
        let trace = Trace::detached();
        let killed = kill.act(&trace).await.unwrap();
        assert_eq!(killed.killed.len(), 2, "{}", killed.taken());
        assert!(killed.taken().contains("seen gone"), "{}", killed.taken());
        assert_eq!(owner::state_of(server.pid()).map(|s| s != 'Z'), Some(true));
        let until = Instant::now() + Duration::from_secs(5);
        let after = loop {
            let after = killed.after(&trace);
            if after.contains("started after the kill") || Instant::now() >= until {
                break after;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(after.contains("started after the kill"), "{after}");
    }

    /// A kill that cannot take fails: no agent under the server, the
    /// server already gone, or a record naming another process.
    #[tokio::test]
    async fn a_kill_that_cannot_take_fails() {
        let dir = tempfile::tempdir().unwrap();
        let lonely = {
            use std::os::unix::process::CommandExt;
            let child = std::process::Command::new("sleep")
                .arg("300")
                .process_group(0)
                .spawn()
                .unwrap();
            Sleeper(child)
        };
        let kill = AgentKill {
            server: lonely.recorded(),
            owner: None,
        };
        let e = kill.act(&Trace::detached()).await.err().unwrap();
        assert!(matches!(e, KillError::NoAgent { .. }), "{e}");
        let server = Sleeper::start(dir.path());
        let foreign = AgentKill {
            server: ProcessOf::Recorded {
                what: "the server".into(),
                record: Arc::new(Fixed(Some((server.pid() as u32, Some(3))))),
            },
            owner: None,
        };
        let e = foreign.act(&Trace::detached()).await.err().unwrap();
        assert!(
            matches!(e, KillError::NotOurs(NotOurs::Foreign { .. })),
            "{e}"
        );
        assert_eq!(
            crate::supervise::group_members(server.pid()).len(),
            3,
            "left alone"
        );
        // The run's tag: children without it are not its agents.
        let tagged = AgentKill {
            server: server.recorded(),
            owner: Some("not-this-run:/nowhere".into()),
        };
        let e = tagged.act(&Trace::detached()).await.err().unwrap();
        assert!(matches!(e, KillError::NoAgent { .. }), "{e}");
        let recorded = server.recorded();
        drop(server);
        let gone = AgentKill {
            server: recorded,
            owner: None,
        };
        let e = gone.act(&Trace::detached()).await.err().unwrap();
        assert!(matches!(e, KillError::NotOurs(NotOurs::Gone { .. })), "{e}");
    }
}
