//! The page's traffic with sandbox-agent, from the browser's own network
//! events (the DevTools `Network` domain), written to the cell's trace as
//! the other clients' is: an `http` event per exchange (for an event
//! stream, at its response head, then `stream_end`), an `rpc` event per
//! JSON-RPC envelope the page posted or got back in a POST's body, and an
//! `sse` event per event of a stream, whose body the browser hands over as
//! it arrives (`Network.streamResourceContent`). The page's own files
//! (anything outside `/v1/`) are not sandbox-agent's and are left out.
//!
//! The same events feed the cell's in-flight model, live: every request
//! the page makes (its sandbox provider's calls too) is in flight from
//! `requestWillBeSent` until it finishes or fails, and every WebSocket
//! (the terminal's) from its creation until it closes, so the hang
//! detector sees what could still settle the SDK's pending call.

use crate::trace::event::{Dir, Via};
use crate::trace::{ErrorKind, Exchange, Flight, FlightGuard, Purpose, Seen, Trace};
use base64::Engine as _;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What the wire asked the browser for, by command id.
enum Asked {
    /// The body of an event stream from here on.
    Stream(String),
    /// A finished POST's body (its JSON-RPC answer).
    Body,
}

struct Request {
    method: &'static str,
    url: String,
    purpose: Purpose,
    /// The browser's monotonic clock, in seconds.
    started: f64,
    sent: u64,
    status: Option<u16>,
    received: u64,
    events: u64,
    /// An event stream's text not yet cut into events.
    pending: String,
    /// The `Last-Event-ID` a stream's GET resumed from.
    last_event_id: Option<String>,
}

/// The page's traffic as its trace records it.
pub(super) struct Wire {
    trace: Arc<Mutex<Trace>>,
    requests: HashMap<String, Request>,
    asked: HashMap<u64, Asked>,
    commands: Option<(mpsc::UnboundedSender<Message>, Arc<AtomicU64>)>,
    /// Every request and WebSocket of the page still open, by id.
    flights: HashMap<String, FlightGuard>,
}

impl Wire {
    pub(super) fn new(trace: Arc<Mutex<Trace>>) -> Wire {
        Wire {
            trace,
            requests: HashMap::new(),
            asked: HashMap::new(),
            commands: None,
            flights: HashMap::new(),
        }
    }

    /// Lets the wire ask the browser for bodies over the connection's own
    /// socket, with ids from its counter.
    pub(super) fn can_ask(&mut self, out: mpsc::UnboundedSender<Message>, next: Arc<AtomicU64>) {
        self.commands = Some((out, next));
    }

