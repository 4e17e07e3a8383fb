//! Turns that overlap other phases: a `prompt` with `wait = false` runs on
//! as a task, `restart` with `after_ms` lands inside it, `await_turn`
//! collects its outcome under its own deadline (completed — by POST, stream
//! or resumed stream —, failed with its cause, or lost), and `turn_history`
//! checks the chunks it streamed against the scripted agent's sent record.
//! A turn the cell never collects is cancelled before the clients go.

use super::chunks::{agent_turn_over, chunk_seq, sent_chunks, ChunkFigures};
use super::{RunningCell, StepFailure, StepResult};
use crate::acp::StreamStats;
use crate::client::{Client, ClientError, PromptOutcome};
use crate::clock::millis;
use crate::diagnose;
use crate::persist::{list_all_events, Sender};
use crate::report::detail::{self, Detail, RestartAfter, TurnRestartDetail, WriteLoss};
use crate::report::detail::{AwaitTurnDetail, StreamDetail, TurnStartDetail};
use crate::report::SignatureKind;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How long cancelling a turn (`session/cancel`) may take.
const CANCEL_BOUND: Duration = Duration::from_secs(2);
/// `await_turn`'s phase deadline is its turn deadline plus this, so the
/// step itself, not the phase timer, reports a lost turn with what it saw.
pub(super) const AWAIT_MARGIN: Duration = Duration::from_secs(5);

type TurnTask = JoinHandle<Result<PromptOutcome, ClientError>>;

/// The cell's named turns.
#[derive(Default)]
pub(super) struct Turns {
    turns: HashMap<String, Turn>,
    /// When the latest turn started: `restart`'s `after_ms` counts from it.
    latest_start: Option<Instant>,
}

struct Turn {
    client: Arc<Client>,
    session_id: String,
    /// The `[[turn:TAG]]` the scripted agent tags the turn's chunks with.
    tag: String,
    started: Instant,
    stats_before: StreamStats,
    /// The server id its prompt went to, and the last stream event the
    /// client had then: where a recovering client re-attaches.
    server_id: Option<String>,
    last_event_id: Option<String>,
    /// Until `await_turn` takes it.
    task: Option<TurnTask>,
}

impl Turns {
    /// A turn the client holds itself (the SDK's host) started now: a
    /// timed `restart` counts from it.
    pub(super) fn started_elsewhere(&mut self) -> Instant {
        let now = Instant::now();
        self.latest_start = Some(now);
        now
    }

    /// Cancels every turn still running (`session/cancel`, bounded) and stops its task.
    pub(super) async fn cancel_running(&mut self) {
        for turn in self.turns.values_mut() {
            if let Some(task) = turn.task.take() {
                if task.is_finished() {
                    continue;
                }
                cancel(&turn.client, &turn.session_id, task).await;
            }
        }
    }
}

/// A cell dropped mid-way (an interrupted run) stops its turns' tasks, so no
/// prompt outlives its cell; a finished cell has cancelled them already.
impl Drop for Turns {
    fn drop(&mut self) {
        for turn in self.turns.values_mut() {
            if let Some(task) = turn.task.take() {
                task.abort();
            }
        }
    }
}

