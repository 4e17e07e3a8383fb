//! Every toxic over real loopback sockets: a proxy in front of a small
//! echo or recording server, asserting what arrives, in which order, and
//! how connections end. Time bounds appear only where time is the toxic's
//! point (latency, bandwidth, slow_close), and then only as a generous
//! lower bound.
//!
//! Over 400 lines on purpose: one test or two per toxic, all on the same
//! loopback harness (a proxy in front of a small echo or recording server:
//! `any_port`, `proxy_to`, `spec`), so the toxics are read side by side; the
//! parser's own tests are in `toxic.rs`.

use super::*;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Echoes every connection's bytes back until it closes.
async fn echo_server() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind(any_port()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let (mut r, mut w) = socket.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    (addr, task)
}

/// How one connection to the recording server went.
#[derive(Debug)]
struct Received {
    reads: Vec<Vec<u8>>,
    end: Result<(), ErrorKind>,
}

impl Received {
    fn bytes(&self) -> Vec<u8> {
        self.reads.concat()
    }
}

/// Records what each connection sends (read by read) and how it ended;
/// sends `greeting` first when given, and closes after it if `close`.
async fn recording_server(
    greeting: Option<Vec<u8>>,
    close: bool,
) -> (SocketAddr, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind(any_port()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            let greeting = greeting.clone();
            tokio::spawn(async move {
                if let Some(g) = &greeting {
                    socket.write_all(g).await.unwrap();
                }
                if close {
                    let _ = socket.shutdown().await;
                }
                let mut reads = Vec::new();
                let mut buf = [0u8; 65536];
                let end = loop {
                    match socket.read(&mut buf).await {
                        Ok(0) => break Ok(()),
                        Ok(n) => reads.push(buf[..n].to_vec()),
                        Err(e) => break Err(e.kind()),
                    }
                };
                let _ = tx.send(Received { reads, end });
            });
        }
    });
    (addr, rx)
}

fn proxy_to(upstream: SocketAddr) -> FaultProxy {
    FaultProxy::start(crate::Hop::named("test"), any_port(), upstream).unwrap()
}

fn spec(toxic: Toxic, stream: Stream) -> ToxicSpec {
    ToxicSpec::new(toxic, stream)
}

async fn echo(client: &mut TcpStream, text: &[u8]) -> std::io::Result<Vec<u8>> {
    client.write_all(text).await?;
    let mut back = vec![0u8; text.len()];
    client.read_exact(&mut back).await?;
    Ok(back)
}

/// Reads until end of file or error: the bytes, and how it ended.
async fn read_to_end(client: &mut TcpStream) -> (Vec<u8>, Result<(), ErrorKind>) {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match client.read(&mut buf).await {
            Ok(0) => return (all, Ok(())),
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) => return (all, Err(e.kind())),
        }
    }
}

/// Nothing arrives within `window` (the connection stays open).
async fn silent_for(client: &mut TcpStream, window: Duration) {
    let mut buf = [0u8; 16];
    match tokio::time::timeout(window, client.read(&mut buf)).await {
        Err(_) => {}
        Ok(r) => panic!("expected silence, got {r:?}"),
    }
}

const BOUND: Duration = Duration::from_secs(10);

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the proxy answered within the test's bound")
}

#[tokio::test]
async fn with_no_toxic_bytes_and_half_closes_pass_unchanged() {
    let (upstream, mut received) = recording_server(Some(b"hello".to_vec()), true).await;
    let proxy = proxy_to(upstream);
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    client.write_all(&payload).await.unwrap();
    client.shutdown().await.unwrap();
    // The server's greeting and its close come back.
    let (back, end) = within(read_to_end(&mut client)).await;
    assert_eq!((back.as_slice(), end), (&b"hello"[..], Ok(())));
    let got = within(received.recv()).await.unwrap();
    assert_eq!(got.bytes(), payload);
    assert_eq!(got.end, Ok(()));
    let stats = proxy.control().stats();
    assert_eq!((stats.accepted, stats.resets, stats.closes), (1, 0, 0));
}

