//! One live ACP connection per agent, as the SDK's `LiveAcpConnection`: the
//! transport, which local session is bound to which agent session on it, the
//! replay text waiting for a session's next prompt, and the mapping of every
//! observed envelope to the local session it belongs to.

use super::recorder::Recorder;
use super::ClientError;
use crate::acp::{Direction, Observed, RpcResponse, Transport, TransportConfig};
use crate::persist::Sender;
use agent_client_protocol_schema::v1::{InitializeResponse, NewSessionResponse};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, watch};

/// The SDK's `clientInfo` on `initialize`.
const CLIENT_INFO_NAME: &str = "sandbox-agent-sdk";
/// Auth methods the SDK authenticates with automatically (env-var based).
const ENV_AUTH_METHODS: [&str; 3] = ["codex-api-key", "openai-api-key", "anthropic-api-key"];

#[derive(Default)]
struct Bindings {
    session_by_local: HashMap<String, String>,
    local_by_agent: HashMap<String, String>,
    pending_new_session_locals: VecDeque<String>,
    pending_request_session_by_id: HashMap<String, String>,
    pending_replay: HashMap<String, String>,
    last_adapter_exit: Option<(Option<i64>, Instant)>,
}

/// A live connection to one agent through one ACP server id.
pub(crate) struct LiveConnection {
    pub connection_id: String,
    transport: Transport,
    bindings: Arc<Mutex<Bindings>>,
    /// How many of the transport's envelopes the observer has handed on
    /// (to the application and the recorder's queue).
    handed: watch::Receiver<u64>,
}

fn lock(b: &Mutex<Bindings>) -> std::sync::MutexGuard<'_, Bindings> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

impl LiveConnection {
    /// Opens a transport to a fresh server id and runs `initialize` on it.
    pub(crate) async fn create(
        config: TransportConfig,
        http: reqwest::Client,
        recorder: Recorder,
        trace: crate::trace::Trace,
    ) -> Result<LiveConnection, ClientError> {
        let connection_id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = mpsc::unbounded_channel();
        let transport = Transport::traced(config, http, tx, trace.clone());
        let bindings = Arc::new(Mutex::new(Bindings::default()));
        let (handed_tx, handed) = watch::channel(0);
        tokio::spawn(observe(
            (rx, handed_tx),
            Arc::clone(&bindings),
            recorder,
            (connection_id.clone(), transport.server_id().to_string()),
            trace,
        ));
        let live = LiveConnection {
            connection_id,
            transport,
            bindings,
            handed,
        };
        let init = live
            .transport
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientInfo": {"name": CLIENT_INFO_NAME, "version": "v1"}}),
            )
            .await?;
        let init: InitializeResponse = parse_result("initialize", init.result)?;
        if let Some(method) = init
            .auth_methods
            .iter()
            .find(|m| ENV_AUTH_METHODS.contains(&&*m.id().0))
        {
            // The SDK ignores the outcome: an agent that rejects it fails later, visibly.
            let _ = live
                .transport
                .request("authenticate", json!({"methodId": &*method.id().0}))
                .await;
        }
        Ok(live)
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Waits until the observer has handed on every envelope the transport
    /// saw so far: an update read off the stream just before its turn's
    /// answer is then with the application and in the recorder's queue, so
    /// a flush after this stores it (without it, a flush could overtake it
    /// on the way and the cell be judged before it was stored).
    pub(crate) async fn handed_over(&self) {
        let seen = self.transport.observed();
        let mut handed = self.handed.clone();
        // An observer that ended has handed on all it will.
        let _ = handed.wait_for(|n| *n >= seen).await;
    }

    /// Whether `local` is bound here (to `agent_session_id`, when given).
    pub(crate) fn has_bound_session(&self, local: &str, agent_session_id: Option<&str>) -> bool {
        match lock(&self.bindings).session_by_local.get(local) {
            None => false,
            Some(bound) => agent_session_id.is_none_or(|want| bound == want),
        }
    }

    pub(crate) fn bind_session(&self, local: &str, agent_session_id: &str) {
        lock(&self.bindings).bind(local, agent_session_id);
    }

    /// Queues replay text for the session's next prompt (none clears it).
    pub(crate) fn queue_replay(&self, local: &str, replay: Option<String>) {
        let mut b = lock(&self.bindings);
        match replay {
            Some(text) if !text.is_empty() => {
                b.pending_replay.insert(local.to_string(), text);
            }
            _ => {
                b.pending_replay.remove(local);
            }
        }
    }

    /// `session/new` for a local session; binds it to the new agent session id.
    pub(crate) async fn create_remote_session(
        &self,
        local: &str,
        session_init: Value,
    ) -> Result<(String, Value), ClientError> {
        let started = Instant::now();
        lock(&self.bindings)
            .pending_new_session_locals
            .push_back(local.to_string());
        match self.transport.request("session/new", session_init).await {
            Ok(response) => {
                let parsed: NewSessionResponse =
                    parse_result("session/new", response.result.clone())?;
                let agent_session_id = parsed.session_id.0.to_string();
                self.bind_session(local, &agent_session_id);
                Ok((agent_session_id, response.result))
            }
            Err(error) => {
                let mut b = lock(&self.bindings);
                if let Some(pos) = b.pending_new_session_locals.iter().position(|l| l == local) {
                    b.pending_new_session_locals.remove(pos);
                }
                if let Some((code, at)) = b.last_adapter_exit {
                    if at >= started {
                        return Err(ClientError::AgentExited { code });
                    }
                }
                Err(error.into())
            }
        }
    }

