//! The `client` target as a cell lives it, and what the seed promises of
//! it. A restart of continuity's own clients drops each one as a killed
//! application would (its streams stop, no DELETE: the server keeps their
//! connections until the cell's cleanup, after the verdict) and connects a
//! new one of the same name over the same store, which must restore the
//! session by replay. `replay_check` then reads the stored history and
//! judges the replay the restore sent with its first prompt against the
//! SDK's documented cut: the newest `replayMaxEvents` events, stopped
//! before `replayMaxChars` with `[history truncated]`.

use super::{RunningCell, StepFailure, StepResult};
use crate::client::{
    build_replay_text, DEFAULT_REPLAY_MAX_CHARS, DEFAULT_REPLAY_MAX_EVENTS, REPLAY_PREFIX,
};
use crate::diagnose;
use crate::persist::{list_all_events, Sender, SessionEvent};
use crate::report::detail::{Detail, ReplayDetail};
use crate::report::SignatureKind;
use serde_json::Value;
use std::sync::Arc;

/// What the SDK appends when the character cap cuts the replay.
const TRUNCATED: &str = "\n[history truncated]";

impl RunningCell<'_> {
    /// Every client of the cell, dropped and connected anew under its name.
    pub(super) async fn renew_clients(&mut self) -> Result<usize, StepFailure> {
        let names: Vec<String> = self.clients.keys().cloned().collect();
        for name in &names {
            if let Some(old) = self.clients.remove(name) {
                self.abandoned.push(old.begin_dispose().await);
                self.retired.push((name.clone(), old));
            }
            let fresh = self.new_client()?;
            self.clients.insert(name.clone(), Arc::new(fresh));
        }
        Ok(names.len())
    }

    /// `replay_check` with continuity's client: the history from its store.
    pub(super) async fn stored_history(
        &mut self,
        reader: &str,
        id: &str,
    ) -> Result<Vec<SessionEvent>, StepFailure> {
        let client = Arc::clone(self.client(reader)?);
        client.flush().await;
        list_all_events(client.persist().as_ref(), id)
            .await
            .map_err(|e| StepFailure::new(diagnose::other(SignatureKind::Persist, e.to_string())))
    }

    /// `replay_check`: the replay the restore sent, judged against the
    /// SDK's documented cut of the history `client` reads.
    pub(super) async fn replay_check(
        &mut self,
        client: &dyn super::driver::ScenarioClient,
        reader: &str,
        session: &str,
    ) -> StepResult {
        let id = self.session_id(session);
        let events = client.replay_history(self, reader, &id).await?;
        judge_replay(&events, DEFAULT_REPLAY_MAX_EVENTS, DEFAULT_REPLAY_MAX_CHARS)
    }
}

/// The text blocks' first text of a client `session/prompt` envelope.
fn prompt_text(event: &SessionEvent) -> Option<&str> {
    if event.sender != Sender::Client
        || event.payload.get("method").and_then(Value::as_str) != Some("session/prompt")
    {
        return None;
    }
    event
        .payload
        .get("params")?
        .get("prompt")?
        .get(0)?
        .get("text")?
        .as_str()
}

