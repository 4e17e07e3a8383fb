//! The SSE half of the transport: one loop per transport that reads
//! `GET /v1/acp/{id}` (`Last-Event-ID` on reconnect, 150 ms between attempts)
//! and hands each `message` event's envelope to [`Inner::push_inbound`]. A
//! failed GET ends the loop until the next write starts it again, as in the
//! SDK; corrupt or oversized input closes the transport with that error.

use super::envelope::{read_bounded, truncate};
use super::{Inner, State, MAX_ENVELOPE_BYTES, SSE_RECONNECT_DELAY};
use crate::acp::error::{AcpError, Problem};
use crate::trace::{strip_access_token, Exchange, Flight, Purpose};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::{HeaderName, HeaderValue, ACCEPT};
use serde_json::Value;
use std::sync::Arc;

/// Longest SSE line accepted (an envelope is one `data:` line).
const MAX_STREAM_LINE_BYTES: usize = MAX_ENVELOPE_BYTES;

impl Inner {
    pub(super) fn ensure_stream_loop(self: &Arc<Self>, state: &mut State) {
        if state.closed.is_some() || !state.posted_once {
            return;
        }
        if state.sse_task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let inner = Arc::clone(self);
        state.sse_task = Some(tokio::spawn(async move { inner.stream_loop().await }));
    }

    async fn stream_loop(self: Arc<Self>) {
        loop {
            let last_event_id = {
                let state = self.lock();
                if state.closed.is_some() {
                    return;
                }
                state.last_event_id.clone()
            };
            let error = self.read_stream_once(last_event_id).await;
            {
                let mut state = self.lock();
                if state.closed.is_some() {
                    return;
                }
                let end = error.as_ref().map_or("ended".into(), ToString::to_string);
                state.record.stream_ended(end);
            }
            if let Some(error) = error {
                // Hostile or corrupt input closes the transport with that error; a
                // refused or failed GET only ends the loop, as in the SDK.
                if matches!(error, AcpError::Malformed { .. }) {
                    self.fail(error);
                }
                // A failed GET or a broken stream ends the loop until the next write.
                self.stream_progress.notify_waiters();
                return;
            }
            // The stream ended cleanly: reconnect after a pause, as the SDK does.
            tokio::time::sleep(SSE_RECONNECT_DELAY).await;
        }
    }

    /// One GET of the stream, traced; `None` when it ended cleanly.
    pub(super) async fn read_stream_once(
        self: &Arc<Self>,
        last_event_id: Option<String>,
    ) -> Option<AcpError> {
        let url = self.url(None);
        let mut counts = (0u64, 0u64);
        // Open (an answer may come on it) until it ends or is dropped.
        let flight = self.trace.in_flight(
            Flight::Stream,
            format!("GET {} (event stream)", strip_access_token(&url)),
        );
        let error = self.read_stream(&url, last_event_id, &mut counts).await;
        drop(flight);
        if counts != (0, 0)
            || !matches!(
                error,
                Some(AcpError::Http { .. } | AcpError::Connect { .. })
            )
        {
            self.trace.stream_end(
                &url,
                counts.0,
                counts.1,
                error.as_ref().map(AcpError::seen).as_ref(),
            );
        }
        error
    }

    /// `counts` gets the events and data bytes read.
    async fn read_stream(
        self: &Arc<Self>,
        url: &str,
        last_event_id: Option<String>,
        counts: &mut (u64, u64),
    ) -> Option<AcpError> {
        let started = std::time::Instant::now();
        let mut exchange = Exchange::new("GET", url, Purpose::Stream);
        exchange.last_event_id = last_event_id.clone();
        let mut request = self
            .http
            .get(url)
            .headers(self.headers())
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = &last_event_id {
            if let Ok(value) = HeaderValue::from_str(id) {
                request = request.header(HeaderName::from_static("last-event-id"), value);
            }
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                let error = AcpError::from_reqwest(url, &e, crate::http::CONNECT_TIMEOUT);
                exchange.elapsed = started.elapsed();
                exchange.failure = Some(error.seen());
                self.trace.http(exchange);
                self.lock()
                    .record
                    .get_failed(last_event_id.as_deref(), &error);
                return Some(error);
            }
        };
        exchange.status = Some(response.status().as_u16());
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let body = read_bounded(response)
                .await
                .ok()
                .flatten()
                .unwrap_or_default();
            let error = AcpError::Http {
                status,
                problem: Problem::parse(&body),
            };
            exchange.elapsed = started.elapsed();
            exchange.received = body.len() as u64;
            exchange.failure = Some(error.seen());
            self.trace.http(exchange);
            self.lock()
                .record
                .get_failed(last_event_id.as_deref(), &error);
            return Some(error);
        }
        exchange.elapsed = started.elapsed();
        self.trace.http(exchange);
        self.lock().record.stream_opened(last_event_id.as_deref());
        let mut events = std::pin::pin!(decode_stream(response.bytes_stream()));
        while let Some(item) = events.next().await {
            let event = match item {
                Ok(event) => event,
                Err(DecodeError::Transport(e)) => {
                    return Some(AcpError::from_reqwest(
                        url,
                        &e,
                        crate::http::CONNECT_TIMEOUT,
                    ))
                }
                Err(DecodeError::Malformed(e)) => return Some(e),
            };
            if !event.id.is_empty() {
                self.lock().last_event_id = Some(event.id.clone());
            }
            counts.0 += 1;
            counts.1 += event.data_len as u64;
            self.trace.sse(
                url,
                &event.id,
                &event.name,
                event.data_len,
                event.envelope.as_ref(),
            );
            if let Some(envelope) = event.envelope {
                self.lock().record.stats.events_read += 1;
                self.push_inbound(envelope, true);
            }
        }
        None
    }
}

