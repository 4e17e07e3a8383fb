//! One cell's history as the checkers read it, built from the trace one
//! line at a time (Jepsen's history: every operation every party
//! recorded). Only what the invariants need is kept, strings interned and
//! digests as numbers, so a trace of 100 MB is read in a few tens of MB:
//! the phases, each observation point's event streams (the agent hop's
//! proxy, the gateway hop's proxy, the client), what the application was
//! handed, what the store took, and what the scripted agent sent.
//!
//! Over 400 lines on purpose: the history is built in one pass over the
//! trace into compact interned tables (`History::push` and its per-event
//! readers), and the queries the invariants ask (`seen`, `given`,
//! `phase_at`, `cell_sessions`, `host_gaps`, ...) read those same tables,
//! which apart would have to be exposed.

use continuity_trace::event::{AgentSent, Event, Handed, HopSse, HopStream, Http, Line, Sse};
use continuity_trace::Purpose;
use std::collections::HashMap;

/// A string of the history, interned.
pub(crate) type Name = u32;

/// Every distinct string the history holds, once.
#[derive(Default)]
pub(crate) struct Names {
    index: HashMap<String, Name>,
    names: Vec<String>,
}

impl Names {
    pub fn intern(&mut self, text: &str) -> Name {
        if let Some(&n) = self.index.get(text) {
            return n;
        }
        let n = self.names.len() as Name;
        self.names.push(text.to_string());
        self.index.insert(text.to_string(), n);
        n
    }

    pub fn text(&self, name: Name) -> &str {
        &self.names[name as usize]
    }
}

/// An SSE event id: a number (sandbox-agent's), or any other text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Id {
    Num(u64),
    Text(Name),
}

/// One SSE event seen at an observation point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen {
    pub t: f64,
    pub id: Option<Id>,
    /// The agent's session a `session/update` names.
    pub session: Option<Name>,
    pub digest: Option<u64>,
    pub update: bool,
}

/// One GET of a stream at an observation point and what it carried.
#[derive(Debug, Clone, Default)]
pub(crate) struct Segment {
    pub last_event_id: Option<Id>,
    pub events: Vec<Seen>,
}

/// The streams one observation point saw, by ACP server id.
#[derive(Default)]
pub(crate) struct Point {
    pub streams: HashMap<Name, Vec<Segment>>,
    /// Whether anything was recorded here at all.
    pub recorded: bool,
}

/// One session event handed to the application or written to the store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Given {
    pub t: f64,
    pub session: Option<Name>,
    pub agent_session: Option<Name>,
    pub from_agent: bool,
    pub update: bool,
    /// A request (it has a method and an id).
    pub request: bool,
    pub rpc_id: Option<Name>,
    pub digest: Option<u64>,
    pub event_index: Option<u64>,
    pub conn: Option<Name>,
    /// The ACP server id of the connection it came over, when named.
    pub stream: Option<Name>,
}

/// One message the scripted agent sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    pub t: f64,
    pub session: Name,
    pub update: bool,
    pub digest: u64,
}

/// A phase's span on the cell's clock.
#[derive(Debug, Clone)]
pub(crate) struct Phase {
    pub name: String,
    pub start: f64,
    pub end: Option<f64>,
}

/// The cell's history.
#[derive(Default)]
pub struct History {
    pub(crate) names: Names,
    pub(crate) phases: Vec<Phase>,
    pub(crate) server: Point,
    pub(crate) gateway: Point,
    pub(crate) client: Point,
    pub(crate) app: Vec<Given>,
    /// Whether the application's events are the SDK listener's (after the
    /// store write) rather than handed on before it.
    pub(crate) app_after_store: bool,
    pub(crate) store: Vec<Given>,
    /// Store writes that failed, the client seeing them fail.
    pub(crate) store_failures: Vec<StoreFailure>,
    pub(crate) agent: Vec<Sent>,
    /// Whether the trace holds `store` events at all (any call).
    pub(crate) store_calls: bool,
    /// The trace was cut at its size limit.
    pub(crate) truncated: bool,
    /// Records of the SDK's host were lost (its log full, its process gone).
    pub(crate) host_lost_records: bool,
    /// When continuity first read a new log of the SDK's host: it
    /// restarted, and its old log's records since the last fetch are gone.
    pub(crate) host_restarts: Vec<f64>,
    /// SSE events read without their stream's id (a trace written before
    /// the checker): given to the stream last opened.
    pub(crate) inferred_streams: bool,
    /// SSE events with no digest (a trace written before the checker).
    pub(crate) undigested: bool,
    /// Each restart: its start, its end, and whether it reloaded the
    /// browser client's page.
    pub(crate) restarts: Vec<(f64, Option<f64>, bool)>,
    /// The trace's level (`off` never reaches here; `summary`, `full`).
    pub(crate) level: Option<String>,
    /// Each `session/prompt` the client sent: when, for which agent session.
    pub(crate) prompts: Vec<(f64, Name)>,
    /// The agent's sessions JSON-RPC envelopes named.
    pub(crate) rpc_sessions: std::collections::HashSet<Name>,
    /// The stream the client opened last, for SSE events that name none.
    last_client_stream: Option<Name>,
    /// Each proxy connection's current GET: (hop, conn) → its stream and
    /// that GET's place among the stream's segments (two connections may
    /// read one stream at once: a client's and the harness's probe).
    hop_conns: HashMap<(bool, u64), (Name, usize)>,
}

