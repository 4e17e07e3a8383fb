//! A tiny HTTP/1.1 server on loopback for what no real server sends
//! (malformed, truncated, hostile replies), and the one request reader the
//! suite's hand-made servers share. It runs on a thread of its own with its
//! own runtime, so a blocking test and an async one (paused clock
//! included) use it alike.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    /// The request line and headers as sent, without the blank line.
    pub head: String,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request: its head, then a `Content-Length` body. One request
/// per connection (every reply closes it): bytes after the body are
/// dropped, and a client that upgrades sends nothing before its answer.
/// `None` when the peer closed first (a TCP readiness probe connects and
/// sends nothing).
pub async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_string();
    let target = first.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buf.len() < body_start + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(Request {
        method,
        target,
        headers,
        head,
        body: String::from_utf8_lossy(&buf[body_start..body_start + length]).into_owned(),
    })
}

/// What the server writes back: raw bytes, then it holds the socket open
/// for `hold` before closing it.
pub struct Reply {
    pub bytes: Vec<u8>,
    pub hold: Duration,
}

/// A whole response with a body and `connection: close`.
pub fn reply(status: &str, content_type: &str, body: &str) -> Reply {
    Reply {
        bytes: format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
        hold: Duration::ZERO,
    }
}

/// An event stream carrying `events`, held open for `hold`.
pub fn sse(events: &str, hold: Duration) -> Reply {
    Reply {
        bytes: format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}"
        )
        .into_bytes(),
        hold,
    }
}

type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// A server answering every request with `handler`'s reply; it keeps every
/// request it read. It stops with the test process.
pub struct FakeServer {
    pub port: u16,
    /// Each request with the rank of its connection among those accepted.
    requests: Arc<Mutex<Vec<(usize, Request)>>>,
}

impl FakeServer {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> FakeServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let handler: Handler = Arc::new(handler);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                let mut rank = 0;
                while let Ok((socket, _)) = listener.accept().await {
                    let (handler, seen) = (Arc::clone(&handler), Arc::clone(&seen));
                    tokio::spawn(serve(socket, rank, handler, seen));
                    rank += 1;
                }
            });
        });
        FakeServer { port, requests }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests read so far, in the order their connections came: the
    /// order the client sent them, whichever was read first.
    pub fn requests(&self) -> Vec<Request> {
        let mut requests = self.requests.lock().unwrap().clone();
        requests.sort_by_key(|(rank, _)| *rank);
        requests.into_iter().map(|(_, request)| request).collect()
    }
}

async fn serve(
    mut socket: TcpStream,
    rank: usize,
    handler: Handler,
    seen: Arc<Mutex<Vec<(usize, Request)>>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    seen.lock().unwrap().push((rank, request.clone()));
    let reply = handler(&request);
    let _ = socket.write_all(&reply.bytes).await;
    tokio::time::sleep(reply.hold).await;
    let _ = socket.shutdown().await;
}
