//! Signal names as a config file spells them (`"SIGTERM"` or `"TERM"`), the
//! libc numbers they stand for, and the `signal` restart action: read a pid
//! file and signal that process (an nginx reload, a supervisor's HUP).

use super::action::ActionError;
use std::path::Path;

/// The signals a restart may send, in the order error messages list them.
const SIGNALS: &[(&str, i32)] = &[
    ("SIGTERM", libc::SIGTERM),
    ("SIGKILL", libc::SIGKILL),
    ("SIGHUP", libc::SIGHUP),
    ("SIGINT", libc::SIGINT),
    ("SIGQUIT", libc::SIGQUIT),
    ("SIGUSR1", libc::SIGUSR1),
    ("SIGUSR2", libc::SIGUSR2),
];

/// A signal name the harness does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown signal `{given}`; expected one of {}", known_signals())]
pub struct UnknownSignal {
    pub given: String,
}

/// `SIGTERM, SIGKILL, …` for messages.
pub fn known_signals() -> String {
    SIGNALS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Maps `"SIGTERM"`, `"TERM"` or `"sigterm"` to `libc::SIGTERM`.
pub fn parse_signal(name: &str) -> Result<i32, UnknownSignal> {
    let upper = name.trim().to_ascii_uppercase();
    let full = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    SIGNALS
        .iter()
        .find(|(known, _)| *known == full)
        .map(|(_, number)| *number)
        .ok_or_else(|| UnknownSignal {
            given: name.to_string(),
        })
}

/// `SIGTERM` for `libc::SIGTERM`; `signal 34` for one outside the table.
pub fn signal_name(signal: i32) -> String {
    SIGNALS
        .iter()
        .find(|(_, number)| *number == signal)
        .map(|(name, _)| name.to_string())
        .unwrap_or_else(|| format!("signal {signal}"))
}

/// Reads a pid file: one positive integer, surrounding whitespace allowed.
pub fn read_pid_file(path: &Path) -> Result<i32, ActionError> {
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
pub fn process_exists(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks existence and permission.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Sends `signal` to the process named by `pid_file`.
pub fn send_from_pid_file(pid_file: &Path, signal: i32) -> Result<(), ActionError> {
    let pid = read_pid_file(pid_file)?;
    // SAFETY: kill(2) on a single positive pid; no memory is touched.
    if unsafe { libc::kill(pid, signal) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Err(ActionError::NoProcess {
            pid,
            path: pid_file.to_path_buf(),
        })
    } else {
        Err(ActionError::Kill {
            pid,
            signal: signal_name(signal),
            reason: err.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_and_without_the_sig_prefix() {
        assert_eq!(parse_signal("SIGTERM"), Ok(libc::SIGTERM));
        assert_eq!(parse_signal("TERM"), Ok(libc::SIGTERM));
        assert_eq!(parse_signal("hup"), Ok(libc::SIGHUP));
        assert_eq!(parse_signal("SIGUSR2"), Ok(libc::SIGUSR2));
        let e = parse_signal("SIGFOO").unwrap_err();
        assert!(e.to_string().contains("SIGFOO"), "{e}");
        assert!(e.to_string().contains("SIGQUIT"), "{e}");
        assert_eq!(signal_name(libc::SIGINT), "SIGINT");
    }

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
