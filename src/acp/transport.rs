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
//! requests (the server never answers them). A failed POST closes the transport and fails every pending request
//! with that error — where the SDK leaves the caller waiting forever, which is
//! the "timeout" of the bug report.

use super::error::{AcpError, Problem};
use crate::secret::Secret;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

/// Responses remembered for de-duplication, as the SDK's 2048.
const SEEN_RESPONSE_IDS: usize = 2048;
/// Pause before the SSE loop reconnects after a stream ends.
const SSE_RECONNECT_DELAY: Duration = Duration::from_millis(150);
/// sandbox-agent's notification that the agent process behind a server id died.
const AGENT_EXITED: &str = "_adapter/agent_exited";
/// Largest POST body accepted; beyond it the input is hostile.
const MAX_ENVELOPE_BYTES: usize = 16 * 1024 * 1024;
/// Longest SSE line accepted (an envelope is one `data:` line).
const MAX_STREAM_LINE_BYTES: usize = MAX_ENVELOPE_BYTES;

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
    sse_task: Option<JoinHandle<()>>,
    /// Why the stream loop last stopped, for diagnosis.
    last_stream_error: Option<AcpError>,
}

struct Inner {
    config: TransportConfig,
    http: reqwest::Client,
    observer: mpsc::UnboundedSender<Observed>,
    state: Mutex<State>,
    stream_progress: Notify,
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
        Self {
            inner: Arc::new(Inner {
                config,
                http,
                observer,
                state: Mutex::new(State::default()),
                stream_progress: Notify::new(),
            }),
        }
    }

    pub fn server_id(&self) -> &str {
        &self.inner.config.server_id
    }

    /// Whether the transport has closed (by `close` or by a failed POST).
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed.is_some()
    }

    /// Why the stream loop last stopped, if it did.
    pub fn last_stream_error(&self) -> Option<AcpError> {
        self.inner.lock().last_stream_error.clone()
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
        self.inner.write(envelope)?;
        let outcome = rx.await.unwrap_or_else(|_| {
            Err(AcpError::Closed {
                cause: self.inner.lock().closed.clone().map(Box::new),
            })
        });
        drop(guard);
        let envelope = outcome?;
        rpc_result(key, envelope)
    }

    /// Sends a notification (no id, no response).
    pub fn notify(&self, method: &str, params: Value) -> Result<(), AcpError> {
        self.inner
            .write(json!({"jsonrpc": "2.0", "method": method, "params": params}))
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
        let posted = {
            let mut state = self.inner.lock();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some(AcpError::Closed { cause: None });
            if let Some(task) = state.sse_task.take() {
                task.abort();
            }
            fail_pending(&mut state, AcpError::Closed { cause: None });
            state.posted_once
        };
        if !posted {
            return;
        }
        let inner = &self.inner;
        let request = inner
            .http
            .delete(inner.url(None))
            .headers(inner.headers())
            .header(ACCEPT, "application/json")
            .timeout(inner.config.delete_timeout)
            .send();
        // The SDK ignores every DELETE outcome; so do we, but never wait past the bound.
        let _ = tokio::time::timeout(inner.config.delete_timeout, request).await;
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

/// Turns a response envelope into its result or a typed RPC error.
fn rpc_result(id: String, envelope: Value) -> Result<RpcResponse, AcpError> {
    if let Some(error) = envelope.get("error") {
        let code = error.get("code").and_then(Value::as_i64);
        let message = error.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(AcpError::Rpc {
                code,
                message: message.to_string(),
                data: error.get("data").cloned(),
            }),
            _ => Err(AcpError::Malformed {
                detail: format!("error member without integer code and string message: {error}"),
            }),
        };
    }
    match envelope.get("result") {
        Some(result) => Ok(RpcResponse {
            id,
            result: result.clone(),
        }),
        None => Err(AcpError::Malformed {
            detail: "response has neither result nor error".into(),
        }),
    }
}

