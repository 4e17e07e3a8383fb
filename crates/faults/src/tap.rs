//! What a hop carried of the event streams: the proxy reads HTTP/1.1 as
//! it passes (requests one way, responses the other) and tells a [`Tap`]
//! each event-stream GET it saw answered (its path and `Last-Event-ID`)
//! and each SSE event the server side sent on it. On the agent hop that is
//! what the server sent; on the gateway hop, what left the gateway. The
//! checker holds them against what the client read.
//!
//! The reading never changes a byte that passes, and gives up on a
//! connection it cannot follow (an upgrade to a WebSocket, a body with no
//! length, a head or an event over its bound): what follows on it is not
//! an event stream the tap could tell apart.
//!
//! Over 400 lines on purpose: it is one streaming HTTP/1.1 reader
//! (`Sniffer`) whose framing (heads, chunked bodies, SSE events) is state
//! kept between the bytes that pass; its parts are never used apart.

use std::collections::VecDeque;
use std::sync::Arc;

/// What the tap saw, with the connection's number on the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TapEvent {
    /// An event-stream GET the server answered (`status`).
    Stream {
        conn: u64,
        path: String,
        last_event_id: Option<String>,
        status: u16,
    },
    /// One SSE event on that GET's response.
    Sse {
        conn: u64,
        path: String,
        id: Option<String>,
        event: String,
        data: String,
    },
}

/// Told of everything the tap sees, while a cell runs.
pub type Tap = Arc<dyn Fn(TapEvent) + Send + Sync>;

/// Longest request or response head read.
const HEAD_LIMIT: usize = 64 * 1024;
/// Longest SSE event (its lines together) read.
const EVENT_LIMIT: usize = 4 * 1024 * 1024;

/// Both directions of one connection, as far as the tap follows them.
#[derive(Debug, Default)]
pub(crate) struct Sniffer {
    requests: Side,
    responses: Side,
    /// Requests sent, not yet answered: (method, path, `Last-Event-ID`).
    asked: VecDeque<(String, String, Option<String>)>,
    /// The connection is past following (an upgrade, no body length).
    lost: bool,
}

#[derive(Debug, Default)]
struct Side {
    head: Vec<u8>,
    body: Body,
}

#[derive(Debug, Default)]
enum Body {
    /// Reading a head.
    #[default]
    Head,
    /// Bytes of a body left to pass.
    Length(u64),
    /// A chunked body: what is left of the current chunk, and its framing.
    Chunked(Chunked),
}

#[derive(Debug, Default)]
struct Chunked {
    /// Data bytes left in the current chunk.
    left: u64,
    /// The size line (or the CRLF after data) being read.
    line: Vec<u8>,
    /// After the data of a chunk: its CRLF is next.
    after_data: bool,
    /// The last (0) chunk was read: trailers until a blank line.
    trailers: bool,
    /// Decoded bytes go to this event stream.
    sse: Option<Sse>,
}

#[derive(Debug)]
struct Sse {
    path: String,
    line: Vec<u8>,
    id: Option<String>,
    event: String,
    data: Vec<String>,
    size: usize,
}

impl Sniffer {
    /// Bytes the client sent toward the server.
    pub(crate) fn upstream(&mut self, bytes: &[u8]) {
        if !self.lost {
            self.lost = !self.read(bytes, true, &mut |_| {});
        }
    }

    /// Bytes the server sent toward the client; `tell` hears what they carried.
    pub(crate) fn downstream(&mut self, conn: u64, bytes: &[u8], tell: &mut dyn FnMut(TapEvent)) {
        if !self.lost {
            let mut with_conn = |event: TapEvent| tell(with(event, conn));
            self.lost = !self.read(bytes, false, &mut with_conn);
        }
    }

