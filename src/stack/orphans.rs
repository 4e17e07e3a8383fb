//! Processes a sandbox-agent server started and then lost track of. A
//! process it runs with a PTY gets its own session, so stopping the server's
//! process group leaves it running, unlisted by any later server. Every
//! process the local stack's server starts inherits its `XDG_DATA_HOME`, a
//! folder inside the run folder: that environment entry proves the process
//! is the harness's, and this module finds and kills such processes.

use std::path::Path;

/// The environment entry every descendant of the stack's sandbox-agent carries.
pub fn agent_mark(data_dir: &Path) -> String {
    format!("XDG_DATA_HOME={}", data_dir.display())
}

/// Pids of live processes (other than this one) whose environment holds `entry` exactly.
pub fn processes_with_env(entry: &str) -> Vec<i32> {
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
#[allow(unsafe_code)]
pub fn kill_with_env(entry: &str) -> Vec<i32> {
    let pids = processes_with_env(entry);
    for &pid in &pids {
        // SAFETY: kill(2) on a process carrying the harness's own mark.
        unsafe { libc::kill(pid, libc::SIGKILL) };
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
