//! The cell's wire trace — its history — and what its waits observed.
//!
//! Transport, client and executor append events (HTTP exchanges, SSE events,
//! JSON-RPC envelopes, health attempts, restarts, phase boundaries) with a
//! monotonic time relative to the cell's start; [`sink`] writes them as
//! `trace.jsonl`, bounded and with credentials redacted. Beside the file, a
//! [`Trace`] keeps two small things in memory whatever the level: the waits
//! still outstanding and, per channel (`GET /v1/health`, the event stream…),
//! the attempts and the last failure of the current phase. A phase that times
//! out reads them to say what it was really waiting for and what it saw
//! ([`Trace::snapshot`]); the report, the HTML timeline and `show` read the file.

mod cell;
mod fault_window;
mod foreign;
mod observe;
mod sink;
mod url;

pub use cell::{cell_dir_name, for_cell};
pub use fault_window::FaultSeen;
pub use observe::{ChannelStats, ErrorKind, Seen, Snapshot, WaitGuard, WaitInfo};
pub use sink::{
    for_each_event, read_trace, TraceError, TRACE_FILE, TRACE_LIMIT_BYTES, TRACE_SCHEMA,
};
pub use url::strip_access_token;
use url::{path_and_query, path_of};

use crate::secret::Secret;
use observe::Observations;
use serde_json::{json, Map, Value};
use sink::Sink;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest JSON-RPC body kept in a `full` trace; longer ones are cut.
pub const BODY_LIMIT_CHARS: usize = 4096;

/// How much of the wire a cell's trace keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceLevel {
    /// No file; waits still remember what they saw.
    Off,
    /// Every event, without bodies.
    #[default]
    Summary,
    /// Every event, JSON-RPC bodies cut at [`BODY_LIMIT_CHARS`].
    Full,
}

impl TraceLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceLevel::Off => "off",
            TraceLevel::Summary => "summary",
            TraceLevel::Full => "full",
        }
    }
}

/// What an HTTP exchange was for; names the channel it counts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Health,
    AcpPost,
    Stream,
    Delete,
    Process,
    /// The sandbox's file API (`/v1/fs/…`).
    Fs,
    /// Any other endpoint of the server's API (`/v1/agents`, …).
    Api,
    /// A process's terminal WebSocket upgrade.
    Terminal,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Purpose::Health => "health",
            Purpose::AcpPost => "acp",
            Purpose::Stream => "stream",
            Purpose::Delete => "delete",
            Purpose::Process => "process",
            Purpose::Fs => "fs",
            Purpose::Api => "api",
            Purpose::Terminal => "terminal",
        }
    }
}

/// One HTTP exchange as the trace records it.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: &'static str,
    pub url: String,
    pub purpose: Purpose,
    /// For repeated waits (the health wait): 1, 2, 3…
    pub attempt: Option<u32>,
    /// The response status, when a response came.
    pub status: Option<u16>,
    pub elapsed: Duration,
    pub sent: u64,
    pub received: u64,
    /// Why it failed (a status the caller rejects, or a transport error).
    pub failure: Option<Seen>,
}

impl Exchange {
    /// An exchange about to be sent: nothing answered, nothing counted yet.
    pub fn new(method: &'static str, url: impl Into<String>, purpose: Purpose) -> Self {
        Exchange {
            method,
            url: url.into(),
            purpose,
            attempt: None,
            status: None,
            elapsed: Duration::ZERO,
            sent: 0,
            received: 0,
            failure: None,
        }
    }
}

/// A cell's trace handle; cheap to clone, shared by everything in the cell.
#[derive(Clone)]
pub struct Trace {
    inner: Arc<Inner>,
}

struct Inner {
    start: Instant,
    /// The wall clock at `start`, in Unix milliseconds: events another
    /// process recorded with its own clock (the hosted SDK's) map onto `t`.
    start_epoch_ms: f64,
    level: TraceLevel,
    token: Option<Secret>,
    sink: Mutex<Option<Sink>>,
    observations: Mutex<Observations>,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("level", &self.inner.level)
            .finish()
    }
}

impl Default for Trace {
    fn default() -> Self {
        Self::detached()
    }
}

impl Trace {
    /// A trace with no file: waits still remember (for code outside a run cell).
    pub fn detached() -> Trace {
        Self::build(TraceLevel::Off, None, None)
    }

