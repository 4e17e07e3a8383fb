//! The sandbox-state steps for files and long-running processes, what each
//! records for the report, the signatures of their failures (`file missing`,
//! `file changed`, `process gone`, `logs lost`), and the state the cell keeps
//! about them (terminals: `terminal_steps.rs`; removal: `sandbox_teardown.rs`).

use super::{RunningCell, StepFailure, StepResult};
use crate::acp::AcpError;
use crate::client::{Client, ClientError, ProcessInfo, ProcessSpec, Terminal};
use crate::diagnose;
use crate::report::detail::{
    Detail, ProcessStatusDetail, ReadFileDetail, SpawnDetail, WriteFileDetail,
};
use crate::report::SignatureKind;
use crate::scenario::ProcessExpect;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The environment variable that marks a cell's processes with the cell's id.
pub(super) const CELL_MARK: &str = "CONTINUITY_CELL";
/// Where a cell's files go in the sandbox: one folder per cell, removed at the end.
const SANDBOX_ROOT: &str = crate::scenario::sandbox_root::ROOT;
/// How long `process_status` waits for `logs_contain` to show up in the logs.
const LOG_SETTLE: Duration = Duration::from_secs(1);

/// Files, processes and terminals the cell made, by scenario label.
#[derive(Default)]
pub(super) struct SandboxState {
    pub(super) files: HashMap<String, Vec<u8>>,
    pub(super) processes: HashMap<String, String>,
    pub(super) terminals: HashMap<String, TerminalEntry>,
    /// A spawn was sent: even if its answer never came (deadline), a process
    /// with the cell's mark may exist, so the teardown sweeps for it.
    pub(super) spawned: bool,
}

pub(super) struct TerminalEntry {
    pub(super) terminal: Terminal,
    /// Output offset before the last line sent: `terminal_expect` searches after it.
    pub(super) mark: usize,
    pub(super) sent: Vec<String>,
}

impl SandboxState {
    pub(super) fn is_empty(&self) -> bool {
        self.files.is_empty() && !self.spawned && self.terminals.is_empty()
    }
}

