//! The two restart actions that need no state between restarts: a shell
//! command and an HTTP hook.
//!
//! A command runs in its own process group so a timeout can kill everything
//! it started. A command that *succeeds* may leave children behind on
//! purpose (`pkill server; server &` relaunches a daemon), so only a timed-out
//! or abandoned command has its group killed.

use super::action::expected_status_text;
use super::action_error::ActionError;
use crate::errors::error_chain;
use crate::secret::display_url;
use crate::supervise::{kill_group, Supervisor};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How much of a command's stderr is kept for a failure message.
const STDERR_TAIL_LINES: usize = 10;
const STDERR_KEEP_BYTES: usize = 16 * 1024;
/// After a command exits, how long its stderr may take to reach end of file
/// (a background child may hold the pipe open forever).
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// The last `lines` lines of `bytes`, lossily decoded. When the start of
/// the output was dropped (`cut`), its first line is partial and is left
/// out too: half a secret would no longer be recognised as one.
pub(super) fn last_lines(bytes: &[u8], lines: usize, cut: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().skip(usize::from(cut)).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// SIGKILLs a command's process group unless disarmed: a restart future that
/// is dropped (cancelled run, Ctrl-C) must not leave its command running.
struct GroupGuard<'a> {
    pgid: Option<i32>,
    supervisor: &'a Supervisor,
}

impl<'a> GroupGuard<'a> {
    fn new(pgid: Option<i32>, supervisor: &'a Supervisor) -> Self {
        if let Some(pgid) = pgid {
            supervisor.track_group(pgid);
        }
        Self { pgid, supervisor }
    }

    fn disarm(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            self.supervisor.untrack_group(pgid);
        }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
            self.supervisor.untrack_group(pgid);
        }
    }
}

impl Drop for GroupGuard<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `/bin/sh -c command` with a deadline, its group known to `supervisor`.
pub(super) async fn run_command(
    command: &str,
    timeout: Duration,
    supervisor: &Supervisor,
) -> Result<(), ActionError> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ActionError::Spawn {
            command: command.to_string(),
            reason: e.to_string(),
        })?;
    let mut guard = GroupGuard::new(child.id().map(|pid| pid as i32), supervisor);
    // The output kept, and whether its start was dropped.
    let captured = Arc::new(Mutex::new((Vec::<u8>::new(), false)));
    let reader = child.stderr.take().map(|mut stderr| {
        let captured = Arc::clone(&captured);
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let mut kept = captured.lock().unwrap_or_else(|p| p.into_inner());
                let (buf, cut) = &mut *kept;
                buf.extend_from_slice(&chunk[..n]);
                let excess = buf.len().saturating_sub(STDERR_KEEP_BYTES);
                if excess > 0 {
                    buf.drain(..excess);
                    *cut = true;
                }
            }
        })
    });
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    if waited.is_ok() {
        guard.disarm();
    } else {
        guard.kill();
        let _ = child.wait().await;
    }
    if let Some(mut reader) = reader {
        if tokio::time::timeout(STDERR_DRAIN, &mut reader)
            .await
            .is_err()
        {
            // A background child still holds the pipe; what arrived so far will do.
            reader.abort();
        }
    }
    let stderr_tail = {
        let kept = captured.lock().unwrap_or_else(|p| p.into_inner());
        last_lines(&kept.0, STDERR_TAIL_LINES, kept.1)
    };
    match waited {
        Err(_) => Err(ActionError::Timeout {
            command: command.to_string(),
            timeout,
            stderr_tail,
        }),
        Ok(Err(e)) => Err(ActionError::Spawn {
            command: command.to_string(),
            reason: format!("waiting for it failed: {e}"),
        }),
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            Err(ActionError::Exit {
                command: command.to_string(),
                code: status.code(),
                signal: status.signal(),
                stderr_tail,
            })
        }
    }
}

/// Calls a restart hook and checks its status.
pub(super) async fn call_hook(
    url: &str,
    method: &str,
    expect_status: Option<u16>,
    timeout: Duration,
) -> Result<(), ActionError> {
    let shown = display_url(url);
    let request_error = |reason: String| ActionError::Request {
        method: method.to_string(),
        url: shown.clone(),
        reason,
    };
    let method_value = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| request_error(format!("`{method}` is not an HTTP method")))?;
    let client = crate::http::client_builder()
        .timeout(timeout)
        .build()
        .map_err(|e| request_error(error_chain(&e)))?;
    let response = client
        .request(method_value, url)
        .send()
        .await
        .map_err(|e| request_error(error_chain(&e)))?;
    let status = response.status().as_u16();
    let passed = match expect_status {
        Some(expected) => status == expected,
        None => response.status().is_success(),
    };
    if passed {
        return Ok(());
    }
    let body = response.text().await.unwrap_or_default();
    Err(ActionError::Status {
        method: method.to_string(),
        url: shown,
        status,
        expected: expected_status_text(expect_status),
        // Redacted before the cut: half a secret would not be recognised later.
        body: crate::secret::redact_known(&body)
            .chars()
            .take(300)
            .collect(),
    })
}
