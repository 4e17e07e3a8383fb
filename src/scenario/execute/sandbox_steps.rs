//! The sandbox-state steps: files, long-running processes and their
//! terminals, what each records for the report, the signatures of their
//! failures (`file missing`, `process gone`, `ws close 1006`, …), and the
//! teardown that removes whatever a cell made, whatever happened to it.

use super::{millis, Cell, StepFailure, StepResult};
use crate::acp::AcpError;
use crate::client::{Client, ClientError, ClientOptions, ProcessSpec, Terminal, TerminalError};
use crate::diagnose;
use crate::persist::MemoryDriver;
use crate::report::{Outcome, PhaseResult, Signature, SignatureKind};
use crate::scenario::{ProcessExpect, Step};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment variable that marks a cell's processes with the cell's id.
const CELL_MARK: &str = "CONTINUITY_CELL";
/// Where a cell's files go in the sandbox: one folder per cell, removed at the end.
const SANDBOX_ROOT: &str = "/tmp/continuity-sandbox";
/// How long the teardown of a cell's files and processes may take.
const TEARDOWN_BOUND: Duration = Duration::from_secs(10);
/// How long a fresh attach waits for replayed output (scrollback) before the next step.
const SCROLLBACK_WAIT: Duration = Duration::from_millis(300);
/// Output silence that counts as "nothing more under way" before a reattach, and its bound.
const QUIET_GAP: Duration = Duration::from_millis(150);
const QUIET_BOUND: Duration = Duration::from_secs(1);
/// How long `process_status` waits for `logs_contain` to show up in the logs.
const LOG_SETTLE: Duration = Duration::from_secs(1);

/// Files, processes and terminals the cell made, by scenario label.
#[derive(Default)]
pub(super) struct SandboxState {
    files: HashMap<String, Vec<u8>>,
    processes: HashMap<String, String>,
    terminals: HashMap<String, TerminalEntry>,
}

struct TerminalEntry {
    terminal: Terminal,
    /// Output offset before the last line sent: `terminal_expect` searches after it.
    mark: usize,
    sent: Vec<String>,
}

impl SandboxState {
    pub(super) fn is_empty(&self) -> bool {
        self.files.is_empty() && self.processes.is_empty() && self.terminals.is_empty()
    }
}