/// One event of the stream: its id (empty when it has none) and, for a
/// `message` event with data, the envelope it carries.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StreamEvent {
    pub id: String,
    /// The SSE event name (`message` unless the server named it).
    pub name: String,
    /// Bytes of `data`, for the trace.
    pub data_len: usize,
    pub envelope: Option<Value>,
}

/// Why decoding a stream stopped: the bytes under it failed (`E`), or they
/// were not SSE carrying JSON.
#[derive(Debug)]
pub(super) enum DecodeError<E> {
    Transport(E),
    Malformed(AcpError),
}

/// The SSE reader proper, apart from HTTP: bytes in, events out. Any input
/// gives events or a typed error, never a panic (see the property tests).
pub(super) fn decode_stream<E: std::fmt::Display>(
    bytes: impl futures_util::Stream<Item = Result<bytes::Bytes, E>>,
) -> impl futures_util::Stream<Item = Result<StreamEvent, DecodeError<E>>> {
    whole_lines(bytes).eventsource().map(|item| {
        let event = match item {
            Ok(event) => event,
            Err(eventsource_stream::EventStreamError::Transport(StreamFault::Http(e))) => {
                return Err(DecodeError::Transport(e))
            }
            Err(eventsource_stream::EventStreamError::Transport(StreamFault::Oversize)) => {
                return Err(DecodeError::Malformed(AcpError::Malformed {
                    detail: format!("SSE line over {MAX_STREAM_LINE_BYTES} bytes"),
                }))
            }
            Err(e) => {
                return Err(DecodeError::Malformed(AcpError::Malformed {
                    detail: format!("SSE stream: {e}"),
                }))
            }
        };
        if event.event != "message" || event.data.trim().is_empty() {
            return Ok(StreamEvent {
                data_len: event.data.len(),
                id: event.id,
                name: event.event,
                envelope: None,
            });
        }
        match serde_json::from_str::<Value>(&event.data) {
            Ok(envelope) => Ok(StreamEvent {
                data_len: event.data.len(),
                id: event.id,
                name: event.event,
                envelope: Some(envelope),
            }),
            Err(e) => Err(DecodeError::Malformed(AcpError::Malformed {
                detail: format!("SSE data is not JSON: {e}: {}", truncate(&event.data)),
            })),
        }
    })
}

/// Why the byte stream under the SSE parser ended early.
#[derive(Debug)]
enum StreamFault<E> {
    Http(E),
    Oversize,
}

impl<E: std::fmt::Display> std::fmt::Display for StreamFault<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamFault::Http(e) => write!(f, "{e}"),
            StreamFault::Oversize => write!(f, "line over {MAX_STREAM_LINE_BYTES} bytes"),
        }
    }
}

/// Hands the SSE parser whole lines only. The parser rescans its buffer on
/// every chunk, so a long line fed in small chunks costs quadratic time; here
/// a partial line waits in a buffer (linear), and one longer than
/// [`MAX_STREAM_LINE_BYTES`] ends the stream as hostile.
fn whole_lines<E>(
    bytes: impl futures_util::Stream<Item = Result<bytes::Bytes, E>>,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, StreamFault<E>>> {
    futures_util::stream::unfold(
        (Box::pin(bytes), Vec::<u8>::new(), false),
        |(mut bytes, mut partial, done)| async move {
            if done {
                return None;
            }
            loop {
                match bytes.next().await {
                    Some(Ok(chunk)) => match chunk.iter().rposition(|b| *b == b'\n') {
                        Some(pos) => {
                            if !grow_within_limit(&mut partial, pos + 1) {
                                return Some((
                                    Err(StreamFault::Oversize),
                                    (bytes, Vec::new(), true),
                                ));
                            }
                            partial.extend_from_slice(&chunk[..=pos]);
                            let lines = bytes::Bytes::from(std::mem::take(&mut partial));
                            partial.extend_from_slice(&chunk[pos + 1..]);
                            return Some((Ok(lines), (bytes, partial, false)));
                        }
                        None => {
                            if !grow_within_limit(&mut partial, chunk.len()) {
                                return Some((
                                    Err(StreamFault::Oversize),
                                    (bytes, Vec::new(), true),
                                ));
                            }
                            partial.extend_from_slice(&chunk);
                        }
                    },
                    Some(Err(e)) => {
                        return Some((Err(StreamFault::Http(e)), (bytes, Vec::new(), true)))
                    }
                    None if partial.is_empty() => return None,
                    None => {
                        let rest = bytes::Bytes::from(std::mem::take(&mut partial));
                        return Some((Ok(rest), (bytes, Vec::new(), true)));
                    }
                }
            }
        },
    )
}

/// Makes room for `more` bytes without ever holding more than one line's
/// limit: `false` (nothing grown) when the line would pass it. Doubling
/// as `Vec` does would reserve twice the limit for a hostile line.
fn grow_within_limit(partial: &mut Vec<u8>, more: usize) -> bool {
    let needed = partial.len() + more;
    if needed > MAX_STREAM_LINE_BYTES {
        return false;
    }
    if needed > partial.capacity() {
        let grown = (partial.capacity() * 2).clamp(needed, MAX_STREAM_LINE_BYTES);
        partial.reserve_exact(grown - partial.len());
    }
    true
}
