//! The id cache against a tiny gateway that answers as the engine does, and
//! with the stale-id errors and hostile headers a healthy run never sees.
//! The real engine's path is in `stack::rivet`'s contract test.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One answer: status, `x-rivet-actor` header, body.
pub(crate) type Reply = (u16, Option<String>, String);
type Responder = dyn Fn(&str, usize) -> Reply + Send + Sync;

/// A gateway on 127.0.0.1 that answers each request with `respond(path,
/// n)` (n counts requests from 0) and remembers the paths asked.
pub(crate) struct Gateway {
    pub(crate) endpoint: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Gateway {
    pub(crate) async fn start(
        respond: impl Fn(&str, usize) -> Reply + Send + Sync + 'static,
    ) -> Gateway {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let respond: Arc<Responder> = Arc::new(respond);
        let count = Arc::new(AtomicUsize::new(0));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (respond, log, count) =
                    (Arc::clone(&respond), Arc::clone(&log), Arc::clone(&count));
                tokio::spawn(async move {
                    let path = read_request(&mut socket).await;
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    log.lock().unwrap().push(path.clone());
                    let (status, actor, body) = respond(&path, n);
                    let header = actor
                        .map(|id| format!("x-rivet-actor: {id}\r\n"))
                        .unwrap_or_default();
                    let text = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(text.as_bytes()).await;
                });
            }
        });
        Gateway { endpoint, seen }
    }

    fn driver(&self, retry_for: Duration) -> RivetDriver {
        RivetDriver::new(RivetConfig {
            endpoint: self.endpoint.clone(),
            namespace: "default".into(),
            key: "k 1".into(),
            retry_for,
        })
        .unwrap()
    }

    /// The paths asked, `key` for a call through the key (of any actor
    /// continuity owns), else the path.
    pub(crate) fn routes(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|p| {
                let by_key = [ACTOR, crate::client::hosted::ACTOR]
                    .iter()
                    .any(|name| p.starts_with(&format!("/gateway/{name}/action/")));
                if by_key {
                    assert!(
                        p.contains("rvt-method=getOrCreate&rvt-pool=default&rvt-key=k%201"),
                        "{p}"
                    );
                    "key".to_string()
                } else {
                    p.clone()
                }
            })
            .collect()
    }
}