/// The id of a response envelope (no `method`, has `result` or `error`), as a string.
fn response_id(envelope: &Map<String, Value>) -> Option<String> {
    if envelope.contains_key("method") {
        return None;
    }
    if !envelope.contains_key("result") && !envelope.contains_key("error") {
        return None;
    }
    match envelope.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

fn remember(set: &mut HashSet<String>, order: &mut VecDeque<String>, id: String) -> bool {
    if !set.insert(id.clone()) {
        return false;
    }
    order.push_back(id);
    if order.len() > SEEN_RESPONSE_IDS {
        if let Some(oldest) = order.pop_front() {
            set.remove(&oldest);
        }
    }
    true
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
            let _ = self.observer.send(Observed {
                envelope: envelope.clone(),
                direction: Direction::Outbound,
            });
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

    async fn post(self: Arc<Self>, url: String, envelope: Value) {
        let sent = self
            .http
            .post(&url)
            .headers(self.headers())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(envelope.to_string())
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => return self.fail(AcpError::from_reqwest(&url, &e)),
        };
        let status = response.status();
        let body = match read_bounded(response).await {
            Ok(body) => body,
            Err(e) => return self.fail(AcpError::from_reqwest(&url, &e)),
        };
        let Some(body) = body else {
            return self.fail(AcpError::Malformed {
                detail: format!("response body over {MAX_ENVELOPE_BYTES} bytes"),
            });
        };
        if !status.is_success() {
            return self.fail(AcpError::Http {
                status: status.as_u16(),
                problem: Problem::parse(&body),
            });
        }
        if status.as_u16() != 200 || body.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(envelope) => self.push_inbound(envelope, false),
            Err(e) => self.fail(AcpError::Malformed {
                detail: format!("POST response is not JSON: {e}"),
            }),
        }
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
            let State {
                seen_response_ids,
                seen_response_order,
                ..
            } = &mut *state;
            if !remember(seen_response_ids, seen_response_order, id.clone()) {
                return;
            }
        }
        let _ = self.observer.send(Observed {
            envelope: envelope.clone(),
            direction: Direction::Inbound,
        });
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

    fn ensure_stream_loop(self: &Arc<Self>, state: &mut State) {
        if state.closed.is_some() || !state.posted_once {
            return;
        }
        if state.sse_task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let inner = Arc::clone(self);
        state.sse_task = Some(tokio::spawn(async move { inner.stream_loop().await }));
    }

    async fn stream_loop(self: Arc<Self>) {
        loop {
            let last_event_id = {
                let state = self.lock();
                if state.closed.is_some() {
                    return;
                }
                state.last_event_id.clone()
            };
            let error = self.read_stream_once(last_event_id).await;
            let error = {
                let mut state = self.lock();
                if state.closed.is_some() {
                    return;
                }
                state.last_stream_error.clone_from(&error);
                error
            };
            if let Some(error) = error {
                // Hostile or corrupt input closes the transport with that error; a
                // refused or failed GET only ends the loop, as in the SDK.
                if matches!(error, AcpError::Malformed { .. }) {
                    self.fail(error);
                }
                // A failed GET or a broken stream ends the loop until the next write.
                self.stream_progress.notify_waiters();
                return;
            }
            // The stream ended cleanly: reconnect after a pause, as the SDK does.
            tokio::time::sleep(SSE_RECONNECT_DELAY).await;
        }
    }

    /// One GET of the stream; `None` when it ended cleanly.
    async fn read_stream_once(self: &Arc<Self>, last_event_id: Option<String>) -> Option<AcpError> {
        let url = self.url(None);
        let mut request = self
            .http
            .get(&url)
            .headers(self.headers())
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = last_event_id {
            if let Ok(value) = HeaderValue::from_str(&id) {
                request = request.header(HeaderName::from_static("last-event-id"), value);
            }
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Some(AcpError::from_reqwest(&url, &e)),
        };
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let body = read_bounded(response)
                .await
                .ok()
                .flatten()
                .unwrap_or_default();
            return Some(AcpError::Http {
                status,
                problem: Problem::parse(&body),
            });
        }
        let mut events = std::pin::pin!(whole_lines(response.bytes_stream()).eventsource());
        while let Some(item) = events.next().await {
            let event = match item {
                Ok(event) => event,
                Err(eventsource_stream::EventStreamError::Transport(StreamFault::Http(e))) => {
                    return Some(AcpError::from_reqwest(&url, &e))
                }
                Err(eventsource_stream::EventStreamError::Transport(StreamFault::Oversize)) => {
                    return Some(AcpError::Malformed {
                        detail: format!("SSE line over {MAX_STREAM_LINE_BYTES} bytes"),
                    })
                }
                Err(e) => {
                    return Some(AcpError::Malformed {
                        detail: format!("SSE stream: {e}"),
                    })
                }
            };
            if !event.id.is_empty() {
                self.lock().last_event_id = Some(event.id.clone());
            }
            if event.event != "message" || event.data.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(&event.data) {
                Ok(envelope) => self.push_inbound(envelope, true),
                Err(e) => {
                    return Some(AcpError::Malformed {
                        detail: format!("SSE data is not JSON: {e}: {}", truncate(&event.data)),
                    })
                }
            }
        }
        None
    }
}

