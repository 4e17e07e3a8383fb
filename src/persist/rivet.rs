//! Rivet driver: the five operations are actions of a RivetKit actor
//! (`stack/rivet/server.mjs`, actor `persist`), called over HTTP through the
//! Rivet Engine's gateway — the Rust equivalent of `@sandbox-agent/persist-rivet`.
//!
//! One actor instance per key holds one store. While the runner or engine
//! restarts the actor is unreachable for a few seconds; a call retries
//! transient failures (connection refused, 5xx) until `retry_for` runs out, as
//! a client waiting for its store would, so a restart shows up as latency or,
//! past the bound, as a failed write the integrity check counts.

use super::{Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const DRIVER: &str = "rivet";
/// The actor's name in the app's registry.
pub const ACTOR: &str = "persist";

/// Where the actor is and how long to wait for it.
#[derive(Debug, Clone)]
pub struct RivetConfig {
    /// The engine's guard endpoint, e.g. `http://127.0.0.1:6420`.
    pub endpoint: String,
    pub namespace: String,
    /// Which actor instance (one store) to use.
    pub key: String,
    pub retry_for: Duration,
}

/// Session store in Rivet actor state.
pub struct RivetDriver {
    config: RivetConfig,
    http: reqwest::Client,
}

fn err(message: impl Into<String>) -> PersistError {
    PersistError::new(DRIVER, message)
}

impl RivetDriver {
    pub fn new(config: RivetConfig) -> Result<Self, PersistError> {
        let http = crate::http::client_builder()
            // The engine holds a call while the actor is rescheduled, up to ~18 s.
            .timeout(Duration::from_secs(25))
            .build()
            .map_err(|e| err(e.to_string()))?;
        Ok(Self { config, http })
    }

    /// The URL of an action on this driver's actor.
    pub fn action_url(&self, action: &str) -> String {
        format!(
            "{}/gateway/{ACTOR}/action/{action}?rvt-namespace={}&rvt-method=getOrCreate&rvt-pool=default&rvt-key={}",
            self.config.endpoint.trim_end_matches('/'),
            self.config.namespace,
            crate::http::encode_component(&self.config.key)
        )
    }

    /// Calls an action once; `Err((transient, message))`.
    async fn call_once(&self, action: &str, args: &Value) -> Result<Value, (bool, String)> {
        let response = self
            .http
            .post(self.action_url(action))
            .header("x-rivet-encoding", "json")
            .json(&json!({ "args": args }))
            .send()
            .await
            .map_err(|e| {
                (
                    e.is_connect() || e.is_timeout() || e.is_request(),
                    format!(
                        "{action}: {}",
                        crate::acp::AcpError::from_reqwest(&self.config.endpoint, &e)
                    ),
                )
            })?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| (true, format!("{action}: reading the reply: {e}")))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let text: String = crate::secret::redact_known(&text)
                .chars()
                .take(300)
                .collect();
            // 5xx and 404 (actor not yet scheduled on a runner) pass with time.
            let transient =
                status.is_server_error() || status.as_u16() == 404 || status.as_u16() == 429;
            return Err((
                transient,
                format!("{action}: HTTP {}: {text}", status.as_u16()),
            ));
        }
        let reply: Value = serde_json::from_slice(&body)
            .map_err(|e| (false, format!("{action}: reply is not JSON: {e}")))?;
        reply
            .get("output")
            .cloned()
            .ok_or_else(|| (false, format!("{action}: reply has no `output`: {reply}")))
    }

    async fn call<T: DeserializeOwned>(
        &self,
        action: &str,
        args: Value,
    ) -> Result<T, PersistError> {
        let started = Instant::now();
        let mut delay = Duration::from_millis(50);
        loop {
            match self.call_once(action, &args).await {
                Ok(output) => {
                    return serde_json::from_value(output)
                        .map_err(|e| err(format!("{action}: unexpected output: {e}")));
                }
                Err((true, message)) if started.elapsed() < self.config.retry_for => {
                    let _ = message;
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_millis(500));
                }
                Err((_, message)) => {
                    return Err(err(format!(
                        "{message} (after {} ms)",
                        started.elapsed().as_millis()
                    )));
                }
            }
        }
    }
}

#[async_trait]
impl PersistDriver for RivetDriver {
    fn name(&self) -> &'static str {
        DRIVER
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
