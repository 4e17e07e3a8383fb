//! The SDK-equivalent client: `SandboxAgent` of `sandbox-agent@0.4.2`, in Rust.
//!
//! It keeps the SDK's semantics, including the ones behind the reported bug:
//! one live connection per agent that is never replaced once made (even after
//! its transport failed), `resume_session` that does nothing when the record
//! still points at that connection, lazy resume when a session is not bound,
//! and resume as replay-text + `session/new` + rebind. Two deliberate
//! differences, both about time, never about outcome: a failed POST fails the
//! pending request at once with its HTTP error (the SDK leaves it pending until
//! the caller's timeout), and a call returns only after the envelopes it caused
//! are stored, so `get_events` right after it is deterministic.
//!
//! Besides sessions it reaches the sandbox's own state as the SDK does:
//! files and processes over REST (`sandbox.rs`) and a process's terminal
//! over WebSocket (`terminal.rs`).
//!
//! Over 400 lines on purpose: `Client` keeps the SDK's session semantics
//! (one live connection per agent never replaced, resume, replay, an answer
//! only once its events are stored) in one impl over one shared state (the
//! connection, the session records, the store) that every session call reads
//! and changes; transport, REST, sandbox, terminal and the hosted clients
//! are apart.

pub(crate) mod browser;
pub(crate) mod hosted;
mod hosted_wire;
mod live;
mod recorder;
mod replay;
mod rest;
mod sandbox;
pub(crate) mod sdk_action;
mod terminal;

use rest::{auth_headers, wait_healthy};

pub(crate) use crate::report::{ClientKind, ClientRestart};
pub(crate) use live::LiveConnection;
pub(crate) use recorder::now_ms;
pub(crate) use replay::build_replay_text;
pub use replay::REPLAY_PREFIX;
pub(crate) use sandbox::ProcessInfo;
pub use sandbox::ProcessSpec;
pub(crate) use terminal::Terminal;
pub use terminal::{CloseInfo, TerminalError};

use crate::acp::{AcpError, TransportConfig};
use crate::persist::{Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord};
use crate::secret::Secret;
use crate::trace::Trace;
use agent_client_protocol_schema::v1::PromptResponse;
use recorder::Recorder;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Mutex};

pub(crate) const DEFAULT_REPLAY_MAX_EVENTS: usize = 50;
pub(crate) const DEFAULT_REPLAY_MAX_CHARS: usize = 12_000;
/// How long a call waits for the stream to catch up with a response it got by POST.
const SETTLE: Duration = Duration::from_millis(250);

/// The rest of a dispose once the streams are stopped and the events
/// stored: one bounded DELETE per connection that had posted.
pub(crate) struct Disposal {
    deleting: Vec<Arc<LiveConnection>>,
    trace: Trace,
}

impl Disposal {
    /// Whether no connection had posted: nothing is left to DELETE.
    pub(crate) fn is_empty(&self) -> bool {
        self.deleting.is_empty()
    }

    /// The DELETEs, side by side, each under the SDK's bound.
    pub(crate) async fn finish(self) {
        if self.deleting.is_empty() {
            return;
        }
        let _waiting = self.trace.wait("dispose: closing live connections", None);
        futures_util::future::join_all(self.deleting.iter().map(|c| c.delete())).await;
    }
}

/// Failures of the client layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Acp(#[from] AcpError),
    #[error(transparent)]
    Persist(#[from] PersistError),
    #[error("session '{0}' not found")]
    SessionNotFound(String),
    #[error("session '{session}' is not bound to live ACP connection '{connection}'")]
    NotBound { session: String, connection: String },
    #[error("Agent process exited while creating session{}", .code.map(|c| format!(" (code {c})")).unwrap_or_default())]
    AgentExited { code: Option<i64> },
    #[error("unexpected {method} result: {detail}")]
    UnexpectedResult { method: String, detail: String },
    #[error("invalid client option: {0}")]
    Config(String),
    #[error("sandbox-agent health check failed: {0}")]
    Health(String),
}

/// What `connect` needs; `ClientOptions::new` gives the SDK's defaults.
#[derive(Clone)]
pub struct ClientOptions {
    pub base_url: String,
    pub token: Option<Secret>,
    pub headers: Vec<(String, String)>,
    pub persist: Arc<dyn PersistDriver>,
    pub replay_max_events: usize,
    pub replay_max_chars: usize,
    pub delete_timeout: Duration,
    /// Its own wait for a POST's response headers (undici's
    /// `headersTimeout`, lowered as a user would); none: it waits.
    pub headers_timeout: Option<Duration>,
    /// Where exchanges, envelopes and waits are recorded (the cell's trace).
    pub trace: Trace,
}

