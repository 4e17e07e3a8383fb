//! One proxied connection: the client's socket, the server's, and a pipe
//! each way. A pipe is a reader, which only stamps chunks with the time
//! they arrived, and a [`Writer`] that applies the toxics. Everything runs
//! inside the connection's one task: aborting it (the proxy dropped)
//! closes both sockets.

use super::state::{ProxyAction, Shared};
use super::toxic::Stream;
use super::writer::{Chunk, End, Side, Writer};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;

const READ_BUF: usize = 16 * 1024;
/// Chunks read ahead of the writer (a latency toxic pipelines them).
const QUEUED_CHUNKS: usize = 64;

/// Serves one accepted connection to the end.
pub(super) async fn serve(client: TcpStream, conn: u64, upstream: SocketAddr, shared: Arc<Shared>) {
    let _open = shared.opened();
    let mut toxics = shared.toxics.subscribe();
    // A partition holds a new connection before it reaches the server.
    let server = loop {
        let set = toxics.borrow_and_update().clone();
        if let Some(down) = set.down() {
            shared.report(down.id, conn, ProxyAction::Closed);
            return;
        }
        if set.partition(conn).is_some() {
            if toxics.changed().await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            biased;
            changed = toxics.changed() => if changed.is_err() { return },
            connected = TcpStream::connect(upstream) => break connected,
        }
    };
    let Ok(mut server) = server else {
        // The client's connect succeeded already: a refusal can only reach it as a reset.
        shared.passed_on();
        let _ = client.set_zero_linger();
        return;
    };
    let mut client = client;
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let up = pipe(Stream::Upstream, client_read, server_write, conn, &shared);
        let down = pipe(Stream::Downstream, server_read, client_write, conn, &shared);
        tokio::try_join!(up, down).err()
    };
    match end {
        None => {}
        Some(End::Reset { toward, toxic }) => {
            let receiver = match toward {
                Stream::Downstream => &client,
                Stream::Upstream => &server,
            };
            let _ = receiver.set_zero_linger();
            shared.report(toxic, conn, ProxyAction::Reset { toward });
        }
        Some(End::Close { toxic }) => shared.report(toxic, conn, ProxyAction::Closed),
        Some(End::Broken { failed }) => {
            let other = match failed {
                Side::Client => &server,
                Side::Server => {
                    shared.passed_on();
                    &client
                }
            };
            let _ = other.set_zero_linger();
        }
    }
}

/// One direction: the reader runs ahead, the writer decides; the pipe ends
/// when the writer does.
async fn pipe(
    stream: Stream,
    from: ReadHalf<'_>,
    to: WriteHalf<'_>,
    conn: u64,
    shared: &Shared,
) -> Result<(), End> {
    let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
    // Each direction's draws from the connection's seed, apart.
    let seed = continuity_base::seed::mix(shared.conn_seed(conn), stream as u64);
    let reader = read_side(from, tx, fastrand::Rng::with_seed(seed));
    let rng = fastrand::Rng::with_seed(!seed);
    let writer = Writer::new(stream, conn, shared.toxics.subscribe(), to, shared, rng).run(rx);
    tokio::pin!(reader, writer);
    tokio::select! {
        done = &mut writer => return done,
        () = &mut reader => {}
    }
    writer.await
}

/// Reads chunks and stamps each with its time and its latency jitter,
/// drawn from `rng` (the connection's seed).
async fn read_side(mut from: ReadHalf<'_>, tx: mpsc::Sender<Chunk>, mut rng: fastrand::Rng) {
    let mut buf = vec![0u8; READ_BUF];
    loop {
        let chunk = match from.read(&mut buf).await {
            Ok(0) => Chunk::Eof,
            Ok(n) => Chunk::Data {
                bytes: Bytes::copy_from_slice(&buf[..n]),
                at: Instant::now(),
                jitter: rng.f64() * 2.0 - 1.0,
            },
            Err(_) => Chunk::Failed,
        };
        let last = !matches!(chunk, Chunk::Data { .. });
        if tx.send(chunk).await.is_err() || last {
            return;
        }
    }
}
