//! The HTTP transport for one ACP server id, as `acp-http-client` 0.4.2 does it.
//!
//! Theory of operation: `request` registers a pending id, then `write` POSTs
//! the envelope from a spawned task (so a caller that gives up never cancels a
//! POST half-way, as in the SDK). A 200 body is an inbound envelope; any other
//! 2xx means the answer comes on the SSE stream, which one background loop
//! reads (`Last-Event-ID` on reconnect, 150 ms between attempts, and it stops
//! for good on a failed GET until the next write starts it again). Inbound
//! envelopes go through one funnel, [`Inner::push_inbound`], which drops
//! responses already seen, tells the observer, and completes the pending
//! request. sandbox-agent's `_adapter/agent_exited` fails the pending
//! requests (the server never answers them). A failed POST closes the
//! transport and fails every pending request with that error — where the SDK
//! leaves the caller waiting forever, which is the "timeout" of the bug
//! report. Every exchange and envelope goes into the cell's trace, and each
//! request is a named wait there until its answer comes. [`Transport::stats`] tells what the
//! stream and the POSTs saw (opens, `Last-Event-ID` resumes, how streams
//! ended, which path each answer took), for a turn cut by a restart.
//!
//! Over 400 lines on purpose: the POST writer, the SSE loop and the table of
//! pending requests are one state (`State`, `Inner`) behind one lock, and
//! every inbound envelope goes through one funnel (`Inner::push_inbound`):
//! the order the SDK's semantics rest on.

use super::error::AcpError;
use crate::secret::Secret;
use crate::trace::event::{Dir, Via};
use crate::trace::{Exchange, Purpose, Trace};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

mod envelope;
mod post;
mod reattach;
mod stats;
mod stream;

pub(crate) use stats::StreamStats;

#[cfg(test)]
mod props;

pub(crate) use envelope::read_bounded;
use envelope::{remember, response_id, rpc_result, truncate, urlencode};

/// Responses remembered for de-duplication, as the SDK's 2048.
const SEEN_RESPONSE_IDS: usize = 2048;
/// Pause before the SSE loop reconnects after a stream ends.
const SSE_RECONNECT_DELAY: Duration = Duration::from_millis(150);
/// sandbox-agent's notification that the agent process behind a server id died.
const AGENT_EXITED: &str = "_adapter/agent_exited";
/// Largest response body or SSE line accepted; beyond it the input is
/// hostile and refused while streaming. An envelope is copied a few times on
/// its way (body, parsed value, observer, store), so this bounds the
/// harness's memory: 4 MiB keeps a run under 64 MB whatever the server
/// sends (bench/memory.sh), and is far above what ACP traffic carries (the
/// SDK's replay text is capped at 12 000 characters).
pub(crate) const MAX_ENVELOPE_BYTES: usize = 4 * 1024 * 1024;

/// Which way an envelope went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Outbound,
    Inbound,
}

/// One envelope seen by the transport, delivered to the observer in order.
#[derive(Debug, Clone)]
pub struct Observed {
    pub envelope: Value,
    pub direction: Direction,
}

/// A successful JSON-RPC response: its id (for [`Transport::settle`]) and `result`.
#[derive(Debug, Clone)]
pub struct RpcResponse {
    pub id: String,
    pub result: Value,
}

/// Where and how to reach one ACP server id.
#[derive(Clone)]
pub struct TransportConfig {
    /// Server base URL without a trailing slash, e.g. `http://127.0.0.1:2468`.
    pub base_url: String,
    pub server_id: String,
    /// Sent as `?agent=` on the first POST only.
    pub bootstrap_agent: Option<String>,
    pub token: Option<Secret>,
    pub headers: HeaderMap,
    /// Bound on the best-effort DELETE at close (the SDK uses 2 s).
    pub delete_timeout: Duration,
    /// The client's own wait for a POST's response headers (undici's
    /// `headersTimeout`); none: it waits as long as the server holds it.
    pub headers_timeout: Option<Duration>,
}