/// Which observation point a hop's proxy is: the agent hop's sees what the
/// server sent, the gateway hop's what left the gateway.
fn hop_point(hop: &str) -> Option<bool> {
    match hop {
        "agent" => Some(true),
        "gateway" => Some(false),
        _ => None,
    }
}

impl History {
    /// A history from the lines of a trace, in file order.
    pub fn of(lines: impl IntoIterator<Item = Line>) -> History {
        let mut history = History::default();
        for line in lines {
            history.push(&line);
        }
        history
    }

    /// Takes one line of the trace.
    pub fn push(&mut self, line: &Line) {
        let t = line.t;
        match &line.event {
            Event::Trace(header) => {
                self.level = Some(continuity_trace_level(header.level));
            }
            Event::RestartStart => self.restarts.push((t, None, false)),
            Event::RestartEnd(end) => {
                if let Some(open) = self.restarts.iter_mut().rev().find(|r| r.1.is_none()) {
                    open.1 = Some(t);
                    open.2 = end.action == "reload";
                }
            }
            Event::PhaseStart(p) => self.phases.push(Phase {
                name: p.phase.clone(),
                start: t,
                end: None,
            }),
            Event::PhaseEnd(p) => {
                if let Some(open) = self
                    .phases
                    .iter_mut()
                    .rev()
                    .find(|open| open.name == p.phase && open.end.is_none())
                {
                    open.end = Some(t);
                }
            }
            Event::Http(http) => self.client_get(http),
            Event::Rpc(rpc) => {
                if let Some(session) = &rpc.session {
                    let session = self.names.intern(session);
                    self.rpc_sessions.insert(session);
                    let out = rpc.dir == continuity_trace::event::Dir::Out;
                    if out && rpc.method.as_deref() == Some("session/prompt") {
                        self.prompts.push((t, session));
                    }
                }
            }
            Event::Sse(sse) => self.client_sse(t, sse),
            Event::HopStream(open) => self.hop_stream(open),
            Event::HopSse(sse) => self.hop_sse(t, sse),
            Event::App(handed) => {
                self.app_after_store |= handed.via.as_deref() == Some("listener");
                let given = self.given(t, handed);
                self.app.push(given);
            }
            Event::Store(store) => {
                self.store_calls = true;
                if store.call != "insertEvent" {
                    return;
                }
                if store.ok == Some(true) && store.event.digest.is_some() {
                    let given = self.given(t, &store.event);
                    self.store.push(given);
                } else if store.ok == Some(false) {
                    let session = store.event.session.as_deref().map(|s| self.names.intern(s));
                    self.store_failures.push(StoreFailure {
                        session,
                        digest: store.event.digest.as_deref().and_then(parse_digest),
                        event_index: store.event.event_index,
                    });
                }
            }
            Event::AgentSent(sent) => self.agent_sent(t, sent),
            Event::WireDropped(dropped) => {
                self.host_lost_records = true;
                if dropped.restarted {
                    self.host_restarts.push(t);
                }
            }
            Event::Truncated(_) => self.truncated = true,
            _ => {}
        }
    }

    /// A stream GET of the client's that the server answered: a new segment.
    fn client_get(&mut self, http: &Http) {
        if http.probe
            || http.purpose != Purpose::Stream
            || !http.status.is_some_and(|s| (200..300).contains(&s))
        {
            return;
        }
        let Some(stream) = continuity_trace::digest::server_id_of(&http.url) else {
            return;
        };
        let stream = self.names.intern(&stream);
        let last_event_id = http.last_event_id.as_deref().map(|id| self.id(id));
        self.client.recorded = true;
        self.last_client_stream = Some(stream);
        self.client
            .streams
            .entry(stream)
            .or_default()
            .push(Segment {
                last_event_id,
                events: Vec::new(),
            });
    }

