//! What is in flight on a cell's wire, for the hang detector: the calls of
//! the client under test still pending, what could still settle them (a
//! request awaiting its answer, an open event stream or socket, a store
//! call, the host's own work, a retry the client has scheduled), and what
//! the wire showed last. One model, whichever client feeds it:
//! continuity's Rust client and the browser page (Chromium's own network
//! events) as things happen, through [`FlightGuard`]s; the `sdkClient`
//! actor through its report ([`HostReport`]), which the hosted driver
//! polls while a call is pending. Every wire event the trace records is
//! activity too. [`InFlight::quiet`] says whether a pending call has had
//! nothing in flight for a grace, and what the wire showed before.

use super::event::Event;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long after a failed health attempt a client's health wait may
/// still try again: the SDK's longest delay between attempts (15 s,
/// `HEALTH_WAIT_MAX_DELAY_MS`), and a second of slack.
pub const HEALTH_RETRY_WITHIN_MS: f64 = 16_000.0;

/// What can still settle a pending call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flight {
    /// A request awaiting its answer (a long silent turn's POST is one).
    Request,
    /// An open event stream or WebSocket: an answer may come on it.
    Stream,
    /// A call of the session store.
    Store,
    /// The SDK's host doing work of its own (making a client, saving its state).
    Host,
}

/// A moment on the wire and what happened then.
#[derive(Debug, Clone, PartialEq)]
pub struct WireMark {
    /// Trace time (milliseconds since the cell started).
    pub t: f64,
    /// `the server answered HTTP 400 invalid_request to POST /v1/acp/…`.
    pub what: String,
}

/// What the SDK's host reported it had in flight, at `at`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostReport {
    /// When the host made the report (trace time).
    pub at: f64,
    /// The phases whose calls the host was running, each since when.
    pub acting: Vec<(String, f64)>,
    /// What it had in flight: kind, words, since when.
    pub open: Vec<(Flight, String, f64)>,
    /// Its latest activity (trace time), if any.
    pub active_at: Option<f64>,
}

/// A pending call with nothing in flight that could settle it, for a grace.
#[derive(Debug, Clone, PartialEq)]
pub struct Quiet {
    /// The pending call (`prompt`, `session/prompt`).
    pub call: String,
    /// Nothing was in flight from this moment (trace time)…
    pub since: f64,
    /// …up to this one: now, or the host's latest report.
    pub until: f64,
    /// The last exchange, stream event or store call, if any.
    pub last_wire: Option<WireMark>,
    /// The server's last answer (a status), if any.
    pub last_answer: Option<WireMark>,
    /// The last failure (an exchange, a stream, a store call), if any.
    pub last_failure: Option<WireMark>,
}

struct Call {
    what: String,
    since: f64,
    /// The phase the host must report running it under, for a call whose
    /// progress only its host's report shows (the actor's).
    hosted: Option<String>,
}

/// The model: fed through [`crate::Trace`], read by [`InFlight::quiet`].
#[derive(Default)]
pub(super) struct InFlight {
    next: u64,
    calls: Vec<(u64, Call)>,
    open: Vec<(u64, Flight, String)>,
    /// The latest activity fed locally (trace time).
    active_at: f64,
    last_wire: Option<WireMark>,
    last_answer: Option<WireMark>,
    last_failure: Option<WireMark>,
    /// A retry the client has scheduled may come until this time.
    retry_until: f64,
    /// When the last health attempt failed (a later success ends the retries).
    health_failed_at: f64,
    host: Option<HostReport>,
}

impl InFlight {
    /// Something happened on the wire or in the client at `t`.
    pub(super) fn note(&mut self, t: f64) {
        self.active_at = self.active_at.max(t);
    }

    /// A wire event at `t`: activity, and what the wire showed last; an
    /// `answer` (a status came back) and a `failure` (a failed exchange,
    /// a broken stream, a failed store call) are kept apart too.
    pub(super) fn mark(&mut self, t: f64, what: String, answer: bool, failure: bool) {
        self.note(t);
        let mark = WireMark { t, what };
        let later = |last: &Option<WireMark>| last.as_ref().is_none_or(|m| m.t <= t);
        if answer && later(&self.last_answer) {
            self.last_answer = Some(mark.clone());
        }
        if failure && later(&self.last_failure) {
            self.last_failure = Some(mark.clone());
        }
        if later(&self.last_wire) {
            self.last_wire = Some(mark);
        }
    }