    /// Reads `bytes` of one side; false when the connection is past following.
    fn read(&mut self, mut bytes: &[u8], request: bool, tell: &mut dyn FnMut(TapEvent)) -> bool {
        while !bytes.is_empty() {
            let side = if request {
                &mut self.requests
            } else {
                &mut self.responses
            };
            match &mut side.body {
                Body::Head => {
                    let Some(rest) = take_head(&mut side.head, bytes) else {
                        return side.head.len() <= HEAD_LIMIT;
                    };
                    bytes = rest;
                    let head = std::mem::take(&mut side.head);
                    let parsed = if request {
                        self.request_head(&head)
                    } else {
                        self.response_head(&head, tell)
                    };
                    if !parsed {
                        return false;
                    }
                }
                Body::Length(left) => {
                    let n = (*left).min(bytes.len() as u64);
                    *left -= n;
                    bytes = &bytes[n as usize..];
                    if *left == 0 {
                        side.body = Body::Head;
                    }
                }
                Body::Chunked(chunked) => {
                    let (rest, ok, done) = chunked.read(bytes, tell);
                    if !ok {
                        return false;
                    }
                    bytes = rest;
                    if done {
                        side.body = Body::Head;
                    }
                }
            }
        }
        true
    }

    fn request_head(&mut self, head: &[u8]) -> bool {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        if !matches!(parsed.parse(head), Ok(httparse::Status::Complete(_))) {
            return false;
        }
        let method = parsed.method.unwrap_or_default().to_string();
        let path = parsed.path.unwrap_or_default().to_string();
        let last_event_id = header(parsed.headers, "last-event-id");
        if header(parsed.headers, "upgrade").is_some() {
            // A WebSocket: what follows the 101 is not HTTP.
            self.asked.push_back((method, path, last_event_id));
            self.requests.body = Body::Head;
            return true;
        }
        self.requests.body = match body_framing(parsed.headers) {
            Framing::Length(0) | Framing::None => Body::Head,
            Framing::Length(n) => Body::Length(n),
            Framing::Chunked => Body::Chunked(Chunked::default()),
        };
        self.asked.push_back((method, path, last_event_id));
        true
    }

    fn response_head(&mut self, head: &[u8], tell: &mut dyn FnMut(TapEvent)) -> bool {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut headers);
        if !matches!(parsed.parse(head), Ok(httparse::Status::Complete(_))) {
            return false;
        }
        let status = parsed.code.unwrap_or_default();
        if (100..200).contains(&status) {
            // 101 switches protocols (nothing to follow after it); 100 is
            // an interim answer, the real one follows.
            return status != 101;
        }
        let Some((method, path, last_event_id)) = self.asked.pop_front() else {
            return false;
        };
        let stream = header(parsed.headers, "content-type")
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        if method == "GET" && stream {
            tell(TapEvent::Stream {
                conn: 0,
                path: path.clone(),
                last_event_id,
                status,
            });
        }
        let no_body = method == "HEAD" || status == 204 || status == 304;
        let sse = (stream && (200..300).contains(&status)).then(|| Sse::new(path));
        self.responses.body = match (no_body, body_framing(parsed.headers)) {
            (true, _) | (false, Framing::Length(0)) => Body::Head,
            (false, Framing::Length(n)) if sse.is_none() => Body::Length(n),
            (false, Framing::Chunked) => Body::Chunked(Chunked {
                sse,
                ..Chunked::default()
            }),
            // A stream with a length, or a body read until the close: not followed.
            _ => return false,
        };
        true
    }
}

fn with(event: TapEvent, conn: u64) -> TapEvent {
    match event {
        TapEvent::Stream {
            path,
            last_event_id,
            status,
            ..
        } => TapEvent::Stream {
            conn,
            path,
            last_event_id,
            status,
        },
        TapEvent::Sse {
            path,
            id,
            event,
            data,
            ..
        } => TapEvent::Sse {
            conn,
            path,
            id,
            event,
            data,
        },
    }
}

