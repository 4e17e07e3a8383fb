//! A failure as `report.json` names it ([`Signature`]): its class
//! ([`SignatureKind`]), the fields that identify it (HTTP status, problem
//! type, RPC code), the wire-level cause under it ([`Cause`]), the network
//! fault it fell in ([`FaultCause`]) and the checker's evidence, with the
//! ids masked ([`mask_ids`]) so the same failure compares equal across
//! cells, runs and versions.

use serde::{Deserialize, Serialize};

/// A failure, precise enough to compare across runs and versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Signature {
    pub kind: SignatureKind,
    pub http_status: Option<u16>,
    /// Short problem type: `invalid_request` for `urn:sandbox-agent:error:invalid_request`.
    pub problem_type: Option<String>,
    pub rpc_code: Option<i64>,
    pub message: String,
    /// For timeouts: what was still pending.
    pub pending: Option<String>,
    /// What went wrong on the wire underneath, when something did: the
    /// last failed attempt of the wait that ran out (or of the failed call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// What the phase's waits saw, with counts: `GET /v1/health: 4 attempts,
    /// 4 failed, last HTTP 401`. Differs run to run, so never compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    /// The network fault the failure happened under, when the cell's
    /// target is a fault: its hop and toxic, and whether the fault proxy
    /// itself reset or closed a connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultCause>,
    /// The part of continuity's own that failed (its Postgres, Chromium,
    /// Rivet app…), when the failure is one: the cell is then `error`,
    /// never a verdict on sandbox-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<crate::HarnessPart>,
    /// An `integrity` failure the always-on checker found: the invariant,
    /// what broke, the hop where it first shows, and the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<crate::checked::Violation>,
}

/// A fault window a failure fell in or after (see `docs/faults.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultCause {
    /// `gateway`, `agent`, `persist`, `runner`, or a deployment's own hop.
    pub hop: String,
    /// Toxiproxy's name of the toxic: `reset_peer`, `latency`, `partition`…
    pub toxic: String,
    /// `during` the window, or `after` it healed.
    pub when: String,
    /// `reset` or `closed` when the proxy itself did that to a connection
    /// and the failure is that; `None` when the failure is the server's own.
    pub by_proxy: Option<String>,
}

/// The wire-level cause under a failure: enough to tell a rotated token (a
/// 401) from a reset connection or a refused one, and stable across runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    /// `http`, `connect`, `stream_closed`, `timeout` or `protocol`.
    pub kind: SignatureKind,
    pub http_status: Option<u16>,
    pub problem_type: Option<String>,
    /// For transport errors: `refused`, `reset`, `closed`, `tls`, `dns`,
    /// `timeout`, `too_large`, `other`.
    pub error: Option<String>,
}

impl Cause {
    /// `http 401`, `http 400 invalid_request`, `reset`, `too_large`.
    pub fn short(&self) -> String {
        match (self.http_status, &self.error) {
            (Some(status), _) => match &self.problem_type {
                Some(t) => format!("http {status} {t}"),
                None => format!("http {status}"),
            },
            (None, Some(error)) => error.replace('_', " "),
            (None, None) => self.kind.as_str().replace('_', " "),
        }
    }
}

/// The classes of failure, as docs/report-schema.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignatureKind {
    Timeout,
    Connect,
    StreamClosed,
    Http,
    Rpc,
    Protocol,
    Client,
    /// The agent process died under the server.
    AgentExit,
    /// Persisted history is missing or duplicated events.
    Integrity,
    /// The harness itself (restart command failed, readiness never came).
    Harness,
    /// The session store (a Rivet actor, SQLite) failed or kept the phase
    /// waiting: the message names the call and its latency.
    Persist,
    /// The restarted target went down and did not come back within its
    /// readiness deadline: the system under test's failure, with the
    /// readiness probe's last answer as `cause` (refused, reset, a 502, no
    /// answer).
    NotBack,
    /// The client's call never settled and nothing that could settle it
    /// was in flight (no request awaiting an answer, no open stream, no
    /// retry) for the hang grace: the phase ended there instead of at its
    /// deadline. The message says what the wire showed last, and when.
    Hung,
}

