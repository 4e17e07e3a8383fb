//! One proxied connection: the client's socket, the server's, and a pipe
//! each way. A pipe is a reader, which only stamps chunks with the time
//! they arrived, and a [`Writer`] that applies the toxics. Everything runs
//! inside the connection's one task: aborting it (the proxy dropped)
//! closes both sockets. Both readers stamp the connection's last activity,
//! which an `idle_cut` watches: silent both ways for its limit, the
//! connection is closed.

use super::state::{ProxyAction, Shared};
use super::tap::Sniffer;
use super::toxic::Stream;
use super::writer::{Chunk, End, Side, Writer};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
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
    let activity = Activity::new();
    let sniffer = std::sync::Mutex::new(Sniffer::default());
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let up = pipe(
            Stream::Upstream,
            client_read,
            server_write,
            conn,
            &shared,
            (&activity, &sniffer),
        );
        let down = pipe(
            Stream::Downstream,
            server_read,
            client_write,
            conn,
            &shared,
            (&activity, &sniffer),
        );
        let both = async { tokio::try_join!(up, down).err() };
        tokio::select! {
            end = both => end,
            cut = idle_watch(conn, &shared, &activity) => Some(cut),
        }
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
    (activity, sniffer): (&Activity, &std::sync::Mutex<Sniffer>),
) -> Result<(), End> {
    let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
    // Each direction's draws from the connection's seed, apart.
    let seed = continuity_base::seed::mix(shared.conn_seed(conn), stream as u64);
    let tapped = Tapped {
        stream,
        conn,
        shared,
        sniffer,
    };
    let reader = read_side(from, tx, fastrand::Rng::with_seed(seed), activity, tapped);
    let rng = fastrand::Rng::with_seed(!seed);
    let writer = Writer::new(stream, conn, shared.toxics.subscribe(), to, shared, rng).run(rx);
    tokio::pin!(reader, writer);
    tokio::select! {
        done = &mut writer => return done,
        () = &mut reader => {}
    }
    writer.await
}

/// Where a direction's bytes are shown to the cell's stream tap.
struct Tapped<'a> {
    stream: Stream,
    conn: u64,
    shared: &'a Shared,
    sniffer: &'a std::sync::Mutex<Sniffer>,
}

impl Tapped<'_> {
    /// Reads `bytes` for the tap, when a cell has one set.
    fn show(&self, bytes: &[u8]) {
        let Some(tap) = self.shared.tap() else {
            return;
        };
        let mut sniffer = self.sniffer.lock().unwrap_or_else(|p| p.into_inner());
        match self.stream {
            Stream::Upstream => sniffer.upstream(bytes),
            Stream::Downstream => sniffer.downstream(self.conn, bytes, &mut |event| tap(event)),
        }
    }
}

/// Reads chunks and stamps each with its time and its latency jitter,
/// drawn from `rng` (the connection's seed).
async fn read_side(
    mut from: ReadHalf<'_>,
    tx: mpsc::Sender<Chunk>,
    mut rng: fastrand::Rng,
    activity: &Activity,
    tapped: Tapped<'_>,
) {
    let mut buf = vec![0u8; READ_BUF];
    loop {
        let chunk = match from.read(&mut buf).await {
            Ok(0) => Chunk::Eof,
            Ok(n) => {
                tapped.show(&buf[..n]);
                Chunk::Data {
                    bytes: Bytes::copy_from_slice(&buf[..n]),
                    at: Instant::now(),
                    jitter: rng.f64() * 2.0 - 1.0,
                }
            }
            Err(_) => Chunk::Failed,
        };
        activity.touch();
        let last = !matches!(chunk, Chunk::Data { .. });
        if tx.send(chunk).await.is_err() || last {
            return;
        }
    }
}

/// When the connection last carried data, either way.
struct Activity {
    opened: Instant,
    /// Milliseconds from `opened` to the last chunk read.
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = self.opened.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.opened + std::time::Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Ends the connection once an `idle_cut` in force finds it silent both
/// ways for its limit, counted from its last data or from when the cut
/// reached it, whichever is later; never while no cut is in force.
async fn idle_watch(conn: u64, shared: &Shared, activity: &Activity) -> End {
    let mut toxics = shared.toxics.subscribe();
    let mut watching: Option<(super::state::ToxicId, Instant)> = None;
    loop {
        let cut = toxics.borrow_and_update().idle_cut(conn);
        let Some((id, idle)) = cut else {
            watching = None;
            if toxics.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
            continue;
        };
        let since = match watching {
            Some((seen, at)) if seen == id => at,
            _ => Instant::now(),
        };
        watching = Some((id, since));
        let due = activity.last().max(since) + idle;
        if due <= Instant::now() {
            return End::Close { toxic: id };
        }
        tokio::select! {
            () = tokio::time::sleep_until(due) => {}
            changed = toxics.changed() => if changed.is_err() {
                std::future::pending::<()>().await;
            },
        }
    }
}
