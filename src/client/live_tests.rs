//! The observer between the transport and the recorder: what the transport
//! saw is stored by a flush only once the observer has handed it on.

use super::*;
use crate::persist::MemoryDriver;
use std::time::Duration;

/// A transport to nothing: the POST fails quietly after its envelope is observed.
fn to_nothing(observer: mpsc::UnboundedSender<Observed>) -> Transport {
    let config = TransportConfig {
        base_url: "http://127.0.0.1:9".into(),
        server_id: "sdk-mock-handed".into(),
        bootstrap_agent: Some("mock".into()),
        token: None,
        headers: Default::default(),
        delete_timeout: Duration::from_millis(10),
        headers_timeout: None,
    };
    Transport::new(
        config,
        crate::http::client_builder().build().unwrap(),
        observer,
    )
}

/// A connection whose transport posts to nothing (its envelopes are still
/// observed) and whose observer is a task of its own, as in the client.
fn connection(recorder: Recorder) -> (LiveConnection, Arc<Mutex<Bindings>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let transport = to_nothing(tx);
    let bindings = Arc::new(Mutex::new(Bindings::default()));
    lock(&bindings).bind("local", "agent-1");
    let (handed_tx, handed) = watch::channel(0);
    tokio::spawn(observe(
        (rx, handed_tx),
        Arc::clone(&bindings),
        recorder,
        ("conn".into(), "sdk-mock-handed".into()),
        crate::trace::Trace::detached(),
    ));
    let live = LiveConnection {
        connection_id: "conn".into(),
        transport,
        bindings: Arc::clone(&bindings),
        handed,
    };
    (live, bindings)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_stores_what_the_observer_had_not_taken_yet_once_it_is_handed_over() {
    let recorder = Recorder::start(Arc::new(MemoryDriver::default()));
    let (live, bindings) = connection(recorder.clone());
    // The observer stalls on the bindings (as a busy machine delays its task).
    let (release, stalled) = std::sync::mpsc::channel::<()>();
    let (held_tx, held) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let _guard = lock(&bindings);
        held_tx.send(()).unwrap();
        stalled.recv().unwrap();
    });
    held.recv().unwrap();
    live.transport
        .notify("session/cancel", json!({"sessionId": "agent-1"}))
        .unwrap();
    assert_eq!(live.transport.observed(), 1);

    // The recorder's flush alone overtakes the observer: nothing stored yet.
    recorder.flush().await;
    assert_eq!(recorder.stored("local"), 0);

    let waiting = tokio::spawn({
        let recorder = recorder.clone();
        async move {
            live.handed_over().await;
            recorder.flush().await;
            recorder.stored("local")
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "handed_over waits for the observer");
    release.send(()).unwrap();
    holder.join().unwrap();
    let stored = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the observer, released, hands it on")
        .unwrap();
    assert_eq!(stored, 1, "once handed over, the flush stores it");
}

#[tokio::test]
async fn an_observer_that_ended_is_handed_over() {
    let (tx, rx) = mpsc::unbounded_channel::<Observed>();
    drop(rx);
    let (handed_tx, handed) = watch::channel(0);
    drop(handed_tx);
    let live = LiveConnection {
        connection_id: "conn".into(),
        transport: to_nothing(tx),
        bindings: Arc::new(Mutex::new(Bindings::default())),
        handed,
    };
    let _ = live
        .transport
        .notify("session/cancel", json!({"sessionId": "x"}));
    tokio::time::timeout(Duration::from_secs(5), live.handed_over())
        .await
        .expect("no observer to wait for");
}