impl Signature {
    /// The evidence of an `integrity` failure the checker found, in one
    /// line: what broke where (`stream duplicate at gateway`), the ids, the
    /// stream, the session, the stored index, and since where it was still
    /// right. Its ids and sessions are the server's text: a renderer passes
    /// it through `untrusted::Untrusted`.
    pub fn evidence(&self) -> Option<String> {
        let v = self.integrity.as_ref()?;
        let mut parts = vec![v.short()];
        if !v.ids.is_empty() {
            let what = match v.invariant {
                crate::checked::Invariant::Stream => "SSE id",
                crate::checked::Invariant::Requests => "JSON-RPC id",
                _ => "digest",
            };
            parts.push(format!("{what} {}", v.ids.join(", ")));
        }
        if let Some(stream) = &v.stream {
            parts.push(format!("stream {stream}"));
        }
        if let Some(session) = &v.session {
            parts.push(format!("session {session}"));
        }
        if let Some(index) = v.event_index {
            parts.push(format!("event index {index}"));
        }
        if let Some(since) = v.since {
            parts.push(format!("right at the {}", since.as_str()));
        }
        parts.push(format!("at {:.1} s", v.t / 1000.0));
        Some(parts.join(", "))
    }

    /// A few words for a table cell: `http 400 invalid_request`, `timeout`,
    /// `timeout: http 401` (a timeout with the cause underneath), `hung:
    /// http 400 invalid_request` (a hang, likewise), `rpc -32601`,
    /// `integrity: stream` (the invariant the checker found broken).
    pub fn short(&self) -> String {
        if let (SignatureKind::Integrity, Some(v)) = (self.kind, &self.integrity) {
            return format!("integrity: {}", v.invariant);
        }
        match self.kind {
            SignatureKind::Timeout | SignatureKind::Hung if self.cause.is_some() => {
                format!(
                    "{}: {}",
                    self.kind.as_str(),
                    self.cause.as_ref().map(Cause::short).unwrap_or_default()
                )
            }
            SignatureKind::Http => {
                let mut s = format!(
                    "http {}",
                    self.http_status.map(|s| s.to_string()).unwrap_or_default()
                );
                if let Some(t) = &self.problem_type {
                    s.push(' ');
                    s.push_str(t);
                }
                s
            }
            SignatureKind::Rpc => format!(
                "rpc {}",
                self.rpc_code.map(|c| c.to_string()).unwrap_or_default()
            ),
            // What the readiness probe met last: `not back: refused`, `not back: http 502`.
            SignatureKind::NotBack => match &self.cause {
                Some(cause) => format!("not back: {}", cause.short()),
                None => "not back".into(),
            },
            // A terminal socket's end: its close code is the signature.
            SignatureKind::StreamClosed if self.message.starts_with("ws close ") => self
                .message
                .split(" (")
                .next()
                .unwrap_or_default()
                .to_string(),
            other => other.as_str().replace('_', " "),
        }
    }
}

/// Replaces UUIDs (server ids like `sdk-mock-<uuid>`, session ids) with
/// `<id>`, so the same failure has the same message in every cell and run.
pub fn mask_ids(text: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let uuid_at = |start: usize| -> Option<usize> {
        let mut i = start;
        for (n, len) in SHAPE.iter().enumerate() {
            if n > 0 {
                if bytes.get(i) != Some(&b'-') {
                    return None;
                }
                i += 1;
            }
            let group = bytes.get(i..i + len)?;
            if !group.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            i += len;
        }
        // Not part of a longer hex run.
        (!bytes.get(i).is_some_and(u8::is_ascii_hexdigit)).then_some(i)
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !bytes[i - 1].is_ascii_hexdigit();
        match boundary.then(|| uuid_at(i)).flatten() {
            Some(end) => {
                out.push_str("<id>");
                i = end;
            }
            None => {
                let ch = text[i..].chars().next().expect("i is on a char boundary");
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

impl SignatureKind {
    /// The snake_case name, as serialized (its serde attributes say it).
    pub fn as_str(self) -> &'static str {
        crate::wire_name::of(&self)
    }
}
