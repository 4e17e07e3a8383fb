//! The real SDK's turns, sandbox and terminal steps (`--client ts-sdk` and
//! `--client browser`): each one an action its host answers by calling the
//! SDK's own API (`stack/rivet/sdk-steps.mjs`: `session.prompt` left
//! pending, `runProcess`, `writeFsFile`, `readFsFile`, `createProcess`,
//! `getProcess`, `getProcessLogs`, `connectProcessTerminal`, …), its answer
//! mapped into the detail and failure signature the Rust client's step
//! records (`turns.rs`, `sandbox_steps.rs`, `terminal_steps.rs`), so the two
//! clients' phases compare like with like. What the cell made is recorded
//! in its sandbox state, for the harness's own teardown.
//!
//! Over 400 lines on purpose: each step here mirrors a Rust client's step of
//! `turns.rs`, `sandbox_steps.rs` or `terminal_steps.rs` and maps the SDK's
//! answer into the same detail and signature through the same helpers
//! (`sdk_failure`, the history settle, `HostedTurn`); split by kind, that
//! one mapping would be spread over three files.

use super::super::chunks::{agent_turn_over, chunk_seq, sent_chunks, turn_end_in, ChunkFigures};
use super::super::driver::ScenarioClient;
use super::super::hosted_data::hosted_signature;
use super::super::{RunningCell, StepFailure, StepResult};
use super::{unreadable, SdkClient};
use crate::client::hosted::SdkHost;
use crate::client::hosted::{HostedError, SdkError};
use crate::client::sdk_action::{self, answer, SdkAction};
use crate::clock::millis;
use crate::diagnose;
use crate::persist::Sender;
use crate::report::detail::{self, AwaitTurnDetail, Detail, ProbeDetail, ProcessStatusDetail};
use crate::report::detail::{ReadFileDetail, SpawnDetail, TurnStartDetail, WriteFileDetail};
use crate::report::detail::{TerminalAttachDetail, TerminalReattachDetail, WriteLoss};
use crate::report::SignatureKind;
use crate::scenario::ProcessExpect;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::time::Duration;

/// How long the probe may take before the sandbox counts as not there
/// (the Rust client's limit).
const PROBE_LIMIT: Duration = Duration::from_secs(15);
/// How long a fresh terminal waits for replayed output (the Rust client's).
const SCROLLBACK_WAIT_MS: u64 = 300;
/// How long the SDK's history may stand still before its writes count as landed.
const HISTORY_QUIET: Duration = Duration::from_millis(400);
/// How long `recover_turn` waits at most for the SDK's writes to land.
const HISTORY_SETTLE: Duration = Duration::from_millis(2000);
/// The whole stored history, for the turn's integrity check.
const HISTORY_LIMIT: usize = 100_000;

/// A turn the SDK's host runs: its session, its chunks' tag, and the
/// chunks the SDK delivered through `session.onEvent` by the await.
#[derive(Debug, Clone, Default)]
pub(super) struct HostedTurn {
    session_id: String,
    tag: String,
    delivered: Option<BTreeSet<u32>>,
    /// Where the SDK's stream stood (its server id, the last event id it
    /// had when the prompt went out), from its wire at the await.
    server_id: Option<String>,
    last_event_id: Option<String>,
}

/// What the SDK itself delivered during a turn (`session.onEvent`), beside
/// the Rust client's stream figures, which the SDK does not expose.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct SdkTurnSeen {
    sdk_events_seen: u64,
    sdk_chunks_delivered: usize,
}

/// The SDK's error, as the phase's failure signature.
fn sdk_failure(cell: &RunningCell<'_>, error: SdkError) -> StepFailure {
    StepFailure::new(hosted_signature(
        &HostedError::Sdk(Box::new(error)),
        cell.settings.token.as_ref(),
    ))
}

fn client_error(message: String) -> StepFailure {
    StepFailure::new(diagnose::other(SignatureKind::Client, message))
}

