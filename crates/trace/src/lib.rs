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
//! It also keeps what is in flight ([`in_flight`]): the client's pending
//! calls and what could still settle them, which the hang detector reads
//! ([`Trace::quiet`]).
//!
//! Over 400 lines on purpose: the event writers (`Trace::http`, `rpc`,
//! `sse`, `hop_*`, `phase_*`, `wait`, ...) write each line and, in the same
//! call, update what is kept in memory from it: the waits outstanding and
//! the per-channel observations a timed-out phase reads (`snapshot`), and
//! what is in flight, which the hang detector reads; the sink, digests and
//! in-flight model are apart.

#![forbid(unsafe_code)]

// The leaves this crate uses, by the names the whole workspace knows them by.
use continuity_base::{file_name, run_path, secret, untrusted};

mod cell;
pub mod digest;
/// The trace's lines as types: the schema's (`trace.jsonl` is published shape).
pub use continuity_schema::trace as event;
mod fault_window;
mod foreign;
pub mod in_flight;
mod observe;
mod sink;
mod url;

pub use cell::{cell_dir_name, for_cell};
pub use event::{ErrorKind, Purpose, TraceLevel};
pub use fault_window::FaultSeen;
pub use in_flight::{Flight, FlightGuard, HostReport, Quiet, WireMark};
pub use observe::{Breaks, ChannelStats, Seen, Snapshot, WaitGuard, WaitInfo};
pub use sink::{
    for_each_event, for_each_event_in, read_trace, TraceError, TRACE_FILE, TRACE_LIMIT_BYTES,
    TRACE_READ_LIMIT, TRACE_SCHEMA,
};
pub use url::strip_access_token;
use url::{path_and_query, path_of};

use crate::secret::Secret;
use event::{CellId, Dir, Event, Header, Line, Via};
use in_flight::InFlight;
use observe::Observations;
use serde_json::Value;
use sink::Sink;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest JSON-RPC body kept in a `full` trace; longer ones are cut.
pub(crate) const BODY_LIMIT_CHARS: usize = 4096;

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
    /// An event stream's GET: the `Last-Event-ID` it sent.
    pub last_event_id: Option<String>,
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
            last_event_id: None,
        }
    }
}

/// A cell's trace handle; cheap to clone, shared by everything in the cell.
#[derive(Clone)]
pub struct Trace {
    inner: Arc<Inner>,
    /// A handle the harness reads a stream with for itself (a re-attach
    /// probe): its stream GETs and SSE events are marked `probe`, so they
    /// are never taken for the client's.
    probe: bool,
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
    flight: Mutex<InFlight>,
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
    /// `cell` names the cell (target, scenario, attempt) in the header.
    pub fn create(
        dir: &Path,
        level: TraceLevel,
        token: Option<Secret>,
        cell: Option<CellId>,
    ) -> std::io::Result<Trace> {
        let sink = match level {
            TraceLevel::Off => None,
            _ => Some(Sink::create(&dir.join(TRACE_FILE), TRACE_LIMIT_BYTES)?),
        };
        let trace = Self::build(level, token, sink);
        trace.emit(Event::Trace(Header {
            cell,
            schema: TRACE_SCHEMA.into(),
            level,
            started_ms: Some(trace.inner.start_epoch_ms),
        }));
        Ok(trace)
    }