    /// A cell's trace writing `dir/trace.jsonl` (nothing when `level` is off).
    /// `header` describes the cell (target, scenario, attempt).
    pub fn create(
        dir: &Path,
        level: TraceLevel,
        token: Option<Secret>,
        header: Map<String, Value>,
    ) -> std::io::Result<Trace> {
        let sink = match level {
            TraceLevel::Off => None,
            _ => Some(Sink::create(&dir.join(TRACE_FILE), TRACE_LIMIT_BYTES)?),
        };
        let trace = Self::build(level, token, sink);
        let mut first = header;
        first.insert("schema".into(), TRACE_SCHEMA.into());
        first.insert("level".into(), level.as_str().into());
        trace.event("trace", first);
        Ok(trace)
    }

    fn build(level: TraceLevel, token: Option<Secret>, sink: Option<Sink>) -> Trace {
        Trace {
            inner: Arc::new(Inner {
                start: Instant::now(),
                start_epoch_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64() * 1000.0)
                    .unwrap_or(0.0),
                level,
                token,
                sink: Mutex::new(sink),
                observations: Mutex::new(Observations::default()),
            }),
        }
    }

    pub fn level(&self) -> TraceLevel {
        self.inner.level
    }

    /// Milliseconds since the cell started.
    pub fn now_ms(&self) -> f64 {
        (self.inner.start.elapsed().as_micros() as f64 / 100.0).round() / 10.0
    }

    fn observations(&self) -> std::sync::MutexGuard<'_, Observations> {
        self.inner
            .observations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one event; `fields` must not hold a credential (the known
    /// token is scrubbed anyway, and URLs lose `access_token`).
    pub fn event(&self, ev: &str, fields: Map<String, Value>) {
        self.event_at(self.now_ms(), ev, fields);
    }

    /// [`Trace::event`] at `t` (milliseconds since the cell started), for an
    /// event that happened before it reached the trace.
    fn event_at(&self, t: f64, ev: &str, fields: Map<String, Value>) {
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let mut line = Map::new();
        line.insert("t".into(), json!(t));
        line.insert("ev".into(), ev.into());
        line.extend(fields);
        let mut line = Value::Object(line);
        // The values only: a secret equal to a field name must not rename it.
        crate::secret::redact_json_known(&mut line, self.inner.token.as_ref());
        let text = line.to_string();
        let mut sink = self.inner.sink.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sink) = sink.as_mut() {
            sink.append(&text, self.now_ms());
        }
    }

    /// Starts a phase: its channels' counts start again from zero.
    pub fn phase_start(&self, name: &str, step: &str) {
        self.observations().reset_channels(self.now_ms());
        self.event("phase_start", fields(json!({"phase": name, "step": step})));
    }

    /// Ends a phase; the file is flushed, so a run killed later keeps it.
    pub fn phase_end(&self, name: &str, outcome: &str, ms: u64) {
        self.event(
            "phase_end",
            fields(json!({"phase": name, "outcome": outcome, "ms": ms})),
        );
        self.flush();
    }

    /// Records an HTTP exchange and counts it on its channel.
    pub fn http(&self, exchange: Exchange) {
        self.http_at(self.now_ms(), exchange, Map::new());
    }

    /// An exchange that ended at `t`, with `extra` fields beside its own.
    fn http_at(&self, t: f64, exchange: Exchange, extra: Map<String, Value>) {
        let path = path_of(&exchange.url);
        let channel = channel_name(exchange.method, &path, exchange.purpose);
        self.observations().count(
            t,
            &channel,
            exchange.status,
            exchange.received,
            exchange.failure.as_ref(),
        );
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let mut f = fields(json!({
            "method": exchange.method,
            "url": strip_access_token(&path_and_query(&exchange.url)),
            "purpose": exchange.purpose.as_str(),
            "ms": (exchange.elapsed.as_micros() as f64 / 100.0).round() / 10.0,
            "sent": exchange.sent,
            "received": exchange.received,
        }));
        if let Some(attempt) = exchange.attempt {
            f.insert("attempt".into(), attempt.into());
        }
        if let Some(status) = exchange.status {
            f.insert("status".into(), status.into());
        }
        if let Some(failure) = &exchange.failure {
            failure.describe_into(&mut f);
        }
        f.extend(extra);
        self.event_at(t, "http", f);
    }

    /// A JSON-RPC envelope, `out` (sent) or `in` (received) `via` post or stream.
    pub fn rpc(&self, dir: &str, via: &str, envelope: &Value) {
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let mut f = fields(json!({"dir": dir, "via": via}));
        rpc_fields(envelope, &mut f);
        if self.inner.level == TraceLevel::Full {
            f.insert("body".into(), cut(&envelope.to_string()).into());
        }
        self.event("rpc", f);
    }

    /// One SSE event: its id, its name, and the envelope's method and id.
    pub fn sse(&self, id: &str, event: &str, bytes: usize, envelope: Option<&Value>) {
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let mut f = fields(json!({"event": event, "bytes": bytes}));
        if !id.is_empty() {
            f.insert("id".into(), id.into());
        }
        if let Some(envelope) = envelope {
            rpc_fields(envelope, &mut f);
            if self.inner.level == TraceLevel::Full {
                f.insert("body".into(), cut(&envelope.to_string()).into());
            }
        }
        self.event("sse", f);
    }

    /// The end of one event-stream GET: how many events and bytes it carried.
    pub fn stream_end(&self, url: &str, events: u64, bytes: u64, failure: Option<&Seen>) {
        self.stream_end_at(self.now_ms(), url, (events, bytes), failure, Map::new());
    }

    /// A stream's end at `t`: its (events, bytes), and `extra` fields.
    fn stream_end_at(
        &self,
        t: f64,
        url: &str,
        (events, bytes): (u64, u64),
        failure: Option<&Seen>,
        extra: Map<String, Value>,
    ) {
        let channel = channel_name("GET", &path_of(url), Purpose::Stream);
        self.observations()
            .stream_ended(t, &channel, bytes, failure);
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let mut f = fields(json!({
            "url": strip_access_token(&path_and_query(url)),
            "events": events,
            "received": bytes,
        }));
        if let Some(failure) = failure {
            failure.describe_into(&mut f);
        }
        f.extend(extra);
        self.event_at(t, "stream_end", f);
    }

    /// Registers something the cell is blocked on until the guard drops.
    /// `channel` links it to the HTTP channel whose attempts it depends on.
    pub fn wait(&self, what: impl Into<String>, channel: Option<String>) -> WaitGuard {
        let id = self.observations().open_wait(what.into(), channel);
        WaitGuard::new(self.clone(), id)
    }

    /// Keeps `channel`'s counts across phase boundaries until the guard
    /// drops: for background polling that a later phase may block on (the
    /// health wait starts at `connect`; `createSession` waits for it). Not
    /// a wait itself: it never becomes what a timeout names.
    pub fn watch(&self, channel: String) -> WaitGuard {
        let id = self.observations().watch(channel);
        WaitGuard::new(self.clone(), id)
    }

    fn close_wait(&self, id: u64) {
        self.observations().close_wait(id);
    }

    /// The open waits (oldest first) and this phase's channels.
    pub fn snapshot(&self) -> Snapshot {
        self.observations().snapshot()
    }

    /// Flushes the file; later events still append.
    pub fn flush(&self) {
        let mut sink = self.inner.sink.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sink) = sink.as_mut() {
            sink.flush();
        }
    }
}

