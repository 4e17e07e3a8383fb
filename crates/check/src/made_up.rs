//! Made-up histories for the checkers' tests: a cell's trace written line
//! by line as its parties would (the client's GETs and SSE events, the
//! proxies' records, the application's and the store's events, the
//! agent's record), with digests of made-up updates.

use continuity_trace::event::Line;
use serde_json::{json, Value};

/// A trace being written, with its clock.
#[derive(Clone)]
pub(crate) struct Made {
    lines: Vec<Value>,
    t: f64,
}

/// The update `n` of session `s`: a made-up envelope's digest.
pub(crate) fn update(s: &str, n: u32) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": s,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("chunk {n}")}}}})
}

pub(crate) fn digest(s: &str, n: u32) -> String {
    continuity_trace::digest::envelope(&update(s, n))
}

impl Made {
    pub fn new() -> Made {
        Made::of_target("gateway")
    }

    /// A trace of a cell whose target is `target`.
    pub fn of_target(target: &str) -> Made {
        let mut made = Made {
            lines: Vec::new(),
            t: 0.0,
        };
        made.line(
            json!({"ev": "trace", "schema": "continuity.trace/v1", "level": "summary",
            "cell": {"target": target, "scenario": "recreate-rehydrate", "attempt": 1}}),
        );
        made
    }

    fn line(&mut self, mut value: Value) -> &mut Self {
        self.t += 1.0;
        value["t"] = self.t.into();
        self.lines.push(value);
        self
    }

    pub fn phase(&mut self, name: &str) -> &mut Self {
        self.line(json!({"ev": "phase_start", "phase": name, "step": "prompt"}))
    }

    pub fn prompt(&mut self, s: &str) -> &mut Self {
        self.line(json!({"ev": "rpc", "dir": "out", "via": "post", "method": "session/prompt", "rpcId": 9, "session": s}))
    }

    /// The client's GET of `stream`, resuming from `last`.
    pub fn get(&mut self, stream: &str, last: Option<u64>) -> &mut Self {
        let mut http = json!({"ev": "http", "method": "GET", "url": format!("/sandbox/v1/acp/{stream}"),
            "purpose": "stream", "ms": 1.0, "sent": 0, "received": 0, "status": 200});
        if let Some(last) = last {
            http["lastEventId"] = last.to_string().into();
        }
        self.line(http)
    }

    /// The client reading SSE `id` on `stream`: update `n` of session `s`.
    pub fn sse(&mut self, stream: &str, id: u64, s: &str, n: u32) -> &mut Self {
        self.line(
            json!({"ev": "sse", "event": "message", "bytes": 10, "id": id.to_string(),
            "method": "session/update", "stream": stream, "session": s, "digest": digest(s, n)}),
        )
    }

    /// The harness's own GET of `stream` (a re-attach probe).
    pub fn probe_get(&mut self, stream: &str, last: Option<u64>) -> &mut Self {
        self.get(stream, last);
        if let Some(line) = self.lines.last_mut() {
            line["probe"] = true.into();
        }
        self
    }

    /// An SSE event the harness's probe read.
    pub fn probe_sse(&mut self, stream: &str, id: u64, s: &str, n: u32) -> &mut Self {
        self.sse(stream, id, s, n);
        if let Some(line) = self.lines.last_mut() {
            line["probe"] = true.into();
        }
        self
    }

    /// A proxy on `hop` opening a GET of `stream` on connection `conn`.
    pub fn hop_get(&mut self, hop: &str, conn: u64, stream: &str, last: Option<u64>) -> &mut Self {
        let mut open =
            json!({"ev": "hop_stream", "hop": hop, "conn": conn, "stream": stream, "status": 200});
        if let Some(last) = last {
            open["lastEventId"] = last.to_string().into();
        }
        self.line(open)
    }

    pub fn hop_sse(
        &mut self,
        hop: &str,
        conn: u64,
        stream: &str,
        id: u64,
        s: &str,
        n: u32,
    ) -> &mut Self {
        self.line(json!({"ev": "hop_sse", "hop": hop, "conn": conn, "stream": stream, "id": id.to_string(),
            "event": "message", "method": "session/update", "session": s, "digest": digest(s, n)}))
    }

    /// The application handed update `n` of session `s` (`via` the
    /// recorder or the SDK's listener).
    pub fn app(&mut self, via: &str, s: &str, n: u32) -> &mut Self {
        self.line(
            json!({"ev": "app", "via": via, "session": "local", "sender": "agent", "conn": "c",
            "agentSession": s, "method": "session/update", "digest": digest(s, n)}),
        )
    }

    /// [`Made::app`] of an update that came over `stream`, as continuity's client names it.
    pub fn app_from(&mut self, stream: &str, s: &str, n: u32) -> &mut Self {
        self.line(json!({"ev": "app", "via": "recorder", "session": "local", "sender": "agent", "conn": "c",
            "stream": stream, "agentSession": s, "method": "session/update", "digest": digest(s, n)}))
    }

    /// A JSON-RPC request (`answer: false`) or its answer handed to the application.
    pub fn app_rpc(&mut self, id: u64, answer: bool) -> &mut Self {
        let (sender, method) = if answer {
            ("agent", Value::Null)
        } else {
            ("client", json!("session/prompt"))
        };
        let mut app = json!({"ev": "app", "via": "recorder", "session": "local", "sender": sender, "conn": "c",
            "rpcId": id, "digest": format!("{id:016x}")});
        if !method.is_null() {
            app["method"] = method;
        }
        self.line(app)
    }

    /// A store write of update `n` of session `s` at `index`.
    pub fn store(&mut self, s: &str, n: u32, index: u64) -> &mut Self {
        self.line(
            json!({"ev": "store", "call": "insertEvent", "driver": "sqlite", "ok": true,
            "session": "local", "eventIndex": index, "sender": "agent", "agentSession": s,
            "method": "session/update", "digest": digest(s, n)}),
        )
    }

    /// A store write of the local session that failed.
    pub fn store_failed(&mut self) -> &mut Self {
        self.line(
            json!({"ev": "store", "call": "insertEvent", "driver": "sqlite", "ok": false,
            "error": "refused", "session": "local", "sender": "agent"}),
        )
    }

    /// A store write of update `n` of session `s` at `index` that the
    /// store refused, the client seeing it fail.
    pub fn store_refused(&mut self, s: &str, n: u32, index: u64) -> &mut Self {
        self.line(
            json!({"ev": "store", "call": "insertEvent", "driver": "postgres", "ok": false,
            "error": "the database system is shutting down", "session": "local", "eventIndex": index,
            "sender": "agent", "agentSession": s, "method": "session/update", "digest": digest(s, n)}),
        )
    }

    pub fn agent(&mut self, s: &str, n: u32) -> &mut Self {
        self.line(json!({"ev": "agent_sent", "session": s, "method": "session/update", "digest": digest(s, n)}))
    }

    pub fn restart(&mut self) -> &mut Self {
        self.line(json!({"ev": "restart_start"}));
        self.line(json!({"ev": "restart_end", "ok": true, "action": "managed", "restartMs": 1, "readyMs": 1}))
    }

    /// The SDK's host's new log, read after it restarted.
    pub fn new_host_log(&mut self) -> &mut Self {
        self.line(json!({"ev": "wire_dropped", "dropped": 0, "restarted": true}))
    }

    pub fn lines(&self) -> Vec<Line> {
        self.lines.iter().filter_map(Line::from_value).collect()
    }

    pub fn check(&self, allows: &[crate::Allowance]) -> crate::Verdict {
        crate::check_lines(self.lines(), allows)
    }
}
