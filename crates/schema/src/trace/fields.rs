//! The fields of each trace event, one struct per `ev` (the variants of
//! [`super::Event`]): camelCase on the wire, and every field a reader can
//! do without defaults, so a trace from an older continuity still reads.
//!
//! Over 400 lines on purpose: it holds one struct per trace event kind, each
//! a `payload!` of its fields: together they are the wire shape of
//! `trace.jsonl`, read as one list.

use super::{ConnAction, Dir, ErrorKind, Purpose, TraceLevel, Via};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Declares the payload structs: each field a reader may miss defaults,
/// and names are camelCase on the wire.
macro_rules! payload {
    ($($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* })*) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
            #[serde(default, rename_all = "camelCase")]
            pub struct $name { $($body)* }
        )*
    };
}

payload! {
    pub struct Header {
        #[serde(skip_serializing_if = "Option::is_none")]
        pub cell: Option<CellId>,
        pub schema: String,
        pub level: TraceLevel,
        /// The wall clock when the cell started (its `t` 0), in Unix
        /// milliseconds: where the cell sits in the run (`export`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub started_ms: Option<f64>,
    }

    /// The cell a trace belongs to.
    pub struct CellId {
        pub target: crate::TargetName,
        pub scenario: String,
        pub attempt: u32,
    }

    pub struct PhaseStart {
        pub phase: String,
        pub step: String,
    }

    pub struct PhaseEnd {
        pub phase: String,
        pub outcome: String,
        pub ms: u64,
    }

    pub struct Http {
        pub method: String,
        /// Path and query, `access_token` stripped.
        pub url: String,
        pub purpose: Purpose,
        pub ms: f64,
        pub sent: u64,
        pub received: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub attempt: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub status: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub problem_type: Option<String>,
        /// The problem's detail, cut to a line.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error: Option<ErrorKind>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error_detail: Option<String>,
        /// `client` when the client itself ended the request.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub closed_by: Option<String>,
        /// `ts-sdk` for the hosted SDK's exchanges.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub client: Option<String>,
        /// When the response's headers came, after the request started.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub headers_ms: Option<f64>,
        /// An event stream's GET: the `Last-Event-ID` it resumed from.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub last_event_id: Option<String>,
        /// The harness's own read of a stream (a re-attach probe), not the client's.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pub probe: bool,
    }

    pub struct Rpc {
        pub dir: Dir,
        pub via: Via,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub method: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub rpc_id: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error_code: Option<Value>,
        /// The envelope, in a `full` trace, cut at the body limit.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub body: Option<String>,
        /// The agent's session the envelope names (`params` or `result`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
    }

    pub struct Sse {
        pub event: String,
        pub bytes: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub method: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub rpc_id: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error_code: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub body: Option<String>,
        /// The ACP server id whose stream carried it (absent in traces
        /// written before continuity 0.1's checker).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub stream: Option<String>,
        /// The agent's session the envelope names.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        /// The envelope's digest (`continuity-trace`'s `digest`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub digest: Option<String>,
        /// Read by the harness's own probe, not the client.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pub probe: bool,
    }

    pub struct StreamEnd {
        pub url: String,
        pub events: u64,
        pub received: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub status: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub problem_type: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error: Option<ErrorKind>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error_detail: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub closed_by: Option<String>,
    }

    pub struct Store {
        /// `getSession`, `insertEvent`, …
        pub call: String,
        pub driver: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub ms: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub ok: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
        /// `insertEvent`: the event written, as the checker follows it.
        #[serde(flatten)]
        pub event: Handed,
    }

    /// One session event as the application got it (`app`) or as a client
    /// wrote it to its store (an `insertEvent`'s `store` event).
    pub struct Handed {
        /// `app` events: `recorder` (handed on before the store write, as
        /// continuity's client does) or `listener` (the SDK's `onEvent`,
        /// called after its store write succeeded).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub via: Option<String>,
        /// The local session (the application's id for it).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub event_index: Option<u64>,
        /// `client` (sent) or `agent` (received).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub sender: Option<String>,
        /// The client's connection the envelope went over.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub conn: Option<String>,
        /// That connection's ACP server id, when the client knows it.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub stream: Option<String>,
        /// The agent's session the envelope names.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub agent_session: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub method: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub rpc_id: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub digest: Option<String>,
    }

    /// A stream GET that passed a fault proxy: what the client asked for.
    pub struct HopStream {
        pub hop: String,
        /// The connection's number on the proxy.
        pub conn: u64,
        /// The ACP server id.
        pub stream: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub last_event_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub status: Option<u16>,
    }

    /// One SSE event a fault proxy forwarded toward the client.
    pub struct HopSse {
        pub hop: String,
        pub conn: u64,
        pub stream: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub id: Option<String>,
        pub event: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub method: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub rpc_id: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub digest: Option<String>,
    }

    /// One message the scripted agent wrote to the server (its record).
    pub struct AgentSent {
        pub session: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub method: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub rpc_id: Option<Value>,
        pub digest: String,
        /// A response: the method of the request it answers
        /// (`session/prompt` ends a turn).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub answers: Option<String>,
    }

    pub struct Sdk {
        #[serde(skip_serializing_if = "Option::is_none")]
        pub ok: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
        /// No answer by the phase's deadline.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pub abandoned: bool,
        pub call: String,
        pub phase: Option<String>,
        pub ms: f64,
    }

    pub struct WireDropped {
        pub dropped: u64,
        /// The SDK's host started a new log (its process restarted, its
        /// actor woke again): what the old one held beyond what continuity
        /// had fetched is gone, however much that was.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pub restarted: bool,
    }

    pub struct ReadyProbe {
        pub attempt: u32,
        /// The probe's URL or address, credentials hidden.
        pub probe: String,
        pub ms: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub status: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
    }

    /// A managed component that started (`pid`) or stopped (`exitCode` or
    /// `signal`), or had not started (`state`).
    pub struct Component {
        pub component: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub pid: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub exit_code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub signal: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub state: Option<String>,
    }

    pub struct RestartEnd {
        pub ok: bool,
        pub action: String,
        pub restart_ms: u64,
        pub ready_ms: Option<u64>,
        /// How the target was seen to go down (the report's `RestartResult::down`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub down: Option<String>,
        pub detail: Option<String>,
    }

    pub struct FaultStart {
        pub hop: String,
        /// Toxiproxy's name of the toxic (`reset_peer`, `partition`).
        pub toxic: String,
        /// The fault said whole.
        pub fault: String,
        pub hold_ms: u64,
    }

    pub struct FaultAction {
        pub hop: String,
        pub toxic: String,
        pub action: ConnAction,
        /// The connection's number on the proxy.
        pub conn: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub toward: Option<String>,
    }

    pub struct FaultEnd {
        pub hop: String,
        pub toxic: String,
        pub ok: bool,
        pub resets: u32,
        pub closes: u32,
        /// Why the proxy could no longer serve, when it could not.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
    }

    /// A component's process group stopped (SIGSTOP) and seen stopped:
    /// the group's leader and every member, for `holdMs` at most.
    pub struct PauseStart {
        pub component: String,
        pub pid: u32,
        pub members: Vec<u32>,
        pub hold_ms: u64,
    }

    /// The paused group continued (SIGCONT): `ok` when every member was
    /// seen running again; `detail` says how, or what was seen instead.
    pub struct PauseEnd {
        pub component: String,
        pub ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
    }

    /// The ACP agent processes under the server SIGKILLed (and seen gone),
    /// the server's own process left running.
    pub struct AgentKill {
        pub server_pid: u32,
        pub pids: Vec<u32>,
    }

    /// What runs under the server once the cell's phases are over, after
    /// an agent kill: the agent processes now (`pids`), and whether the
    /// server is still the process it was (`serverSame`).
    pub struct AgentAfter {
        pub server_pid: u32,
        pub server_same: bool,
        pub pids: Vec<u32>,
    }

    /// A `chaos` cell's schedule, as `report.json` records it.
    pub struct Schedule {
        pub schedule: Value,
    }

    /// One fault of the schedule starts (`index` in the schedule).
    pub struct ScheduledStart {
        pub index: u32,
        pub fault: String,
        pub on: String,
    }

    /// One fault of the schedule is over: healed (or back) and seen so
    /// (`ok`), or what failed.
    pub struct ScheduledEnd {
        pub index: u32,
        pub fault: String,
        pub on: String,
        pub ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
    }

    /// How long a wait took, in whole milliseconds.
    pub struct Took {
        pub ms: u64,
    }

    pub struct WsFrame {
        /// The terminal's process.
        pub process: String,
        pub dir: Dir,
        /// `data`, `input`, `ready`, `exit`, `error`; `ping` out and its
        /// `pong` in (a reattach's replay check).
        pub frame: String,
        pub bytes: u64,
    }

    pub struct WsOpen {
        pub process: String,
    }

    pub struct WsClose {
        pub process: String,
        pub code: u16,
        /// Whether a close frame came.
        pub clean: bool,
    }

    pub struct Window {
        pub what: String,
        pub ms: u64,
    }

    pub struct CellEnd {
        pub verdict: String,
        pub failure_boundary: Option<String>,
    }

    pub struct Truncated {
        pub limit_bytes: u64,
    }
}
