//! Rivet driver: the five operations are actions of a RivetKit actor
//! (`stack/rivet/server.mjs`, actor `persist`), called over HTTP through the
//! Rivet Engine's gateway — the Rust equivalent of `@sandbox-agent/persist-rivet`.
//!
//! One actor instance per key holds one store. The first call goes through
//! the key (`/gateway/persist/action/X?rvt-method=getOrCreate&rvt-key=K`),
//! which costs the engine a lookup on every request (~45 ms against ~16 ms);
//! its answer names the actor (`x-rivet-actor`), and later calls go to
//! `/gateway/{actorId}/action/X` directly — what a RivetKit 2.3.19 app gets
//! from `handle.resolve()` and `client.getForId()` (its handle's own
//! actions on a key still go through the key each time). An answer saying
//! the id is stale (the lifecycle and scheduling errors on which RivetKit's
//! handle drops a resolved id, see [`answer`]) forgets the id and the call
//! goes through the key again.
//!
//! While the runner or engine restarts the actor is unreachable for a few
//! seconds; a call retries transient failures (connection refused, 5xx) until
//! `retry_for` runs out, as a client waiting for its store would, so a
//! restart shows up as latency or, past the bound, as a failed write the
//! integrity check counts.

mod answer;
#[cfg(test)]
mod tests;

use super::{Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord};
use answer::{EngineError, ACTOR_HEADER};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The store this driver is, as errors and the trace name it.
const DRIVER: super::Store = super::Store::Rivet;

/// The actor's name in the app's registry.
pub(crate) const ACTOR: &str = "persist";
/// How long to let an actor that is starting or stopping settle before
/// resolving its key again (RivetKit's retry window).
const SETTLE: Duration = Duration::from_millis(100);

/// Where the actor is and how long to wait for it.
#[derive(Debug, Clone)]
pub(crate) struct RivetConfig {
    /// The engine's guard endpoint, e.g. `http://127.0.0.1:6420`.
    pub endpoint: String,
    pub namespace: String,
    /// Which actor instance (one store) to use.
    pub key: String,
    pub retry_for: Duration,
}

/// Session store in Rivet actor state. Clones share the HTTP client and the
/// actor id they learnt.
#[derive(Clone)]
pub(crate) struct RivetDriver {
    config: RivetConfig,
    http: reqwest::Client,
    /// The actor's id once an answer named it; shared by every clone.
    actor_id: Arc<Mutex<Option<String>>>,
}

fn err(message: impl Into<String>) -> PersistError {
    PersistError::new(DRIVER.name(), message)
}

/// Where one call goes: through the key, or straight to the actor.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Key,
    Actor(String),
}

/// Why one call failed, and what the next one should do about it.
#[derive(Debug)]
struct Failure {
    /// Passes with time: retry within `retry_for`.
    transient: bool,
    /// The engine's error, when it answered with one.
    engine: Option<EngineError>,
    /// The Rivet app could not be reached: no answer from the engine (refused,
    /// reset, silent), or the engine could not reach a runner for the actor.
    unreachable: bool,
    message: String,
}

impl Failure {
    fn new(transient: bool, message: String) -> Self {
        Failure {
            transient,
            engine: None,
            unreachable: false,
            message,
        }
    }

    /// The Rivet app did not answer the call: see [`Failure::unreachable`].
    fn unreachable(message: String) -> Self {
        Failure {
            unreachable: true,
            ..Failure::new(true, message)
        }
    }
}

/// How long one actor call may take: the engine holds a call while the
/// actor is rescheduled, up to ~18 s.
const CALL_TIMEOUT: Duration = Duration::from_secs(25);