impl RunningCell<'_> {
    /// `restart` with `after_ms`: waits until `after` past the latest
    /// turn's start, then restarts the target for phase `phase`.
    pub(super) async fn restart_during_turn(&mut self, phase: &str, after: Duration) -> StepResult {
        let elapsed = self
            .turns
            .latest_start
            .map_or(Duration::ZERO, |s| s.elapsed());
        tokio::time::sleep(after.saturating_sub(elapsed)).await;
        let into = self.turns.latest_start.map(|s| s.elapsed());
        let restart = match self.restart_detail(phase).await {
            Ok(restart) => restart,
            Err(mut failure) => {
                RestartAfter {
                    after_ms: millis(after),
                }
                .write_to(&mut failure.detail);
                return Err(failure);
            }
        };
        Ok(TurnRestartDetail {
            restart,
            after_ms: millis(after),
            started_into_turn_ms: into.map(millis),
        }
        .to_map())
    }

    pub(super) async fn start_turn(
        &mut self,
        client: &str,
        session: &str,
        text: &str,
        turn: &str,
    ) -> StepResult {
        let client = Arc::clone(self.client(client)?);
        let session_id = self.session_id(session);
        // Unique per attempt too: every attempt of a cell shares its session
        // suffix, and the agent's sent record spans the whole run.
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let tag = format!("{turn}-{}-{}", self.settings.session_suffix, &nonce[..8]);
        self.transcripts
            .entry(session.to_string())
            .or_default()
            .push(text.to_string());
        let agent = self.settings.agent.clone();
        let stats_before = client.transport_stats(&agent).await.unwrap_or_default();
        let (server_id, last_event_id) = match client.stream_position(&agent).await {
            Some((id, last)) => (Some(id), last),
            None => (None, None),
        };
        let blocks = vec![json!({"type": "text", "text": format!("{text} [[turn:{tag}]]")})];
        let task = {
            let client = Arc::clone(&client);
            let id = session_id.clone();
            tokio::spawn(async move { client.prompt(&id, blocks).await })
        };
        let started = Instant::now();
        self.turns.latest_start = Some(started);
        self.turns.turns.insert(
            turn.to_string(),
            Turn {
                client,
                session_id: session_id.clone(),
                tag: tag.clone(),
                started,
                stats_before,
                server_id,
                last_event_id,
                task: Some(task),
            },
        );
        Ok(TurnStartDetail {
            turn: turn.into(),
            session_id,
            turn_tag: tag,
        }
        .to_map())
    }

    pub(super) async fn await_turn(&mut self, name: &str, deadline: Duration) -> StepResult {
        let agent = self.settings.agent.clone();
        let token = self.settings.token.clone();
        let Some(turn) = self.turns.turns.get_mut(name) else {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("turn `{name}` was never started"),
            )));
        };
        let Some(mut task) = turn.task.take() else {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("turn `{name}` was already collected"),
            )));
        };
        // The turn's prompt is the call this phase waits on (its own began
        // in an earlier phase): the hang detector judges it from here.
        let call = self.settings.trace.call(format!("turn {name}"));
        let outcome = tokio::time::timeout(deadline, &mut task).await;
        drop(call);
        let stats = turn
            .client
            .transport_stats(&agent)
            .await
            .unwrap_or_default();
        let mut detail = AwaitTurnDetail {
            stream: stream_detail(&turn.stats_before, &stats),
            turn_ms: millis(turn.started.elapsed()),
            ..AwaitTurnDetail::default()
        };
        let fail = |kind: &str, signature, mut detail: AwaitTurnDetail| {
            detail.turn_outcome = kind.into();
            Err(StepFailure::new(signature).with_detail(detail.to_map()))
        };
        match outcome {
            Ok(Ok(Ok(result))) => {
                detail.turn_outcome = "completed".into();
                detail.stop_reason = Some(result.stop_reason);
                let answer = stats.answers.iter().rev().find(|a| {
                    a.method == "session/prompt"
                        && !turn.stats_before.answers.iter().any(|b| b.id == a.id)
                });
                let via = match answer {
                    Some(a) if a.via_stream && a.resumed_stream => "resumed stream",
                    Some(a) if a.via_stream => "stream",
                    Some(_) => "post",
                    None => "unknown",
                };
                detail.answered_via = Some(via.into());
                Ok(detail.to_map())
            }
            Ok(Ok(Err(error))) => {
                let signature = diagnose::signature(&error, token.as_ref());
                detail.cause = Some(signature.message.clone());
                fail("failed", signature, detail)
            }
            Ok(Err(join)) => fail(
                "failed",
                diagnose::other(
                    SignatureKind::Client,
                    format!("the turn's task ended: {join}"),
                ),
                detail,
            ),
            Err(_) => {
                let seen = describe_lost(&turn.stats_before, &stats);
                let ended = cancel(&turn.client, &turn.session_id, task).await;
                detail.seen = Some(seen.clone());
                detail.cancelled = Some(ended);
                fail(
                    "lost",
                    diagnose::timeout(
                        millis(deadline),
                        format!("the outcome of turn {name} ({seen})"),
                    ),
                    detail,
                )
            }
        }
    }

    /// Session `session_id`'s whole stored history, read through `reader`'s
    /// store once every client's writes are flushed.
    async fn stored_events(
        &self,
        reader: &str,
        session_id: &str,
    ) -> Result<Vec<crate::persist::SessionEvent>, StepFailure> {
        let store = Arc::clone(self.client(reader)?.persist());
        for client in self.clients.values() {
            client.flush().await;
        }
        list_all_events(store.as_ref(), session_id)
            .await
            .map_err(|e| StepFailure::new(diagnose::other(SignatureKind::Client, e.to_string())))
    }

    /// What the client holds of turn `name` for `recover_turn`: the
    /// session's stored history (read through `reader`'s store, every
    /// client's writes flushed first) and where its stream stood.
    pub(super) async fn turn_evidence(
        &mut self,
        reader: &str,
        name: &str,
    ) -> Result<super::recover_turn::TurnEvidence, StepFailure> {
        let Some(turn) = self.turns.turns.get(name) else {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("turn `{name}` was never started"),
            )));
        };
        let mut evidence = super::recover_turn::TurnEvidence {
            tag: turn.tag.clone(),
            history: Vec::new(),
            server_id: turn.server_id.clone(),
            last_event_id: turn.last_event_id.clone(),
        };
        let session_id = turn.session_id.clone();
        let events = self.stored_events(reader, &session_id).await?;
        evidence.history = events.into_iter().map(|e| e.payload).collect();
        Ok(evidence)
    }

    /// The turn's chunks in the store against the agent's sent record, and
    /// the session's `eventIndex` sequence.
    pub(super) async fn turn_history(&mut self, reader: &str, name: &str) -> StepResult {
        let Some(turn) = self.turns.turns.get(name) else {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("turn `{name}` was never started"),
            )));
        };
        let (session_id, tag) = (turn.session_id.clone(), turn.tag.clone());
        if let Some(log) = &self.settings.agent_sent_log {
            agent_turn_over(log, &tag).await;
        }
        let events = self.stored_events(reader, &session_id).await?;
        let mut ordered: Vec<(i64, u32)> = events
            .iter()
            .filter(|e| e.sender == Sender::Agent)
            .filter_map(|e| chunk_seq(&e.payload, &tag).map(|seq| (e.event_index, seq)))
            .collect();
        ordered.sort();
        let stored: Vec<u32> = ordered.iter().map(|(_, seq)| *seq).collect();
        let sent = self
            .settings
            .agent_sent_log
            .as_deref()
            .map(|p| sent_chunks(p, &tag));
        let figures = ChunkFigures::judge(&stored, sent.as_ref());
        let mut detail = figures.detail().to_map();
        let indexes = self.check_integrity(reader, &session_id, &mut detail).await;
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
}

