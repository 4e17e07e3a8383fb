//! A persist driver seen from outside: every call's name, how long it took
//! and how it ended, and which calls are still in flight. A cell wraps its
//! store in one, so when a phase is slow or times out because the store
//! was (a Rivet actor waiting for its runner), the report says so —
//! `persist (rivet): updateSession pending for 29.8 s` — instead of blaming
//! the sandbox-agent call that was waiting on it.

use super::{Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A finished call.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedCall {
    pub call: &'static str,
    pub took: Duration,
    pub ended: Instant,
    pub error: Option<String>,
}

#[derive(Default)]
struct Calls {
    next: u64,
    pending: HashMap<u64, (&'static str, Instant)>,
    finished: Vec<FinishedCall>,
}

/// The driver, wrapped: use it where the driver was used.
pub struct ObservedDriver {
    inner: Arc<dyn PersistDriver>,
    calls: Arc<Mutex<Calls>>,
}

/// What a phase asks the wrapped driver.
#[derive(Clone)]
pub struct CallLog {
    driver: &'static str,
    calls: Arc<Mutex<Calls>>,
}

impl ObservedDriver {
    pub fn wrap(inner: Arc<dyn PersistDriver>) -> (Arc<ObservedDriver>, CallLog) {
        let calls = Arc::new(Mutex::new(Calls::default()));
        let log = CallLog {
            driver: inner.name(),
            calls: Arc::clone(&calls),
        };
        (Arc::new(ObservedDriver { inner, calls }), log)
    }

    async fn observe<T>(
        &self,
        call: &'static str,
        work: impl std::future::Future<Output = Result<T, PersistError>>,
    ) -> Result<T, PersistError> {
        let mut in_flight = InFlight::start(&self.calls, call);
        let result = work.await;
        in_flight.error = Some(result.as_ref().err().map(|e| e.message.clone()));
        result
    }
}

/// One call from start to end. Dropped before it finished (its caller gave
/// up at a phase deadline), it is recorded as abandoned with its age.
struct InFlight<'a> {
    calls: &'a Mutex<Calls>,
    id: u64,
    call: &'static str,
    /// `Some(outcome)` once the call returned.
    error: Option<Option<String>>,
}

impl<'a> InFlight<'a> {
    fn start(calls: &'a Mutex<Calls>, call: &'static str) -> Self {
        let mut guard = calls.lock().unwrap_or_else(|p| p.into_inner());
        guard.next += 1;
        let id = guard.next;
        guard.pending.insert(id, (call, Instant::now()));
        InFlight {
            calls,
            id,
            call,
            error: None,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, started)) = calls.pending.remove(&self.id) {
            let error = self
                .error
                .take()
                .unwrap_or_else(|| Some(ABANDONED.to_string()));
            calls.finished.push(FinishedCall {
                call: self.call,
                took: started.elapsed(),
                ended: Instant::now(),
                error,
            });
        }
    }
}

/// The error of a call its caller stopped waiting for.
pub const ABANDONED: &str = "no answer yet when the caller gave up";

impl CallLog {
    /// The driver's short name: `rivet`, `sqlite`.
    pub fn driver(&self) -> &'static str {
        self.driver
    }

    /// The longest-running call still in flight, and for how long.
    pub fn oldest_pending(&self) -> Option<(&'static str, Duration)> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls
            .pending
            .values()
            .map(|(call, started)| (*call, started.elapsed()))
            .max_by_key(|(_, took)| *took)
    }

    /// The calls that ended at or after `since`.
    pub fn finished_since(&self, since: Instant) -> Vec<FinishedCall> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls
            .finished
            .iter()
            .filter(|c| c.ended >= since)
            .cloned()
            .collect()
    }
}

#[async_trait]
impl PersistDriver for ObservedDriver {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        self.observe("getSession", self.inner.get_session(id)).await
    }

    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        self.observe("listSessions", self.inner.list_sessions(page))
            .await
    }

    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError> {
        self.observe("updateSession", self.inner.update_session(record))
            .await
    }

    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        self.observe("listEvents", self.inner.list_events(session_id, page))
            .await
    }

    async fn insert_event(
        &self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<(), PersistError> {
        self.observe("insertEvent", self.inner.insert_event(session_id, event))
            .await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::persist::MemoryDriver;

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
}