    fn build(level: TraceLevel, token: Option<Secret>, sink: Option<Sink>) -> Trace {
        Trace {
            probe: false,
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
                flight: Mutex::new(InFlight::default()),
            }),
        }
    }

    /// This trace, for the harness's own reading of a stream: its GETs
    /// and SSE events are marked `probe`.
    pub fn probing(&self) -> Trace {
        Trace {
            inner: Arc::clone(&self.inner),
            probe: true,
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

    /// Appends one event; it must not hold a credential (the known token
    /// is scrubbed anyway, and URLs lose `access_token`).
    pub fn emit(&self, event: Event) {
        self.emit_at(self.now_ms(), event);
    }

    /// [`Trace::emit`] at `t` (milliseconds since the cell started), for an
    /// event that happened before it reached the trace.
    fn emit_at(&self, t: f64, event: Event) {
        // A terminal socket cut without a close frame is a broken connection.
        if matches!(&event, Event::WsClose(close) if !close.clean) {
            self.observations().broke(t);
        }
        self.saw(t, &event);
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let mut line = Line { t, event }.to_value();
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
        self.emit(Event::PhaseStart(event::PhaseStart {
            phase: name.into(),
            step: step.into(),
        }));
    }

    /// Ends a phase; the file is flushed, so a run killed later keeps it.
    pub fn phase_end(&self, name: &str, outcome: &str, ms: u64) {
        self.emit(Event::PhaseEnd(event::PhaseEnd {
            phase: name.into(),
            outcome: outcome.into(),
            ms,
        }));
        self.flush();
    }

    /// Records an HTTP exchange and counts it on its channel.
    pub fn http(&self, exchange: Exchange) {
        self.http_at(self.now_ms(), exchange, |_| {});
    }

    /// An exchange that ended at `t`; `extra` adds what only its recorder knows.
    fn http_at(&self, t: f64, exchange: Exchange, extra: impl FnOnce(&mut event::Http)) {
        let path = path_of(&exchange.url);
        let channel = channel_name(exchange.method, &path, exchange.purpose);
        self.observations().count(
            t,
            &channel,
            exchange.status,
            exchange.received,
            exchange.failure.as_ref(),
        );
        let seen = exchange
            .failure
            .as_ref()
            .map(Seen::fields)
            .unwrap_or_default();
        let mut http = event::Http {
            method: exchange.method.into(),
            url: strip_access_token(&path_and_query(&exchange.url)),
            purpose: exchange.purpose,
            ms: (exchange.elapsed.as_micros() as f64 / 100.0).round() / 10.0,
            sent: exchange.sent,
            received: exchange.received,
            attempt: exchange.attempt,
            status: seen.status.or(exchange.status),
            problem_type: seen.problem_type,
            detail: seen.detail,
            error: seen.error,
            error_detail: seen.error_detail,
            last_event_id: exchange.last_event_id.clone(),
            probe: self.probe,
            ..Default::default()
        };
        extra(&mut http);
        {
            let mut flight = self.flight();
            let what = in_flight::exchange_words(&exchange, &path, http.closed_by.is_some());
            flight.mark(
                t,
                what,
                exchange.status.is_some(),
                exchange.failure.is_some(),
            );
            if exchange.purpose == Purpose::Health {
                flight.health(t, exchange.failure.is_some());
            }
        }
        if self.inner.level == TraceLevel::Off {
            return;
        }
        self.emit_at(t, Event::Http(http));
    }

    /// A JSON-RPC envelope, sent or received `via` the POST or the stream.
    pub fn rpc(&self, dir: Dir, via: Via, envelope: &Value) {
        if self.inner.level == TraceLevel::Off {
            self.active();
            return;
        }
        let (method, rpc_id, error_code) = rpc_ids(envelope);
        self.emit(Event::Rpc(event::Rpc {
            dir,
            via,
            method,
            rpc_id,
            error_code,
            body: self.body(envelope),
            session: digest::session_of(envelope),
        }));
    }

    /// The envelope as a `full` trace keeps it.
    fn body(&self, envelope: &Value) -> Option<String> {
        (self.inner.level == TraceLevel::Full).then(|| cut(&envelope.to_string()))
    }

    /// One SSE event of the stream at `url`: its id, its name, and the
    /// envelope's method, id, session and digest.
    pub fn sse(&self, url: &str, id: &str, event: &str, bytes: usize, envelope: Option<&Value>) {
        if self.inner.level == TraceLevel::Off {
            let now = self.now_ms();
            (self.flight()).mark(now, in_flight::SSE_WORDS.into(), false, false);
            return;
        }
        let (method, rpc_id, error_code) = envelope.map(rpc_ids).unwrap_or_default();
        self.emit(Event::Sse(event::Sse {
            event: event.into(),
            bytes: bytes as u64,
            id: (!id.is_empty()).then(|| id.to_string()),
            method,
            rpc_id,
            error_code,
            body: envelope.and_then(|envelope| self.body(envelope)),
            stream: digest::server_id_of(url),
            session: envelope.and_then(digest::session_of),
            digest: envelope.map(digest::envelope),
            probe: self.probe,
        }));
    }

    /// A stream GET a fault proxy on `hop` saw answered (connection
    /// `conn` on the proxy, the request's path and `Last-Event-ID`).
    pub fn hop_stream(
        &self,
        hop: &str,
        conn: u64,
        path: &str,
        last_event_id: Option<String>,
        status: u16,
    ) {
        let Some(stream) = digest::server_id_of(path) else {
            return;
        };
        self.emit(Event::HopStream(event::HopStream {
            hop: hop.into(),
            conn,
            stream,
            last_event_id,
            status: Some(status),
        }));
    }

    /// One SSE event a fault proxy on `hop` passed toward the client: its
    /// id and name, and its data's method, id, session and digest.
    pub fn hop_sse(
        &self,
        hop: &str,
        conn: u64,
        path: &str,
        (id, event, data): (Option<String>, String, &str),
    ) {
        let Some(stream) = digest::server_id_of(path) else {
            return;
        };
        let envelope = serde_json::from_str::<Value>(data).ok();
        let (method, rpc_id, _) = envelope.as_ref().map(rpc_ids).unwrap_or_default();
        self.emit(Event::HopSse(event::HopSse {
            hop: hop.into(),
            conn,
            stream,
            id,
            event,
            session: envelope.as_ref().and_then(digest::session_of),
            method,
            rpc_id,
            digest: envelope.as_ref().map(digest::envelope),
        }));
    }

    /// A session event handed to the application (`local`: its session
    /// there), with the envelope it carries.
    pub fn app(&self, mut handed: event::Handed, envelope: &Value) {
        if self.inner.level == TraceLevel::Off {
            return;
        }
        fill_handed(&mut handed, envelope);
        self.emit(Event::App(handed));
    }

    /// The end of one event-stream GET: how many events and bytes it carried.
    pub fn stream_end(&self, url: &str, events: u64, bytes: u64, failure: Option<&Seen>) {
        self.stream_end_at(self.now_ms(), url, (events, bytes), failure, None);
    }

    /// A stream's end at `t`: its (events, bytes), and who closed it when
    /// the client did (`closed_by`).
    fn stream_end_at(
        &self,
        t: f64,
        url: &str,
        (events, bytes): (u64, u64),
        failure: Option<&Seen>,
        closed_by: Option<String>,
    ) {
        let path = path_of(url);
        let channel = channel_name("GET", &path, Purpose::Stream);
        self.observations()
            .stream_ended(t, &channel, bytes, failure);
        let what = in_flight::stream_end_words(&path, failure, closed_by.is_some());
        self.flight().mark(t, what, false, failure.is_some());
        if self.inner.level == TraceLevel::Off {
            return;
        }
        let seen = failure.map(Seen::fields).unwrap_or_default();
        self.emit_at(
            t,
            Event::StreamEnd(event::StreamEnd {
                url: strip_access_token(&path_and_query(url)),
                events,
                received: bytes,
                status: seen.status,
                problem_type: seen.problem_type,
                detail: seen.detail,
                error: seen.error,
                error_detail: seen.error_detail,
                closed_by,
            }),
        );
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
        self.observations().snapshot(self.now_ms())
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
pub(crate) fn channel_name(method: &str, path: &str, purpose: Purpose) -> String {
    match purpose {
        Purpose::Stream => format!("{method} {path} {}", observe::EVENT_STREAM),
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

/// Fills what `envelope` says of itself into `handed`: its method, id,
/// agent session and digest.
pub fn fill_handed(handed: &mut event::Handed, envelope: &Value) {
    let (method, rpc_id, _) = rpc_ids(envelope);
    handed.method = method;
    handed.rpc_id = rpc_id;
    handed.agent_session = digest::session_of(envelope);
    handed.digest = Some(digest::envelope(envelope));
}

/// An envelope's method, id and error code.
fn rpc_ids(envelope: &Value) -> (Option<String>, Option<Value>, Option<Value>) {
    (
        envelope
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string),
        envelope.get("id").filter(|v| !v.is_null()).cloned(),
        envelope.get("error").and_then(|e| e.get("code")).cloned(),
    )
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