impl Cell<'_> {
    fn sandbox_folder(&self) -> String {
        format!("{SANDBOX_ROOT}/{}", self.settings.session_suffix)
    }

    fn sandbox_client(&self, name: &str) -> Result<&Client, StepFailure> {
        self.clients.get(name).ok_or_else(|| {
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

    fn terminal_failure(&self, error: &TerminalError) -> StepFailure {
        StepFailure::new(terminal_signature(error, self.settings.token.as_ref()))
    }

    fn entry(&self, label: &str) -> Result<&TerminalEntry, StepFailure> {
        self.sandbox.terminals.get(label).ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("terminal `{label}` is not attached (its attach failed)"),
            ))
        })
    }

    fn process_id(&self, label: &str) -> Result<String, StepFailure> {
        self.sandbox.processes.get(label).cloned().ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("process `{label}` was never started (its spawn failed)"),
            ))
        })
    }

    pub(super) async fn run_sandbox_step(&mut self, step: &Step) -> StepResult {
        let mut detail = Map::new();
        match step {
            Step::WriteFile {
                client,
                path,
                content,
            } => {
                let full = format!("{}/{path}", self.sandbox_folder());
                // Recorded first: a write that fails half-way still gets cleaned up.
                self.sandbox
                    .files
                    .insert(path.clone(), content.as_bytes().to_vec());
                self.sandbox_client(client)?
                    .write_file(&full, content.as_bytes().to_vec())
                    .await
                    .map_err(|e| self.failure(None, &e))?;
                detail.insert("path".into(), full.into());
                detail.insert("bytes".into(), content.len().into());
            }
            Step::ReadFile { client, path } => {
                let full = format!("{}/{path}", self.sandbox_folder());
                detail.insert("path".into(), full.clone().into());
                let read = self.sandbox_client(client)?.read_file(&full).await;
                let bytes = match read {
                    Ok(bytes) => bytes,
                    Err(e) if file_missing(&e) => {
                        return Err(self
                            .failure(Some("file missing"), &e)
                            .with_detail(detail)
                            .with("exists", false))
                    }
                    Err(e) => return Err(self.failure(None, &e).with_detail(detail)),
                };
                let expected = self.sandbox.files.get(path).cloned().unwrap_or_default();
                detail.insert("exists".into(), true.into());
                detail.insert("bytes".into(), bytes.len().into());
                detail.insert("sameBytes".into(), (bytes == expected).into());
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
                    .with_detail(detail));
                }
            }
            Step::SpawnProcess {
                client,
                process,
                command,
                tty,
            } => {
                let spec = ProcessSpec {
                    command: command[0].clone(),
                    args: command[1..].to_vec(),
                    tty: *tty,
                    env: vec![(CELL_MARK.into(), self.settings.session_suffix.clone())],
                };
                let info = self
                    .sandbox_client(client)?
                    .create_process(&spec)
                    .await
                    .map_err(|e| self.failure(None, &e))?;
                self.sandbox
                    .processes
                    .insert(process.clone(), info.id.clone());
                detail.insert("processId".into(), info.id.into());
                detail.insert("status".into(), info.status.into());
                detail.insert("pid".into(), info.pid.into());
            }
            Step::ProcessStatus {
                client,
                process,
                expect,
                logs_contain,
            } => {
                let id = self.process_id(process)?;
                let c = self.sandbox_client(client)?;
                detail.insert("processId".into(), id.clone().into());
                let listed = c
                    .list_process_ids()
                    .await
                    .map_err(|e| self.failure(None, &e))?
                    .contains(&id);
                detail.insert("listed".into(), listed.into());
                let info = match c.get_process(&id).await {
                    Ok(info) => info,
                    Err(e) if gone(&e) => {
                        // The server forgot it; is the OS process still there, orphaned?
                        let orphans = marked_processes(c, &self.settings.session_suffix, false)
                            .await
                            .unwrap_or_default();
                        detail.insert("orphanPids".into(), orphans.clone().into());
                        let mut failure = self.failure(Some("process gone"), &e);
                        if !orphans.is_empty() {
                            failure
                                .signature
                                .message
                                .push_str(" (still running unlisted)");
                        }
                        return Err(failure.with_detail(detail));
                    }
                    Err(e) => return Err(self.failure(None, &e).with_detail(detail)),
                };
                detail.insert("status".into(), info.status.clone().into());
                detail.insert("exitCode".into(), info.exit_code.into());
                // Output a process just printed may take a moment to be logged.
                let settle = Instant::now() + LOG_SETTLE;
                let (logs, text) = loop {
                    let logs = c
                        .process_logs(&id)
                        .await
                        .map_err(|e| self.failure(None, &e).with_detail(detail.clone()))?;
                    let text: Vec<u8> = logs.iter().flat_map(|l| l.data.clone()).collect();
                    let found = logs_contain.as_ref().is_none_or(|wanted| {
                        String::from_utf8_lossy(&text).contains(wanted.as_str())
                    });
                    if found || Instant::now() >= settle {
                        break (logs, text);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                };
                detail.insert("logEntries".into(), logs.len().into());
                detail.insert("logBytes".into(), text.len().into());
                let state_ok = match expect {
                    ProcessExpect::Running => info.status == "running",
                    ProcessExpect::Exited => info.status == "exited",
                    ProcessExpect::Listed => true,
                };
                if !listed || !state_ok {
                    let message = if !listed {
                        format!("process gone: {id} is not in the process list")
                    } else {
                        format!(
                            "process {}: status {}{}",
                            if *expect == ProcessExpect::Running {
                                "stopped"
                            } else {
                                "still running"
                            },
                            info.status,
                            info.exit_code
                                .map(|c| format!(", exit code {c}"))
                                .unwrap_or_default()
                        )
                    };
                    return Err(
                        StepFailure::new(diagnose::other(SignatureKind::Client, message))
                            .with_detail(detail),
                    );
                }
                if let Some(wanted) = logs_contain {
                    let kept = String::from_utf8_lossy(&text).contains(wanted.as_str());
                    detail.insert("logsRetained".into(), kept.into());
                    if !kept {
                        return Err(StepFailure::new(diagnose::other(
                            SignatureKind::Integrity,
                            format!("logs lost: {} entries, none has {wanted:?}", logs.len()),
                        ))
                        .with_detail(detail));
                    }
                }
            }
            Step::TerminalAttach {
                client,
                process,
                terminal,
            } => {
                let id = self.process_id(process)?;
                let attached = self
                    .sandbox_client(client)?
                    .attach_terminal(&id)
                    .await
                    .map_err(|e| self.terminal_failure(&e))?;
                attached
                    .wait_ready()
                    .await
                    .map_err(|e| self.terminal_failure(&e))?;
                detail.insert("processId".into(), id.into());
                detail.insert("ready".into(), true.into());
                self.sandbox.terminals.insert(
                    terminal.clone(),
                    TerminalEntry {
                        terminal: attached,
                        mark: 0,
                        sent: Vec::new(),
                    },
                );
            }
            Step::TerminalSend { terminal, text } => {
                // Recorded before sending: a `terminal_expect` after a failed
                // send waits for this line, never for an older echo.
                let entry = self.sandbox.terminals.get_mut(terminal).ok_or_else(|| {
                    StepFailure::new(diagnose::other(
                        SignatureKind::Client,
                        format!("terminal `{terminal}` is not attached (its attach failed)"),
                    ))
                })?;
                entry.mark = entry.terminal.mark();
                entry.sent.push(text.clone());
                let entry = self.entry(terminal)?;
                entry
                    .terminal
                    .send_line(text)
                    .await
                    .map_err(|e| self.terminal_failure(&e))?;
                detail.insert("bytes".into(), (text.len() + 1).into());
            }
            Step::TerminalExpect { terminal, text } => {
                let entry = self.entry(terminal)?;
                let Some(wanted) = text.clone().or_else(|| entry.sent.last().cloned()) else {
                    return Err(StepFailure::new(diagnose::other(
                        SignatureKind::Client,
                        format!("nothing was sent on terminal `{terminal}` to expect back"),
                    )));
                };
                let seen = entry
                    .terminal
                    .expect(&wanted, entry.mark)
                    .await
                    .map_err(|e| {
                        self.terminal_failure(&e)
                            .with("output", entry.terminal.output_since(entry.mark))
                    })?;
                detail.insert("expected".into(), wanted.into());
                detail.insert("bytesSeen".into(), seen.into());
            }
            Step::TerminalReattach { client, terminal } => {
                let entry = self.entry(terminal)?;
                let process_id = entry.terminal.process_id().to_string();
                record_old_socket(&entry.terminal, &mut detail);
                // Let output already under way land before the new attach, so
                // only a replay can bring old lines to the new socket.
                let quiet_by = Instant::now() + QUIET_BOUND;
                loop {
                    let before = entry.terminal.mark();
                    tokio::time::sleep(QUIET_GAP).await;
                    if entry.terminal.mark() == before || Instant::now() >= quiet_by {
                        break;
                    }
                }
                entry.terminal.close().await;
                let fresh = self
                    .sandbox_client(client)?
                    .attach_terminal(&process_id)
                    .await
                    .map_err(|e| self.terminal_failure(&e).with_detail(detail.clone()))?;
                fresh
                    .wait_ready()
                    .await
                    .map_err(|e| self.terminal_failure(&e).with_detail(detail.clone()))?;
                tokio::time::sleep(SCROLLBACK_WAIT).await;
                // Live output of the last line may still arrive on the new
                // socket; only the first line ever sent proves a replay.
                let replayed = fresh.output_since(0);
                let kept = entry
                    .sent
                    .first()
                    .is_some_and(|first| replayed.contains(first.as_str()));
                detail.insert("scrollbackBytes".into(), replayed.len().into());
                detail.insert("scrollbackKept".into(), kept.into());
                let entry = self.sandbox.terminals.get_mut(terminal).expect("checked");
                entry.terminal = fresh;
                entry.mark = entry.terminal.mark();
            }
            other => unreachable!("{} is not a sandbox step", other.kind()),
        }
        Ok(detail)
    }

    /// Closes the cell's terminals and removes its processes and files, bounded,
    /// with a fresh client (the scenario's may be disposed or broken). `None`
    /// when the cell made nothing.
    pub(super) async fn sandbox_teardown(&mut self) -> Option<PhaseResult> {
        if self.sandbox.is_empty() {
            return None;
        }
        let started = Instant::now();
        let state = std::mem::take(&mut self.sandbox);
        for entry in state.terminals.values() {
            let _ = tokio::time::timeout(Duration::from_secs(1), entry.terminal.close()).await;
        }
        let mut options = ClientOptions::new(
            self.settings.base_url.clone(),
            Arc::new(MemoryDriver::default()),
        );
        options.token = self.settings.token.clone();
        options.headers = self.settings.headers.clone();
        let mut detail = Map::new();
        let mut errors: Vec<String> = Vec::new();
        let mut orphans = 0usize;
        let work = async {
            let client = Client::connect(options).map_err(|e| e.to_string())?;
            for id in state.processes.values() {
                if let Err(e) = client.remove_process(id).await {
                    errors.push(format!("process {id}: {e}"));
                }
            }
            // A server restart can orphan its processes (a PTY process has
            // its own session): the cell's mark in their environment finds them.
            if !state.processes.is_empty() {
                match marked_processes(&client, &self.settings.session_suffix, true).await {
                    Ok(killed) => {
                        orphans = killed.len();
                    }
                    Err(e) => errors.push(format!("orphan sweep: {e}")),
                }
            }
            if !state.files.is_empty() {
                match client.delete_entry(&self.sandbox_folder()).await {
                    Err(e) if !file_missing(&e) => {
                        errors.push(format!("folder {}: {e}", self.sandbox_folder()))
                    }
                    _ => {}
                }
            }
            client.dispose().await;
            Ok::<(), String>(())
        };
        let outcome = tokio::time::timeout(TEARDOWN_BOUND, work).await;
        detail.insert("processes".into(), state.processes.len().into());
        detail.insert("files".into(), state.files.len().into());
        detail.insert("orphansKilled".into(), orphans.into());
        let signature = match outcome {
            Err(_) => Some(diagnose::timeout(
                millis(TEARDOWN_BOUND),
                "removing the cell's processes and files",
            )),
            Ok(Err(e)) => Some(diagnose::other(SignatureKind::Client, e)),
            Ok(Ok(())) if !errors.is_empty() => Some(diagnose::other(
                SignatureKind::Client,
                crate::secret::redact(&errors.join("; "), self.settings.token.as_ref()),
            )),
            Ok(Ok(())) => None,
        };
        let ok = signature.is_none();
        Some(PhaseResult {
            name: "sandboxCleanup".into(),
            step: "sandbox_cleanup".into(),
            verdict: false,
            cleanup: true,
            outcome: match (&signature, ok) {
                (_, true) => Outcome::Ok,
                (Some(s), _) if s.kind == SignatureKind::Timeout => Outcome::Timeout,
                _ => Outcome::Fail,
            },
            ok,
            duration_ms: millis(started.elapsed()),
            deadline_ms: millis(TEARDOWN_BOUND),
            detail,
            signature,
        })
    }
}