/// The channel an exchange counts on, e.g. `GET /v1/health`,
/// `GET /v1/acp/sdk-mock-… (event stream)`.
pub fn channel_name(method: &str, path: &str, purpose: Purpose) -> String {
    match purpose {
        Purpose::Stream => format!("{method} {path} (event stream)"),
        _ => format!("{method} {path}"),
    }
}

/// The channel of the SDK's health wait on `base_url`.
pub fn health_channel(base_url: &str) -> String {
    channel_name(
        "GET",
        &path_of(&format!("{base_url}/v1/health")),
        Purpose::Health,
    )
}

/// The channel of a transport's event stream at `url`.
pub fn stream_channel(url: &str) -> String {
    channel_name("GET", &path_of(url), Purpose::Stream)
}

/// An envelope's method, id and error code, as `method`, `rpcId`, `errorCode`.
fn rpc_fields(envelope: &Value, f: &mut Map<String, Value>) {
    if let Some(method) = envelope.get("method").and_then(Value::as_str) {
        f.insert("method".into(), method.into());
    }
    if let Some(id) = envelope.get("id").filter(|v| !v.is_null()) {
        f.insert("rpcId".into(), id.clone());
    }
    if let Some(code) = envelope.get("error").and_then(|e| e.get("code")) {
        f.insert("errorCode".into(), code.clone());
    }
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A body cut to the trace's limit, redacted before the cut (half a secret
/// is no longer recognisable afterwards).
fn cut(text: &str) -> String {
    let text = crate::secret::redact_known(text);
    if text.len() <= BODY_LIMIT_CHARS {
        return text;
    }
    let mut end = BODY_LIMIT_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes]", &text[..end], text.len())
}

#[cfg(test)]
mod tests;