impl ClientOptions {
    pub fn new(base_url: impl Into<String>, persist: Arc<dyn PersistDriver>) -> Self {
        Self {
            base_url: base_url.into(),
            token: None,
            headers: Vec::new(),
            persist,
            replay_max_events: DEFAULT_REPLAY_MAX_EVENTS,
            replay_max_chars: DEFAULT_REPLAY_MAX_CHARS,
            delete_timeout: Duration::from_secs(2),
            headers_timeout: None,
            trace: Trace::detached(),
        }
    }
}

/// `createSession` arguments.
#[derive(Debug, Clone, Default)]
pub struct CreateSession {
    /// Local session id; a UUID when absent.
    pub id: Option<String>,
    pub agent: String,
    pub session_init: Option<Value>,
}

/// The outcome of a prompt.
#[derive(Debug, Clone)]
pub struct PromptOutcome {
    pub stop_reason: String,
    pub result: Value,
}

/// What `resume_session` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// The record already points at this client's live connection: the SDK returns the same handle.
    SameHandle,
    /// A new agent session was made; `replay_chars` of history wait for the next prompt.
    Recreated {
        agent_session_id: String,
        replay_events: usize,
        replay_chars: usize,
    },
}

/// The run's extra headers as a client sends them (values kept out of `Debug`).
pub(crate) fn header_map(pairs: &[(String, String)]) -> Result<HeaderMap, ClientError> {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| ClientError::Config(format!("header name {name:?}: {e}")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|e| ClientError::Config(format!("header {name} value: {e}")))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// An SDK-equivalent client of one sandbox-agent server.
pub struct Client {
    options: ClientOptions,
    headers: HeaderMap,
    http: reqwest::Client,
    live: Mutex<HashMap<String, Arc<LiveConnection>>>,
    recorder: Recorder,
    /// True once `/v1/health` answered `ok`; the wait never gives up.
    health: watch::Receiver<bool>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field(
                "base_url",
                &crate::secret::display_url(&self.options.base_url),
            )
            .field("token", &self.options.token)
            .field("persist", &self.options.persist.name())
            .finish()
    }
}

