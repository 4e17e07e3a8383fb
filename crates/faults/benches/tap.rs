//! What the stream tap costs a hop (bench/checker.sh): an event stream of
//! `MB` megabytes (sandbox-agent's shape: a chunked `text/event-stream`
//! response, one `id:`/`data:` event per chunk) read through a fault proxy
//! with no tap set, then with a tap set that counts the events it is told
//! of, in alternating rounds; the throughput of each and their ratio.
//!
//! `cargo bench -p continuity-faults --bench tap -- MB ROUNDS`

use continuity_faults::{FaultProxy, TapEvent};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Answers every GET with `bytes` of SSE events, chunked, then ends.
async fn sse_server(bytes: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let start = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                if socket.write_all(start.as_bytes()).await.is_err() {
                    return;
                }
                let mut sent = 0;
                let mut id = 0u64;
                let mut out = Vec::with_capacity(64 * 1024);
                while sent < bytes {
                    id += 1;
                    let event = format!("id: {id}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"agent-1\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"chunk {id} of a long answer\"}}}}}}}}\n\n");
                    out.extend_from_slice(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
                    sent += event.len();
                    if out.len() >= 60 * 1024 {
                        if socket.write_all(&out).await.is_err() {
                            return;
                        }
                        out.clear();
                    }
                }
                out.extend_from_slice(b"0\r\n\r\n");
                let _ = socket.write_all(&out).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    addr
}

/// One GET of the stream through `proxy`: seconds until its last byte.
async fn read_all(proxy: SocketAddr) -> f64 {
    let started = Instant::now();
    let mut client = TcpStream::connect(proxy).await.unwrap();
    client
        .write_all(b"GET /v1/acp/s HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    while !matches!(client.read(&mut buf).await, Ok(0) | Err(_)) {}
    started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mb: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let server = sse_server(mb * 1024 * 1024).await;
    let proxy = FaultProxy::start(
        continuity_faults::LocalHop::Agent.into(),
        "127.0.0.1:0".parse().unwrap(),
        server,
    )
    .unwrap();
    let events = Arc::new(AtomicU64::new(0));
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        proxy.control().tap(None);
        off.push(read_all(proxy.addr()).await);
        let counted = Arc::clone(&events);
        proxy.control().tap(Some(Arc::new(move |e| {
            if matches!(e, TapEvent::Sse { .. }) {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        })));
        on.push(read_all(proxy.addr()).await);
    }
    proxy.control().tap(None);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(off), median(on));
    println!(
        "{mb} MB of SSE through the proxy, median of {rounds}: no tap {:.0} MB/s, tap {:.0} MB/s ({:+.0} % time); {} events told",
        mb as f64 / off,
        mb as f64 / on,
        100.0 * (on - off) / off,
        events.load(Ordering::Relaxed)
    );
}