    fn trace(&self) -> Trace {
        self.trace.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn ask(&mut self, method: &str, params: Value, session: Option<&str>, asked: Asked) {
        let Some((out, next)) = &self.commands else {
            return;
        };
        let id = next.fetch_add(1, Ordering::SeqCst);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        if out.send(Message::Text(message.to_string().into())).is_ok() {
            self.asked.insert(id, asked);
        }
    }

    /// Whether the command `id` was the wire's; if so, its answer is taken.
    pub(super) fn answer(&mut self, id: u64, result: Option<&Value>) -> bool {
        let Some(asked) = self.asked.remove(&id) else {
            return false;
        };
        let Some(result) = result else {
            return true;
        };
        match asked {
            Asked::Stream(request) => {
                if let Some(data) = result["bufferedData"].as_str() {
                    self.stream_data(&request, data);
                }
            }
            Asked::Body => {
                let body = match result["base64Encoded"].as_bool() {
                    Some(true) => decode(result["body"].as_str().unwrap_or_default()),
                    _ => result["body"].as_str().unwrap_or_default().to_string(),
                };
                if let Ok(value) = serde_json::from_str::<Value>(&body) {
                    let trace = self.trace();
                    for envelope in envelopes(&value) {
                        trace.rpc(Dir::In, Via::Post, envelope);
                    }
                }
            }
        }
        true
    }

    /// One DevTools event of the page (`session`).
    pub(super) fn event(&mut self, method: &str, params: &Value, session: Option<&str>) {
        let id = params["requestId"].as_str().unwrap_or_default().to_string();
        let at = params["timestamp"].as_f64().unwrap_or_default();
        self.track(method, params, &id);
        match method {
            "Network.requestWillBeSent" => {
                let request = &params["request"];
                let url = request["url"].as_str().unwrap_or_default().to_string();
                let method = http_method(request["method"].as_str().unwrap_or_default());
                let Some(purpose) = purpose_of(method, &url) else {
                    return;
                };
                let body = request["postData"].as_str().unwrap_or_default();
                // Header names as the page wrote them (the SDK: `Last-Event-ID`).
                let last_event_id = request["headers"].as_object().and_then(|headers| {
                    headers
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case("last-event-id"))
                        .and_then(|(_, value)| value.as_str())
                        .map(str::to_string)
                });
                if let Ok(value) = serde_json::from_str::<Value>(body) {
                    let trace = self.trace();
                    for envelope in envelopes(&value) {
                        trace.rpc(Dir::Out, Via::Post, envelope);
                    }
                }
                self.requests.insert(
                    id,
                    Request {
                        method,
                        url,
                        purpose,
                        started: at,
                        sent: body.len() as u64,
                        status: None,
                        received: 0,
                        events: 0,
                        pending: String::new(),
                        last_event_id,
                    },
                );
            }
            "Network.responseReceived" => {
                let Some(request) = self.requests.get_mut(&id) else {
                    return;
                };
                let status = params["response"]["status"].as_u64().map(|s| s as u16);
                request.status = status;
                if request.purpose == Purpose::Stream {
                    let exchange = exchange(request, at, None);
                    self.trace().http(exchange);
                    self.ask(
                        "Network.streamResourceContent",
                        json!({"requestId": id}),
                        session,
                        Asked::Stream(id.clone()),
                    );
                }
            }
            "Network.dataReceived" => {
                let length = params["dataLength"].as_u64().unwrap_or_default();
                if let Some(request) = self.requests.get_mut(&id) {
                    request.received += length;
                }
                if let Some(data) = params["data"].as_str() {
                    self.stream_data(&id, data);
                }
            }
            "Network.loadingFinished" => {
                let Some(request) = self.requests.remove(&id) else {
                    return;
                };
                let post =
                    request.purpose == Purpose::AcpPost && request.status.is_some_and(|s| s < 400);
                self.finish(request, at, None);
                if post {
                    self.ask(
                        "Network.getResponseBody",
                        json!({"requestId": id}),
                        session,
                        Asked::Body,
                    );
                }
            }
            "Network.loadingFailed" => {
                let Some(request) = self.requests.remove(&id) else {
                    return;
                };
                let text = params["errorText"].as_str().unwrap_or_default();
                let failure = Seen::Error {
                    kind: error_kind(text, params["canceled"].as_bool() == Some(true)),
                    detail: text.to_string(),
                };
                self.finish(request, at, Some(failure));
            }
            _ => {}
        }
    }

    /// The in-flight model: a request opens at `requestWillBeSent` and
    /// closes when it finishes or fails; a WebSocket opens when it is
    /// created and closes with it; data and frames are activity.
    fn track(&mut self, method: &str, params: &Value, id: &str) {
        let url = || {
            let url = params["request"]["url"].as_str().or(params["url"].as_str());
            crate::trace::strip_access_token(url.unwrap_or_default())
        };
        match method {
            "Network.requestWillBeSent" => {
                let verb = http_method(params["request"]["method"].as_str().unwrap_or_default());
                let kind = match purpose_of(verb, &url()) {
                    Some(Purpose::Stream) => Flight::Stream,
                    _ => Flight::Request,
                };
                let guard = self.trace().in_flight(kind, format!("{verb} {}", url()));
                self.flights.insert(id.to_string(), guard);
            }
            "Network.webSocketCreated" => {
                let guard = self
                    .trace()
                    .in_flight(Flight::Stream, format!("WebSocket {}", url()));
                self.flights.insert(id.to_string(), guard);
            }
            "Network.loadingFinished" | "Network.loadingFailed" | "Network.webSocketClosed" => {
                self.flights.remove(id);
            }
            "Network.dataReceived"
            | "Network.webSocketFrameReceived"
            | "Network.webSocketFrameSent" => self.trace().active(),
            _ => {}
        }
    }