impl<H: SdkHost> SdkClient<H> {
    pub(super) async fn sdk_start_turn(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        session: &str,
        text: &str,
        turn: &str,
    ) -> StepResult {
        let session_id = cell.session_id(session);
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let tag = format!("{turn}-{}-{}", cell.settings.session_suffix, &nonce[..8]);
        cell.transcripts
            .entry(session.to_string())
            .or_default()
            .push(text.to_string());
        let action = SdkAction::StartTurn {
            phase: self.phase(),
            client: client.into(),
            id: session_id.clone(),
            text: format!("{text} [[turn:{tag}]]"),
            turn: turn.into(),
        };
        let started: sdk_action::TurnStarted = self.act_as(cell, action).await?;
        cell.turns.started_elsewhere();
        self.turns().insert(
            turn.to_string(),
            HostedTurn {
                session_id: session_id.clone(),
                tag: tag.clone(),
                delivered: None,
                server_id: None,
                last_event_id: None,
            },
        );
        let mut detail = TurnStartDetail {
            turn: turn.into(),
            session_id,
            turn_tag: tag,
        }
        .to_map();
        if let Some(handle) = started.handle {
            detail.insert("handle".into(), handle);
        }
        Ok(detail)
    }

    pub(super) async fn sdk_await_turn(
        &self,
        cell: &mut RunningCell<'_>,
        name: &str,
        deadline: Duration,
    ) -> StepResult {
        let Some(turn) = self.turns().get(name).cloned() else {
            return Err(client_error(format!("turn `{name}` was never started")));
        };
        let action = SdkAction::AwaitTurn {
            phase: self.phase(),
            turn: name.into(),
            wait_ms: millis(deadline),
        };
        let awaited: sdk_action::TurnAwaited = self.act_as(cell, action).await?;
        let delivered: BTreeSet<u32> = awaited
            .chunks
            .iter()
            .filter_map(|text| chunk_seq(&chunk_payload(text), &turn.tag))
            .collect();
        let seen = SdkTurnSeen {
            sdk_events_seen: awaited.events_seen.unwrap_or(0),
            sdk_chunks_delivered: delivered.len(),
        };
        if let Some(held) = self.turns().get_mut(name) {
            held.delivered = Some(delivered);
            held.server_id = awaited.server_id.clone();
            held.last_event_id = awaited.last_event_id.clone();
        }
        let mut detail = AwaitTurnDetail {
            turn_ms: awaited.turn_ms.unwrap_or(0),
            turn_outcome: awaited.turn_outcome.clone().unwrap_or_default(),
            stop_reason: awaited.stop_reason.clone(),
            ..AwaitTurnDetail::default()
        };
        if awaited.turn_outcome.as_deref() == Some("completed") {
            detail.answered_via = Some(awaited.answered_via.clone().unwrap_or("unknown".into()));
        }
        match (awaited.turn_outcome.as_deref(), awaited.error) {
            (Some("completed"), _) => {
                let mut map = detail.to_map();
                seen.write_to(&mut map);
                Ok(map)
            }
            (Some("failed"), Some(error)) => {
                let failure = sdk_failure(cell, error);
                detail.cause = Some(failure.signature.message.clone());
                let mut map = detail.to_map();
                seen.write_to(&mut map);
                Err(failure.with_detail(map))
            }
            (Some("lost"), _) => {
                let words = format!(
                    "session.prompt still pending: the SDK delivered {} events, {} of the turn's chunks",
                    seen.sdk_events_seen, seen.sdk_chunks_delivered
                );
                detail.seen = Some(words.clone());
                let mut map = detail.to_map();
                seen.write_to(&mut map);
                let what = format!("the outcome of turn {name} ({words})");
                Err(StepFailure::new(diagnose::timeout(millis(deadline), what)).with_detail(map))
            }
            (other, _) => Err(StepFailure::new(diagnose::other(
                SignatureKind::Protocol,
                format!("awaitTurn answered turn outcome {other:?}"),
            ))),
        }
    }

    /// What the SDK holds of turn `name` for `recover_turn`: its session's
    /// stored history (the `history` action) and where its stream stood.
    pub(super) async fn sdk_turn_evidence(
        &self,
        cell: &mut RunningCell<'_>,
        reader: &str,
        name: &str,
    ) -> Result<super::super::recover_turn::TurnEvidence, StepFailure> {
        let Some(turn) = self.turns().get(name).cloned() else {
            return Err(client_error(format!("turn `{name}` was never started")));
        };
        let history = self.settled_history(cell, reader, &turn).await?;
        Ok(super::super::recover_turn::TurnEvidence {
            tag: turn.tag,
            history,
            server_id: turn.server_id,
            last_event_id: turn.last_event_id,
        })
    }

