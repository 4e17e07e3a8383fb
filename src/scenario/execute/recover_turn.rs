//! `recover_turn`: after a long turn was awaited (delivered or not), did
//! the agent finish it, and where could the client still find its result?
//! The client hands over what it holds of the turn ([`TurnEvidence`]: the
//! session's stored history, its stream's server id and the last event id
//! it had when the turn began); the executor reads the agent's own record,
//! looks for the turn's end in the history, and re-attaches a stream with
//! that `Last-Event-ID`, as a recovering client would. One judgement for
//! every client.

use super::chunks::{turn_end_in, turn_ended};
use super::{RunningCell, StepFailure, StepResult};
use crate::acp::{Transport, TransportConfig};
use crate::diagnose;
use crate::report::detail::{Detail, RecoverTurnDetail};
use crate::report::SignatureKind;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// How long the re-attached stream is read for the turn's end: the server
/// replays what it kept at once.
const REATTACH_WAIT: Duration = Duration::from_millis(1500);
/// How long the agent has to finish a turn still running when the
/// recovery begins (a client that gave up at a timeout looks early): a
/// turn not finished by then counts as never finished.
const AGENT_END_WAIT: Duration = Duration::from_secs(5);

/// What a client holds of an awaited turn, for its recovery.
#[derive(Debug, Clone, Default)]
pub(super) struct TurnEvidence {
    /// The `[[turn:TAG]]` its prompt carried.
    pub tag: String,
    /// The payloads of the events the client's store keeps for the turn's session.
    pub history: Vec<Value>,
    /// The ACP server id the turn's prompt went to, when the client says.
    pub server_id: Option<String>,
    /// The id of the last stream event the client had when the turn began.
    pub last_event_id: Option<String>,
}

impl RunningCell<'_> {
    /// The judgement of `recover_turn` on what the client handed over.
    pub(super) async fn recover_turn(&mut self, name: &str, evidence: TurnEvidence) -> StepResult {
        let mut detail = RecoverTurnDetail::default();
        if let Some(log) = &self.settings.agent_sent_log {
            let ended = agent_end(log, &evidence.tag, AGENT_END_WAIT).await;
            detail.agent_finished = Some(ended.is_some());
            detail.agent_stop_reason = ended;
        }
        let in_history = turn_end_in(&evidence.history, &evidence.tag);
        detail.history_has_end = in_history.last_chunk;
        detail.history_has_result = in_history.result.is_some();
        detail.last_event_id = evidence.last_event_id.clone();
        match &evidence.server_id {
            Some(server_id) => self.reattach(server_id, &evidence, &mut detail).await,
            None => {
                detail.stream_error =
                    Some("the client does not say which server id its stream is".into())
            }
        }
        if detail.history_has_end {
            detail.recoverable_via.push("history".into());
        }
        if detail.stream_has_result {
            detail.recoverable_via.push("stream".into());
        }
        if detail.recoverable_via.is_empty() {
            let message = format!(
                "turn {name}: its result is in neither the client's history nor a stream re-attached from Last-Event-ID {}",
                evidence.last_event_id.as_deref().unwrap_or("(none)")
            );
            return Err(
                StepFailure::new(diagnose::other(SignatureKind::Integrity, message))
                    .with_detail(detail.to_map()),
            );
        }
        Ok(detail.to_map())
    }

    /// Re-attaches the turn's stream and looks for its end in what it replays.
    async fn reattach(
        &self,
        server_id: &str,
        evidence: &TurnEvidence,
        detail: &mut RecoverTurnDetail,
    ) {
        let settings = self.settings;
        let built = crate::client::header_map(&settings.headers).and_then(|headers| {
            let http = crate::http::client_builder()
                .connect_timeout(crate::http::CONNECT_TIMEOUT)
                .build()
                .map_err(|e| crate::client::ClientError::Config(e.to_string()))?;
            Ok((headers, http))
        });
        let (headers, http) = match built {
            Ok(built) => built,
            Err(e) => {
                detail.stream_error = Some(e.to_string());
                return;
            }
        };
        let config = TransportConfig {
            base_url: settings.base_url.trim_end_matches('/').to_string(),
            server_id: server_id.to_string(),
            bootstrap_agent: None,
            token: settings.token.clone(),
            headers,
            delete_timeout: Duration::from_secs(2),
            // A GET: the client's header timeout bounds its POSTs only.
            headers_timeout: None,
        };
        let tag = evidence.tag.clone();
        let replayed = Transport::reattach(
            config,
            http,
            settings.trace.clone(),
            evidence.last_event_id.clone(),
            REATTACH_WAIT,
            move |seen| turn_end_in(seen, &tag).result.is_some(),
        )
        .await;
        detail.stream_events = replayed.envelopes.len();
        detail.stream_has_result = turn_end_in(&replayed.envelopes, &evidence.tag)
            .result
            .is_some();
        detail.stream_error = replayed.error.map(|e| e.to_string());
    }
}

/// The stop reason the agent's record gives turn `tag`, waiting up to
/// `within` for the agent to finish it; `None` when it did not.
async fn agent_end(log: &Path, tag: &str, within: Duration) -> Option<String> {
    let until = tokio::time::Instant::now() + within;
    loop {
        if let Some(ended) = turn_ended(log, tag) {
            return Some(ended);
        }
        if tokio::time::Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn still running when the recovery begins is waited for; one
    /// that never ends counts as unfinished once the wait is over.
    #[tokio::test]
    async fn the_agents_end_is_waited_for_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sent.jsonl");
        std::fs::write(
            &log,
            "{\"turn\":\"t\",\"session\":\"s\",\"seq\":1,\"of\":2}\n",
        )
        .unwrap();
        let writer = {
            let log = log.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let mut text = std::fs::read_to_string(&log).unwrap();
                text.push_str("{\"turn\":\"t\",\"session\":\"s\",\"ended\":\"end_turn\"}\n");
                std::fs::write(&log, text).unwrap();
            })
        };
        let ended = agent_end(&log, "t", Duration::from_secs(5)).await;
        writer.await.unwrap();
        assert_eq!(ended.as_deref(), Some("end_turn"));
        let never = agent_end(&log, "other", Duration::from_millis(200)).await;
        assert_eq!(never, None);
    }
}