    fn client_sse(&mut self, t: f64, sse: &Sse) {
        if sse.probe {
            return;
        }
        let stream = match &sse.stream {
            Some(stream) => Some(self.names.intern(stream)),
            None => {
                self.inferred_streams = true;
                self.last_client_stream
            }
        };
        let Some(stream) = stream else { return };
        self.undigested |= sse.digest.is_none() && sse.method.is_some();
        let seen = self.seen(
            t,
            sse.id.as_deref(),
            sse.session.as_deref(),
            sse.method.as_deref(),
            sse.digest.as_deref(),
        );
        self.client.recorded = true;
        let segments = self.client.streams.entry(stream).or_default();
        if segments.is_empty() {
            segments.push(Segment::default());
        }
        if let Some(last) = segments.last_mut() {
            last.events.push(seen);
        }
    }

    fn hop_stream(&mut self, open: &HopStream) {
        let Some(server) = hop_point(&open.hop) else {
            return;
        };
        if !open.status.is_some_and(|s| (200..300).contains(&s)) {
            return;
        }
        let stream = self.names.intern(&open.stream);
        let last_event_id = open.last_event_id.as_deref().map(|id| self.id(id));
        let point = if server {
            &mut self.server
        } else {
            &mut self.gateway
        };
        point.recorded = true;
        let segments = point.streams.entry(stream).or_default();
        segments.push(Segment {
            last_event_id,
            events: Vec::new(),
        });
        let at = segments.len() - 1;
        self.hop_conns.insert((server, open.conn), (stream, at));
    }

    fn hop_sse(&mut self, t: f64, sse: &HopSse) {
        let Some(server) = hop_point(&sse.hop) else {
            return;
        };
        let stream = self.names.intern(&sse.stream);
        let seen = self.seen(
            t,
            sse.id.as_deref(),
            sse.session.as_deref(),
            sse.method.as_deref(),
            sse.digest.as_deref(),
        );
        let open = self
            .hop_conns
            .get(&(server, sse.conn))
            .filter(|(s, _)| *s == stream)
            .map(|(_, at)| *at);
        let point = if server {
            &mut self.server
        } else {
            &mut self.gateway
        };
        point.recorded = true;
        let segments = point.streams.entry(stream).or_default();
        let at = match open.filter(|at| *at < segments.len()) {
            Some(at) => at,
            None => {
                segments.push(Segment::default());
                let at = segments.len() - 1;
                self.hop_conns.insert((server, sse.conn), (stream, at));
                at
            }
        };
        segments[at].events.push(seen);
    }

    fn agent_sent(&mut self, t: f64, sent: &AgentSent) {
        let Some(digest) = parse_digest(&sent.digest) else {
            return;
        };
        let session = self.names.intern(&sent.session);
        self.agent.push(Sent {
            t,
            session,
            update: sent.method.as_deref() == Some(UPDATE),
            digest,
        });
    }

    fn seen(
        &mut self,
        t: f64,
        id: Option<&str>,
        session: Option<&str>,
        method: Option<&str>,
        digest: Option<&str>,
    ) -> Seen {
        Seen {
            t,
            id: id.filter(|id| !id.is_empty()).map(|id| self.id(id)),
            session: session.map(|s| self.names.intern(s)),
            digest: digest.and_then(parse_digest),
            update: method == Some(UPDATE),
        }
    }

    fn given(&mut self, t: f64, handed: &Handed) -> Given {
        let mut name = |text: &Option<String>| text.as_deref().map(|s| self.names.intern(s));
        let session = name(&handed.session);
        let agent_session = name(&handed.agent_session);
        let conn = name(&handed.conn);
        let stream = name(&handed.stream);
        let rpc_id = handed
            .rpc_id
            .as_ref()
            .map(|id| self.names.intern(&rpc_id_text(id)));
        Given {
            t,
            session,
            agent_session,
            from_agent: handed.sender.as_deref() == Some("agent"),
            update: handed.method.as_deref() == Some(UPDATE),
            request: handed.method.is_some() && handed.rpc_id.is_some(),
            rpc_id,
            digest: handed.digest.as_deref().and_then(parse_digest),
            event_index: handed.event_index,
            conn,
            stream,
        }
    }

    fn id(&mut self, text: &str) -> Id {
        match text.parse::<u64>() {
            Ok(n) => Id::Num(n),
            Err(_) => Id::Text(self.names.intern(text)),
        }
    }

    /// The text of an id, as evidence.
    pub(crate) fn id_text(&self, id: Id) -> String {
        match id {
            Id::Num(n) => n.to_string(),
            Id::Text(name) => self.names.text(name).to_string(),
        }
    }

    /// The phase during which `t` fell: the latest one started by then
    /// and not yet over, else the latest one started.
    pub(crate) fn phase_at(&self, t: f64) -> Option<&str> {
        let started = || self.phases.iter().filter(|p| p.start <= t);
        started()
            .rfind(|p| p.end.is_none_or(|end| end >= t))
            .or_else(|| started().next_back())
            .map(|p| p.name.as_str())
    }

