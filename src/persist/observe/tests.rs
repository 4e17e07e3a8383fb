//! The store observer's tests (`observe.rs`), and the stand-ins other stores' tests use (`record`, `Hanging`): each store call is an event in the cell's trace.

use super::*;
use crate::persist::MemoryDriver;
use futures_util::FutureExt;

pub(crate) fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.into(),
        agent: "mock".into(),
        agent_session_id: "a".into(),
        last_connection_id: "c".into(),
        created_at: 1,
        destroyed_at: None,
        sandbox_id: None,
        session_init: None,
        config_options: None,
        modes: None,
    }
}

/// A store whose writes hang, as a Rivet actor waiting for its runner does.
pub(crate) struct Hanging(pub(crate) MemoryDriver);

#[async_trait]
impl PersistDriver for Hanging {
    fn name(&self) -> &'static str {
        "hanging"
    }
    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        self.0.get_session(id).await
    }
    async fn list_sessions(&self, p: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        self.0.list_sessions(p).await
    }
    async fn update_session(&self, _: SessionRecord) -> Result<(), PersistError> {
        std::future::pending().await
    }
    async fn list_events(
        &self,
        id: &str,
        p: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        self.0.list_events(id, p).await
    }
    async fn insert_event(&self, id: &str, e: SessionEvent) -> Result<(), PersistError> {
        self.0.insert_event(id, e).await
    }
}

#[tokio::test]
async fn every_ended_call_is_a_store_event_in_the_cells_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Trace::create(dir.path(), crate::trace::TraceLevel::Summary, None, None).unwrap();
    let (driver, _log) =
        ObservedDriver::wrap_traced(Arc::new(Hanging(MemoryDriver::default())), trace.clone());
    driver.update_session(record("s1")).now_or_never();
    assert!(driver.get_session("s1").await.unwrap().is_none());
    let event = crate::persist::contract::event("s1", 0);
    driver.insert_event("s1", event).await.unwrap();
    trace.flush();
    let text = std::fs::read_to_string(dir.path().join(crate::trace::TRACE_FILE)).unwrap();
    let stores: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["ev"] == "store")
        .collect();
    let calls: Vec<(&str, bool)> = stores
        .iter()
        .map(|e| (e["call"].as_str().unwrap(), e["ok"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("updateSession", false),
            ("getSession", true),
            ("insertEvent", true)
        ]
    );
    assert_eq!(stores[0]["error"], ABANDONED);
    assert!(stores[1].get("error").is_none(), "{}", stores[1]);
    for e in &stores {
        assert_eq!(e["driver"], "hanging");
        assert!(
            e["ms"].as_f64().unwrap() >= 0.0 && e["t"].as_f64().is_some(),
            "{e}"
        );
    }
}

#[test]
fn a_store_events_error_is_cut() {
    let call = FinishedCall {
        call: "insertEvent",
        took: Duration::from_micros(1234),
        ended: Instant::now(),
        error: Some("é".repeat(1000)),
    };
    let fields = store_event("rivet", &call);
    assert_eq!(fields.ms, Some(1.2));
    assert_eq!(fields.ok, Some(false));
    assert_eq!(fields.error.unwrap().chars().count(), ERROR_LIMIT_CHARS);
}

#[tokio::test]
async fn finished_and_abandoned_calls_are_both_seen() {
    let (driver, log) = ObservedDriver::wrap(Arc::new(Hanging(MemoryDriver::default())));
    let before = Instant::now();
    assert!(driver.get_session("s1").await.unwrap().is_none());
    let done: Vec<&str> = log.finished_since(before).iter().map(|c| c.call).collect();
    assert_eq!(done, ["getSession"]);
    assert_eq!(log.oldest_pending(), None);
    // A call whose future is dropped at a deadline stays pending, with its age.
    let call = driver.update_session(record("s2"));
    assert!(tokio::time::timeout(Duration::from_millis(50), call)
        .await
        .is_err());
    assert_eq!(log.oldest_pending(), None);
    let abandoned = log.finished_since(before).pop().unwrap();
    assert_eq!(
        (abandoned.call, abandoned.error.as_deref()),
        ("updateSession", Some(ABANDONED))
    );
    assert!(abandoned.took >= Duration::from_millis(50), "{abandoned:?}");
    // One still running (the recorder's background writes) is pending.
    let call = tokio::spawn({
        let driver = Arc::clone(&driver);
        async move { driver.update_session(record("s3")).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(log.oldest_pending().map(|(c, _)| c), Some("updateSession"));
    call.abort();
    assert_eq!(log.driver(), "hanging");
}
