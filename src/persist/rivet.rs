//! Rivet driver: the five operations are actions of a RivetKit actor
//! (`stack/rivet/server.mjs`, actor `persist`), called over HTTP through the
//! Rivet Engine's gateway — the Rust equivalent of `@sandbox-agent/persist-rivet`.
//!
//! One actor instance per key holds one store. The first call goes through
//! the key and later ones straight to the actor id its answer named
//! ([`route`]: what a RivetKit 2.3.19 app gets from `handle.resolve()`; its
//! handle's own actions on a key still go through the key each time).
//!
//! While the runner or engine restarts the actor is unreachable for a few
//! seconds; a call retries transient failures (connection refused, 5xx) until
//! `retry_for` runs out, as a client waiting for its store would, so a
//! restart shows up as latency or, past the bound, as a failed write the
//! integrity check counts.

pub(crate) mod answer;
pub(crate) mod route;
#[cfg(test)]
pub(crate) mod tests;

use super::{Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord};
use answer::{EngineError, ACTOR_HEADER};
use async_trait::async_trait;
use route::{ActorRoute, Route};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The store this driver is, as errors and the trace name it.
const DRIVER: super::Store = super::Store::Rivet;

/// The actor's name in the app's registry.
pub(crate) const ACTOR: &str = "persist";

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
    /// Where calls go: the key, or the actor's id once an answer named it.
    route: ActorRoute,
}

fn err(message: impl Into<String>) -> PersistError {
    PersistError::new(DRIVER.name(), message)
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
        let route = ActorRoute::new(&config.endpoint, &config.namespace, ACTOR, &config.key);
        Ok(Self {
            config,
            http,
            route,
        })
    }

    /// The URL of an action on this driver's actor, through its key (what a
    /// readiness probe asks: the key must resolve, not only a known id answer).
    pub(crate) fn action_url(&self, action: &str) -> String {
        self.route.key_url(action)
    }

    /// The actor id learnt so far.
    #[cfg(test)]
    pub(crate) fn known_actor_id(&self) -> Option<String> {
        self.route.known_id()
    }

    #[cfg(test)]
    pub(crate) fn remember(&self, id: String) {
        self.route.remember(id);
    }

    #[cfg(test)]
    fn forget(&self, stale: &str) {
        self.route.forget(stale);
    }

    /// Calls an action once by `route`: its output (the actor id the
    /// answer named is learnt for the next call).
    async fn call_once(&self, action: &str, args: &Value, route: &Route) -> Result<Value, Failure> {
        let url = self.route.url(route, action);
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
        let actor = response.headers().get(ACTOR_HEADER).cloned();
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
        self.route
            .answered(route, actor.as_ref().map(|value| value.as_bytes()));
        Ok(output)
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
            let route = self.route.current();
            let failure = match self.call_once(action, &args, &route).await {
                Ok(output) => {
                    return serde_json::from_value(output)
                        .map_err(|e| err(format!("{action}: unexpected output: {e}")));
                }
                Err(failure) => failure,
            };
            if self.route.stale(&route, failure.engine.as_ref()).await && !rerouted {
                rerouted = true;
                continue;
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