#[tokio::test]
async fn latency_delays_every_chunk_on_open_connections_and_keeps_order() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(echo(&mut client, b"before").await.unwrap(), b"before");
    let latency = Duration::from_millis(150);
    control
        .set(
            spec(
                Toxic::Latency {
                    latency,
                    jitter: Duration::from_millis(100),
                },
                Stream::Downstream,
            ),
            None,
        )
        .unwrap();
    // The connection opened before the toxic gets it too.
    let started = Instant::now();
    assert_eq!(within(echo(&mut client, b"x")).await.unwrap(), b"x");
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "{:?}",
        started.elapsed()
    );
    // With jitter, chunks still arrive whole and in order.
    let mut sent = Vec::new();
    for i in 0..30u8 {
        let chunk = vec![i; 100];
        client.write_all(&chunk).await.unwrap();
        sent.extend_from_slice(&chunk);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let mut back = vec![0u8; sent.len()];
    within(client.read_exact(&mut back)).await.unwrap();
    assert_eq!(back, sent);
    // Healed: the next answer is not held.
    control.heal();
    let started = Instant::now();
    assert_eq!(within(echo(&mut client, b"y")).await.unwrap(), b"y");
    assert!(started.elapsed() < latency, "{:?}", started.elapsed());
}

#[tokio::test]
async fn bandwidth_caps_the_rate_without_losing_bytes() {
    let (upstream, mut received) = recording_server(None, false).await;
    let proxy = proxy_to(upstream);
    proxy
        .control()
        .set(spec(Toxic::Bandwidth { rate: 20 }, Stream::Upstream), None)
        .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    let payload = vec![7u8; 10_000];
    let started = Instant::now();
    client.write_all(&payload).await.unwrap();
    client.shutdown().await.unwrap();
    let got = within(received.recv()).await.unwrap();
    // 10 KB at 20 KB/s: half a second (bounded below generously).
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(got.bytes(), payload);
}

#[tokio::test]
async fn slow_close_passes_the_end_of_the_stream_late() {
    let (upstream, _rx) = recording_server(Some(b"bye".to_vec()), true).await;
    let proxy = proxy_to(upstream);
    proxy
        .control()
        .set(
            spec(
                Toxic::SlowClose {
                    delay: Duration::from_millis(300),
                },
                Stream::Downstream,
            ),
            None,
        )
        .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    let started = Instant::now();
    let mut greeting = [0u8; 3];
    within(client.read_exact(&mut greeting)).await.unwrap();
    let data_at = started.elapsed();
    let (rest, end) = within(read_to_end(&mut client)).await;
    assert_eq!((&greeting, rest.len(), end), (b"bye", 0, Ok(())));
    // The data came at once, the end of file well after it.
    assert!(
        started.elapsed() >= data_at + Duration::from_millis(200),
        "{data_at:?} {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn timeout_drops_data_then_closes_and_zero_holds_until_removed() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(echo(&mut client, b"a").await.unwrap(), b"a");
    let id = control
        .set(
            spec(
                Toxic::Timeout {
                    timeout: Duration::ZERO,
                },
                Stream::Upstream,
            ),
            None,
        )
        .unwrap();
    client.write_all(b"lost").await.unwrap();
    silent_for(&mut client, Duration::from_millis(200)).await;
    // Removing it closes the connection: its stream has a hole.
    control.remove(id);
    let (back, end) = within(read_to_end(&mut client)).await;
    assert_eq!((back.len(), end), (0, Ok(())));
    assert_eq!(control.stats().closes, 1);

    // With a timeout the connection closes by itself, nothing delivered.
    control
        .set(
            spec(
                Toxic::Timeout {
                    timeout: Duration::from_millis(100),
                },
                Stream::Upstream,
            ),
            None,
        )
        .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    client.write_all(b"lost too").await.unwrap();
    let (back, end) = within(read_to_end(&mut client)).await;
    assert_eq!((back.len(), end), (0, Ok(())));
}

#[tokio::test]
async fn reset_peer_resets_the_receiver_of_its_stream() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let actions = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&actions);
    let observer: Observer = Arc::new(move |_, _, action| seen.lock().unwrap().push(action));
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(echo(&mut client, b"ok").await.unwrap(), b"ok");
    control
        .set(
            spec(
                Toxic::ResetPeer {
                    timeout: Duration::ZERO,
                },
                Stream::Downstream,
            ),
            Some(observer),
        )
        .unwrap();
    // The echo's answer triggers it: the client is reset, it gets no byte.
    client.write_all(b"boom").await.unwrap();
    let (back, end) = within(read_to_end(&mut client)).await;
    assert_eq!((back.len(), end), (0, Err(ErrorKind::ConnectionReset)));
    assert_eq!(
        *actions.lock().unwrap(),
        vec![ProxyAction::Reset {
            toward: Stream::Downstream
        }]
    );
    assert_eq!(control.stats().resets, 1);
}

