//! Typed transport failures. Each variant keeps the fields a failure signature
//! needs (status, problem type, RPC code, cause), and none holds a credential.

use crate::errors::error_chain;
use crate::trace::{ErrorKind, Seen};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// An RFC 7807 problem document as sandbox-agent sends it (`application/problem+json`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Problem {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Problem {
    /// Reads a problem from a response body; `None` when the body is not one.
    pub(crate) fn parse(body: &[u8]) -> Option<Problem> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let field = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
        let problem = Problem {
            type_: field("type"),
            title: field("title"),
            detail: field("detail"),
        };
        (problem != Problem::default()).then_some(problem)
    }

    /// The last segment of the problem type: `invalid_request` for
    /// `urn:sandbox-agent:error:invalid_request`.
    pub fn short_type(&self) -> Option<&str> {
        self.type_
            .as_deref()
            .map(|t| t.rsplit(':').next().unwrap_or(t))
    }
}

/// How a connection attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectFailure {
    Refused,
    Reset,
    Other,
}

impl fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConnectFailure::Refused => "connection refused",
            ConnectFailure::Reset => "connection reset",
            ConnectFailure::Other => "connect failed",
        })
    }
}

/// Everything that can go wrong between the client and an ACP server.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AcpError {
    #[error("{kind} ({url}): {detail}")]
    Connect {
        url: String,
        kind: ConnectFailure,
        detail: String,
    },
    #[error("stream ended: {detail}")]
    StreamClosed { detail: String },
    #[error("HTTP {status}{}", problem_suffix(.problem))]
    Http {
        status: u16,
        problem: Option<Problem>,
    },
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    #[error("malformed envelope: {detail}")]
    Malformed { detail: String },
    /// Written after the transport closed, as the SDK's "ACP client is closed".
    #[error("ACP client is closed{}", cause_suffix(.cause))]
    Closed { cause: Option<Box<AcpError>> },
    #[error("no answer within {ms} ms")]
    Timeout { ms: u64 },
    /// The client's own header timeout (undici's `headersTimeout`): the
    /// POST's response headers had not come within `ms`.
    #[error("no response headers within {ms} ms (the client's headers timeout)")]
    HeadersTimeout { ms: u64 },
    /// sandbox-agent reported (`_adapter/agent_exited`) that the agent process died.
    #[error("agent process exited{}", .code.map(|c| format!(" (code {c})")).unwrap_or_default())]
    AgentExited { code: Option<i64> },
}

fn problem_suffix(problem: &Option<Problem>) -> String {
    match problem {
        None => String::new(),
        Some(p) => {
            let mut s = String::new();
            if let Some(t) = p.short_type() {
                s.push_str(&format!(" {t}"));
            }
            if let Some(d) = p.detail.as_deref().or(p.title.as_deref()) {
                s.push_str(&format!(": {d}"));
            }
            s
        }
    }
}

fn cause_suffix(cause: &Option<Box<AcpError>>) -> String {
    match cause {
        Some(c) => format!(" (after {c})"),
        None => String::new(),
    }
}

impl AcpError {
    /// Classifies a reqwest failure: refused/reset while connecting, a
    /// stream that ended once the request was under way, or no answer
    /// within `limit`, the time limit of the client that sent it (a
    /// timeout names the real wait).
    pub(crate) fn from_reqwest(url: &str, e: &reqwest::Error, limit: Duration) -> AcpError {
        let detail = error_chain(e);
        if e.is_timeout() {
            return AcpError::Timeout {
                ms: limit.as_millis() as u64,
            };
        }
        if e.is_connect() {
            let kind = io_kind(e)
                .map(|k| match k {
                    std::io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
                    std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe => ConnectFailure::Reset,
                    _ => ConnectFailure::Other,
                })
                .unwrap_or(ConnectFailure::Other);
            return AcpError::Connect {
                url: crate::secret::display_url(url),
                kind,
                detail,
            };
        }
        AcpError::StreamClosed { detail }
    }
}

impl AcpError {
    /// What a wait saw when this ended an attempt: a status or a transport error kind.
    pub(crate) fn seen(&self) -> Seen {
        match self {
            AcpError::Http { status, problem } => Seen::Status {
                status: *status,
                problem_type: problem
                    .as_ref()
                    .and_then(Problem::short_type)
                    .map(str::to_string),
                detail: problem
                    .as_ref()
                    .and_then(|p| p.detail.clone().or_else(|| p.title.clone())),
            },
            AcpError::Connect { kind, detail, .. } => Seen::Error {
                kind: match kind {
                    ConnectFailure::Refused => ErrorKind::Refused,
                    ConnectFailure::Reset => ErrorKind::Reset,
                    ConnectFailure::Other => kind_from_text(detail).unwrap_or(ErrorKind::Other),
                },
                detail: detail.clone(),
            },
            AcpError::StreamClosed { detail } => Seen::Error {
                kind: kind_from_text(detail).unwrap_or(ErrorKind::Closed),
                detail: detail.clone(),
            },
            AcpError::Timeout { .. } | AcpError::HeadersTimeout { .. } => Seen::Error {
                kind: ErrorKind::Timeout,
                detail: self.to_string(),
            },
            AcpError::Malformed { detail } if detail.contains(" over ") => Seen::Error {
                kind: ErrorKind::TooLarge,
                detail: detail.clone(),
            },
            other => Seen::Error {
                kind: ErrorKind::Other,
                detail: other.to_string(),
            },
        }
    }
}

/// The kind of a transport failure read from its cause chain, when the
/// chain names one (hyper and rustls say it in words, not in types).
fn kind_from_text(detail: &str) -> Option<ErrorKind> {
    let d = detail.to_ascii_lowercase();
    if d.contains("connection reset") || d.contains("broken pipe") {
        Some(ErrorKind::Reset)
    } else if d.contains("connection refused") {
        Some(ErrorKind::Refused)
    } else if d.contains("dns error") || d.contains("failed to lookup address") {
        Some(ErrorKind::Dns)
    } else if d.contains("certificate") || d.contains("tls") || d.contains("handshake") {
        Some(ErrorKind::Tls)
    } else if d.contains("closed before message completed") || d.contains("connection closed") {
        Some(ErrorKind::Closed)
    } else {
        None
    }
}

fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_the_problem_type_and_detail() {
        let e = AcpError::Http {
            status: 400,
            problem: Problem::parse(br#"{"type":"urn:sandbox-agent:error:invalid_request","title":"Invalid Request","status":400,"detail":"missing agent"}"#),
        };
        assert_eq!(e.to_string(), "HTTP 400 invalid_request: missing agent");
    }

    #[test]
    fn a_body_that_is_not_a_problem_gives_none() {
        assert_eq!(Problem::parse(b"<html>"), None);
        assert_eq!(Problem::parse(b"[1,2]"), None);
        assert_eq!(Problem::parse(b"{}"), None);
    }

    #[test]
    fn closed_names_its_cause() {
        let e = AcpError::Closed {
            cause: Some(Box::new(AcpError::Http {
                status: 400,
                problem: None,
            })),
        };
        assert_eq!(e.to_string(), "ACP client is closed (after HTTP 400)");
    }
}