    /// Sends a session method with the local id mapped to the agent's; a
    /// prompt carries any queued replay text as its first block.
    pub(crate) async fn send_session_method(
        &self,
        local: &str,
        method: &str,
        params: Value,
        notification: bool,
    ) -> Result<Option<RpcResponse>, ClientError> {
        let (agent_session_id, replay) = {
            let mut b = lock(&self.bindings);
            let Some(agent_session_id) = b.session_by_local.get(local).cloned() else {
                return Err(ClientError::NotBound {
                    session: local.to_string(),
                    connection: self.connection_id.clone(),
                });
            };
            let replay = (method == "session/prompt")
                .then(|| b.pending_replay.remove(local))
                .flatten();
            (agent_session_id, replay)
        };
        let mut params = match params {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        params.insert("sessionId".into(), Value::from(agent_session_id));
        if let Some(replay) = replay {
            let mut prompt = match params.remove("prompt") {
                Some(Value::Array(blocks)) => blocks,
                _ => Vec::new(),
            };
            prompt.insert(0, json!({"type": "text", "text": replay}));
            params.insert("prompt".into(), Value::Array(prompt));
        }
        if notification || method == "session/cancel" {
            self.transport.notify(method, Value::Object(params))?;
            return Ok(None);
        }
        Ok(Some(
            self.transport
                .request(method, Value::Object(params))
                .await?,
        ))
    }

    /// See [`crate::acp::Transport::shut`].
    pub(crate) fn shut(&self) -> bool {
        self.transport.shut()
    }

    /// See [`crate::acp::Transport::delete`].
    pub(crate) async fn delete(&self) {
        self.transport.delete().await;
    }
}

impl Bindings {
    fn bind(&mut self, local: &str, agent_session_id: &str) {
        self.session_by_local
            .insert(local.to_string(), agent_session_id.to_string());
        self.local_by_agent
            .insert(agent_session_id.to_string(), local.to_string());
    }

    fn local_from_params(&self, envelope: &Value) -> Option<String> {
        let agent_session_id = envelope.get("params")?.get("sessionId")?.as_str()?;
        (!agent_session_id.is_empty())
            .then(|| self.local_by_agent.get(agent_session_id).cloned())
            .flatten()
    }

    /// The SDK's `resolveSessionId`: which local session an envelope belongs to.
    fn resolve(&mut self, envelope: &Value, direction: Direction) -> Option<String> {
        let id = envelope_id(envelope);
        let method = envelope.get("method").and_then(Value::as_str);
        if direction == Direction::Outbound {
            if let (Some(id), Some("session/new")) = (&id, method) {
                let local = self.pending_new_session_locals.pop_front()?;
                self.pending_request_session_by_id
                    .insert(id.clone(), local.clone());
                return Some(local);
            }
            let local = self.local_from_params(envelope);
            if let (Some(id), Some(local)) = (id, &local) {
                self.pending_request_session_by_id.insert(id, local.clone());
            }
            return local;
        }
        if let Some(id) = id {
            if let Some(local) = self.pending_request_session_by_id.remove(&id) {
                let from_result = envelope
                    .get("result")
                    .and_then(|r| r.get("sessionId"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                if let Some(agent_session_id) = from_result {
                    self.bind(&local, agent_session_id);
                }
                return Some(local);
            }
        }
        self.local_from_params(envelope)
    }
}

fn envelope_id(envelope: &Value) -> Option<String> {
    match envelope.get("id")? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Maps each observed envelope to its session and hands it to the
/// recorder, in order: what the SDK hands its application (the trace's
/// `app` event, which the checker holds against what the stream carried
/// and what the store took). `handed` counts the envelopes done with, for
/// [`LiveConnection::handed_over`].
async fn observe(
    (mut rx, handed): (mpsc::UnboundedReceiver<Observed>, watch::Sender<u64>),
    bindings: Arc<Mutex<Bindings>>,
    recorder: Recorder,
    (connection_id, server_id): (String, String),
    trace: crate::trace::Trace,
) {
    while let Some(observed) = rx.recv().await {
        let local = {
            let mut b = lock(&bindings);
            if observed.direction == Direction::Inbound
                && observed.envelope.get("method").and_then(Value::as_str)
                    == Some("_adapter/agent_exited")
            {
                let code = observed.envelope["params"]["code"].as_i64();
                b.last_adapter_exit = Some((code, Instant::now()));
            }
            b.resolve(&observed.envelope, observed.direction)
        };
        if let Some(local) = local {
            let sender = match observed.direction {
                Direction::Outbound => Sender::Client,
                Direction::Inbound => Sender::Agent,
            };
            let given = crate::trace::event::Handed {
                via: Some("recorder".into()),
                session: Some(local.clone()),
                sender: Some(sender.as_str().into()),
                conn: Some(connection_id.clone()),
                stream: Some(server_id.clone()),
                ..Default::default()
            };
            trace.app(given, &observed.envelope);
            recorder.record(local, connection_id.clone(), sender, observed.envelope);
        }
        handed.send_modify(|n| *n += 1);
    }
}

/// Reads an ACP result with the schema crate's types; a shape it rejects is a protocol error.
pub(crate) fn parse_result<T: serde::de::DeserializeOwned>(
    method: &str,
    result: Value,
) -> Result<T, ClientError> {
    serde_json::from_value(result.clone()).map_err(|e| ClientError::UnexpectedResult {
        method: method.to_string(),
        detail: format!("{e}: {}", truncate(&result.to_string())),
    })
}

fn truncate(text: &str) -> String {
    // Redacted before the cut: half a secret would not be recognised later.
    crate::secret::redact_known(text)
        .chars()
        .take(200)
        .collect()
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
