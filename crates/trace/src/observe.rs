//! What waits observed: per channel (one method + path), the attempts and
//! the last failure of the current phase; and the waits still open. Small
//! and bounded whatever the server does, and kept even with the trace off.

use super::event::ErrorKind;
use std::fmt;

/// Channels remembered per phase; beyond it new ones are not counted (a
/// hostile server cannot grow this by inventing paths: the paths are ours).
const MAX_CHANNELS: usize = 64;

/// One failed attempt: a status the caller rejected, or a transport error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Status {
        status: u16,
        /// Short problem type (`invalid_request`).
        problem_type: Option<String>,
        detail: Option<String>,
    },
    Error {
        kind: ErrorKind,
        detail: String,
    },
}

impl Seen {
    /// The failure as a trace event's `status`/`problemType`/`detail` or
    /// `error`/`errorDetail`.
    pub(super) fn fields(&self) -> SeenFields {
        match self {
            Seen::Status {
                status,
                problem_type,
                detail,
            } => SeenFields {
                status: Some(*status),
                problem_type: problem_type.clone(),
                detail: detail.as_deref().map(short),
                ..SeenFields::default()
            },
            Seen::Error { kind, detail } => SeenFields {
                error: Some(*kind),
                error_detail: Some(short(detail)),
                ..SeenFields::default()
            },
        }
    }
}

impl fmt::Display for Seen {
    /// `HTTP 401 unauthorized "token expired"`, `connection reset`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seen::Status {
                status,
                problem_type,
                detail,
            } => {
                write!(f, "HTTP {status}")?;
                if let Some(t) = problem_type {
                    write!(f, " {t}")?;
                }
                if let Some(d) = detail {
                    write!(f, " {:?}", short(d))?;
                }
                Ok(())
            }
            Seen::Error { kind, .. } => f.write_str(kind.words()),
        }
    }
}

/// A failure's fields in an `http` or `stream_end` event.
#[derive(Default)]
pub(super) struct SeenFields {
    pub(super) status: Option<u16>,
    pub(super) problem_type: Option<String>,
    pub(super) detail: Option<String>,
    pub(super) error: Option<ErrorKind>,
    pub(super) error_detail: Option<String>,
}

/// Foreign text (a server's problem detail) cut to a line: redacted first,
/// since a cut could leave half a secret that no writer recognises.
fn short(text: &str) -> String {
    const MAX: usize = 160;
    let text = crate::secret::redact_known(text);
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX - 1).collect();
    format!("{cut}…")
}

/// The attempts on one channel during the current phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelStats {
    /// `GET /v1/health`, `GET /v1/acp/sdk-mock-… (event stream)`.
    pub name: String,
    pub attempts: u32,
    pub failures: u32,
    pub last_status: Option<u16>,
    pub last_failure: Option<Seen>,
    /// Whether the latest attempt failed (a stream that got a 404 and then
    /// a 200 is not failing any more).
    pub failing: bool,
    /// Response bytes read on it (bodies, stream data).
    pub received: u64,
    /// When the last failure happened, on the same clock as [`WaitInfo::opened`].
    pub last_failure_seq: u64,
}

impl ChannelStats {
    /// Whether this is an event stream (a GET the server pushes on), not
    /// a channel a request travels on.
    pub fn is_event_stream(&self) -> bool {
        self.name.ends_with(EVENT_STREAM)
    }
}

/// How a channel's name marks an event stream.
pub(super) const EVENT_STREAM: &str = "(event stream)";

/// A wait still open: what the cell is blocked on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitInfo {
    /// `the health wait (GET /v1/health)`, `a response to session/prompt (id 3)`.
    pub what: String,
    /// The channel whose attempts it depends on.
    pub channel: Option<String>,
    /// When it opened, as a sequence number shared with channel failures.
    pub opened: u64,
}

/// Open waits (oldest first) and this phase's channels (first used first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub waits: Vec<WaitInfo>,
    pub channels: Vec<ChannelStats>,
    /// The cell's fault windows so far, first first (kept across phases).
    pub faults: Vec<super::FaultSeen>,
    pub breaks: Breaks,
}

/// When the cell last saw a connection break (a transport error, a stream
/// or a terminal socket cut), when the current phase began and when the
/// snapshot was taken, in ms since the cell started: a phase that fails on
/// a connection that broke before it began only reports an old break.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breaks {
    pub last_ms: Option<u64>,
    pub phase_started_ms: u64,
    pub taken_ms: u64,
}

impl Breaks {
    /// How long ago the last break was, when the current phase only
    /// reports it (none broke since the phase began); `None` otherwise.
    pub fn reported_age_ms(&self) -> Option<u64> {
        self.last_ms
            .filter(|last| *last < self.phase_started_ms)
            .map(|last| self.taken_ms.saturating_sub(last))
    }
}

/// Whether a failure is a connection breaking (not a status, a timeout or
/// an oversized body).
fn is_break(failure: &Seen) -> bool {
    matches!(
        failure,
        Seen::Error { kind, .. } if !matches!(kind, ErrorKind::Timeout | ErrorKind::TooLarge)
    )
}

impl Snapshot {
    /// The wait opened last: what the cell was truly blocked on.
    pub fn innermost(&self) -> Option<&WaitInfo> {
        self.waits.last()
    }