    /// A health attempt ended at `t`: a failed one means the client's
    /// health wait tries again (within [`HEALTH_RETRY_WITHIN_MS`]); a
    /// later success means it is done.
    pub(super) fn health(&mut self, t: f64, failed: bool) {
        if failed {
            self.health_failed_at = self.health_failed_at.max(t);
            self.retry_until = self.retry_until.max(t + HEALTH_RETRY_WITHIN_MS);
        } else if t >= self.health_failed_at {
            self.retry_until = 0.0;
        }
    }

    pub(super) fn begin_call(&mut self, what: String, hosted: Option<String>, now: f64) -> u64 {
        self.next += 1;
        self.note(now);
        let call = Call {
            what,
            since: now,
            hosted,
        };
        self.calls.push((self.next, call));
        self.next
    }

    pub(super) fn begin(&mut self, kind: Flight, what: String, now: f64) -> u64 {
        self.next += 1;
        self.note(now);
        self.open.push((self.next, kind, what));
        self.next
    }

    /// The call or the flight `id` is over at `now`: its end is activity.
    pub(super) fn end(&mut self, id: u64, now: f64) {
        self.note(now);
        self.calls.retain(|(i, _)| *i != id);
        self.open.retain(|(i, ..)| *i != id);
    }

    pub(super) fn host_report(&mut self, report: HostReport) {
        if self.host.as_ref().is_some_and(|h| h.at > report.at) {
            return;
        }
        self.host = Some(report);
    }

    /// What is open locally, for a test or a message: kind and words.
    pub(super) fn open(&self) -> Vec<(Flight, String)> {
        self.open.iter().map(|(_, k, w)| (*k, w.clone())).collect()
    }

    /// Whether a call made from `from` on (the phase's start) is pending
    /// with nothing in flight that could settle it, no retry to come and
    /// no activity, for at least `grace_ms` up to `now` (trace times). A
    /// call made before (a turn started in an earlier phase) is not the
    /// phase's to judge. A hosted call is judged by its host's report
    /// alone: it must show the call running, nothing in flight, and the
    /// quiet lasting the grace up to the report itself; without such a
    /// report (none yet, or only one from before the call) nothing is hung.
    pub(super) fn quiet(&self, now: f64, grace_ms: f64, from: f64) -> Option<Quiet> {
        let calls: Vec<&Call> = self
            .calls
            .iter()
            .map(|(_, call)| call)
            .filter(|call| call.since >= from)
            .collect();
        let latest = calls.iter().max_by(|a, b| a.since.total_cmp(&b.since))?;
        if !self.open.is_empty() {
            return None;
        }
        let mut since = self.active_at;
        let mut until = now;
        for call in &calls {
            since = since.max(call.since);
            if let Some(phase) = &call.hosted {
                let host = self.host.as_ref()?;
                let started = host
                    .acting
                    .iter()
                    .filter(|(p, at)| p == phase && *at >= call.since - CLOCK_SLACK_MS)
                    .map(|(_, at)| *at)
                    .reduce(f64::max)?;
                if !host.open.is_empty() {
                    return None;
                }
                since = since.max(started).max(host.active_at.unwrap_or(0.0));
                until = until.min(host.at);
            }
        }
        if self.retry_until > until || until - since < grace_ms {
            return None;
        }
        Some(Quiet {
            call: latest.what.clone(),
            since,
            until,
            last_wire: self.last_wire.clone(),
            last_answer: self.last_answer.clone(),
            last_failure: self.last_failure.clone(),
        })
    }
}

/// The model as the trace's: fed by every client, read by the detector.
impl super::Trace {
    pub(super) fn flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.inner.flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call of the client under test, pending until the guard drops
    /// (answered, failed, or given up on): what the hang detector judges.
    pub fn call(&self, what: impl Into<String>) -> FlightGuard {
        let id = self.flight().begin_call(what.into(), None, self.now_ms());
        FlightGuard::new(self.clone(), id)
    }

    /// A call whose progress only its host's report shows (the SDK in the
    /// `sdkClient` actor): judged only by a [`HostReport`] that shows it
    /// running under `phase`.
    pub fn hosted_call(&self, what: impl Into<String>, phase: &str) -> FlightGuard {
        let id = self
            .flight()
            .begin_call(what.into(), Some(phase.to_string()), self.now_ms());
        FlightGuard::new(self.clone(), id)
    }