    /// The client's streams whose events reach the application: those the
    /// application's events name (continuity's client names them), else
    /// every stream (the SDK hands on whatever each of its connections
    /// reads). A stream of a client that hands nothing on (the recovering
    /// client's `session/load`) is not the application's to be held against.
    pub(crate) fn app_streams(&self) -> std::collections::HashSet<Name> {
        let named: std::collections::HashSet<Name> =
            self.app.iter().filter_map(|g| g.stream).collect();
        if named.is_empty() {
            return self.client.streams.keys().copied().collect();
        }
        named
    }

    /// Whether a store write of a local session bound to the agent's
    /// `session` failed (a write that failed names its local session only).
    pub(crate) fn store_failures_of(&self, session: Name) -> bool {
        let locals = self.locals_of(session);
        self.store_failures
            .iter()
            .any(|f| f.session.is_some_and(|l| locals.contains(&l)))
    }

    /// Whether the store refused the write of the event `digest` of a
    /// local session bound to the agent's `session`: the client saw the
    /// write fail (Jepsen's failed operation), so the event's absence
    /// from the store is no silent loss.
    pub(crate) fn refused_write(&self, session: Name, digest: u64) -> bool {
        let locals = self.locals_of(session);
        self.store_failures
            .iter()
            .any(|f| f.digest == Some(digest) && f.session.is_some_and(|l| locals.contains(&l)))
    }

    /// The local sessions bound to the agent's `session`.
    fn locals_of(&self, session: Name) -> std::collections::HashSet<Name> {
        self.app
            .iter()
            .chain(&self.store)
            .filter(|g| g.agent_session == Some(session))
            .filter_map(|g| g.session)
            .collect()
    }

    /// The agent's sessions the client saw this cell: only these are
    /// judged (a proxy or the agent's record may hold an earlier cell's).
    pub(crate) fn cell_sessions(&self) -> std::collections::HashSet<Name> {
        let streams = self.client.streams.values().flatten();
        streams
            .flat_map(|s| s.events.iter().filter_map(|e| e.session))
            .chain(self.app.iter().filter_map(|g| g.agent_session))
            .chain(self.store.iter().filter_map(|g| g.agent_session))
            .chain(self.rpc_sessions.iter().copied())
            .collect()
    }
}

impl History {
    /// The windows in which the SDK's host may have lost its records: it
    /// started a new log (its process was killed, its actor woke again:
    /// seen as `wire_dropped` with `restarted`), or the browser's page was
    /// reloaded (the application restarted). Continuity asks for the
    /// records as the restart phase begins; what the SDK did after that,
    /// still storing and handing on what the phase before received, may be
    /// gone: each window runs from that phase's start to the new log (the
    /// reload's end). Only when the application's events are the SDK's.
    pub(crate) fn host_gaps(&self) -> Vec<(f64, f64)> {
        if !self.app_after_store {
            return Vec::new();
        }
        let reloads = self
            .restarts
            .iter()
            .filter(|(_, _, reload)| *reload)
            .map(|(start, end, _)| (*start, end.unwrap_or(f64::INFINITY)));
        // A new log is read after the restart that made it.
        let new_logs = self.host_restarts.iter().map(|seen| {
            let restart = self
                .restarts
                .iter()
                .map(|(start, _, _)| *start)
                .filter(|start| start <= seen)
                .fold(f64::NEG_INFINITY, f64::max);
            (restart.max(0.0), *seen)
        });
        reloads
            .chain(new_logs)
            .map(|(start, end)| (self.phase_before(start), end))
            .collect()
    }

    /// The start of the phase before the one running at `t`.
    fn phase_before(&self, t: f64) -> f64 {
        let mut before: Vec<f64> = self
            .phases
            .iter()
            .map(|p| p.start)
            .filter(|s| *s <= t)
            .collect();
        before.sort_by(f64::total_cmp);
        before.iter().rev().nth(1).copied().unwrap_or(0.0)
    }
}

/// The method every session update carries.
pub(crate) const UPDATE: &str = "session/update";

/// A store write that failed: its local session, and the event it held
/// (its digest and index), when the trace says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreFailure {
    pub(crate) session: Option<Name>,
    pub(crate) digest: Option<u64>,
    pub(crate) event_index: Option<u64>,
}

fn parse_digest(text: &str) -> Option<u64> {
    u64::from_str_radix(text, 16).ok()
}

/// A JSON-RPC id as text (`3`, `"abc"`).
fn rpc_id_text(id: &serde_json::Value) -> String {
    match id {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn continuity_trace_level(level: continuity_trace::TraceLevel) -> String {
    match level {
        continuity_trace::TraceLevel::Off => "off",
        continuity_trace::TraceLevel::Summary => "summary",
        continuity_trace::TraceLevel::Full => "full",
    }
    .to_string()
}