impl Client {
    /// Creates a client; like the SDK, it starts waiting for `/v1/health` in the
    /// background and the first live connection waits for that.
    pub fn connect(mut options: ClientOptions) -> Result<Client, ClientError> {
        options.base_url = options.base_url.trim().trim_end_matches('/').to_string();
        let parsed = url::Url::parse(&options.base_url)
            .map_err(|e| ClientError::Config(format!("base URL {:?}: {e}", options.base_url)))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ClientError::Config(format!(
                "base URL must be http(s): {}",
                crate::secret::display_url(&options.base_url)
            )));
        }
        let headers = header_map(&options.headers)?;
        let http = crate::http::client_builder()
            .connect_timeout(crate::http::CONNECT_TIMEOUT)
            .build()
            .map_err(|e| ClientError::Config(e.to_string()))?;
        let (tx, health) = watch::channel(false);
        tokio::spawn(wait_healthy(
            http.clone(),
            options.base_url.clone(),
            auth_headers(&headers, options.token.as_ref()),
            tx,
            options.trace.clone(),
        ));
        Ok(Client {
            recorder: Recorder::start(Arc::clone(&options.persist)),
            options,
            headers,
            http,
            live: Mutex::new(HashMap::new()),
            health,
        })
    }

    pub(crate) fn persist(&self) -> &Arc<dyn PersistDriver> {
        &self.options.persist
    }

    /// Waits until every envelope observed so far is stored.
    pub(crate) async fn flush(&self) {
        let live: Vec<_> = self.live.lock().await.values().cloned().collect();
        self.store_observed(&live).await;
    }

    /// Waits until every envelope `connections` observed so far has been
    /// handed to the application and stored (or failed to be): the
    /// observer between the transport and the recorder is a step of its
    /// own, which a flush of the recorder alone could overtake.
    async fn store_observed(&self, connections: &[Arc<LiveConnection>]) {
        for live in connections {
            live.handed_over().await;
        }
        self.recorder.flush().await;
    }

    /// How many events of a session this client stored.
    pub(crate) fn events_stored(&self, session_id: &str) -> u64 {
        self.recorder.stored(session_id)
    }

    /// Events this client could not store (lost from the history).
    pub(crate) fn persist_failures(&self) -> Vec<String> {
        self.recorder.failures()
    }

    /// What the transport of an agent's live connection saw (none before its first use).
    pub(crate) async fn transport_stats(&self, agent: &str) -> Option<crate::acp::StreamStats> {
        let live = self.live.lock().await;
        live.get(agent).map(|c| c.transport().stats())
    }

    /// Where an agent's live connection's stream stands, if it has one: its
    /// server id and the id of the last stream event read.
    pub(crate) async fn stream_position(&self, agent: &str) -> Option<(String, Option<String>)> {
        let live = self.live.lock().await;
        live.get(agent).map(|c| {
            let transport = c.transport();
            (transport.server_id().to_string(), transport.last_event_id())
        })
    }

    /// The live connection for an agent, made on first use and kept for good.
    pub(crate) async fn live_connection(
        &self,
        agent: &str,
    ) -> Result<Arc<LiveConnection>, ClientError> {
        let mut health = self.health.clone();
        let _waiting = (!*health.borrow()).then(|| {
            self.options.trace.wait(
                "the SDK's health wait (GET /v1/health before the first ACP request)",
                Some(crate::trace::health_channel(&self.options.base_url)),
            )
        });
        health
            .wait_for(|healthy| *healthy)
            .await
            .map_err(|_| ClientError::Health("health check stopped".into()))?;
        let mut live = self.live.lock().await;
        if let Some(existing) = live.get(agent) {
            return Ok(Arc::clone(existing));
        }
        let config = TransportConfig {
            base_url: self.options.base_url.clone(),
            server_id: format!("sdk-{agent}-{}", uuid::Uuid::new_v4()),
            bootstrap_agent: Some(agent.to_string()),
            token: self.options.token.clone(),
            headers: self.headers.clone(),
            delete_timeout: self.options.delete_timeout,
            headers_timeout: self.options.headers_timeout,
        };
        let created = Arc::new(
            LiveConnection::create(
                config,
                self.http.clone(),
                self.recorder.clone(),
                self.options.trace.clone(),
            )
            .await?,
        );
        live.insert(agent.to_string(), Arc::clone(&created));
        Ok(created)
    }

    /// `createSession`: `session/new` on the agent's live connection, then a stored record.
    pub async fn create_session(
        &self,
        request: CreateSession,
    ) -> Result<SessionRecord, ClientError> {
        let _call = self.options.trace.call("createSession");
        let agent = request.agent.trim();
        if agent.is_empty() {
            return Err(ClientError::Config(
                "createSession requires a non-empty agent".into(),
            ));
        }
        let local = request
            .id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let live = self.live_connection(agent).await?;
        let session_init = normalize_session_init(request.session_init);
        let (agent_session_id, result) = live
            .create_remote_session(&local, session_init.clone())
            .await?;
        let record = SessionRecord {
            id: local.clone(),
            agent: agent.to_string(),
            agent_session_id: agent_session_id.clone(),
            last_connection_id: live.connection_id.clone(),
            created_at: now_ms(),
            destroyed_at: None,
            sandbox_id: None,
            session_init: Some(session_init),
            config_options: result.get("configOptions").cloned(),
            modes: result.get("modes").cloned(),
        };
        self.in_store(
            "updateSession",
            self.options.persist.update_session(record.clone()),
        )
        .await?;
        live.bind_session(&local, &agent_session_id);
        self.store_observed(std::slice::from_ref(&live)).await;
        Ok(record)
    }

    /// `resumeSession`: a no-op when the record points at this client's live
    /// connection and the session is bound there; otherwise replay + recreate + rebind.
    pub async fn resume_session(&self, id: &str) -> Result<Resume, ClientError> {
        let _call = self.options.trace.call("resumeSession");
        let existing = self.require_record(id).await?;
        let live = self.live_connection(&existing.agent).await?;
        if existing.last_connection_id == live.connection_id
            && live.has_bound_session(id, Some(&existing.agent_session_id))
        {
            return Ok(Resume::SameHandle);
        }
        self.store_observed(std::slice::from_ref(&live)).await;
        let events = self.replay_events(id).await?;
        let replay = build_replay_text(&events, self.options.replay_max_chars);
        let init = normalize_session_init(existing.session_init.clone());
        let (agent_session_id, result) = live.create_remote_session(id, init).await?;
        let updated = SessionRecord {
            agent_session_id: agent_session_id.clone(),
            last_connection_id: live.connection_id.clone(),
            destroyed_at: None,
            config_options: result.get("configOptions").cloned(),
            modes: result.get("modes").cloned(),
            ..existing
        };
        self.in_store(
            "updateSession",
            self.options.persist.update_session(updated),
        )
        .await?;
        live.bind_session(id, &agent_session_id);
        let replay_chars = replay.as_deref().map_or(0, |t| t.encode_utf16().count());
        live.queue_replay(id, replay);
        self.store_observed(std::slice::from_ref(&live)).await;
        Ok(Resume::Recreated {
            agent_session_id,
            replay_events: events.len(),
            replay_chars,
        })
    }

    /// `session.prompt(blocks)`; returns the agent's stop reason.
    pub async fn prompt(&self, id: &str, blocks: Vec<Value>) -> Result<PromptOutcome, ClientError> {
        let _call = self.options.trace.call("prompt");
        let response = self
            .send_session_method(id, "session/prompt", json!({"prompt": blocks}), false)
            .await?
            .ok_or_else(|| ClientError::UnexpectedResult {
                method: "session/prompt".into(),
                detail: "no response".into(),
            })?;
        let parsed: PromptResponse = live::parse_result("session/prompt", response.clone())?;
        let stop_reason = serde_json::to_value(parsed.stop_reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Ok(PromptOutcome {
            stop_reason,
            result: response,
        })
    }

    /// `session.cancel()`: the `session/cancel` notification, for a turn the caller gives up on.
    pub(crate) async fn cancel(&self, id: &str) -> Result<(), ClientError> {
        self.send_session_method(id, "session/cancel", json!({}), true)
            .await
            .map(|_| ())
    }

    /// `getEvents`: reads the persist driver only.
    pub async fn get_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, ClientError> {
        Ok(self
            .in_store(
                "listEvents",
                self.options.persist.list_events(session_id, page),
            )
            .await?)
    }

    /// `destroySession`: `session/cancel` best effort, then `destroyedAt`.
    pub(crate) async fn destroy_session(&self, id: &str) -> Result<SessionRecord, ClientError> {
        let _call = self.options.trace.call("destroySession");
        let _ = self
            .send_session_method(id, "session/cancel", json!({}), true)
            .await;
        let mut record = self.require_record(id).await?;
        record.destroyed_at = Some(now_ms());
        self.in_store(
            "updateSession",
            self.options.persist.update_session(record.clone()),
        )
        .await?;
        Ok(record)
    }

    /// `dispose`: closes every live connection (bounded DELETE each) and stores pending events.
    pub async fn dispose(&self) {
        self.begin_dispose().await.finish().await;
    }

    /// The part of [`Client::dispose`] that needs the session store: stops
    /// every live connection's stream and stores the events seen so far.
    /// What is left, [`Disposal::finish`], is the servers' DELETEs alone,
    /// so it can end beside other work that must not touch the store.
    pub(crate) async fn begin_dispose(&self) -> Disposal {
        let connections: Vec<_> = self.live.lock().await.drain().map(|(_, c)| c).collect();
        let deleting = connections.iter().filter(|c| c.shut()).cloned().collect();
        self.store_observed(&connections).await;
        Disposal {
            deleting,
            trace: self.options.trace.clone(),
        }
    }

    /// The SDK's `sendSessionMethodInternal`, with its lazy resume.
    async fn send_session_method(
        &self,
        id: &str,
        method: &str,
        params: Value,
        notification: bool,
    ) -> Result<Option<Value>, ClientError> {
        let record = self.require_record(id).await?;
        let live = self.live_connection(&record.agent).await?;
        if !live.has_bound_session(&record.id, Some(&record.agent_session_id)) {
            self.resume_session(&record.id).await?;
        }
        let outcome = live
            .send_session_method(&record.id, method, params, notification)
            .await;
        if let Ok(Some(response)) = &outcome {
            live.transport().settle(&response.id, SETTLE).await;
        }
        self.store_observed(std::slice::from_ref(&live)).await;
        Ok(outcome?.map(|r| r.result))
    }

    /// Runs one persist-store call as a named wait, so a store that hangs
    /// (a Rivet actor after its engine restarted) is what a timeout names.
    async fn in_store<T>(&self, call: &str, work: impl std::future::Future<Output = T>) -> T {
        let what = format!(
            "the persist store ({}): {call}",
            self.options.persist.name()
        );
        let _flight = (self.options.trace).in_flight(crate::trace::Flight::Store, what.clone());
        let _waiting = self.options.trace.wait(what, None);
        work.await
    }

    async fn require_record(&self, id: &str) -> Result<SessionRecord, ClientError> {
        self.in_store("getSession", self.options.persist.get_session(id))
            .await?
            .ok_or_else(|| ClientError::SessionNotFound(id.to_string()))
    }

    /// The newest `replay_max_events` events of a session, as `collectReplayEvents`.
    async fn replay_events(&self, id: &str) -> Result<Vec<SessionEvent>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let request = PageRequest {
                cursor,
                limit: Some(self.options.replay_max_events.max(100)),
            };
            let page = self
                .in_store("listEvents", self.options.persist.list_events(id, request))
                .await?;
            all.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let keep = all.len().saturating_sub(self.options.replay_max_events);
        Ok(all.split_off(keep))
    }
}

/// `{...init, cwd: init.cwd ?? process cwd, mcpServers: init.mcpServers ?? []}`.
fn normalize_session_init(init: Option<Value>) -> Value {
    let default_cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "/".into());
    let mut map = match init {
        Some(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    if map.get("cwd").is_none_or(Value::is_null) {
        map.insert("cwd".into(), Value::from(default_cwd));
    }
    if map.get("mcpServers").is_none_or(Value::is_null) {
        map.insert("mcpServers".into(), json!([]));
    }
    Value::Object(map)
}
