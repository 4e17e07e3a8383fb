//! The trace's events as types: one variant per `ev`, one struct per
//! variant's fields. Emitters build them, readers (the floor, `show
//! --cell`, the HTML timeline) match on them; they become a JSON line only
//! at the file's edge ([`Line::to_value`]) and are read back the same way
//! ([`Line::from_value`]), so the names on the wire live here alone.
//!
//! Every field a reader can do without has a default: a trace written by
//! an older continuity, or cut short, still reads, and an event this
//! version does not know is [`Event::Other`] rather than an error.

mod fields;

pub use fields::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One line of `trace.jsonl`: when (milliseconds since the cell started)
/// and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub t: f64,
    pub event: Event,
}

impl Line {
    /// The line as written: `t`, then `ev`, then the event's own fields.
    pub fn to_value(&self) -> Value {
        let mut line = Map::new();
        line.insert("t".into(), self.t.into());
        if let Ok(Value::Object(fields)) = serde_json::to_value(&self.event) {
            line.extend(fields);
        }
        Value::Object(line)
    }

    /// A line read back; `None` without a numeric `t`. An event that does
    /// not parse as this version's (unknown `ev`, a field of another type)
    /// is [`Event::Other`].
    pub fn from_value(value: &Value) -> Option<Line> {
        let t = value.get("t")?.as_f64()?;
        let event = Event::deserialize(value).unwrap_or(Event::Other);
        Some(Line { t, event })
    }
}

/// What happened, by the `ev` it is written under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    /// The first line: the schema, the level and the cell.
    Trace(Header),
    PhaseStart(PhaseStart),
    PhaseEnd(PhaseEnd),
    /// An HTTP exchange, logged at its end.
    Http(Http),
    /// A JSON-RPC envelope sent or received.
    Rpc(Rpc),
    /// One event of an SSE stream.
    Sse(Sse),
    /// The end of one event-stream GET.
    StreamEnd(StreamEnd),
    /// A session-store call, logged at its end.
    Store(Store),
    /// A session event the client handed to the application: what the
    /// Rust client recorded, what the SDK's `onEvent` listener saw.
    App(Handed),
    /// A stream GET through a hop's fault proxy.
    HopStream(HopStream),
    /// An SSE event a hop's fault proxy forwarded toward the client.
    HopSse(HopSse),
    /// A message the scripted agent wrote to the server (its record).
    AgentSent(AgentSent),
    /// An action of the hosted SDK, logged at its end.
    Sdk(Sdk),
    /// Wire records the hosted SDK's actor could not keep.
    WireDropped(WireDropped),
    ReadyProbe(ReadyProbe),
    ComponentStart(Component),
    ComponentStop(Component),
    RestartStart,
    RestartEnd(RestartEnd),
    FaultStart(FaultStart),
    FaultAction(FaultAction),
    FaultEnd(FaultEnd),
    /// The stack's wait to answer again after a fault healed: until it
    /// answered, or the deadline it never answered by; and each restart
    /// of a component that did not (a repair for the next cell), from its
    /// action to ready or its deadline.
    FaultReady(Took),
    PauseStart(PauseStart),
    PauseEnd(PauseEnd),
    AgentKill(AgentKill),
    AgentAfter(AgentAfter),
    Schedule(Schedule),
    ScheduledStart(ScheduledStart),
    ScheduledEnd(ScheduledEnd),
    /// A terminal socket's frame.
    Ws(WsFrame),
    WsOpen(WsOpen),
    WsClose(WsClose),
    /// A wait of the harness's own choosing (a reattach watching for output).
    Window(Window),
    /// The wait for an earlier cell's deferred DELETEs on this stack.
    CleanupWait(Took),
    CellEnd(CellEnd),
    /// The size limit was reached: nothing follows.
    Truncated(Truncated),
    /// An event this version does not know; never written.
    #[serde(other, skip_serializing)]
    Other,
}

impl Event {
    /// The structure of a cell's timeline (phases, restarts, components,
    /// faults, the cell's end): what the HTML page keeps however many
    /// requests it drops.
    pub fn is_structure(&self) -> bool {
        matches!(
            self,
            Event::PhaseStart(_)
                | Event::PhaseEnd(_)
                | Event::RestartStart
                | Event::RestartEnd(_)
                | Event::ComponentStop(_)
                | Event::ComponentStart(_)
                | Event::FaultStart(_)
                | Event::FaultAction(_)
                | Event::FaultEnd(_)
                | Event::PauseStart(_)
                | Event::PauseEnd(_)
                | Event::AgentKill(_)
                | Event::AgentAfter(_)
                | Event::Schedule(_)
                | Event::ScheduledStart(_)
                | Event::ScheduledEnd(_)
                | Event::CellEnd(_)
                | Event::Truncated(_)
        )
    }
}

/// Which way a JSON-RPC envelope or a terminal frame went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Sent by the client.
    #[default]
    Out,
    /// Received by the client.
    In,
}

/// How a JSON-RPC envelope travelled: the POST's body or the event stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    #[default]
    Post,
    Stream,
}

/// What the fault proxy did to a connection because of a toxic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnAction {
    #[default]
    Reset,
    Closed,
    /// The server's close (FIN) held back from the client (`slow_close`).
    CloseHeld,
    /// Nothing: the toxic's draw (`toxicity` below 1) left the connection
    /// alone as its data passed in the window.
    Spared,
}

impl ConnAction {
    /// As serialized: `reset`, `closed`, `close_held`, `spared`.
    pub fn as_str(self) -> &'static str {
        crate::wire_name::of(&self)
    }
}

/// How a transport failed, in the words a report needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Refused,
    Reset,
    /// The peer closed the connection before the response was complete.
    Closed,
    Tls,
    Dns,
    Timeout,
    /// A body or stream line over the envelope limit.
    TooLarge,
    #[default]
    Other,
}

impl ErrorKind {
    /// As serialized: `refused`, `too_large`, …
    pub fn as_str(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// The kind as a sentence says it.
    pub fn words(self) -> &'static str {
        match self {
            ErrorKind::Refused => "connection refused",
            ErrorKind::Reset => "connection reset",
            ErrorKind::Closed => "connection closed early",
            ErrorKind::Tls => "TLS failure",
            ErrorKind::Dns => "DNS failure",
            ErrorKind::Timeout => "no answer in time",
            ErrorKind::TooLarge => "over the size limit",
            ErrorKind::Other => "transport error",
        }
    }
}

/// How much of the wire a cell's trace keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceLevel {
    /// No file; waits still remember what they saw.
    Off,
    /// Every event, without bodies.
    #[default]
    Summary,
    /// Every event, JSON-RPC bodies cut at `continuity-trace`'s `BODY_LIMIT_CHARS`.
    Full,
}

/// What an HTTP exchange was for; names the channel it counts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Health,
    #[serde(rename = "acp")]
    AcpPost,
    Stream,
    Delete,
    Process,
    /// The sandbox's file API (`/v1/fs/…`).
    Fs,
    /// Any other endpoint of the server's API (`/v1/agents`, …).
    #[default]
    Api,
    /// A process's terminal WebSocket upgrade.
    Terminal,
}
