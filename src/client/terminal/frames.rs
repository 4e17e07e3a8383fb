//! What arrives on a terminal socket: the text frames 0.4.2's protocol
//! allows (`ready`, `exit`, `error`), the close code a browser would report
//! for a socket that failed, a refused upgrade's status and problem; and
//! all of it in the cell's trace — each frame that arrived as a `ws` event,
//! the end as `ws_close`, a failed upgrade as the channel failure it is.
//! With the `ws` events for input sent, they let the floor count a
//! terminal's answers: `ready` after the upgrade, the echo after a line.

use super::{CloseInfo, TerminalError};
use crate::trace::event::{self, Dir, Event};
use crate::trace::{ErrorKind, Seen, Trace};
use serde_json::Value;
use tokio_tungstenite::tungstenite::{self, Message};

#[derive(Debug)]
pub(super) enum Control {
    Ready,
    Exit(Option<i64>),
}

/// A text frame the terminal protocol does not allow, or an `error` frame.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum FrameError {
    /// The frame's first 120 characters.
    #[error("invalid control frame (not JSON): {0:?}")]
    NotJson(String),
    #[error("server error frame: {0}")]
    Server(String),
    #[error("invalid control frame: {0:?}")]
    Unknown(String),
}

/// A text frame as 0.4.2's terminal protocol defines it; anything else is an error.
pub(super) fn control_frame(text: &str) -> Result<Control, FrameError> {
    let shown: String = text.chars().take(120).collect();
    let value: Value =
        serde_json::from_str(text).map_err(|_| FrameError::NotJson(shown.clone()))?;
    match value.get("type").and_then(Value::as_str) {
        Some("ready") => Ok(Control::Ready),
        Some("exit") => Ok(Control::Exit(value.get("exitCode").and_then(Value::as_i64))),
        Some("error") => Err(FrameError::Server(
            value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )),
        _ => Err(FrameError::Unknown(shown)),
    }
}

/// The close code a browser would report for a socket that failed this way.
pub(super) fn close_for(error: &tungstenite::Error) -> CloseInfo {
    use tungstenite::error::ProtocolError;
    let code = match error {
        tungstenite::Error::Capacity(_) => 1009,
        tungstenite::Error::Utf8(_) => 1007,
        tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => 1006,
        tungstenite::Error::Protocol(_) => 1002,
        _ => 1006,
    };
    CloseInfo {
        code,
        reason: error.to_string(),
        clean: false,
    }
}

pub(super) fn abnormal(reason: &str) -> CloseInfo {
    CloseInfo {
        code: 1006,
        reason: reason.to_string(),
        clean: false,
    }
}

pub(super) fn upgrade_error(error: tungstenite::Error) -> TerminalError {
    match error {
        tungstenite::Error::Http(response) => {
            let problem = response
                .body()
                .as_deref()
                .and_then(crate::acp::Problem::parse);
            TerminalError::Refused {
                status: response.status().as_u16(),
                problem_type: problem
                    .as_ref()
                    .and_then(|p| p.short_type())
                    .map(str::to_string),
                detail: problem.and_then(|p| p.detail),
            }
        }
        other => TerminalError::Connect(other.to_string()),
    }
}

/// A `ws` event: a frame of `bytes` on the terminal of `process`.
pub(super) fn ws_frame(process: &str, dir: Dir, frame: &str, bytes: usize) -> Event {
    Event::Ws(event::WsFrame {
        process: process.into(),
        dir,
        frame: frame.into(),
        bytes: bytes as u64,
    })
}

fn ws_close(process: &str, code: u16, clean: bool) -> Event {
    Event::WsClose(event::WsClose {
        process: process.into(),
        code,
        clean,
    })
}

/// What arrived on a terminal socket, as the trace records it: a `ws`
/// event per data or control frame, `ws_close` for its end.
pub(super) fn trace_frame(
    trace: &Trace,
    process: &str,
    next: Option<&Result<Message, tungstenite::Error>>,
) {
    let frame = |kind: &str, bytes: usize| ws_frame(process, Dir::In, kind, bytes);
    match next {
        Some(Ok(Message::Binary(bytes))) => trace.emit(frame("data", bytes.len())),
        Some(Ok(Message::Text(text))) => {
            let kind = match control_frame(text.as_str()) {
                Ok(Control::Ready) => "ready",
                Ok(Control::Exit(_)) => "exit",
                Err(_) => "error",
            };
            trace.emit(frame(kind, text.len()));
        }
        Some(Ok(Message::Pong(payload))) => trace.emit(frame("pong", payload.len())),
        Some(Ok(Message::Close(close))) => {
            let code = close.as_ref().map_or(1005, |f| u16::from(f.code));
            trace.emit(ws_close(process, code, true));
        }
        Some(Err(error)) => {
            let close = close_for(error);
            trace.emit(ws_close(process, close.code, false));
        }
        Some(Ok(_)) | None => {}
    }
}

impl TerminalError {
    /// The failure as the upgrade's channel counts it.
    pub(crate) fn seen(&self) -> Seen {
        match self {
            TerminalError::Refused {
                status,
                problem_type,
                detail,
            } => Seen::Status {
                status: *status,
                problem_type: problem_type.clone(),
                detail: detail.clone(),
            },
            TerminalError::Connect(detail) => {
                let lower = detail.to_ascii_lowercase();
                let kind = if lower.contains("refused") {
                    ErrorKind::Refused
                } else if lower.contains("reset") {
                    ErrorKind::Reset
                } else if lower.contains("tls") || lower.contains("certificate") {
                    ErrorKind::Tls
                } else if lower.contains("dns") || lower.contains("lookup") {
                    ErrorKind::Dns
                } else {
                    ErrorKind::Other
                };
                Seen::Error {
                    kind,
                    detail: detail.clone(),
                }
            }
            other => Seen::Error {
                kind: ErrorKind::Closed,
                detail: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_frames_are_ready_exit_or_an_error() {
        assert!(matches!(
            control_frame(r#"{"type":"ready","processId":"p"}"#),
            Ok(Control::Ready)
        ));
        assert!(matches!(
            control_frame(r#"{"type":"exit","exitCode":3}"#),
            Ok(Control::Exit(Some(3)))
        ));
        let garbage = control_frame("\u{1}garbage").unwrap_err();
        assert!(matches!(garbage, FrameError::NotJson(_)), "{garbage}");
        assert!(garbage.to_string().contains("not JSON"), "{garbage}");
        let boom = control_frame(r#"{"type":"error","message":"boom"}"#).unwrap_err();
        assert_eq!(boom, FrameError::Server("boom".into()));
        assert!(boom.to_string().contains("boom"), "{boom}");
    }
}