impl std::fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportConfig")
            .field("base_url", &crate::secret::display_url(&self.base_url))
            .field("server_id", &self.server_id)
            .field("bootstrap_agent", &self.bootstrap_agent)
            .field("token", &self.token)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

type PendingReply = oneshot::Sender<Result<Value, AcpError>>;

#[derive(Default)]
struct State {
    /// Set once; the reason later writes report.
    closed: Option<AcpError>,
    posted_once: bool,
    next_id: i64,
    pending: HashMap<String, PendingReply>,
    seen_response_ids: HashSet<String>,
    seen_response_order: VecDeque<String>,
    /// Response ids that arrived on the stream, for [`Transport::settle`].
    streamed_response_ids: HashSet<String>,
    streamed_response_order: VecDeque<String>,
    last_event_id: Option<String>,
    /// How many envelopes went to the observer (see [`Transport::observed`]).
    observed: u64,
    sse_task: Option<JoinHandle<()>>,
    record: stats::Recorder,
}

impl State {
    /// Hands one envelope to the observer, counted: under the state's lock,
    /// so the count and the channel's order agree.
    fn observe(
        &mut self,
        observer: &mpsc::UnboundedSender<Observed>,
        envelope: &Value,
        direction: Direction,
    ) {
        self.observed += 1;
        let _ = observer.send(Observed {
            envelope: envelope.clone(),
            direction,
        });
    }
}

struct Inner {
    config: TransportConfig,
    http: reqwest::Client,
    observer: mpsc::UnboundedSender<Observed>,
    state: Mutex<State>,
    stream_progress: Notify,
    trace: Trace,
}

/// One ACP-over-HTTP connection to `/v1/acp/{serverId}`.
#[derive(Clone)]
pub struct Transport {
    inner: Arc<Inner>,
}

impl Transport {
    /// A transport that reports every envelope to `observer`. Nothing is sent yet.
    pub fn new(
        config: TransportConfig,
        http: reqwest::Client,
        observer: mpsc::UnboundedSender<Observed>,
    ) -> Self {
        Self::traced(config, http, observer, Trace::detached())
    }