impl RivetDriver {
    pub(crate) fn new(config: RivetConfig) -> Result<Self, PersistError> {
        let http = crate::http::client_builder()
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| err(e.to_string()))?;
        Ok(Self {
            config,
            http,
            actor_id: Arc::new(Mutex::new(None)),
        })
    }

    fn endpoint(&self) -> &str {
        self.config.endpoint.trim_end_matches('/')
    }

    /// The URL of an action on this driver's actor, through its key (what a
    /// readiness probe asks: the key must resolve, not only a known id answer).
    pub(crate) fn action_url(&self, action: &str) -> String {
        format!(
            "{}/gateway/{ACTOR}/action/{action}?rvt-namespace={}&rvt-method=getOrCreate&rvt-pool=default&rvt-key={}",
            self.endpoint(),
            self.config.namespace,
            crate::http::encode_component(&self.config.key)
        )
    }

    /// The URL of an action on the actor with this id.
    fn actor_url(&self, actor_id: &str, action: &str) -> String {
        format!(
            "{}/gateway/{}/action/{action}",
            self.endpoint(),
            crate::http::encode_component(actor_id)
        )
    }

    /// The actor id learnt so far.
    pub(crate) fn known_actor_id(&self) -> Option<String> {
        self.id_slot().clone()
    }

    fn id_slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.actor_id.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn route(&self) -> Route {
        match self.known_actor_id() {
            Some(id) => Route::Actor(id),
            None => Route::Key,
        }
    }

    pub(crate) fn remember(&self, id: String) {
        *self.id_slot() = Some(id);
    }

    /// Forgets `stale`, unless another call has already learnt a newer id.
    fn forget(&self, stale: &str) {
        let mut slot = self.id_slot();
        if slot.as_deref() == Some(stale) {
            *slot = None;
        }
    }

    /// Calls an action once by `route`: its output and the actor id the
    /// answer named.
    async fn call_once(
        &self,
        action: &str,
        args: &Value,
        route: &Route,
    ) -> Result<(Value, Option<String>), Failure> {
        let url = match route {
            Route::Key => self.action_url(action),
            Route::Actor(id) => self.actor_url(id, action),
        };
        let response = self
            .http
            .post(url)
            .header("x-rivet-encoding", "json")
            .json(&json!({ "args": args }))
            .send()
            .await
            .map_err(|e| {
                let message = format!(
                    "{action}: {}",
                    crate::acp::AcpError::from_reqwest(&self.config.endpoint, &e, CALL_TIMEOUT)
                );
                match e.is_connect() || e.is_timeout() || e.is_request() {
                    true => Failure::unreachable(message),
                    false => Failure::new(false, message),
                }
            })?;
        let status = response.status();
        let actor = answer::actor_id(
            response
                .headers()
                .get(ACTOR_HEADER)
                .map(|value| value.as_bytes()),
        );
        let body = response
            .bytes()
            .await
            .map_err(|e| Failure::unreachable(format!("{action}: reading the reply: {e}")))?;
        if !status.is_success() {
            let engine = EngineError::parse(&body);
            let text = String::from_utf8_lossy(&body);
            let text: String = crate::secret::redact_known(&text)
                .chars()
                .take(300)
                .collect();
            return Err(Failure {
                transient: answer::is_transient(status.as_u16(), engine.as_ref()),
                unreachable: engine.as_ref().is_some_and(EngineError::is_scheduling),
                engine,
                message: format!("{action}: HTTP {}: {text}", status.as_u16()),
            });
        }
        let reply: Value = serde_json::from_slice(&body)
            .map_err(|e| Failure::new(false, format!("{action}: reply is not JSON: {e}")))?;
        let output = reply.get("output").cloned().ok_or_else(|| {
            Failure::new(false, format!("{action}: reply has no `output`: {reply}"))
        })?;
        Ok((output, actor))
    }

    async fn call<T: DeserializeOwned>(
        &self,
        action: &str,
        args: Value,
    ) -> Result<T, PersistError> {
        let started = Instant::now();
        let mut delay = Duration::from_millis(50);
        // A stale id is this driver's shortcut failing, not the store: the
        // first one goes back through the key at once, whatever `retry_for`.
        let mut rerouted = false;
        loop {
            let route = self.route();
            let failure = match self.call_once(action, &args, &route).await {
                Ok((output, actor)) => {
                    if let Some(id) = actor {
                        if route != Route::Actor(id.clone()) {
                            self.remember(id);
                        }
                    }
                    return serde_json::from_value(output)
                        .map_err(|e| err(format!("{action}: unexpected output: {e}")));
                }
                Err(failure) => failure,
            };
            if let (Route::Actor(id), Some(engine)) = (&route, &failure.engine) {
                if engine.id_is_stale() {
                    self.forget(id);
                    if engine.is_settling() {
                        tokio::time::sleep(SETTLE).await;
                    }
                    if !rerouted {
                        rerouted = true;
                        continue;
                    }
                }
            }
            if failure.transient && started.elapsed() < self.config.retry_for {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(500));
                continue;
            }
            let message = format!(
                "{} (after {} ms)",
                failure.message,
                started.elapsed().as_millis()
            );
            // The Rivet app is continuity's own: unless the cell restarts
            // it on purpose, its being unreachable is the harness's error.
            return Err(match failure.unreachable {
                true => {
                    PersistError::gone(DRIVER.name(), crate::errors::HarnessPart::RivetApp, message)
                }
                false => err(message),
            });
        }
    }
}

#[async_trait]
impl PersistDriver for RivetDriver {
    fn name(&self) -> &'static str {
        DRIVER.name()
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        self.call("getSession", json!([id])).await
    }

    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        self.call("listSessions", json!([page])).await
    }

    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError> {
        self.call::<Value>("updateSession", json!([record]))
            .await
            .map(drop)
    }

    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        let mut request = serde_json::to_value(&page).map_err(|e| err(e.to_string()))?;
        request["sessionId"] = Value::from(session_id);
        self.call("listEvents", json!([request])).await
    }

    async fn insert_event(
        &self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<(), PersistError> {
        self.call::<Value>("insertEvent", json!([session_id, event]))
            .await
            .map(drop)
    }
}