    /// Something that could settle a pending call (a request awaiting its
    /// answer, an open stream, a store call), in flight until the guard drops.
    pub fn in_flight(&self, kind: Flight, what: impl Into<String>) -> FlightGuard {
        let id = self.flight().begin(kind, what.into(), self.now_ms());
        FlightGuard::new(self.clone(), id)
    }

    /// Activity the trace does not record as an event (a frame on a
    /// socket the browser watches): the client is not idle.
    pub fn active(&self) {
        let now = self.now_ms();
        self.flight().note(now);
    }

    /// What the SDK's host reported it had in flight.
    pub fn host_report(&self, report: HostReport) {
        self.flight().host_report(report);
    }

    /// A call made from `from` on (trace time: the phase's start) still
    /// pending with nothing in flight that could settle it, no retry to
    /// come and no activity, for `grace` up to now.
    pub fn quiet(&self, grace: Duration, from: f64) -> Option<Quiet> {
        let now = self.now_ms();
        self.flight().quiet(now, grace.as_secs_f64() * 1000.0, from)
    }

    /// What is in flight locally: kind and words.
    pub fn open_flights(&self) -> Vec<(Flight, String)> {
        self.flight().open()
    }

    /// A wire event that is activity of the client's (exchanges and
    /// stream ends are marked where they are counted).
    pub(super) fn saw(&self, t: f64, event: &Event) {
        match event {
            Event::Sse(_) => self.flight().mark(t, SSE_WORDS.into(), false, false),
            Event::Store(store) => {
                let failed = store.ok == Some(false);
                let what = match failed {
                    true => format!("the store call {} failed", store.call),
                    false => format!("the store call {}", store.call),
                };
                self.flight().mark(t, what, false, failed);
            }
            Event::Rpc(_) | Event::Ws(_) | Event::WsOpen(_) | Event::WsClose(_) => {
                self.flight().note(t)
            }
            _ => {}
        }
    }
}

/// What an SSE event on the wire is, as evidence.
pub(super) const SSE_WORDS: &str = "an event on the event stream";

/// An exchange as evidence: `the server answered HTTP 400 invalid_request
/// to POST /v1/acp/x`, `GET /v1/health failed: connection refused`, `the
/// client gave up on GET /v1/acp/x`.
pub(super) fn exchange_words(
    exchange: &super::Exchange,
    path: &str,
    client_closed: bool,
) -> String {
    let request = format!("{} {path}", exchange.method);
    match (&exchange.failure, exchange.status) {
        (Some(super::Seen::Error { kind, .. }), _) => {
            format!("{request} failed: {}", kind.words())
        }
        (
            Some(super::Seen::Status {
                status,
                problem_type,
                ..
            }),
            _,
        ) => {
            let problem = problem_type.as_deref().map(|t| format!(" {t}"));
            let problem = problem.unwrap_or_default();
            format!("the server answered HTTP {status}{problem} to {request}")
        }
        (None, None) if client_closed => format!("the client gave up on {request}"),
        (None, None) => format!("{request} ended without an answer"),
        (None, Some(status)) if exchange.purpose == super::Purpose::Stream => {
            format!("the event stream {request} opened (HTTP {status})")
        }
        (None, Some(status)) => format!("the server answered HTTP {status} to {request}"),
    }
}

/// An event stream's end as evidence.
pub(super) fn stream_end_words(
    path: &str,
    failure: Option<&super::Seen>,
    client_closed: bool,
) -> String {
    match failure {
        Some(seen) => format!("the event stream GET {path} broke: {seen}"),
        None if client_closed => format!("the client closed its event stream GET {path}"),
        None => format!("the event stream GET {path} ended"),
    }
}

/// Two clocks read on one machine (the host's wall clock mapped onto the
/// trace's) may disagree by this much.
const CLOCK_SLACK_MS: f64 = 50.0;

/// Ends its call or its flight when dropped: answered, failed, closed, or
/// given up on (a future dropped at a deadline is no longer in flight).
pub struct FlightGuard {
    trace: super::Trace,
    id: u64,
}

impl FlightGuard {
    pub(super) fn new(trace: super::Trace, id: u64) -> Self {
        Self { trace, id }
    }
}

impl Drop for FlightGuard {
    fn drop(&mut self) {
        let now = self.trace.now_ms();
        self.trace.flight().end(self.id, now);
    }
}

impl std::fmt::Debug for FlightGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlightGuard").field("id", &self.id).finish()
    }
}

#[cfg(test)]
mod tests;
