//! The recovering client's step (`recover_session`): what a client fixed for
//! restarts does, beside the SDK-faithful one. It prompts the old handle;
//! when the server has lost the server id (HTTP 400), or the server id's
//! agent process is gone (HTTP 502 `stream_error`: the server cannot write
//! to its stdin, and starts no agent again for it), it opens a new server
//! id with `?agent=`, `session/load`s the agent's session (when `loadSession`
//! is advertised; else `session/resume`), counts the replayed history, and
//! prompts again there. The detail says how long from the end of the restart
//! to the first good prompt, and — from the fake provider's log — whether the
//! model saw the earlier turns.

use super::{RunningCell, StepFailure, StepResult};
use crate::acp::{Direction, Observed, Transport, TransportConfig};
use crate::diagnose;
use crate::report::detail::{Detail, RecoverDetail};
use crate::report::SignatureKind;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long replayed notifications may trail the `session/load` answer.
const SETTLE: Duration = Duration::from_secs(2);
/// DELETE can hang for tens of seconds on real agents: bound it.
const DELETE_BOUND: Duration = Duration::from_secs(2);

fn failure(kind: SignatureKind, message: impl Into<String>, detail: &RecoverDetail) -> StepFailure {
    StepFailure::new(diagnose::other(kind, message)).with_detail(detail.to_map())
}

/// `user_message_chunk` / `agent_message_chunk` updates seen so far (drained).
fn drain_chunks(
    rx: &mut mpsc::UnboundedReceiver<Observed>,
    user: &mut u64,
    agent: &mut u64,
    text: &mut String,
) {
    while let Ok(seen) = rx.try_recv() {
        if seen.direction != Direction::Inbound
            || seen.envelope.get("method").and_then(Value::as_str) != Some("session/update")
        {
            continue;
        }
        let update = &seen.envelope["params"]["update"];
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("user_message_chunk") => *user += 1,
            Some("agent_message_chunk") => {
                *agent += 1;
                if let Some(t) = update["content"]["text"].as_str() {
                    text.push_str(t);
                }
            }
            _ => {}
        }
    }
}

