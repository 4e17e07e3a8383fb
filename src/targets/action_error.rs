//! Why a restart action failed ([`ActionError`]). The message says which
//! command, URL, file or hop, and what came back.

use super::fmt_duration;
use std::path::PathBuf;
use std::time::Duration;

/// Why a restart action failed. The message says which command, URL or
/// file, and what came back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    #[error("command `{command}` could not start: {reason}")]
    Spawn { command: String, reason: String },
    #[error("command `{command}` {}{}", crate::supervise::exit_text(*.code, *.signal), tail_suffix("stderr", .stderr_tail))]
    Exit {
        command: String,
        code: Option<i32>,
        signal: Option<i32>,
        stderr_tail: String,
    },
    #[error("command `{command}` did not finish within {} and was killed{}", fmt_duration(*.timeout), tail_suffix("stderr", .stderr_tail))]
    Timeout {
        command: String,
        timeout: Duration,
        stderr_tail: String,
    },
    #[error("cannot start `{command}`: {reason}{}", tail_suffix("log", .log_tail))]
    Start {
        command: String,
        reason: String,
        log_tail: String,
    },
    #[error("pid file {}: {reason}", .path.display())]
    PidFile { path: PathBuf, reason: String },
    #[error("process {pid} named in {} is gone", .path.display())]
    NoProcess { pid: i32, path: PathBuf },
    #[error("cannot send {signal} to process {pid}: {reason}")]
    Kill {
        pid: i32,
        signal: String,
        reason: String,
    },
    #[error("{method} {url} failed: {reason}")]
    Request {
        method: String,
        url: String,
        reason: String,
    },
    #[error("the {hop} hop has no fault proxy here")]
    NoHop { hop: crate::faults::Hop },
    #[error("{error}")]
    Proxy {
        hop: crate::faults::Hop,
        #[source]
        error: crate::faults::ProxyError,
    },
    /// A restart made with a toxic along ([`super::Target::with_window_along`])
    /// whose toxic never acted: the condition it exists to create never arose.
    #[error("{toxic} never acted on a connection of the {hop} hop within {within} of the restart")]
    ToxicNeverActed {
        hop: crate::faults::Hop,
        toxic: String,
        within: String,
    },
    /// Nothing to take down (no server was running to leave down).
    #[error("nothing to take down: {reason}")]
    NothingDown { reason: String },
    #[error("{method} {url} answered {status}, expected {expected}{}", tail_suffix("body", .body))]
    Status {
        method: String,
        url: String,
        status: u16,
        expected: String,
        body: String,
    },
}

impl ActionError {
    /// A reboot's part `name` that is no process the harness runs.
    pub(super) fn runs_no_process(name: &str) -> ActionError {
        ActionError::NothingDown {
            reason: format!("`{name}` runs no process of the harness's"),
        }
    }
}

fn tail_suffix(what: &str, tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; {what}: {}", tail.trim_end())
    }
}