fn js_length(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The last restore's replay (the newest prompt whose first block is a
/// replay text) against the documented cut of the history stored before
/// that restore began (the events before the restoring connection's first).
pub(super) fn judge_replay(
    events: &[SessionEvent],
    max_events: usize,
    max_chars: usize,
) -> StepResult {
    let mut ordered: Vec<&SessionEvent> = events.iter().collect();
    ordered.sort_by_key(|e| e.event_index);
    let integrity =
        |message: String| StepFailure::new(diagnose::other(SignatureKind::Integrity, message));
    if ordered.is_empty() {
        return Err(integrity(
            "the store holds no history of the session: there was nothing to restore it from"
                .into(),
        ));
    }
    let Some(at) = ordered
        .iter()
        .rposition(|e| prompt_text(e).is_some_and(|t| t.starts_with(REPLAY_PREFIX)))
    else {
        let restores = restores(&ordered);
        if restores == 0 {
            // The client kept its session (a store restart, say): nothing to replay.
            return Ok(ReplayDetail {
                restored: false,
                history_events: ordered.len(),
                ..ReplayDetail::default()
            }
            .to_map());
        }
        return Err(integrity(format!(
            "the session was recreated {restores} time(s), but no prompt carried a replay ({} events stored): the restored session did not get its history",
            ordered.len()
        )));
    };
    let sent = prompt_text(ordered[at]).unwrap_or_default();
    let source = history_before(&ordered, at);
    let truncated = sent.ends_with(TRUNCATED);
    let body = sent.strip_suffix(TRUNCATED).unwrap_or(sent);
    let lines = body.lines().count().saturating_sub(1);
    let detail = ReplayDetail {
        restored: true,
        history_events: source.len(),
        replay_events: Some(lines),
        replay_chars: Some(js_length(sent)),
        replay_truncated: Some(truncated),
        replay_cut_by_events: Some(source.len() > max_events),
    }
    .to_map();
    match replay_mismatch(sent, &source, max_events, max_chars) {
        Some(message) => Err(integrity(message).with_detail(detail)),
        None => Ok(detail),
    }
}

/// How many times the session was restored: each `session/new` after the
/// first is one (the SDK's recreate).
fn restores(ordered: &[&SessionEvent]) -> usize {
    ordered
        .iter()
        .filter(|e| {
            e.sender == Sender::Client
                && e.payload.get("method").and_then(Value::as_str) == Some("session/new")
        })
        .count()
        .saturating_sub(1)
}

/// The history stored before the restore whose replay is event `at`: the
/// events before the first one of that event's connection.
fn history_before(ordered: &[&SessionEvent], at: usize) -> Vec<SessionEvent> {
    let connection = &ordered[at].connection_id;
    let mut boundary = at;
    while boundary > 0 && &ordered[boundary - 1].connection_id == connection {
        boundary -= 1;
    }
    ordered[..boundary].iter().map(|e| (*e).clone()).collect()
}

/// What is wrong with the replay `sent` for the history `source`, if
/// anything: over its caps, or not the documented cut of that history.
fn replay_mismatch(
    sent: &str,
    source: &[SessionEvent],
    max_events: usize,
    max_chars: usize,
) -> Option<String> {
    let body = sent.strip_suffix(TRUNCATED).unwrap_or(sent);
    let lines = body.lines().count().saturating_sub(1);
    if lines > max_events || js_length(body) > max_chars {
        return Some(format!(
            "the replay exceeds its caps: {lines} events (cap {max_events}), {} characters before the truncation mark (cap {max_chars})",
            js_length(body)
        ));
    }
    let newest = &source[source.len().saturating_sub(max_events)..];
    let expected = build_replay_text(newest, max_chars).unwrap_or_default();
    if sent == expected {
        return None;
    }
    let expected_lines = expected
        .strip_suffix(TRUNCATED)
        .unwrap_or(&expected)
        .lines()
        .count()
        .saturating_sub(1);
    Some(format!(
        "the replay is not the documented cut of the {} events before the restore: sent {lines} events in {} characters, the newest {max_events} cut at {max_chars} characters are {expected_lines} events in {}",
        source.len(),
        js_length(sent),
        js_length(&expected)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(index: i64, connection: &str, sender: Sender, payload: Value) -> SessionEvent {
        SessionEvent {
            id: format!("e{index}"),
            event_index: index,
            session_id: "s".into(),
            created_at: 1_700_000_000_000 + index,
            connection_id: connection.into(),
            sender,
            payload,
        }
    }

    fn chunk(index: i64) -> SessionEvent {
        let update = json!({"method": "session/update", "params": {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("chunk {index} {}", "x".repeat(200))}}}});
        event(index, "old", Sender::Agent, update)
    }

    /// A history of `n` events on the old connection, then a restore whose
    /// first prompt carries `replay`.
    /// The session's `session/new`, then chunks up to event `n`.
    fn base(n: i64) -> Vec<SessionEvent> {
        let mut events: Vec<SessionEvent> = (2..=n).map(chunk).collect();
        events.insert(
            0,
            event(1, "old", Sender::Client, json!({"method": "session/new"})),
        );
        events
    }

    fn restored(n: i64, replay: &str) -> Vec<SessionEvent> {
        let mut events = base(n);
        events.push(event(
            n + 1,
            "new",
            Sender::Client,
            json!({"method": "session/new"}),
        ));
        events.push(event(
            n + 2,
            "new",
            Sender::Client,
            json!({"method": "session/prompt", "params": {"prompt": [{"type": "text", "text": replay}, {"type": "text", "text": "next"}]}}),
        ));
        events
    }

    #[test]
    fn the_documented_cut_of_a_long_history_passes_and_is_measured() {
        let history = base(70);
        let replay = build_replay_text(&history[20..], 12_000).unwrap();
        let detail = judge_replay(&restored(70, &replay), 50, 12_000).unwrap();
        assert_eq!(detail["historyEvents"], 70);
        assert_eq!(detail["replayCutByEvents"], true);
        assert_eq!(
            detail["replayTruncated"], true,
            "50 lines of ~300 chars pass 12000"
        );
        assert!(detail["replayEvents"].as_u64().unwrap() < 50);
    }

    #[test]
    fn a_replay_that_is_not_the_cut_or_absent_fails() {
        let history = base(70);
        // The oldest 50 instead of the newest: within the caps, the wrong cut.
        let wrong = build_replay_text(&history[..50], 12_000).unwrap();
        let e = judge_replay(&restored(70, &wrong), 50, 12_000).unwrap_err();
        assert_eq!(e.signature.kind, SignatureKind::Integrity);
        assert!(
            e.signature.message.contains("not the documented cut"),
            "{}",
            e.signature.message
        );
        let uncut = build_replay_text(&history, 1_000_000).unwrap();
        let e = judge_replay(&restored(70, &uncut), 50, 12_000).unwrap_err();
        assert!(
            e.signature.message.contains("exceeds its caps"),
            "{}",
            e.signature.message
        );
        let e = judge_replay(&restored(3, "hello"), 50, 12_000).unwrap_err();
        assert!(
            e.signature.message.contains("no prompt"),
            "{}",
            e.signature.message
        );
        let e = judge_replay(&[], 50, 12_000).unwrap_err();
        assert!(
            e.signature.message.contains("no history"),
            "{}",
            e.signature.message
        );
    }

    #[test]
    fn a_session_never_recreated_has_nothing_to_replay() {
        let detail = judge_replay(&base(5), 50, 12_000).unwrap();
        assert_eq!(detail["restored"], false);
    }
}
