//! A process's interactive terminal over WebSocket
//! (`GET /v1/processes/{id}/terminal/ws`, sandbox-agent 0.4.2): PTY output
//! arrives as binary frames, control frames (`ready`, `exit`, `error`) as JSON
//! text, and input goes out as `{"type":"input","data":…}`.
//!
//! The socket goes through the same base URL (and so the same gateway) as
//! every other call, with the token in the `Authorization` header: 0.4.2's
//! auth layer accepts it there as well as in the `access_token` query the
//! browser SDK uses, and a header keeps the token out of gateway access logs.
//!
//! A reader task owns the receiving half and records everything the socket
//! does, in the cell's trace too (the upgrade as an `http` exchange, each
//! frame as a `ws` event, the close as `ws_close`); how it ended is kept as a close code, the server's or, when the
//! connection just dropped or sent something unreadable, the code a browser
//! would report (1006 abnormal, 1007 bad UTF-8, 1009 too big, 1002 protocol).
//!
//! Over 400 lines on purpose: the reader task (`read_loop`) and the
//! `Terminal` handle share one state (the output kept, ready, how it closed)
//! that every wait of a step (`expect`, `wait_ready`, `quiet_for`) reads.

use super::rest::auth_headers;
mod frames;

use super::Client;
use crate::trace::event::{self, Dir, Event};
use crate::trace::{Exchange, Purpose, Trace};
use frames::{
    abnormal, close_for, control_frame, trace_frame, upgrade_error, ws_frame, Control, FrameError,
};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The largest message (and frame) the harness accepts from a terminal.
pub(super) const MAX_TERMINAL_MESSAGE: usize = 1 << 20;
/// Output kept per terminal; older bytes are dropped (offsets stay valid).
const MAX_KEPT_OUTPUT: usize = 4 << 20;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How a terminal socket ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseInfo {
    pub code: u16,
    pub reason: String,
    /// Whether the server sent a close frame (false: the connection dropped
    /// or the harness refused what arrived).
    pub clean: bool,
}

impl std::fmt::Display for CloseInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ws close {}", self.code)?;
        if !self.reason.is_empty() {
            write!(f, " ({})", self.reason)?;
        }
        Ok(())
    }
}

/// Failures of the terminal layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TerminalError {
    /// The upgrade was answered with an HTTP status instead of 101.
    #[error("ws upgrade refused: HTTP {status}{}", detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Refused {
        status: u16,
        problem_type: Option<String>,
        detail: Option<String>,
    },
    #[error("ws connect failed: {0}")]
    Connect(String),
    #[error("{0}")]
    Closed(CloseInfo),
    /// The process behind the terminal exited.
    #[error("terminal process exited{}", .0.map(|c| format!(" with code {c}")).unwrap_or_default())]
    Exited(Option<i64>),
    /// A frame the terminal protocol does not allow, or an `error` frame.
    #[error("terminal protocol: {0}")]
    Protocol(String),
}

#[derive(Debug, Default)]
struct State {
    output: Vec<u8>,
    /// Bytes dropped from the front of `output`.
    dropped: usize,
    ready: bool,
    exit: Option<Option<i64>>,
    closed: Option<CloseInfo>,
    protocol_error: Option<FrameError>,
    /// When output last arrived or input last went out: the socket's last
    /// activity, from which quiet is counted.
    last_activity: Option<std::time::Instant>,
    /// The number of the last ping the server answered (see [`Terminal::ping`]).
    pong: Option<u64>,
}

impl State {
    fn end(&self) -> usize {
        self.dropped + self.output.len()
    }

    fn since(&self, offset: usize) -> &[u8] {
        let start = offset.saturating_sub(self.dropped).min(self.output.len());
        &self.output[start..]
    }
}