impl RunningCell<'_> {
    pub(super) fn sandbox_folder(&self) -> String {
        format!("{SANDBOX_ROOT}/{}", self.settings.session_suffix)
    }

    pub(super) fn sandbox_client(&self, name: &str) -> Result<&Client, StepFailure> {
        self.clients.get(name).map(|c| &**c).ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("client `{name}` is not connected"),
            ))
        })
    }

    fn failure(&self, prefix: Option<&str>, error: &ClientError) -> StepFailure {
        let mut signature = diagnose::signature(error, self.settings.token.as_ref());
        if let Some(prefix) = prefix {
            signature.message = format!("{prefix}: {}", signature.message);
        }
        StepFailure::new(signature)
    }

    pub(super) fn process_id(&self, label: &str) -> Result<String, StepFailure> {
        self.sandbox.processes.get(label).cloned().ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("process `{label}` was never started (its spawn failed)"),
            ))
        })
    }

    /// `write_file`: the content into the cell's sandbox folder.
    pub(super) async fn write_file(
        &mut self,
        client: &str,
        path: &str,
        content: &str,
    ) -> StepResult {
        let full = format!("{}/{path}", self.sandbox_folder());
        // Recorded first: a write that fails half-way still gets cleaned up.
        self.sandbox
            .files
            .insert(path.to_string(), content.as_bytes().to_vec());
        self.sandbox_client(client)?
            .write_file(&full, content.as_bytes().to_vec())
            .await
            .map_err(|e| self.failure(None, &e))?;
        Ok(WriteFileDetail {
            path: full,
            bytes: content.len(),
        }
        .to_map())
    }

    /// `read_file`: read back and compared with what the cell wrote.
    pub(super) async fn read_file(&mut self, client: &str, path: &str) -> StepResult {
        let full = format!("{}/{path}", self.sandbox_folder());
        let mut detail = ReadFileDetail {
            path: full.clone(),
            ..ReadFileDetail::default()
        };
        let read = self.sandbox_client(client)?.read_file(&full).await;
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) if file_missing(&e) => {
                detail.exists = Some(false);
                return Err(self
                    .failure(Some("file missing"), &e)
                    .with_detail(detail.to_map()));
            }
            Err(e) => return Err(self.failure(None, &e).with_detail(detail.to_map())),
        };
        let expected = self.sandbox.files.get(path).cloned().unwrap_or_default();
        detail.exists = Some(true);
        detail.bytes = Some(bytes.len());
        detail.same_bytes = Some(bytes == expected);
        if bytes != expected {
            let at = bytes
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(bytes.len().min(expected.len()));
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Integrity,
                format!(
                    "file changed: read {} bytes, wrote {} (first difference at byte {at})",
                    bytes.len(),
                    expected.len()
                ),
            ))
            .with_detail(detail.to_map()));
        }
        Ok(detail.to_map())
    }

    /// `spawn_process`: a long-running process marked with the cell's id.
    pub(super) async fn spawn_process(
        &mut self,
        client: &str,
        process: &str,
        command: &[String],
        tty: bool,
    ) -> StepResult {
        let spec = ProcessSpec {
            command: command[0].clone(),
            args: command[1..].to_vec(),
            tty,
            env: vec![(CELL_MARK.into(), self.settings.session_suffix.clone())],
        };
        self.sandbox.spawned = true;
        let info = self
            .sandbox_client(client)?
            .create_process(&spec)
            .await
            .map_err(|e| self.failure(None, &e))?;
        self.sandbox
            .processes
            .insert(process.to_string(), info.id.clone());
        Ok(SpawnDetail {
            process_id: info.id,
            status: info.status,
            pid: info.pid,
        }
        .to_map())
    }

    /// `process_status`: still listed, in the expected state, its logs kept.
    pub(super) async fn process_status(
        &mut self,
        client: &str,
        process: &str,
        expect: ProcessExpect,
        logs_contain: Option<&str>,
    ) -> StepResult {
        let id = self.process_id(process)?;
        let c = self.sandbox_client(client)?;
        let mut detail = ProcessStatusDetail {
            process_id: id.clone(),
            ..ProcessStatusDetail::default()
        };
        let listed = c
            .list_process_ids()
            .await
            .map_err(|e| self.failure(None, &e))?
            .contains(&id);
        detail.listed = Some(listed);
        let info = self.listed_process(c, &id, &mut detail).await?;
        detail.status = Some(info.status.clone());
        detail.exit_code = Some(info.exit_code);
        let (entries, text) = self.settled_logs(c, &id, logs_contain, &detail).await?;
        detail.log_entries = Some(entries);
        detail.log_bytes = Some(text.len());
        if let Some(message) = state_mismatch(&id, listed, expect, &info) {
            return Err(
                StepFailure::new(diagnose::other(SignatureKind::Client, message))
                    .with_detail(detail),
            );
        }
        if let Some(wanted) = logs_contain {
            let kept = String::from_utf8_lossy(&text).contains(wanted);
            detail.logs_retained = Some(kept);
            if !kept {
                return Err(StepFailure::new(diagnose::other(
                    SignatureKind::Integrity,
                    format!("logs lost: {entries} entries, none has {wanted:?}"),
                ))
                .with_detail(detail));
            }
        }
        Ok(detail.to_map())
    }

    /// The server's record of process `id`; when the server forgot it, a
    /// `process gone` failure that says whether the OS process is still
    /// there, orphaned.
    async fn listed_process(
        &self,
        c: &Client,
        id: &str,
        detail: &mut ProcessStatusDetail,
    ) -> Result<ProcessInfo, StepFailure> {
        match c.get_process(id).await {
            Ok(info) => Ok(info),
            Err(e) if gone(&e) => {
                let orphans = marked_processes(c, &self.settings.session_suffix, false)
                    .await
                    .unwrap_or_default();
                detail.orphan_pids = Some(orphans.clone());
                let mut failure = self.failure(Some("process gone"), &e);
                if !orphans.is_empty() {
                    failure
                        .signature
                        .message
                        .push_str(" (still running unlisted)");
                }
                Err(failure.with_detail(detail.to_map()))
            }
            Err(e) => Err(self.failure(None, &e).with_detail(detail.to_map())),
        }
    }

    /// The process's log: how many entries, and their bytes. Output a
    /// process just printed may take a moment to be logged, so a log
    /// without `logs_contain` is read again for up to [`LOG_SETTLE`].
    async fn settled_logs(
        &self,
        c: &Client,
        id: &str,
        logs_contain: Option<&str>,
        detail: &ProcessStatusDetail,
    ) -> Result<(usize, Vec<u8>), StepFailure> {
        let settle = Instant::now() + LOG_SETTLE;
        loop {
            let logs = c
                .process_logs(id)
                .await
                .map_err(|e| self.failure(None, &e).with_detail(detail.to_map()))?;
            let text: Vec<u8> = logs.iter().flat_map(|l| l.data.clone()).collect();
            let found = logs_contain
                .as_ref()
                .is_none_or(|wanted| String::from_utf8_lossy(&text).contains(wanted));
            if found || Instant::now() >= settle {
                return Ok((logs.len(), text));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// What is wrong with process `id`'s state, if anything: not listed, or
/// not in the state `expect` asks for.
fn state_mismatch(
    id: &str,
    listed: bool,
    expect: ProcessExpect,
    info: &ProcessInfo,
) -> Option<String> {
    let state_ok = match expect {
        ProcessExpect::Running => info.status == "running",
        ProcessExpect::Exited => info.status == "exited",
        ProcessExpect::Listed => true,
    };
    if !listed {
        return Some(format!("process gone: {id} is not in the process list"));
    }
    if state_ok {
        return None;
    }
    Some(format!(
        "process {}: status {}{}",
        if expect == ProcessExpect::Running {
            "stopped"
        } else {
            "still running"
        },
        info.status,
        info.exit_code
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default()
    ))
}

/// The server no longer knows the resource: 404 or 410.
fn gone(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Acp(AcpError::Http {
            status: 404 | 410,
            ..
        })
    )
}

/// 0.4.2 answers a missing file with 400 `invalid_request` "path not found".
pub(super) fn file_missing(error: &ClientError) -> bool {
    gone(error)
        || matches!(error, ClientError::Acp(AcpError::Http { status: 400, problem: Some(p) })
            if p.detail.as_deref().is_some_and(|d| d.contains("not found")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_404_410_or_0_4_2s_400_path_not_found() {
        let http = |status: u16, detail: &str| {
            ClientError::Acp(AcpError::Http {
                status,
                problem: Some(crate::acp::Problem {
                    type_: None,
                    title: None,
                    detail: Some(detail.into()),
                }),
            })
        };
        assert!(file_missing(&http(
            400,
            "invalid request: path not found: /x"
        )));
        assert!(file_missing(&http(404, "")));
        assert!(!file_missing(&http(400, "bad path")));
        assert!(!file_missing(&http(500, "not found")));
    }
}

/// Why the sweep for a cell's processes could not run.
#[derive(Debug, thiserror::Error)]
pub(super) enum SweepError {
    #[error("cell id {0:?} is not safe in a shell word")]
    UnsafeMark(String),
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Pids of the sandbox's processes whose environment carries this cell's
/// mark (read from `/proc` by a one-off command in the sandbox, so it works
/// on a remote deployment too); with `kill`, SIGKILLs them first. The mark
/// proves ownership: nothing else has `CONTINUITY_CELL=<this cell>`.
pub(super) async fn marked_processes(
    client: &Client,
    suffix: &str,
    kill: bool,
) -> Result<Vec<i64>, SweepError> {
    if suffix.is_empty()
        || !suffix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(SweepError::UnsafeMark(suffix.to_string()));
    }
    let action = if kill { "kill -9 \"$p\"; " } else { "" };
    let script = format!(
        "{{ for f in /proc/[0-9]*/environ; do \
         if tr '\\0' '\\n' < \"$f\" | grep -qx '{CELL_MARK}={suffix}'; then \
         p=${{f#/proc/}}; p=${{p%/environ}}; {action}echo \"$p\"; fi; done; }} 2>/dev/null; true"
    );
    let result = client.run_command("sh", &["-c", &script], 10_000).await?;
    Ok(result
        .get("stdout")
        .and_then(Value::as_str)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}