/// The request's path; reads the head and the body it announces.
async fn read_request(socket: &mut tokio::net::TcpStream) -> String {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data);
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length: usize = text[..head_end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            if data.len() >= head_end + 4 + length {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&data);
    text.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn ok(actor: Option<&str>) -> Reply {
    (200, actor.map(str::to_string), r#"{"output":null}"#.into())
}

pub(crate) fn engine_error(status: u16, group: &str, code: &str) -> Reply {
    (
        status,
        None,
        format!(r#"{{"group":"{group}","code":"{code}","message":"m"}}"#),
    )
}

#[tokio::test]
async fn the_first_call_resolves_the_key_and_later_ones_go_by_id() {
    let gateway = Gateway::start(|_, _| ok(Some("actor1"))).await;
    let driver = gateway.driver(Duration::ZERO);
    assert_eq!(driver.known_actor_id(), None);
    driver.get_session("s").await.unwrap();
    assert_eq!(driver.known_actor_id().as_deref(), Some("actor1"));
    // A clone (the next cell's store) shares what was learnt.
    let clone = driver.clone();
    clone
        .update_session(crate::persist::observe::tests::record("s"))
        .await
        .unwrap();
    driver.get_session("s").await.unwrap();
    assert_eq!(
        gateway.routes(),
        [
            "key",
            "/gateway/actor1/action/updateSession",
            "/gateway/actor1/action/getSession"
        ]
    );
}

#[tokio::test]
async fn a_stale_id_is_forgotten_and_the_call_goes_through_the_key_again() {
    // 410 and 404 with the engine's lifecycle errors, and a scheduling error.
    for stale in [
        engine_error(404, "actor", "not_found"),
        engine_error(410, "actor", "destroyed_during_creation"),
        engine_error(503, "guard", "actor_ready_timeout"),
        engine_error(400, "datacenter", "not_found"),
    ] {
        let gateway = Gateway::start(move |path, _| {
            if path.starts_with("/gateway/old/") {
                stale.clone()
            } else if path.starts_with("/gateway/persist/") {
                ok(Some("new"))
            } else {
                ok(None)
            }
        })
        .await;
        // Even a caller that never retries gets its answer: the stale id
        // was the driver's shortcut, not the store failing.
        let driver = gateway.driver(Duration::ZERO);
        driver.remember("old".into());
        driver.get_session("s").await.unwrap();
        assert_eq!(driver.known_actor_id().as_deref(), Some("new"));
        driver.get_session("s").await.unwrap();
        assert_eq!(
            gateway.routes(),
            [
                "/gateway/old/action/getSession",
                "key",
                "/gateway/new/action/getSession"
            ]
        );
    }
}

#[tokio::test]
async fn the_actors_own_errors_keep_the_id_and_are_not_retried() {
    let gateway = Gateway::start(|path, _| {
        if path.ends_with("/nope") || path.contains("/nope?") {
            engine_error(404, "actor", "action_not_found")
        } else {
            ok(Some("actor1"))
        }
    })
    .await;
    let driver = gateway.driver(Duration::from_secs(5));
    driver.get_session("s").await.unwrap();
    let error = driver.call::<Value>("nope", json!([])).await.unwrap_err();
    assert!(
        error.message.contains("HTTP 404") && error.message.contains("action_not_found"),
        "{error}"
    );
    assert_eq!(driver.known_actor_id().as_deref(), Some("actor1"));
    assert_eq!(gateway.routes(), ["key", "/gateway/actor1/action/nope"]);
}

#[tokio::test]
async fn a_restarting_actor_is_retried_by_id_within_the_bound() {
    // The engine answers 503 while the runner comes back, then the same actor.
    let gateway = Gateway::start(|path, n| match (path.starts_with("/gateway/a/"), n) {
        (true, 1 | 2) => (503, None, "upstream down".into()),
        _ => ok(Some("a")),
    })
    .await;
    let driver = gateway.driver(Duration::from_secs(5));
    driver.get_session("s").await.unwrap();
    driver.get_session("s").await.unwrap();
    assert_eq!(
        gateway.routes(),
        [
            "key",
            "/gateway/a/action/getSession",
            "/gateway/a/action/getSession",
            "/gateway/a/action/getSession"
        ]
    );
    // Past the bound it fails, and says for how long it tried.
    let down = Gateway::start(|_, _| (503, None, "down".into())).await;
    let error = down
        .driver(Duration::from_millis(120))
        .get_session("s")
        .await
        .unwrap_err();
    assert!(
        error.message.contains("HTTP 503") && error.message.contains("after"),
        "{error}"
    );
    assert!(down.routes().len() >= 2, "{:?}", down.routes());
}

#[tokio::test]
async fn an_id_that_keeps_going_stale_costs_one_extra_request_per_call() {
    // The key always names an actor whose id is stale by the next call.
    let gateway = Gateway::start(|path, _| {
        if path.starts_with("/gateway/persist/") {
            ok(Some("again"))
        } else {
            engine_error(404, "actor", "not_found")
        }
    })
    .await;
    let driver = gateway.driver(Duration::from_secs(5));
    for _ in 0..3 {
        driver.get_session("s").await.unwrap();
    }
    assert_eq!(
        gateway.routes(),
        [
            "key",
            "/gateway/again/action/getSession",
            "key",
            "/gateway/again/action/getSession",
            "key"
        ]
    );
}

#[tokio::test]
async fn a_key_that_stays_unresolvable_fails_at_the_bound() {
    let gateway = Gateway::start(|_, _| engine_error(404, "actor", "starting")).await;
    let driver = gateway.driver(Duration::from_millis(300));
    driver.remember("old".into());
    let started = Instant::now();
    let error = driver.get_session("s").await.unwrap_err();
    assert!(error.message.contains("starting"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(driver.known_actor_id(), None);
    let routes = gateway.routes();
    assert_eq!(routes[0], "/gateway/old/action/getSession");
    assert!(
        routes[1..].iter().all(|r| r == "key") && routes.len() >= 3,
        "{routes:?}"
    );
}

#[tokio::test]
async fn hostile_actor_headers_are_ignored() {
    for hostile in ["../../admin", "a?rvt-method=create", "a/b", ""] {
        let gateway = Gateway::start(move |_, _| ok(Some(hostile))).await;
        let driver = gateway.driver(Duration::ZERO);
        driver.get_session("s").await.unwrap();
        driver.get_session("s").await.unwrap();
        assert_eq!(driver.known_actor_id(), None, "{hostile}");
        assert_eq!(gateway.routes(), ["key", "key"], "{hostile}");
    }
}

#[tokio::test]
async fn concurrent_first_calls_all_answer_and_agree_on_the_id() {
    let gateway = Gateway::start(|_, _| ok(Some("actor1"))).await;
    let driver = gateway.driver(Duration::ZERO);
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let driver = driver.clone();
            tokio::spawn(async move { driver.get_session("s").await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(driver.known_actor_id().as_deref(), Some("actor1"));
    driver.get_session("s").await.unwrap();
    assert_eq!(
        gateway.routes().last().map(String::as_str),
        Some("/gateway/actor1/action/getSession")
    );
}

#[test]
fn forgetting_a_stale_id_keeps_a_newer_one() {
    let driver = RivetDriver::new(RivetConfig {
        endpoint: "http://127.0.0.1:1".into(),
        namespace: "default".into(),
        key: "k".into(),
        retry_for: Duration::ZERO,
    })
    .unwrap();
    driver.remember("new".into());
    // A call that saw `old` go stale answers after another learnt `new`.
    driver.forget("old");
    assert_eq!(driver.known_actor_id().as_deref(), Some("new"));
    driver.forget("new");
    assert_eq!(driver.known_actor_id(), None);
}

/// The Rivet app unreachable (nothing listens on the engine's port; the
/// engine cannot reach a runner) was a store error, judged as the SDK's:
/// it is the Rivet app's failure, a part of continuity's own. An error of
/// the actor's own (an unknown action) stays the store's.
#[tokio::test]
async fn an_unreachable_rivet_app_is_named_as_the_part_that_failed() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let driver = RivetDriver::new(RivetConfig {
        endpoint,
        namespace: "default".into(),
        key: "k".into(),
        retry_for: Duration::ZERO,
    })
    .unwrap();
    let e = driver.get_session("s").await.unwrap_err();
    assert_eq!(
        e.harness_part(),
        Some(crate::errors::HarnessPart::RivetApp),
        "{e:?}"
    );
    let no_runner = Gateway::start(|_, _| engine_error(503, "guard", "actor_runner_failed")).await;
    let e = no_runner
        .driver(Duration::ZERO)
        .get_session("s")
        .await
        .unwrap_err();
    assert_eq!(
        e.harness_part(),
        Some(crate::errors::HarnessPart::RivetApp),
        "{e:?}"
    );
    let own = Gateway::start(|_, _| engine_error(400, "action", "not_found")).await;
    let e = own
        .driver(Duration::ZERO)
        .get_session("s")
        .await
        .unwrap_err();
    assert_eq!(e.harness_part(), None, "{e:?}");
}