/// `session/cancel` for a turn, then waits (bounded) for the prompt to end
/// — the agent answers it `cancelled` — so the notification is on the wire
/// before anyone disposes the client; the task is stopped either way.
/// Returns whether the turn ended.
async fn cancel(client: &Client, session_id: &str, mut task: TurnTask) -> bool {
    let _ = tokio::time::timeout(CANCEL_BOUND, client.cancel(session_id)).await;
    let ended = tokio::time::timeout(CANCEL_BOUND, &mut task).await.is_ok();
    task.abort();
    ended
}

/// What the stream did during the turn, for the report.
fn stream_detail(before: &StreamStats, after: &StreamStats) -> StreamDetail {
    StreamDetail {
        streams_opened: after.streams_opened - before.streams_opened.min(after.streams_opened),
        streams_resumed: after.streams_resumed - before.streams_resumed.min(after.streams_resumed),
        last_event_id: (after.streams_resumed > before.streams_resumed)
            .then(|| after.last_resume_id.clone()),
        stream_ends: new_items(&before.stream_ends, &after.stream_ends),
        transport_closed_by: after.closed_by.clone(),
    }
}

/// A lost turn in one line: what the stream and the POST saw.
fn describe_lost(before: &StreamStats, after: &StreamStats) -> String {
    let opened = after.streams_opened.saturating_sub(before.streams_opened);
    let resumed = after.streams_resumed.saturating_sub(before.streams_resumed);
    let mut parts = vec![format!("stream: {opened} opened, {resumed} resumed")];
    if resumed > 0 {
        if let Some(id) = &after.last_resume_id {
            parts.push(format!("last Last-Event-ID {id}"));
        }
    }
    let ends = new_items(&before.stream_ends, &after.stream_ends);
    if let Some(last) = ends.last() {
        parts.push(format!("stream ended: {last}"));
    }
    let refused = new_items(&before.get_failures, &after.get_failures);
    if let Some(last) = refused.last() {
        parts.push(format!("reconnect refused: {last}"));
    }
    parts.push(match &after.closed_by {
        Some(e) => format!("POST: {e}"),
        None => "POST: no answer and no error".into(),
    });
    parts.join("; ")
}

/// The items of `after` past `before` (both bounded lists, newest last).
fn new_items(before: &[String], after: &[String]) -> Vec<String> {
    let skip = if after.starts_with(before) {
        before.len()
    } else {
        0
    };
    after[skip..].to_vec()
}

#[cfg(test)]
mod tests;