    /// A transport that also records its exchanges, envelopes and waits in `trace`.
    pub fn traced(
        config: TransportConfig,
        http: reqwest::Client,
        observer: mpsc::UnboundedSender<Observed>,
        trace: Trace,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                http,
                observer,
                state: Mutex::new(State::default()),
                stream_progress: Notify::new(),
                trace,
            }),
        }
    }

    /// Sends a request and waits for its response; an `error` member becomes [`AcpError::Rpc`].
    pub async fn request(&self, method: &str, params: Value) -> Result<RpcResponse, AcpError> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = self.inner.lock();
            if let Some(reason) = &state.closed {
                return Err(closed_error(reason));
            }
            let id = state.next_id;
            state.next_id += 1;
            state.pending.insert(id.to_string(), tx);
            id
        };
        let key = id.to_string();
        let guard = PendingGuard {
            inner: &self.inner,
            id: key.clone(),
        };
        let envelope = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let _waiting = self
            .inner
            .trace
            .wait(format!("a response to {method} (id {id})"), None);
        self.inner.write(envelope)?;
        let outcome = rx.await.unwrap_or_else(|_| {
            Err(AcpError::Closed {
                cause: self.inner.lock().closed.clone().map(Box::new),
            })
        });
        drop(guard);
        self.inner.lock().record.answered(&key, method);
        let envelope = outcome?;
        rpc_result(key, envelope)
    }

    /// Sends a notification (no id, no response).
    pub(crate) fn notify(&self, method: &str, params: Value) -> Result<(), AcpError> {
        self.inner
            .write(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// What the stream and the POSTs have seen so far.
    pub fn stats(&self) -> StreamStats {
        let state = self.inner.lock();
        let mut stats = state.record.stats.clone();
        stats.closed_by = state.closed.as_ref().map(ToString::to_string);
        stats
    }

    /// How many envelopes this transport has handed its observer so far:
    /// an observer that counts what it took can tell when it has caught up.
    pub fn observed(&self) -> u64 {
        self.inner.lock().observed
    }

    /// Waits, at most `max`, until the stream has delivered response `id` too,
    /// so the notifications the server sent before it have been observed. Returns
    /// at once when no stream is running.
    pub async fn settle(&self, id: &str, max: Duration) {
        let deadline = tokio::time::Instant::now() + max;
        loop {
            let notified = self.inner.stream_progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.inner.lock();
                let running = state.sse_task.as_ref().is_some_and(|t| !t.is_finished());
                if state.streamed_response_ids.contains(id) || !running || state.closed.is_some() {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// Closes the transport: stops the stream, fails pending requests, and
    /// DELETEs the server id (best effort, bounded) if anything was ever posted.
    pub async fn close(&self) {
        if self.shut() {
            self.delete().await;
        }
    }

    /// The first half of [`Transport::close`]: stops the stream and fails
    /// pending requests, at once. True when the server id still has to be
    /// DELETEd (something was posted, and this call is the one that shut it).
    pub(crate) fn shut(&self) -> bool {
        let mut state = self.inner.lock();
        if state.closed.is_some() {
            return false;
        }
        state.closed = Some(AcpError::Closed { cause: None });
        if let Some(task) = state.sse_task.take() {
            task.abort();
        }
        fail_pending(&mut state, AcpError::Closed { cause: None });
        state.posted_once
    }

    /// The second half of [`Transport::close`]: the bounded DELETE of the
    /// server id, whatever its outcome (the SDK ignores it too).
    pub(crate) async fn delete(&self) {
        let inner = &self.inner;
        let url = inner.url(None);
        let _waiting = inner.trace.wait(
            format!("DELETE {} (close)", self.inner.config.server_id),
            None,
        );
        let _flight = inner.trace.in_flight(
            crate::trace::Flight::Request,
            format!("DELETE {} (close)", self.inner.config.server_id),
        );
        let started = std::time::Instant::now();
        let request = inner
            .http
            .delete(&url)
            .headers(inner.headers())
            .header(ACCEPT, "application/json")
            .timeout(inner.config.delete_timeout)
            .send();
        // The SDK ignores every DELETE outcome; so do we, but never wait past the bound.
        let outcome = tokio::time::timeout(inner.config.delete_timeout, request).await;
        let (status, failure) = match outcome {
            Ok(Ok(r)) => (Some(r.status().as_u16()), None),
            Ok(Err(e)) if !e.is_timeout() => (
                None,
                Some(AcpError::from_reqwest(&url, &e, crate::http::CONNECT_TIMEOUT).seen()),
            ),
            // reqwest's own timer (the same bound) may fire first: name the bound either way.
            Ok(Err(_)) | Err(_) => {
                let ms = inner.config.delete_timeout.as_millis() as u64;
                (None, Some(AcpError::Timeout { ms }.seen()))
            }
        };
        inner.trace.http(Exchange {
            method: "DELETE",
            url,
            purpose: Purpose::Delete,
            attempt: None,
            status,
            elapsed: started.elapsed(),
            sent: 0,
            received: 0,
            failure,
            last_event_id: None,
        });
    }
}

/// Removes a pending entry when its caller stops waiting (deadline, drop).
struct PendingGuard<'a> {
    inner: &'a Arc<Inner>,
    id: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.inner.lock().pending.remove(&self.id);
    }
}

fn closed_error(reason: &AcpError) -> AcpError {
    match reason {
        AcpError::Closed { .. } => reason.clone(),
        other => AcpError::Closed {
            cause: Some(Box::new(other.clone())),
        },
    }
}

fn fail_pending(state: &mut State, error: AcpError) {
    for (_, reply) in state.pending.drain() {
        let _ = reply.send(Err(error.clone()));
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn url(&self, agent: Option<&str>) -> String {
        let mut url = format!(
            "{}/v1/acp/{}",
            self.config.base_url,
            urlencode(&self.config.server_id)
        );
        if let Some(agent) = agent {
            url.push_str("?agent=");
            url.push_str(&urlencode(agent));
        }
        url
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = self.config.headers.clone();
        if let Some(token) = &self.config.token {
            if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose())) {
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
        }
        headers
    }

    /// Observes and POSTs one envelope; the first POST carries the bootstrap query.
    fn write(self: &Arc<Self>, envelope: Value) -> Result<(), AcpError> {
        let url = {
            let mut state = self.lock();
            if let Some(reason) = &state.closed {
                return Err(closed_error(reason));
            }
            state.observe(&self.observer, &envelope, Direction::Outbound);
            self.trace.rpc(Dir::Out, Via::Post, &envelope);
            let agent = (!state.posted_once)
                .then_some(self.config.bootstrap_agent.as_deref())
                .flatten();
            let url = self.url(agent);
            state.posted_once = true;
            self.ensure_stream_loop(&mut state);
            url
        };
        let inner = Arc::clone(self);
        tokio::spawn(async move { inner.post(url, envelope).await });
        Ok(())
    }

    /// Closes the transport because of `error` and fails every pending request with it.
    fn fail(&self, error: AcpError) {
        let mut state = self.lock();
        if state.closed.is_some() {
            return;
        }
        state.closed = Some(error.clone());
        if let Some(task) = state.sse_task.take() {
            task.abort();
        }
        fail_pending(&mut state, error);
        drop(state);
        self.stream_progress.notify_waiters();
    }

    /// The single entry point for envelopes from the server.
    fn push_inbound(self: &Arc<Self>, envelope: Value, from_stream: bool) {
        if !from_stream {
            // Stream envelopes are traced as `sse` events where they arrive.
            self.trace.rpc(Dir::In, Via::Post, &envelope);
        }
        let Value::Object(object) = &envelope else {
            return self.fail(AcpError::Malformed {
                detail: format!(
                    "envelope is not a JSON object: {}",
                    truncate(&envelope.to_string())
                ),
            });
        };
        let mut state = self.lock();
        if state.closed.is_some() {
            return;
        }
        let response_id = response_id(object);
        if let (Some(id), true) = (&response_id, from_stream) {
            let State {
                streamed_response_ids,
                streamed_response_order,
                ..
            } = &mut *state;
            remember(streamed_response_ids, streamed_response_order, id.clone());
            self.stream_progress.notify_waiters();
        }
        if let Some(id) = &response_id {
            if state.pending.contains_key(id) {
                state.record.arrived(id, from_stream);
            }
            let State {
                seen_response_ids,
                seen_response_order,
                ..
            } = &mut *state;
            if !remember(seen_response_ids, seen_response_order, id.clone()) {
                return;
            }
        }
        state.observe(&self.observer, &envelope, Direction::Inbound);
        if let Some(id) = response_id {
            if let Some(reply) = state.pending.remove(&id) {
                let _ = reply.send(Ok(envelope));
            }
            return;
        }
        let method = object.get("method").and_then(Value::as_str);
        if response_id.is_none() && method.is_none() {
            drop(state);
            return self.fail(AcpError::Malformed {
                detail: format!(
                    "neither a request, a notification nor a response: {}",
                    truncate(&envelope.to_string())
                ),
            });
        }
        if method == Some(AGENT_EXITED) {
            // The server never answers the requests the dead agent held: fail them now.
            let code = object
                .get("params")
                .and_then(|p| p.get("code"))
                .and_then(Value::as_i64);
            fail_pending(&mut state, AcpError::AgentExited { code });
            return;
        }
        let id = object.get("id").filter(|id| !id.is_null()).cloned();
        if let (Some(method), Some(id)) = (method, id) {
            drop(state);
            self.answer_agent_request(method, id);
        }
    }

    /// The client side of agent → client requests: permission requests are
    /// cancelled (the SDK's default with no listener); anything else is unsupported.
    fn answer_agent_request(self: &Arc<Self>, method: &str, id: Value) {
        let reply = if method == "session/request_permission" {
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": super::METHOD_NOT_FOUND, "message": format!("Method not found: {method}")}})
        };
        // A closed transport cannot answer; the agent's request dies with it.
        let _ = self.write(reply);
    }
}
