//! Processes nothing lists any more. A sandbox-agent server's: a process
//! it runs with a PTY gets its own session, so stopping the server's
//! process group leaves it running, unlisted by any later server; every
//! process the local stack's server starts inherits its `XDG_DATA_HOME`, a
//! folder inside the run folder, and that environment entry proves the
//! process is the harness's. And a stack folder's, when its `stack.json`
//! is gone or cannot be read: what carries an owner tag of the folder, and
//! the gateway's nginx (which overwrites its environment, tag included)
//! by its pid file and command line.

use crate::supervise::{keeper, owner, owner::Pinned};
use std::path::Path;

/// What the stacks of a `stack up` folder started that still runs, found
/// without its state file.
pub(crate) struct FolderProcesses {
    /// Proven the folder's, and no live harness's: to stop.
    pub stoppable: Vec<Pinned>,
    /// The owner tags among them, to sweep once they are stopped.
    pub owners: Vec<String>,
    /// Owner tags of the folder whose harness still runs (a run with this
    /// `--out`, a `stack up` still starting): left alone.
    pub live_owners: Vec<String>,
}

/// Every process the stacks of `dir` started that still runs: those whose
/// owner tag names `dir` (unless the tag's harness is alive), and the
/// gateway's nginx master.
pub(crate) fn started_in(dir: &Path) -> FolderProcesses {
    let mut found = FolderProcesses {
        stoppable: Vec::new(),
        owners: Vec::new(),
        live_owners: Vec::new(),
    };
    for (tag, process) in owner::tagged_in(dir) {
        if keeper::running_for(&tag) {
            if !found.live_owners.contains(&tag) {
                found.live_owners.push(tag);
            }
        } else {
            if !found.owners.contains(&tag) {
                found.owners.push(tag);
            }
            found.stoppable.push(process);
        }
    }
    if let Some(nginx) = gateway_master(dir) {
        if !found.stoppable.iter().any(|p| p.pid() == nginx.pid()) {
            found.stoppable.push(nginx);
        }
    }
    found
}

/// The nginx master of the stack in `dir`, proven three ways: its pid
/// file (`gateway/nginx.pid`), its command line (nginx keeps the original
/// one in its title) naming the folder's config, and its working folder.
fn gateway_master(dir: &Path) -> Option<Pinned> {
    let prefix = dir.join("gateway");
    let pid: i32 = std::fs::read_to_string(prefix.join("nginx.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let pinned = Pinned::open(pid)?;
    let config = prefix.join("nginx.conf").display().to_string();
    let names_config = owner::command_line(pid)?
        .split(' ')
        .any(|word| word == config);
    (names_config && pinned.runs_in(&prefix) && pinned.running()).then_some(pinned)
}

/// The environment entry every descendant of the stack's sandbox-agent carries.
pub(crate) fn agent_mark(data_dir: &Path) -> String {
    format!("XDG_DATA_HOME={}", data_dir.display())
}

/// Pids of live processes (other than this one) whose environment holds `entry` exactly.
pub(crate) fn processes_with_env(entry: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| crate::supervise::owner::environ_holds(pid, entry))
        .collect()
}

/// SIGKILLs every process whose environment holds `entry`; returns their pids.
pub(crate) fn kill_with_env(entry: &str) -> Vec<i32> {
    let pids = processes_with_env(entry);
    for &pid in &pids {
        // A process carrying the harness's own mark.
        let _ = crate::supervise::os::signal_process(pid, crate::signal::Signal::KILL.number());
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_process_is_found_and_killed_and_others_are_not() {
        let entry = format!("CONTINUITY_ORPHAN_TEST={}", std::process::id());
        let (name, value) = entry.split_once('=').unwrap();
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .env(name, value)
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert_eq!(processes_with_env(&entry), vec![marked.id() as i32]);
        assert_eq!(kill_with_env(&entry), vec![marked.id() as i32]);
        assert!(
            marked.wait().unwrap().code().is_none(),
            "killed by a signal"
        );
        assert!(
            other.try_wait().unwrap().is_none(),
            "the unmarked one runs on"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
