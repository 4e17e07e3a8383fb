//! The `signal` restart action: read a pid file and signal that process
//! (an nginx reload, a supervisor's HUP).

use super::action_error::ActionError;
use crate::signal::Signal;
use std::path::Path;

/// Reads a pid file: one positive integer, surrounding whitespace allowed.
pub(super) fn read_pid_file(path: &Path) -> Result<i32, ActionError> {
    let pid_file_error = |reason: String| ActionError::PidFile {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| pid_file_error(e.to_string()))?;
    let trimmed = text.trim();
    match trimmed.parse::<i32>() {
        Ok(pid) if pid > 0 => Ok(pid),
        _ => {
            let shown: String = trimmed.chars().take(40).collect();
            Err(pid_file_error(format!(
                "expected a process id, found {shown:?}"
            )))
        }
    }
}

/// Whether a process with this pid exists (and may be signalled by us).
pub(super) fn process_exists(pid: i32) -> bool {
    crate::supervise::os::process_exists(pid)
}

/// Sends `signal` to the process named by `pid_file`.
pub(super) fn send_from_pid_file(pid_file: &Path, signal: Signal) -> Result<(), ActionError> {
    let pid = read_pid_file(pid_file)?;
    let Err(err) = crate::supervise::os::signal_process(pid, signal.number()) else {
        return Ok(());
    };
    if crate::supervise::os::no_such_process(&err) {
        Err(ActionError::NoProcess {
            pid,
            path: pid_file.to_path_buf(),
        })
    } else {
        Err(ActionError::Kill {
            pid,
            signal: signal.to_string(),
            reason: err.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_files_must_hold_a_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pid");
        std::fs::write(&path, "not a pid\n").unwrap();
        let e = read_pid_file(&path).unwrap_err().to_string();
        assert!(e.contains("x.pid") && e.contains("not a pid"), "{e}");
        std::fs::write(&path, " 42\n").unwrap();
        assert_eq!(read_pid_file(&path).unwrap(), 42);
    }
}
