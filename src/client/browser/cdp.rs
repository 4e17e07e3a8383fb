//! One DevTools protocol connection (a WebSocket to the browser): commands
//! with ids, their answers routed back, and every event handed to the
//! page's [`Wire`] as it arrives, in order.

use super::wire::Wire;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// Why a DevTools command did not give its result.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CdpError {
    #[error("cannot reach the browser's DevTools at {url}: {message}")]
    Connect { url: String, message: String },
    /// The DevTools connection is gone: the browser exited or closed it.
    #[error("the browser's DevTools connection closed (chromium exited or dropped it)")]
    Closed,
    #[error("{method}: no answer from the browser within {waited_s} s")]
    Timeout { method: String, waited_s: u64 },
    #[error("{method}: {message}")]
    Command { method: String, message: String },
}

/// The browser's answer to one command: its result, or the message of
/// the error it returned (the browser's words, not ours).
enum Answer {
    Result(Value),
    Error(String),
}

/// A connection to the browser; cheap to clone.
#[derive(Clone)]
pub(super) struct Connection {
    out: mpsc::UnboundedSender<Message>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Answer>>>>,
    next: Arc<AtomicU64>,
    /// Set once the browser's side of the socket ended: every command
    /// from then on fails at once instead of waiting for an answer that
    /// cannot come.
    gone: Arc<AtomicBool>,
}

impl Connection {
    pub(super) async fn connect(url: &str, mut wire: Wire) -> Result<Connection, CdpError> {
        let (socket, _) =
            tokio_tungstenite::connect_async(url)
                .await
                .map_err(|e| CdpError::Connect {
                    url: url.to_string(),
                    message: e.to_string(),
                })?;
        let (mut sink, mut stream) = socket.split();
        let (out, mut outgoing) = mpsc::unbounded_channel::<Message>();
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Answer>>>> = Arc::default();
        let next = Arc::new(AtomicU64::new(1));
        wire.can_ask(out.clone(), next.clone());
        tokio::spawn(async move {
            while let Some(message) = outgoing.recv().await {
                let close = matches!(message, Message::Close(_));
                if sink.send(message).await.is_err() || close {
                    break;
                }
            }
        });
        let answers = pending.clone();
        let gone = Arc::new(AtomicBool::new(false));
        let ended = gone.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else {
                    continue;
                };
                match value.get("id").and_then(Value::as_u64) {
                    Some(id) if wire.answer(id, value.get("result")) => {}
                    Some(id) => {
                        let waiter = answers
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&id);
                        if let Some(waiter) = waiter {
                            let answer = match value.get("error") {
                                Some(error) => Answer::Error(
                                    error["message"].as_str().unwrap_or("an error").to_string(),
                                ),
                                None => Answer::Result(
                                    value.get("result").cloned().unwrap_or(Value::Null),
                                ),
                            };
                            let _ = waiter.send(answer);
                        }
                    }
                    None => wire.event(
                        value["method"].as_str().unwrap_or_default(),
                        &value["params"],
                        value["sessionId"].as_str(),
                    ),
                }
            }
            // Every command still waiting hears that the connection is
            // gone, and every later one (it reads `gone` after queueing).
            ended.store(true, Ordering::SeqCst);
            answers.lock().unwrap_or_else(|p| p.into_inner()).clear();
        });
        Ok(Connection {
            out,
            pending,
            next,
            gone,
        })
    }

    /// Sends `method` (to the page `session`, or the browser) and waits for
    /// its answer, at most [`super::COMMAND_TIMEOUT`].
    pub(super) async fn send(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, CdpError> {
        match tokio::time::timeout(
            super::COMMAND_TIMEOUT,
            self.send_unbounded(method, params, session),
        )
        .await
        {
            Ok(answer) => answer,
            Err(_) => Err(CdpError::Timeout {
                method: method.to_string(),
                waited_s: super::COMMAND_TIMEOUT.as_secs(),
            }),
        }
    }

    /// [`Connection::send`] without a bound of its own (an action the
    /// phase's deadline bounds).
    pub(super) async fn send_unbounded(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, CdpError> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        // After queueing: a connection that ended before then has cleared
        // the queue already, and would never answer this one.
        if self.gone.load(Ordering::SeqCst) {
            self.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            return Err(CdpError::Closed);
        }
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        if self
            .out
            .send(Message::Text(message.to_string().into()))
            .is_err()
        {
            return Err(CdpError::Closed);
        }
        match rx.await {
            Ok(Answer::Result(result)) => Ok(result),
            Ok(Answer::Error(message)) => Err(CdpError::Command {
                method: method.to_string(),
                message,
            }),
            Err(_) => Err(CdpError::Closed),
        }
    }
}