/// An attached terminal.
pub struct Terminal {
    process_id: String,
    sink: tokio::sync::Mutex<SplitSink<Socket, Message>>,
    state: Arc<Mutex<State>>,
    changed: watch::Receiver<u64>,
    reader: tokio::task::JoinHandle<()>,
    trace: Trace,
    /// Pings sent, numbering each one's payload.
    pings: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("process_id", &self.process_id)
            .finish_non_exhaustive()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Client {
    /// `ws(s)://…/v1/processes/{id}/terminal/ws` for this client's base URL.
    pub(crate) fn terminal_url(&self, process_id: &str) -> Result<String, TerminalError> {
        let base = &self.options.base_url;
        let ws = if let Some(rest) = base.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if let Some(rest) = base.strip_prefix("http://") {
            format!("ws://{rest}")
        } else {
            return Err(TerminalError::Connect(
                "the base URL is neither http:// nor https://".into(),
            ));
        };
        let id: String = url::form_urlencoded::byte_serialize(process_id.as_bytes()).collect();
        Ok(format!("{ws}/v1/processes/{id}/terminal/ws"))
    }

    /// Opens the process's terminal socket with this client's token and headers.
    pub async fn attach_terminal(&self, process_id: &str) -> Result<Terminal, TerminalError> {
        let url = self.terminal_url(process_id)?;
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| TerminalError::Connect(e.to_string()))?;
        for (name, value) in &auth_headers(&self.headers, self.options.token.as_ref()) {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        Terminal::connect(process_id, request, &url, self.options.trace.clone()).await
    }
}

impl Terminal {
    async fn connect(
        process_id: &str,
        request: tungstenite::handshake::client::Request,
        url: &str,
        trace: Trace,
    ) -> Result<Terminal, TerminalError> {
        let _ = crate::http::client_builder(); // installs the TLS provider wss:// uses
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_TERMINAL_MESSAGE))
            .max_frame_size(Some(MAX_TERMINAL_MESSAGE));
        let started = std::time::Instant::now();
        let connected =
            tokio_tungstenite::connect_async_with_config(request, Some(config), true).await;
        let mut upgrade = Exchange::new("GET", url, Purpose::Terminal);
        upgrade.elapsed = started.elapsed();
        let socket = match connected {
            Ok((socket, response)) => {
                upgrade.status = Some(response.status().as_u16());
                trace.http(upgrade);
                socket
            }
            Err(error) => {
                let error = upgrade_error(error);
                upgrade.status = match &error {
                    TerminalError::Refused { status, .. } => Some(*status),
                    _ => None,
                };
                upgrade.failure = Some(error.seen());
                trace.http(upgrade);
                return Err(error);
            }
        };
        trace.emit(Event::WsOpen(event::WsOpen {
            process: process_id.into(),
        }));
        let (sink, stream) = socket.split();
        let state = Arc::new(Mutex::new(State::default()));
        let (notify, changed) = watch::channel(0u64);
        let reader = tokio::spawn(read_loop(
            stream,
            Arc::clone(&state),
            notify,
            (trace.clone(), process_id.to_string()),
        ));
        Ok(Terminal {
            process_id: process_id.to_string(),
            sink: tokio::sync::Mutex::new(sink),
            state,
            changed,
            reader,
            trace,
            pings: std::sync::atomic::AtomicU64::new(0),
        })
    }

    pub(crate) fn process_id(&self) -> &str {
        &self.process_id
    }

    /// The output offset now: what `expect` after a `send` searches from.
    pub(crate) fn mark(&self) -> usize {
        self.lock().end()
    }

    /// Output received since `offset`, lossily as text.
    pub(crate) fn output_since(&self, offset: usize) -> String {
        String::from_utf8_lossy(self.lock().since(offset)).into_owned()
    }

    /// How the socket ended, if it did.
    pub(crate) fn closed(&self) -> Option<CloseInfo> {
        self.lock().closed.clone()
    }

    /// Types `line` and Enter. Returns the output offset before the input.
    pub async fn send_line(&self, line: &str) -> Result<usize, TerminalError> {
        if let Some(closed) = self.closed() {
            return Err(TerminalError::Closed(closed));
        }
        let mark = self.mark();
        let frame = json!({"type": "input", "data": format!("{line}\n")}).to_string();
        let bytes = frame.len();
        let sent = self.sink.lock().await.send(Message::text(frame)).await;
        match sent {
            Ok(()) => {
                self.lock().last_activity = Some(std::time::Instant::now());
                self.trace
                    .emit(ws_frame(&self.process_id, Dir::Out, "input", bytes));
                Ok(mark)
            }
            // The reader usually knows why the write failed (the close code).
            Err(e) => Err(self
                .closed()
                .map(TerminalError::Closed)
                .unwrap_or_else(|| TerminalError::Closed(abnormal(&e.to_string())))),
        }
    }

    /// Waits (for as long as the caller lets it) until `text` appears in the
    /// output after `offset`; fails as soon as the socket closes, the process
    /// exits or a bad frame arrives. Returns the bytes seen after `offset`.
    pub async fn expect(&self, text: &str, offset: usize) -> Result<usize, TerminalError> {
        let mut changed = self.changed.clone();
        loop {
            {
                let state = self.lock();
                let seen = state.since(offset);
                if contains(seen, text.as_bytes()) {
                    return Ok(seen.len());
                }
                if let Some(error) = &state.protocol_error {
                    return Err(TerminalError::Protocol(error.to_string()));
                }
                if let Some(code) = state.exit {
                    return Err(TerminalError::Exited(code));
                }
                if let Some(closed) = &state.closed {
                    return Err(TerminalError::Closed(closed.clone()));
                }
            }
            if changed.changed().await.is_err() {
                // The reader ended after recording why; loop once more to report it.
                let state = self.lock();
                if state.closed.is_none() && state.protocol_error.is_none() {
                    return Err(TerminalError::Closed(abnormal("reader stopped")));
                }
            }
        }
    }

    /// Waits until the `ready` frame or the socket's end, whichever first.
    pub async fn wait_ready(&self) -> Result<(), TerminalError> {
        let mut changed = self.changed.clone();
        loop {
            {
                let state = self.lock();
                if state.ready {
                    return Ok(());
                }
                if let Some(error) = &state.protocol_error {
                    return Err(TerminalError::Protocol(error.to_string()));
                }
                if let Some(closed) = &state.closed {
                    return Err(TerminalError::Closed(closed.clone()));
                }
            }
            if changed.changed().await.is_err() && self.closed().is_none() {
                return Err(TerminalError::Closed(abnormal("reader stopped")));
            }
        }
    }

    /// Waits until the socket has been quiet for `gap` — no output, and no
    /// input whose echo could still be under way — counted from its last
    /// activity (a socket quiet since before the call waits no more), or
    /// until `bound`, or its end.
    pub(crate) async fn quiet_for(&self, gap: std::time::Duration, bound: std::time::Duration) {
        let by = std::time::Instant::now() + bound;
        loop {
            let (last, closed) = {
                let state = self.lock();
                (state.last_activity, state.closed.is_some())
            };
            let now = std::time::Instant::now();
            let quiet = last.map_or(gap, |at| now.saturating_duration_since(at));
            if closed || quiet >= gap || now >= by {
                return;
            }
            tokio::time::sleep((gap - quiet).min(by - now)).await;
        }
    }

    /// Sends a WebSocket ping numbered by its payload and returns the
    /// number, `None` when the socket would not take it. Its pong comes back
    /// after every frame the server wrote before it read the ping (one
    /// stream, in order): once [`Terminal::answered`] says so, whatever the
    /// server sent on attach has arrived. An answer, not a guess at how long
    /// to wait.
    pub(crate) async fn ping(&self) -> Option<u64> {
        let n = self
            .pings
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let payload = n.to_be_bytes().to_vec();
        let sent = self
            .sink
            .lock()
            .await
            .send(Message::Ping(payload.into()))
            .await;
        sent.ok()?;
        self.trace
            .emit(ws_frame(&self.process_id, Dir::Out, "ping", 8));
        Some(n)
    }

    /// Whether the server has answered ping `n` (or a later one).
    pub(crate) fn answered(&self, n: u64) -> bool {
        self.lock().pong.is_some_and(|last| last >= n)
    }

    /// A receiver of the socket's changes (a frame arrived, it ended), its
    /// current state already seen: its `changed()` waits for the next one.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        let mut changes = self.changed.clone();
        changes.borrow_and_update();
        changes
    }

    /// Sends the protocol's `close` frame and a WebSocket close, best effort.
    pub(crate) async fn close(&self) {
        if self.closed().is_some() {
            return;
        }
        let mut sink = self.sink.lock().await;
        let _ = sink
            .send(Message::text(json!({"type": "close"}).to_string()))
            .await;
        let _ = sink.close().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn read_loop(
    mut stream: SplitStream<Socket>,
    state: Arc<Mutex<State>>,
    notify: watch::Sender<u64>,
    (trace, process): (Trace, String),
) {
    loop {
        let next = stream.next().await;
        trace_frame(&trace, &process, next.as_ref());
        let stop = {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            match next {
                Some(Ok(Message::Binary(bytes))) => {
                    s.last_activity = Some(std::time::Instant::now());
                    s.output.extend_from_slice(&bytes);
                    if s.output.len() > MAX_KEPT_OUTPUT {
                        let drop = s.output.len() - MAX_KEPT_OUTPUT / 2;
                        s.output.drain(..drop);
                        s.dropped += drop;
                    }
                    false
                }
                Some(Ok(Message::Text(text))) => {
                    match control_frame(text.as_str()) {
                        Ok(Control::Ready) => s.ready = true,
                        Ok(Control::Exit(code)) => s.exit = Some(code),
                        Err(error) => {
                            s.protocol_error.get_or_insert(error);
                        }
                    }
                    false
                }
                Some(Ok(Message::Pong(payload))) => {
                    if let Ok(n) = <[u8; 8]>::try_from(payload.as_ref()) {
                        s.pong = s.pong.max(Some(u64::from_be_bytes(n)));
                    }
                    false
                }
                Some(Ok(Message::Close(frame))) => {
                    s.closed = Some(match frame {
                        Some(f) => CloseInfo {
                            code: f.code.into(),
                            reason: f.reason.to_string(),
                            clean: true,
                        },
                        None => CloseInfo {
                            code: 1005,
                            reason: "close frame without a code".into(),
                            clean: true,
                        },
                    });
                    true
                }
                Some(Ok(_)) => false,
                Some(Err(e)) => {
                    s.closed = Some(close_for(&e));
                    true
                }
                None => {
                    s.closed.get_or_insert_with(|| abnormal("connection ended"));
                    true
                }
            }
        };
        notify.send_modify(|n| *n += 1);
        if stop {
            return;
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_stay_valid_after_old_output_is_dropped() {
        let mut s = State {
            output: b"abcdef".to_vec(),
            ..State::default()
        };
        s.output.drain(..2);
        s.dropped = 2;
        assert_eq!(s.since(4), b"ef");
        assert_eq!(s.since(0), b"cdef");
        assert_eq!(s.end(), 6);
    }
}