/// Adds to `head` up to its blank line; the bytes after it, once whole.
fn take_head<'a>(head: &mut Vec<u8>, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let before = head.len();
    head.extend_from_slice(bytes);
    let from = before.saturating_sub(3);
    let end = head[from..].windows(4).position(|w| w == b"\r\n\r\n")? + from + 4;
    let used = end - before;
    head.truncate(end);
    Some(&bytes[used..])
}

fn header(headers: &[httparse::Header<'_>], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .map(|v| v.trim().to_string())
}

enum Framing {
    None,
    Length(u64),
    Chunked,
}

fn body_framing(headers: &[httparse::Header<'_>]) -> Framing {
    if header(headers, "transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        return Framing::Chunked;
    }
    match header(headers, "content-length").and_then(|n| n.parse().ok()) {
        Some(n) => Framing::Length(n),
        None => Framing::None,
    }
}

impl Chunked {
    /// Reads chunked framing; what is left after the body, whether it
    /// could be followed, and whether the body ended.
    fn read<'a>(
        &mut self,
        mut bytes: &'a [u8],
        tell: &mut dyn FnMut(TapEvent),
    ) -> (&'a [u8], bool, bool) {
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = self.left.min(bytes.len() as u64) as usize;
                if let Some(sse) = &mut self.sse {
                    if !sse.feed(&bytes[..n], tell) {
                        return (bytes, false, false);
                    }
                }
                self.left -= n as u64;
                bytes = &bytes[n..];
                self.after_data = self.left == 0;
                continue;
            }
            let Some(at) = bytes.iter().position(|b| *b == b'\n') else {
                self.line.extend_from_slice(bytes);
                return (&[], self.line.len() <= HEAD_LIMIT, false);
            };
            self.line.extend_from_slice(&bytes[..at]);
            bytes = &bytes[at + 1..];
            let line = std::mem::take(&mut self.line);
            let line = String::from_utf8_lossy(&line).trim().to_string();
            if self.after_data {
                self.after_data = false;
                continue;
            }
            if self.trailers {
                if line.is_empty() {
                    return (bytes, true, true);
                }
                continue;
            }
            let size = line.split(';').next().unwrap_or_default().trim();
            let Ok(size) = u64::from_str_radix(size, 16) else {
                return (bytes, false, false);
            };
            self.left = size;
            self.trailers = size == 0;
        }
        (bytes, true, false)
    }
}

impl Sse {
    fn new(path: String) -> Sse {
        Sse {
            path,
            line: Vec::new(),
            id: None,
            event: String::new(),
            data: Vec::new(),
            size: 0,
        }
    }

    /// Event-stream bytes: each whole line read, each blank line ending an event.
    fn feed(&mut self, mut bytes: &[u8], tell: &mut dyn FnMut(TapEvent)) -> bool {
        while !bytes.is_empty() {
            let (part, rest, whole) = match bytes.iter().position(|b| *b == b'\n') {
                Some(at) => (&bytes[..at], &bytes[at + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            self.size += part.len();
            if self.size > EVENT_LIMIT {
                return false;
            }
            if !whole {
                self.line.extend_from_slice(part);
                continue;
            }
            let line = if self.line.is_empty() {
                part
            } else {
                self.line.extend_from_slice(part);
                &self.line[..]
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let text = String::from_utf8_lossy(line).into_owned();
            self.line.clear();
            self.line_done(&text, tell);
        }
        true
    }

    fn line_done(&mut self, line: &str, tell: &mut dyn FnMut(TapEvent)) {
        if line.is_empty() {
            if !self.data.is_empty() || self.id.is_some() {
                tell(TapEvent::Sse {
                    conn: 0,
                    path: self.path.clone(),
                    id: self.id.take().filter(|id| !id.is_empty()),
                    event: match std::mem::take(&mut self.event) {
                        e if e.is_empty() => "message".to_string(),
                        e => e,
                    },
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            self.event.clear();
            self.id = None;
            self.size = 0;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => self.id = Some(value.to_string()),
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