#[tokio::test]
async fn reset_peer_upstream_resets_the_server_after_its_timeout() {
    let (upstream, mut received) = recording_server(None, false).await;
    let proxy = proxy_to(upstream);
    proxy
        .control()
        .set(
            spec(
                Toxic::ResetPeer {
                    timeout: Duration::from_millis(100),
                },
                Stream::Upstream,
            ),
            None,
        )
        .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    client.write_all(b"never arrives").await.unwrap();
    let got = within(received.recv()).await.unwrap();
    assert_eq!(
        (got.bytes().len(), got.end),
        (0, Err(ErrorKind::ConnectionReset))
    );
    // The client's side is closed, not reset.
    let (_, end) = within(read_to_end(&mut client)).await;
    assert_eq!(end, Ok(()));
}

#[tokio::test]
async fn slicer_cuts_chunks_into_pieces_in_order() {
    let (upstream, mut received) = recording_server(None, false).await;
    let proxy = proxy_to(upstream);
    proxy
        .control()
        .set(
            spec(
                Toxic::Slicer {
                    average_size: 50,
                    size_variation: 20,
                    delay: Duration::from_millis(2),
                },
                Stream::Upstream,
            ),
            None,
        )
        .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    let payload: Vec<u8> = (0..2000u32).map(|i| (i % 256) as u8).collect();
    client.write_all(&payload).await.unwrap();
    client.shutdown().await.unwrap();
    let got = within(received.recv()).await.unwrap();
    assert_eq!(got.bytes(), payload);
    // 2000 bytes in ~50-byte pieces 2 ms apart arrive in many reads.
    assert!(got.reads.len() >= 10, "{} reads", got.reads.len());
}