/// Pids of the sandbox's processes whose environment carries this cell's
/// mark (read from `/proc` by a one-off command in the sandbox, so it works
/// on a remote deployment too); with `kill`, SIGKILLs them first. The mark
/// proves ownership: nothing else has `CONTINUITY_CELL=<this cell>`.
async fn marked_processes(client: &Client, suffix: &str, kill: bool) -> Result<Vec<i64>, String> {
    if suffix.is_empty()
        || !suffix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(format!("cell id {suffix:?} is not safe in a shell word"));
    }
    let action = if kill { "kill -9 \"$p\"; " } else { "" };
    let script = format!(
        "{{ for f in /proc/[0-9]*/environ; do \
         if tr '\\0' '\\n' < \"$f\" | grep -qx '{CELL_MARK}={suffix}'; then \
         p=${{f#/proc/}}; p=${{p%/environ}}; {action}echo \"$p\"; fi; done; }} 2>/dev/null; true"
    );
    let result = client
        .run_command("sh", &["-c", &script], 10_000)
        .await
        .map_err(|e| e.to_string())?;
    Ok(result
        .get("stdout")
        .and_then(Value::as_str)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

fn record_old_socket(old: &Terminal, detail: &mut Map<String, Value>) {
    match old.closed() {
        Some(close) => {
            detail.insert("oldSocket".into(), "closed".into());
            detail.insert("oldCloseCode".into(), close.code.into());
            detail.insert("oldCloseClean".into(), close.clean.into());
            detail.insert("oldCloseReason".into(), close.reason.into());
        }
        None => {
            detail.insert("oldSocket".into(), "open".into());
        }
    }
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
fn file_missing(error: &ClientError) -> bool {
    gone(error)
        || matches!(error, ClientError::Acp(AcpError::Http { status: 400, problem: Some(p) })
            if p.detail.as_deref().is_some_and(|d| d.contains("not found")))
}

/// A terminal failure as a signature: the close code leads the message.
pub(crate) fn terminal_signature(
    error: &TerminalError,
    token: Option<&crate::secret::Secret>,
) -> Signature {
    let message = crate::secret::redact(&error.to_string(), token);
    let mut signature = diagnose::other(SignatureKind::StreamClosed, message);
    match error {
        TerminalError::Refused {
            status,
            problem_type,
            ..
        } => {
            signature.kind = SignatureKind::Http;
            signature.http_status = Some(*status);
            signature.problem_type = problem_type.clone();
        }
        TerminalError::Connect(_) => signature.kind = SignatureKind::Connect,
        TerminalError::Protocol(_) => signature.kind = SignatureKind::Protocol,
        TerminalError::Closed(_) | TerminalError::Exited(_) => {}
    }
    signature
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::CloseInfo;

    #[test]
    fn terminal_failures_become_signatures_led_by_what_a_user_searches_for() {
        let refused = terminal_signature(
            &TerminalError::Refused {
                status: 401,
                problem_type: Some("token_invalid".into()),
                detail: Some("token invalid".into()),
            },
            None,
        );
        assert_eq!(
            (
                refused.kind,
                refused.http_status,
                refused.problem_type.as_deref()
            ),
            (SignatureKind::Http, Some(401), Some("token_invalid"))
        );
        assert!(refused.message.starts_with("ws upgrade refused: HTTP 401"));
        let dropped = terminal_signature(
            &TerminalError::Closed(CloseInfo {
                code: 1006,
                reason: "reset".into(),
                clean: false,
            }),
            None,
        );
        assert_eq!(dropped.kind, SignatureKind::StreamClosed);
        assert_eq!(dropped.message, "ws close 1006 (reset)");
        let bad = terminal_signature(&TerminalError::Protocol("x".into()), None);
        assert_eq!(bad.kind, SignatureKind::Protocol);
    }

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
