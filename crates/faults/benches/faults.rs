//! How soon a toxic takes effect on an open connection (the goal: within
//! 1 ms of `set`), and what the proxy adds to a round trip with no toxic.
//! Run through `bench/faults.sh` (or `cargo bench --bench faults`).
//!
//! Each trial opens a connection through a fault proxy to a loopback
//! server that streams bytes without pause (a `reset_peer` acts on the
//! next chunk, as Toxiproxy's does), sets the toxic, and times
//! what the client sees: the reset (`reset_peer`), the end of the stream
//! (`down`), the last byte before the stream stops (`partition`); then
//! how soon bytes flow again after the partition heals.

use continuity_faults::{FaultProxy, Stream, Toxic, ToxicSpec};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TRIALS: usize = 200;

async fn streaming_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Without pause (a timer would round to 1 ms): the next
                // chunk, which a reset_peer acts on, is always on its way.
                let chunk = [b'x'; 256];
                while socket.write_all(&chunk).await.is_ok() {
                    tokio::task::yield_now().await;
                }
            });
        }
    });
    addr
}

async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = socket.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// Reads until the stream ends or fails: when it did.
async fn until_end(client: &mut TcpStream) -> Instant {
    let mut buf = [0u8; 65536];
    loop {
        match client.read(&mut buf).await {
            Ok(0) | Err(_) => return Instant::now(),
            Ok(_) => {}
        }
    }
}

/// Reads until nothing came for `quiet`: when the last byte did.
async fn until_quiet(client: &mut TcpStream, quiet: Duration) -> Instant {
    let mut buf = [0u8; 65536];
    let mut last = Instant::now();
    while let Ok(Ok(n)) = tokio::time::timeout(quiet, client.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        last = Instant::now();
    }
    last
}

async fn warm(client: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    let _ = client.read(&mut buf).await;
}

fn row(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
    println!(
        "{what:<44} {:>9} {:>9} {:>9} {:>9}",
        us(at(0.5)),
        us(at(0.99)),
        us(*samples.last().unwrap()),
        format!(
            "{}",
            samples
                .iter()
                .filter(|d| **d > Duration::from_millis(1))
                .count()
        ),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let streaming = streaming_server().await;
    let proxy = FaultProxy::start(
        continuity_faults::Hop::named("bench"),
        "127.0.0.1:0".parse().unwrap(),
        streaming,
    )
    .unwrap();
    let control = proxy.control();
    println!(
        "fault proxy: time from `set` to what the client sees, {TRIALS} trials each, open connection streaming"
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>9}",
        "toxic", "median", "p99", "max", ">1 ms"
    );

    let mut samples = Vec::new();
    for _ in 0..TRIALS {
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        warm(&mut client).await;
        let reset = ToxicSpec::new(
            Toxic::ResetPeer {
                timeout: Duration::ZERO,
            },
            Stream::Downstream,
        );
        let set = Instant::now();
        let id = control.set(reset, None).unwrap();
        let seen = until_end(&mut client).await;
        samples.push(seen - set);
        control.remove(id);
    }
    row("reset_peer downstream (timeout 0): reset", samples);

    let mut samples = Vec::new();
    for _ in 0..TRIALS {
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        warm(&mut client).await;
        let set = Instant::now();
        let id = control
            .set(ToxicSpec::new(Toxic::Down, Stream::Downstream), None)
            .unwrap();
        let seen = until_end(&mut client).await;
        samples.push(seen - set);
        control.remove(id);
        // The listener is back before the next trial connects.
        while TcpStream::connect(proxy.addr()).await.is_err() {
            tokio::task::yield_now().await;
        }
    }
    row("down: open connection closed", samples);

    let (mut frozen, mut flowing) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        warm(&mut client).await;
        let set = Instant::now();
        let id = control
            .set(ToxicSpec::new(Toxic::Partition, Stream::Downstream), None)
            .unwrap();
        let last = until_quiet(&mut client, Duration::from_millis(20)).await;
        frozen.push(last.saturating_duration_since(set));
        let healed = Instant::now();
        control.remove(id);
        let mut buf = [0u8; 4096];
        let _ = client.read(&mut buf).await;
        flowing.push(healed.elapsed());
    }
    row("partition: last byte after set", frozen);
    row("partition healed: first byte after remove", flowing);

    // No toxic: a 64-byte round trip, direct and through the proxy.
    let echo = echo_server().await;
    let echo_proxy = FaultProxy::start(
        continuity_faults::Hop::named("bench"),
        "127.0.0.1:0".parse().unwrap(),
        echo,
    )
    .unwrap();
    println!();
    println!(
        "no toxic: 64-byte round trip, {} round trips each",
        TRIALS * 10
    );
    println!("{:<44} {:>9} {:>9} {:>9}", "path", "median", "p99", "max");
    for (what, addr) in [
        ("direct", echo),
        ("through the fault proxy", echo_proxy.addr()),
    ] {
        let mut client = TcpStream::connect(addr).await.unwrap();
        client.set_nodelay(true).unwrap();
        let mut samples = Vec::new();
        let mut back = [0u8; 64];
        for _ in 0..TRIALS * 10 {
            let started = Instant::now();
            client.write_all(&[7u8; 64]).await.unwrap();
            client.read_exact(&mut back).await.unwrap();
            samples.push(started.elapsed());
        }
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
        let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
        println!(
            "{what:<44} {:>9} {:>9} {:>9}",
            us(at(0.5)),
            us(at(0.99)),
            us(*samples.last().unwrap())
        );
    }
}