    /// The session's stored payloads once the SDK's writes of the turn
    /// have landed: the SDK stores each event on its own after delivering
    /// it, so the history is read again until it holds the turn's end or
    /// stops growing (as a `getEvents` a moment later would see it).
    async fn settled_history(
        &self,
        cell: &mut RunningCell<'_>,
        reader: &str,
        turn: &HostedTurn,
    ) -> Result<Vec<Value>, StepFailure> {
        let started = std::time::Instant::now();
        let mut last_change = started;
        let mut history: Vec<Value> = Vec::new();
        loop {
            let events = self.replay_history(cell, reader, &turn.session_id).await?;
            if events.len() != history.len() {
                last_change = std::time::Instant::now();
            }
            history = events.into_iter().map(|e| e.payload).collect();
            let ended = turn_end_in(&history, &turn.tag).last_chunk;
            if ended
                || last_change.elapsed() >= HISTORY_QUIET
                || started.elapsed() >= HISTORY_SETTLE
            {
                return Ok(history);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The turn's chunks in the SDK's store against the agent's sent
    /// record (as the Rust client judges its own), then the history's integrity.
    pub(super) async fn sdk_turn_history(
        &self,
        cell: &mut RunningCell<'_>,
        reader: &str,
        name: &str,
    ) -> StepResult {
        let Some(turn) = self.turns().get(name).cloned() else {
            return Err(client_error(format!("turn `{name}` was never started")));
        };
        if let Some(log) = &cell.settings.agent_sent_log {
            agent_turn_over(log, &turn.tag).await;
        }
        let events = self.replay_history(cell, reader, &turn.session_id).await?;
        let mut ordered: Vec<(i64, u32)> = events
            .iter()
            .filter(|e| e.sender == Sender::Agent)
            .filter_map(|e| chunk_seq(&e.payload, &turn.tag).map(|seq| (e.event_index, seq)))
            .collect();
        ordered.sort();
        let stored: Vec<u32> = ordered.iter().map(|(_, seq)| *seq).collect();
        let sent = cell
            .settings
            .agent_sent_log
            .as_deref()
            .map(|p| sent_chunks(p, &turn.tag));
        let figures = ChunkFigures::judge(&stored, sent.as_ref());
        let mut detail = figures.detail().to_map();
        if let Some(delivered) = &turn.delivered {
            detail.insert("sdkChunksDelivered".into(), delivered.len().into());
        }
        let integrity = self
            .get_events(cell, reader, &turn.session_id, HISTORY_LIMIT, true)
            .await;
        let indexes = match integrity {
            Ok(found) => {
                detail.extend(found);
                Ok(())
            }
            Err(failure) => {
                detail.extend(failure.detail.clone());
                Err(failure)
            }
        };
        if figures.is_clean() {
            return indexes.map(|()| detail);
        }
        let writes = detail::read::<WriteLoss>(&detail).unwrap_or_default();
        let (loud, silent) = (writes.writes_failed_loudly, writes.writes_lost_silently);
        let how = match (loud, silent) {
            (0, 0) => String::new(),
            _ => format!("; writes: {loud} failed loudly, {silent} lost silently"),
        };
        let message = format!("turn {name}: {}{how}", figures.describe());
        Err(
            StepFailure::new(diagnose::other(SignatureKind::Integrity, message))
                .with_detail(detail),
        )
    }

    /// `probe`: the SDK's `runProcess` of `pwd`, within the probe's limit.
    pub(super) async fn sdk_probe(&self, cell: &mut RunningCell<'_>, client: &str) -> StepResult {
        let action = SdkAction::Probe {
            phase: self.phase(),
            client: client.into(),
        };
        let Ok(probed) = tokio::time::timeout(PROBE_LIMIT, self.act(cell, action)).await else {
            return Err(StepFailure::new(diagnose::timeout(
                millis(PROBE_LIMIT),
                "the SDK's runProcess(pwd)",
            ))
            .with_detail(ProbeDetail::failed("no_sandbox")));
        };
        let run = match probed {
            Ok(out) => unreadable::<sdk_action::Probed>("probe", answer(&out))
                .map_err(|f| f.with_detail(ProbeDetail::failed("error")))?
                .run
                .unwrap_or(Value::Null),
            Err(failure) => {
                let status = match (failure.signature.kind, failure.signature.http_status) {
                    (_, Some(404 | 410)) => "expired",
                    (SignatureKind::Connect, _) => "no_sandbox",
                    _ => "error",
                };
                return Err(failure.with_detail(ProbeDetail::failed(status)));
            }
        };
        if run.get("exitCode").and_then(Value::as_i64) != Some(0) {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Protocol,
                format!("pwd did not succeed: {run}"),
            ))
            .with_detail(ProbeDetail::failed("error")));
        }
        Ok(ProbeDetail {
            status: "connected".into(),
            stdout: Some(run.get("stdout").cloned().unwrap_or(Value::Null)),
        }
        .to_map())
    }