    pub fn channel(&self, name: &str) -> Option<&ChannelStats> {
        self.channels.iter().find(|c| c.name == name)
    }

    pub fn failed_channels(&self) -> impl Iterator<Item = &ChannelStats> {
        self.channels.iter().filter(|c| c.failures > 0)
    }

    /// Channels whose latest attempt failed after `since` (a wait's opening):
    /// the failures that can explain why that wait is still open.
    pub fn failing_since(&self, since: u64) -> impl Iterator<Item = &ChannelStats> {
        self.channels
            .iter()
            .filter(move |c| c.failing && c.last_failure_seq > since)
    }
}

#[derive(Default)]
pub(super) struct Observations {
    /// One clock for wait openings and failures.
    seq: u64,
    waits: Vec<(u64, WaitInfo)>,
    /// Channels kept across phases while something runs on them in the
    /// background (the SDK's health wait, polling from `connect` on).
    watched: Vec<(u64, String)>,
    channels: Vec<ChannelStats>,
    pub(super) faults: Vec<super::FaultSeen>,
    /// When the current phase began (trace time): an exchange that ended
    /// before it and reached the trace late (the hosted SDK's, drained
    /// after its phase) is the earlier phase's, not counted in this one.
    phase_started: f64,
    /// When a connection last broke (see [`Breaks`]).
    last_break: Option<f64>,
}

impl Observations {
    /// Forgets the channels, except those an open wait still depends on
    /// (a health wait that began in an earlier phase keeps its count).
    pub(super) fn reset_channels(&mut self, now: f64) {
        self.phase_started = now;
        let (waits, watched) = (&self.waits, &self.watched);
        self.channels.retain(|c| {
            waits
                .iter()
                .any(|(_, w)| w.channel.as_deref() == Some(c.name.as_str()))
                || watched.iter().any(|(_, name)| *name == c.name)
        });
    }

    /// A connection broke at `t` (whenever it reached the trace).
    pub(super) fn broke(&mut self, t: f64) {
        self.last_break = Some(self.last_break.map_or(t, |last| last.max(t)));
    }

    fn channel_mut(&mut self, name: &str) -> Option<&mut ChannelStats> {
        if let Some(i) = self.channels.iter().position(|c| c.name == name) {
            return Some(&mut self.channels[i]);
        }
        if self.channels.len() >= MAX_CHANNELS {
            return None;
        }
        self.channels.push(ChannelStats {
            name: name.to_string(),
            attempts: 0,
            failures: 0,
            last_status: None,
            last_failure: None,
            failing: false,
            received: 0,
            last_failure_seq: 0,
        });
        self.channels.last_mut()
    }

    pub(super) fn count(
        &mut self,
        t: f64,
        channel: &str,
        status: Option<u16>,
        received: u64,
        failure: Option<&Seen>,
    ) {
        if failure.is_some_and(is_break) {
            self.broke(t);
        }
        if t < self.phase_started {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        if let Some(c) = self.channel_mut(channel) {
            c.attempts += 1;
            c.received += received;
            if status.is_some() {
                c.last_status = status;
            }
            c.failing = failure.is_some();
            if let Some(failure) = failure {
                c.failures += 1;
                c.last_failure = Some(failure.clone());
                c.last_failure_seq = seq;
            }
        }
    }

    /// The end of a stream already counted as an attempt: its bytes, and
    /// a failure when it broke.
    pub(super) fn stream_ended(
        &mut self,
        t: f64,
        channel: &str,
        received: u64,
        failure: Option<&Seen>,
    ) {
        if failure.is_some_and(is_break) {
            self.broke(t);
        }
        if t < self.phase_started {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        if let Some(c) = self.channel_mut(channel) {
            c.received += received;
            let Some(failure) = failure else {
                return;
            };
            c.failures += 1;
            c.failing = true;
            c.last_failure = Some(failure.clone());
            c.last_failure_seq = seq;
        }
    }

    pub(super) fn open_wait(&mut self, what: String, channel: Option<String>) -> u64 {
        self.seq += 1;
        let opened = self.seq;
        self.waits.push((
            opened,
            WaitInfo {
                what,
                channel,
                opened,
            },
        ));
        opened
    }

    pub(super) fn close_wait(&mut self, id: u64) {
        self.waits.retain(|(i, _)| *i != id);
        self.watched.retain(|(i, _)| *i != id);
    }

    pub(super) fn watch(&mut self, channel: String) -> u64 {
        self.seq += 1;
        self.watched.push((self.seq, channel));
        self.seq
    }

    /// What the waits saw, taken at `now` (ms since the cell started).
    pub(super) fn snapshot(&self, now: f64) -> Snapshot {
        let ms = |t: f64| t.max(0.0) as u64;
        Snapshot {
            waits: self.waits.iter().map(|(_, w)| w.clone()).collect(),
            channels: self.channels.clone(),
            faults: self.faults.clone(),
            breaks: Breaks {
                last_ms: self.last_break.map(ms),
                phase_started_ms: ms(self.phase_started),
                taken_ms: ms(now),
            },
        }
    }
}

/// Closes its wait when dropped (answered, failed or abandoned at a deadline).
pub struct WaitGuard {
    trace: super::Trace,
    id: u64,
}

impl WaitGuard {
    pub(super) fn new(trace: super::Trace, id: u64) -> Self {
        Self { trace, id }
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.trace.close_wait(self.id);
    }
}