    fn finish(&mut self, request: Request, at: f64, failure: Option<Seen>) {
        let trace = self.trace();
        if request.purpose == Purpose::Stream {
            let url = crate::trace::strip_access_token(&request.url);
            trace.stream_end(&url, request.events, request.received, failure.as_ref());
            return;
        }
        let failure = failure.or_else(|| {
            request
                .status
                .filter(|s| *s >= 400)
                .map(|status| Seen::Status {
                    status,
                    problem_type: None,
                    detail: None,
                })
        });
        trace.http(exchange(&request, at, failure));
    }

    /// A stream's body, base64 as the browser sends it: cut into events.
    fn stream_data(&mut self, id: &str, data: &str) {
        let text = decode(data);
        let trace = self.trace();
        let Some(request) = self.requests.get_mut(id) else {
            return;
        };
        request.pending.push_str(&text.replace("\r\n", "\n"));
        while let Some(end) = request.pending.find("\n\n") {
            let block: String = request.pending.drain(..end + 2).collect();
            let (mut sse_id, mut event, mut data) = (String::new(), String::new(), Vec::new());
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => sse_id = value.to_string(),
                    "event" => event = value.to_string(),
                    "data" => data.push(value),
                    _ => {}
                }
            }
            if data.is_empty() && sse_id.is_empty() {
                continue;
            }
            request.events += 1;
            let envelope = serde_json::from_str::<Value>(&data.join("\n")).ok();
            let name = if event.is_empty() { "message" } else { &event };
            trace.sse(&request.url, &sse_id, name, block.len(), envelope.as_ref());
        }
    }
}

fn exchange(request: &Request, at: f64, failure: Option<Seen>) -> Exchange {
    let mut exchange = Exchange::new(request.method, request.url.clone(), request.purpose);
    exchange.status = request.status;
    exchange.elapsed = Duration::from_secs_f64((at - request.started).max(0.0));
    exchange.sent = request.sent;
    exchange.received = request.received;
    exchange.failure = failure;
    exchange.last_event_id = request.last_event_id.clone();
    exchange
}

fn decode(data: &str) -> String {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

/// A JSON-RPC envelope, or each of a batch.
fn envelopes(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(batch) => batch.iter().collect(),
        one => vec![one],
    }
}

fn http_method(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "POST" => "POST",
        "DELETE" => "DELETE",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "OPTIONS" => "OPTIONS",
        "HEAD" => "HEAD",
        _ => "OTHER",
    }
}

/// What an exchange with sandbox-agent was for; `None` for the page's own files.
fn purpose_of(method: &str, url: &str) -> Option<Purpose> {
    // Behind the gateway the API sits under a prefix (`/sandbox/v1/…`).
    let full = url::Url::parse(url).ok()?.path().to_string();
    let path = &full[full.find("/v1/")?..];
    Some(match (method, path) {
        (_, "/v1/health") => Purpose::Health,
        (_, p) if p.starts_with("/v1/fs") => Purpose::Fs,
        (_, p) if p.starts_with("/v1/process") => Purpose::Process,
        ("GET", _) => Purpose::Stream,
        ("DELETE", _) => Purpose::Delete,
        _ => Purpose::AcpPost,
    })
}

/// Chromium's `net::ERR_…` names as the trace's error kinds.
fn error_kind(text: &str, canceled: bool) -> ErrorKind {
    match text {
        _ if canceled => ErrorKind::Closed,
        t if t.contains("CONNECTION_REFUSED") => ErrorKind::Refused,
        t if t.contains("CONNECTION_RESET") => ErrorKind::Reset,
        t if t.contains("EMPTY_RESPONSE")
            || t.contains("CONNECTION_CLOSED")
            || t.contains("INCOMPLETE_CHUNKED") =>
        {
            ErrorKind::Closed
        }
        t if t.contains("TIMED_OUT") => ErrorKind::Timeout,
        t if t.contains("NAME_NOT_RESOLVED") => ErrorKind::Dns,
        t if t.contains("CERT") || t.contains("SSL") => ErrorKind::Tls,
        _ => ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests;