    /// `write_file`: `mkdirFs` and `writeFsFile` into the cell's sandbox folder.
    pub(super) async fn sdk_write_file(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        path: &str,
        content: &str,
    ) -> StepResult {
        let full = format!("{}/{path}", cell.sandbox_folder());
        // Recorded first: a write that fails half-way still gets cleaned up.
        cell.sandbox
            .files
            .insert(path.to_string(), content.as_bytes().to_vec());
        let action = SdkAction::WriteFile {
            phase: self.phase(),
            client: client.into(),
            path: full.clone(),
            content: content.into(),
        };
        self.act(cell, action).await?;
        Ok(WriteFileDetail {
            path: full,
            bytes: content.len(),
        }
        .to_map())
    }

    /// `read_file`: the SDK's `readFsFile`, compared with what the cell wrote.
    pub(super) async fn sdk_read_file(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        path: &str,
    ) -> StepResult {
        let full = format!("{}/{path}", cell.sandbox_folder());
        let mut detail = ReadFileDetail {
            path: full.clone(),
            ..ReadFileDetail::default()
        };
        let action = SdkAction::ReadFile {
            phase: self.phase(),
            client: client.into(),
            path: full,
        };
        let out = match self.act(cell, action).await {
            Ok(out) => out,
            Err(mut failure) => {
                let missing = matches!(failure.signature.http_status, Some(404 | 410))
                    || (failure.signature.http_status == Some(400)
                        && failure.signature.message.contains("not found"));
                if missing {
                    detail.exists = Some(false);
                    let message = format!("file missing: {}", failure.signature.message);
                    failure.signature.message = message;
                }
                return Err(failure.with_detail(detail.to_map()));
            }
        };
        let read: sdk_action::ReadBack = unreadable("readFile", answer(&out))?;
        let bytes = read.content.unwrap_or_default().into_bytes();
        let expected = cell.sandbox.files.get(path).cloned().unwrap_or_default();
        detail.exists = Some(true);
        detail.bytes = Some(bytes.len());
        detail.same_bytes = Some(bytes == expected);
        if bytes != expected {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Integrity,
                format!(
                    "file changed: read {} bytes, wrote {}",
                    bytes.len(),
                    expected.len()
                ),
            ))
            .with_detail(detail.to_map()));
        }
        Ok(detail.to_map())
    }

    /// `spawn_process`: the SDK's `createProcess`, marked with the cell's id.
    pub(super) async fn sdk_spawn_process(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        command: &[String],
        tty: bool,
    ) -> StepResult {
        let mut env = Map::new();
        env.insert(
            super::super::sandbox_steps::CELL_MARK.into(),
            cell.settings.session_suffix.clone().into(),
        );
        let action = SdkAction::SpawnProcess {
            phase: self.phase(),
            client: client.into(),
            command: command[0].clone(),
            args: command[1..].to_vec(),
            tty,
            env,
        };
        cell.sandbox.spawned = true;
        let spawned: sdk_action::Spawned = self.act_as(cell, action).await?;
        let info = spawned.process.unwrap_or(Value::Null);
        let Some(id) = info.get("id").and_then(Value::as_str) else {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Protocol,
                "createProcess answered no process id",
            )));
        };
        cell.sandbox
            .processes
            .insert(process.to_string(), id.to_string());
        Ok(SpawnDetail {
            process_id: id.to_string(),
            status: text(&info, "status"),
            pid: info.get("pid").and_then(Value::as_i64),
        }
        .to_map())
    }

    /// `process_status`: listed (`listProcesses`), its state (`getProcess`)
    /// and its logs kept (`getProcessLogs`), judged as the Rust client judges.
    pub(super) async fn sdk_process_status(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        expect: ProcessExpect,
        logs_contain: Option<&str>,
    ) -> StepResult {
        let id = cell.process_id(process)?;
        let action = SdkAction::ProcessStatus {
            phase: self.phase(),
            client: client.into(),
            process_id: id.clone(),
            logs_contain: logs_contain.map(str::to_string),
        };
        let seen: sdk_action::ProcessSeen = self.act_as(cell, action).await?;
        let mut detail = ProcessStatusDetail {
            process_id: id.clone(),
            listed: seen.listed,
            ..ProcessStatusDetail::default()
        };
        let listed = seen.listed.unwrap_or(false);
        if let Some(error) = seen.process_error {
            let mut failure = sdk_failure(cell, error);
            if matches!(failure.signature.http_status, Some(404 | 410)) {
                failure.signature.message = format!("process gone: {}", failure.signature.message);
            }
            return Err(failure.with_detail(detail.to_map()));
        }
        let info = seen.process.unwrap_or(Value::Null);
        let status = text(&info, "status");
        let exit_code = info.get("exitCode").and_then(Value::as_i64);
        let logs = seen.log_text.unwrap_or_default();
        detail.status = Some(status.clone());
        detail.exit_code = Some(exit_code);
        detail.log_entries = seen.log_entries;
        detail.log_bytes = Some(logs.len());
        let state_ok = match expect {
            ProcessExpect::Running => status == "running",
            ProcessExpect::Exited => status == "exited",
            ProcessExpect::Listed => true,
        };
        if !listed || !state_ok {
            let message = if !listed {
                format!("process gone: {id} is not in the process list")
            } else {
                let word = match expect {
                    ProcessExpect::Running => "stopped",
                    _ => "still running",
                };
                let code = exit_code.map(|c| format!(", exit code {c}"));
                format!(
                    "process {word}: status {status}{}",
                    code.unwrap_or_default()
                )
            };
            return Err(client_error(message).with_detail(detail));
        }
        if let Some(wanted) = logs_contain {
            let kept = logs.contains(wanted);
            detail.logs_retained = Some(kept);
            if !kept {
                let entries = detail.log_entries.unwrap_or(0);
                return Err(StepFailure::new(diagnose::other(
                    SignatureKind::Integrity,
                    format!("logs lost: {entries} entries, none has {wanted:?}"),
                ))
                .with_detail(detail));
            }
        }
        Ok(detail.to_map())
    }

    /// `terminal_attach`: the SDK's `connectProcessTerminal`, until `ready`.
    pub(super) async fn sdk_terminal_attach(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        terminal: &str,
    ) -> StepResult {
        let process_id = cell.process_id(process)?;
        let action = SdkAction::TerminalAttach {
            phase: self.phase(),
            client: client.into(),
            terminal: terminal.into(),
            process_id: process_id.clone(),
            wait_ms: millis(self.running().1),
        };
        self.act(cell, action).await?;
        self.terminals()
            .insert(terminal.to_string(), process_id.clone());
        Ok(TerminalAttachDetail {
            process_id,
            ready: true,
        }
        .to_map())
    }

    /// `terminal_send` and `terminal_expect`: the terminal's own answers
    /// (`TerminalSendDetail`, `TerminalExpectDetail`), as the host gives them.
    pub(super) async fn sdk_terminal(
        &self,
        cell: &mut RunningCell<'_>,
        action: SdkAction,
    ) -> StepResult {
        let mut out = self.act(cell, action).await?;
        out.remove("ok");
        out.remove("wire");
        Ok(out)
    }

    /// `terminal_reattach`: the old socket's fate, a new `connectProcessTerminal`.
    pub(super) async fn sdk_terminal_reattach(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        terminal: &str,
    ) -> StepResult {
        // Never attached: the host's own answer (NotAttached) says so.
        let process_id = self.terminals().get(terminal).cloned().unwrap_or_default();
        let action = SdkAction::TerminalReattach {
            phase: self.phase(),
            client: client.into(),
            terminal: terminal.into(),
            process_id,
            wait_ms: millis(self.running().1),
            scrollback_ms: SCROLLBACK_WAIT_MS,
        };
        let reattached: TerminalReattachDetail = self.act_as(cell, action).await?;
        Ok(reattached.to_map())
    }
}

/// A chunk's text as the `session/update` payload `chunk_seq` reads.
fn chunk_payload(text: &str) -> Value {
    serde_json::json!({"params": {"update": {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}
    }}})
}

fn text(info: &Value, key: &str) -> String {
    info.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_the_sdk_delivered_is_read_with_its_turns_tag_only() {
        let payload = chunk_payload("long-t-1 chunk 3/40");
        assert_eq!(chunk_seq(&payload, "long-t-1"), Some(3));
        assert_eq!(chunk_seq(&payload, "long-t-2"), None);
    }
}