impl RunningCell<'_> {
    pub(super) async fn recover_session(
        &mut self,
        client: &str,
        session: &str,
        text: &str,
    ) -> StepResult {
        let mut detail = RecoverDetail::default();
        let id = self.session_id(session);
        let earlier: Vec<String> = self.transcripts.get(session).cloned().unwrap_or_default();
        self.transcripts
            .entry(session.to_string())
            .or_default()
            .push(text.to_string());
        let started = Instant::now();
        // 1. The old handle, as any client would try first.
        let blocks = vec![json!({"type": "text", "text": text})];
        let first = self.client(client)?.prompt(&id, blocks).await;
        let lost = match first {
            Ok(outcome) => {
                detail.server_id_lost = Some(false);
                detail.stop_reason = Some(outcome.stop_reason);
                return Ok(detail.to_map());
            }
            Err(e) => diagnose::signature(&e, self.settings.token.as_ref()),
        };
        let agent_lost =
            lost.http_status == Some(502) && lost.problem_type.as_deref() == Some("stream_error");
        if lost.http_status != Some(400) && !agent_lost {
            // Neither case this recovery is for.
            return Err(StepFailure::new(lost).with_detail(detail.to_map()));
        }
        detail.server_id_lost = Some(!agent_lost);
        detail.agent_lost = Some(agent_lost);
        detail.detect_ms = Some(started.elapsed().as_millis() as u64);
        // 2. The agent's own session id, from the client's store.
        let (agent_session_id, cwd) = self.stored_session(client, &id, &detail).await?;
        // 3. A new server id, bootstrapped with ?agent=.
        let (transport, mut rx) = self.recovery_transport(&detail)?;
        let result = self
            .load_and_prompt(
                &transport,
                &mut rx,
                &agent_session_id,
                cwd,
                text,
                &mut detail,
            )
            .await;
        // Its DELETE is cleanup (the server may not answer it for its whole
        // bound): it goes with the cell's, not into this phase's time.
        self.recovered.push(transport);
        let (stop, answered) = result?;
        detail.stop_reason = Some(stop);
        detail.restart_to_first_good_prompt_ms = self
            .restarted_at
            .map(|ready| answered.duration_since(ready).as_millis() as u64);
        self.check_model_context(&earlier, text, &mut detail)?;
        Ok(detail.to_map())
    }

    /// The agent's own session id for `id` and the folder it was made in,
    /// from the client's store.
    async fn stored_session(
        &self,
        client: &str,
        id: &str,
        detail: &RecoverDetail,
    ) -> Result<(String, Value), StepFailure> {
        let record = self
            .client(client)?
            .persist()
            .get_session(id)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| {
                failure(
                    SignatureKind::Client,
                    format!("no session record for `{id}`"),
                    detail,
                )
            })?;
        let cwd = record
            .session_init
            .as_ref()
            .and_then(|i| i.get("cwd"))
            .cloned()
            .unwrap_or_else(|| json!("/"));
        Ok((record.agent_session_id, cwd))
    }

    /// A transport on a new server id, bootstrapped with `?agent=`, and
    /// what it observes.
    fn recovery_transport(
        &self,
        detail: &RecoverDetail,
    ) -> Result<(Transport, mpsc::UnboundedReceiver<Observed>), StepFailure> {
        let server_id = format!("recover-{}-{}", self.settings.agent, uuid::Uuid::new_v4());
        let (tx, rx) = mpsc::unbounded_channel();
        let transport = Transport::traced(
            TransportConfig {
                base_url: self.settings.base_url.trim_end_matches('/').to_string(),
                server_id,
                bootstrap_agent: Some(self.settings.agent.clone()),
                token: self.settings.token.clone(),
                headers: header_map(&self.settings.headers),
                delete_timeout: DELETE_BOUND,
                headers_timeout: self.settings.headers_timeout,
            },
            crate::http::client_builder()
                .build()
                .map_err(|e| failure(SignatureKind::Harness, e.to_string(), detail))?,
            tx,
            self.settings.trace.clone(),
        );
        Ok((transport, rx))
    }

    async fn load_and_prompt(
        &self,
        transport: &Transport,
        rx: &mut mpsc::UnboundedReceiver<Observed>,
        agent_session_id: &str,
        cwd: Value,
        text: &str,
        detail: &mut RecoverDetail,
    ) -> Result<(String, Instant), StepFailure> {
        let acp = |e: crate::acp::AcpError, detail: &RecoverDetail| {
            StepFailure::new(diagnose::signature(&e.into(), self.settings.token.as_ref()))
                .with_detail(detail.to_map())
        };
        let init = transport
            .request(
                "initialize",
                json!({"protocolVersion": 1,
                    "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
                    "clientInfo": {"name": "continuity-recovering-client", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .await
            .map_err(|e| acp(e, detail))?;
        let caps = &init.result["agentCapabilities"];
        let can_load = caps["loadSession"].as_bool().unwrap_or(false);
        let can_resume = !caps["sessionCapabilities"]["resume"].is_null();
        let method = match (can_load, can_resume) {
            (true, _) => "session/load",
            (false, true) => "session/resume",
            (false, false) => {
                return Err(failure(
                    SignatureKind::Protocol,
                    "the agent advertises neither loadSession nor session resume",
                    detail,
                ))
            }
        };
        detail.method = Some(method.into());
        let load_started = Instant::now();
        let loaded = transport
            .request(
                method,
                json!({"sessionId": agent_session_id, "cwd": cwd, "mcpServers": []}),
            )
            .await
            .map_err(|e| acp(e, detail))?;
        detail.load_ms = Some(load_started.elapsed().as_millis() as u64);
        transport.settle(&loaded.id, SETTLE).await;
        let (mut user, mut agent, mut replayed) = (0, 0, String::new());
        drain_chunks(rx, &mut user, &mut agent, &mut replayed);
        detail.replayed_user_chunks = Some(user);
        detail.replayed_agent_chunks = Some(agent);
        if method == "session/load" && user == 0 {
            return Err(failure(
                SignatureKind::Integrity,
                "session/load replayed no user turn",
                detail,
            ));
        }
        let prompted = transport
            .request(
                "session/prompt",
                json!({"sessionId": agent_session_id, "prompt": [{"type": "text", "text": text}]}),
            )
            .await
            .map_err(|e| acp(e, detail))?;
        let answered = Instant::now();
        transport.settle(&prompted.id, SETTLE).await;
        let (mut _user, mut chunks, mut reply) = (0, 0, String::new());
        drain_chunks(rx, &mut _user, &mut chunks, &mut reply);
        detail.reply_chunks = Some(chunks);
        detail.reply = Some(reply.chars().take(200).collect());
        let stop = prompted.result["stopReason"]
            .as_str()
            .unwrap_or("")
            .to_string();
        Ok((stop, answered))
    }

    /// With a fake provider: the model call(s) for this prompt must carry the earlier turns.
    fn check_model_context(
        &self,
        earlier: &[String],
        text: &str,
        detail: &mut RecoverDetail,
    ) -> Result<(), StepFailure> {
        let Some(calls) = &self.settings.model_calls else {
            detail.earlier_turns_in_context = Some(None);
            return Ok(());
        };
        let since = self.restarted_at_ms.unwrap_or(0);
        let after: Vec<_> = calls
            .model_calls_since(since)
            .into_iter()
            .filter(|c| c.user_texts.iter().any(|u| u.contains(text)))
            .collect();
        detail.model_calls = Some(after.len());
        let saw = after.iter().any(|c| {
            earlier
                .iter()
                .all(|e| c.user_texts.iter().any(|u| u.contains(e.as_str())))
        });
        detail.earlier_turns_in_context = Some(Some(saw));
        if after.is_empty() {
            return Err(failure(
                SignatureKind::Integrity,
                "the prompt never reached the model",
                detail,
            ));
        }
        if !saw {
            return Err(failure(
                SignatureKind::Integrity,
                "the model did not see the earlier turns after the recovery",
                detail,
            ));
        }
        Ok(())
    }
}

fn header_map(headers: &[(String, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if let (Ok(name), Ok(mut value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            value.set_sensitive(true);
            map.insert(name, value);
        }
    }
    map
}