/// Why the byte stream under the SSE parser ended early.
#[derive(Debug)]
enum StreamFault {
    Http(reqwest::Error),
    Oversize,
}

impl std::fmt::Display for StreamFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamFault::Http(e) => write!(f, "{e}"),
            StreamFault::Oversize => write!(f, "line over {MAX_STREAM_LINE_BYTES} bytes"),
        }
    }
}

/// Hands the SSE parser whole lines only. The parser rescans its buffer on
/// every chunk, so a long line fed in small chunks costs quadratic time; here
/// a partial line waits in a buffer (linear), and one longer than
/// [`MAX_STREAM_LINE_BYTES`] ends the stream as hostile.
fn whole_lines(
    bytes: impl futures_util::Stream<Item = Result<bytes::Bytes, reqwest::Error>>,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, StreamFault>> {
    futures_util::stream::unfold(
        (Box::pin(bytes), Vec::<u8>::new(), false),
        |(mut bytes, mut partial, done)| async move {
            if done {
                return None;
            }
            loop {
                match bytes.next().await {
                    Some(Ok(chunk)) => match chunk.iter().rposition(|b| *b == b'\n') {
                        Some(pos) => {
                            partial.extend_from_slice(&chunk[..=pos]);
                            let lines = bytes::Bytes::from(std::mem::take(&mut partial));
                            partial.extend_from_slice(&chunk[pos + 1..]);
                            return Some((Ok(lines), (bytes, partial, false)));
                        }
                        None => {
                            partial.extend_from_slice(&chunk);
                            if partial.len() > MAX_STREAM_LINE_BYTES {
                                return Some((
                                    Err(StreamFault::Oversize),
                                    (bytes, Vec::new(), true),
                                ));
                            }
                        }
                    },
                    Some(Err(e)) => {
                        return Some((Err(StreamFault::Http(e)), (bytes, Vec::new(), true)))
                    }
                    None if partial.is_empty() => return None,
                    None => {
                        let rest = bytes::Bytes::from(std::mem::take(&mut partial));
                        return Some((Ok(rest), (bytes, Vec::new(), true)));
                    }
                }
            }
        },
    )
}

/// Reads a body up to [`MAX_ENVELOPE_BYTES`]; `Ok(None)` when it is larger.
async fn read_bounded(response: reqwest::Response) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > MAX_ENVELOPE_BYTES {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

fn truncate(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// JavaScript's `encodeURIComponent`, which the SDK applies to the server id and query.
fn urlencode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'!'
            | b'~'
            | b'*'
            | b'\''
            | b'('
            | b')' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}