#[tokio::test]
async fn limit_data_closes_after_exactly_its_bytes() {
    let (upstream, mut received) = recording_server(None, false).await;
    let proxy = proxy_to(upstream);
    proxy
        .control()
        .set(
            spec(Toxic::LimitData { bytes: 100 }, Stream::Upstream),
            None,
        )
        .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    for _ in 0..3 {
        client.write_all(&[1u8; 60]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let got = within(received.recv()).await.unwrap();
    assert_eq!((got.bytes().len(), got.end), (100, Ok(())));
    let (_, end) = within(read_to_end(&mut client)).await;
    assert_eq!(end, Ok(()));
    assert_eq!(proxy.control().stats().closes, 1);
}

#[tokio::test]
async fn a_partition_freezes_open_connections_and_holds_new_ones_until_it_heals() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let mut open = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(echo(&mut open, b"1").await.unwrap(), b"1");
    control
        .set(ToxicSpec::new(Toxic::Partition, Stream::Downstream), None)
        .unwrap();
    open.write_all(b"held").await.unwrap();
    let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
    new.write_all(b"waiting").await.unwrap();
    silent_for(&mut open, Duration::from_millis(200)).await;
    silent_for(&mut new, Duration::from_millis(50)).await;
    control.heal();
    // Nothing was lost: both answers come once the partition heals.
    let mut back = [0u8; 4];
    within(open.read_exact(&mut back)).await.unwrap();
    assert_eq!(&back, b"held");
    let mut back = [0u8; 7];
    within(new.read_exact(&mut back)).await.unwrap();
    assert_eq!(&back, b"waiting");
    let stats = control.stats();
    assert_eq!((stats.resets, stats.closes), (0, 0));
}

#[tokio::test]
async fn down_closes_open_connections_and_refuses_new_ones_until_healed() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let mut open = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(echo(&mut open, b"1").await.unwrap(), b"1");
    control
        .set(ToxicSpec::new(Toxic::Down, Stream::Downstream), None)
        .unwrap();
    let (_, end) = within(read_to_end(&mut open)).await;
    assert_eq!(end, Ok(()));
    // The listener is closed: a connect is refused (the loop may take a
    // moment to drop it, so wait for the first refusal).
    let refused = within(async {
        loop {
            match TcpStream::connect(proxy.addr()).await {
                Err(e) => break e.kind(),
                Ok(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    })
    .await;
    assert_eq!(refused, ErrorKind::ConnectionRefused);
    control.heal();
    let mut again = within(async {
        loop {
            match TcpStream::connect(proxy.addr()).await {
                Ok(c) => break c,
                Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    })
    .await;
    assert_eq!(within(echo(&mut again, b"2")).await.unwrap(), b"2");
    control.check().unwrap();
}

#[tokio::test]
async fn toxicity_picks_a_share_of_the_connections() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let mut half = ToxicSpec::new(
        Toxic::Timeout {
            timeout: Duration::ZERO,
        },
        Stream::Downstream,
    );
    half.toxicity = 0.5;
    control.set(half, None).unwrap();
    let mut answered = 0;
    for _ in 0..40 {
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(b"?").await.unwrap();
        let mut buf = [0u8; 1];
        if tokio::time::timeout(Duration::from_millis(100), client.read_exact(&mut buf))
            .await
            .is_ok()
        {
            answered += 1;
        }
    }
    assert!((1..40).contains(&answered), "{answered} of 40 answered");
    control.heal();
    let mut none = ToxicSpec::new(
        Toxic::Timeout {
            timeout: Duration::ZERO,
        },
        Stream::Downstream,
    );
    none.toxicity = 0.0;
    control.set(none, None).unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(within(echo(&mut client, b"!")).await.unwrap(), b"!");
}

#[tokio::test]
async fn a_refused_upstream_reaches_the_client_as_a_reset() {
    let closed = TcpListener::bind(any_port()).await.unwrap();
    let upstream = closed.local_addr().unwrap();
    drop(closed);
    let proxy = proxy_to(upstream);
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    let (_, end) = within(read_to_end(&mut client)).await;
    assert_eq!(end, Err(ErrorKind::ConnectionReset));
    assert_eq!(proxy.control().stats().passed_on, 1);
}

#[tokio::test]
async fn dropping_the_proxy_closes_its_connections_and_its_port() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let addr = proxy.addr();
    let mut open = TcpStream::connect(addr).await.unwrap();
    assert_eq!(echo(&mut open, b"1").await.unwrap(), b"1");
    drop(proxy);
    let (_, _end) = within(read_to_end(&mut open)).await;
    within(async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let e = control.check().unwrap_err();
    assert!(e.to_string().contains("test hop has stopped"), "{e}");
    assert!(control
        .set(ToxicSpec::new(Toxic::Down, Stream::Upstream), None)
        .is_err());
}

#[tokio::test]
async fn a_port_that_cannot_be_listened_on_again_stops_the_proxy() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    control
        .set(ToxicSpec::new(Toxic::Down, Stream::Upstream), None)
        .unwrap();
    // Someone else takes the port while the hop is down.
    let squatter = within(async {
        loop {
            match std::net::TcpListener::bind(proxy.addr()) {
                Ok(l) => break l,
                Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    })
    .await;
    control.heal();
    within(async {
        while control.check().is_ok() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let e = control.check().unwrap_err().to_string();
    assert!(e.contains("cannot listen again after `down`"), "{e}");
    drop(squatter);
}

#[tokio::test]
async fn a_taken_port_and_a_foreign_address_are_refused() {
    let taken = std::net::TcpListener::bind(any_port()).unwrap();
    let (upstream, _server) = echo_server().await;
    let e = FaultProxy::start(
        crate::LocalHop::Gateway.into(),
        taken.local_addr().unwrap(),
        upstream,
    )
    .err()
    .unwrap();
    assert!(matches!(e, ProxyError::PortTaken { .. }), "{e}");
    assert!(e.to_string().contains("the port is taken"), "{e}");
    let e = FaultProxy::start(
        crate::LocalHop::Gateway.into(),
        "0.0.0.0:0".parse().unwrap(),
        upstream,
    )
    .err()
    .unwrap();
    assert!(matches!(e, ProxyError::NotLoopback { .. }), "{e}");
}

/// One "cell" on a fresh proxy: `before` connections of earlier cells,
/// then the cell with `seed` sets a `reset_peer` on half the connections
/// and opens 16; which of them the proxy reset, by their number in the cell.
async fn resets_of_a_cell(seed: u64, before: usize) -> Vec<u64> {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    for _ in 0..before {
        let mut earlier = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(within(echo(&mut earlier, b"-")).await.unwrap(), b"-");
    }
    control.begin_cell(seed);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::clone(&seen);
    let observer: Observer = Arc::new(move |_, conn, action| {
        told.lock().unwrap().push((conn, action));
    });
    let mut half = spec(
        Toxic::ResetPeer {
            timeout: Duration::ZERO,
        },
        Stream::Downstream,
    );
    half.toxicity = 0.5;
    control.set(half, Some(observer)).unwrap();
    let mut reset_seen_by_client = Vec::new();
    for conn in 1..=16u64 {
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(b"?").await.unwrap();
        let mut buf = [0u8; 1];
        if within(client.read_exact(&mut buf)).await.is_err() {
            reset_seen_by_client.push(conn);
        }
    }
    // The observer hears of each connection's draw as its data passed: a
    // reset once the proxy has done it, or that the draw spared it.
    within(async {
        while seen.lock().unwrap().len() < 16 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let mut told: Vec<(u64, ProxyAction)> = seen.lock().unwrap().clone();
    told.sort_by_key(|(conn, _)| *conn);
    let conns: Vec<u64> = told.iter().map(|(conn, _)| *conn).collect();
    assert_eq!(conns, (1..=16).collect::<Vec<_>>(), "one decision each");
    let reset: Vec<u64> = told
        .iter()
        .filter(|(_, a)| matches!(a, ProxyAction::Reset { .. }))
        .map(|(conn, _)| *conn)
        .collect();
    assert_eq!(
        reset, reset_seen_by_client,
        "the observer and the client agree"
    );
    assert!(told
        .iter()
        .all(|(_, a)| matches!(a, ProxyAction::Reset { .. } | ProxyAction::Spared)));
    assert_eq!(
        control.stats().resets,
        reset.len() as u64,
        "a spare is not counted"
    );
    reset
}

#[tokio::test]
async fn the_same_seed_gives_the_same_toxic_decisions_in_ten_runs() {
    let first = resets_of_a_cell(7, 0).await;
    assert!(
        (1..16).contains(&first.len()),
        "a toxicity of 0.5 resets some of 16 connections, not {first:?}"
    );
    // Whatever earlier cells did on the hop, the cell's draws are its own.
    for before in 1..10 {
        assert_eq!(
            resets_of_a_cell(7, before).await,
            first,
            "run {}",
            before + 1
        );
    }
    let other = resets_of_a_cell(8, 0).await;
    assert_ne!(other, first, "another seed, another schedule");
}

#[tokio::test]
async fn idle_cut_closes_a_connection_silent_for_its_limit_and_spares_a_busy_one() {
    let (upstream, _server) = echo_server().await;
    let proxy = proxy_to(upstream);
    let control = proxy.control();
    let mut busy = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut quiet = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(echo(&mut quiet, b"q").await.unwrap(), b"q");
    let idle = Duration::from_millis(300);
    let closed = Arc::new(Mutex::new(0u32));
    let seen = Arc::clone(&closed);
    let observer: Observer = Arc::new(move |_, _, what| {
        assert_eq!(what, ProxyAction::Closed);
        *seen.lock().unwrap() += 1;
    });
    let set_at = Instant::now();
    control
        .set(
            spec(Toxic::IdleCut { idle }, Stream::Downstream),
            Some(observer),
        )
        .unwrap();
    let talk = async {
        for _ in 0..9 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(echo(&mut busy, b"b").await.unwrap(), b"b");
        }
    };
    let quiet_end = async {
        let end = within(read_to_end(&mut quiet)).await;
        (end, set_at.elapsed())
    };
    let ((), ((back, end), after)) = tokio::join!(talk, quiet_end);
    assert_eq!((back.len(), end), (0, Ok(())));
    assert!(
        after >= idle,
        "closed {after:?} after the cut, before its {idle:?}"
    );
    assert_eq!(*closed.lock().unwrap(), 1, "the busy connection was spared");
    // Once the busy one falls silent it is closed too; after the heal, none is.
    let (back, end) = within(read_to_end(&mut busy)).await;
    assert_eq!((back.len(), end), (0, Ok(())));
    assert_eq!(control.stats().closes, 2);
    control.heal();
    let mut later = TcpStream::connect(proxy.addr()).await.unwrap();
    silent_for(&mut later, Duration::from_millis(500)).await;
    assert_eq!(
        echo(&mut later, b"still here").await.unwrap(),
        b"still here"
    );
}

/// The tap over a real connection: the stream GET the client sent and the
/// events the server answered with, told while a tap is set, and nothing
/// once it is removed.
#[tokio::test]
async fn the_tap_hears_a_streams_get_and_its_events_while_it_is_set() {
    let answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nid: 1\ndata: {}\n\n\r\n";
    // Answers once the request's head has come, as a server does.
    let listener = TcpListener::bind(any_port()).await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 256];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            head.extend_from_slice(&buf[..n]);
        }
        socket.write_all(answer).await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let proxy = FaultProxy::start(crate::LocalHop::Agent.into(), any_port(), upstream).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    proxy
        .control()
        .tap(Some(Arc::new(move |e| sink.lock().unwrap().push(e))));
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    client
        .write_all(b"GET /v1/acp/s HTTP/1.1\r\nLast-Event-ID: 0\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(5);
    while heard.lock().unwrap().len() < 2 && Instant::now() < deadline {
        let _ = tokio::time::timeout(Duration::from_millis(100), client.read(&mut buf)).await;
    }
    let heard = heard.lock().unwrap().clone();
    assert!(
        matches!(&heard[..], [TapEvent::Stream { last_event_id: Some(l), status: 200, .. }, TapEvent::Sse { id: Some(id), data, .. }] if l == "0" && id == "1" && data == "{}"),
        "{heard:?}"
    );
}
