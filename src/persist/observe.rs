//! A persist driver seen from outside: every call's name, how long it took
//! and how it ended, and which calls are still in flight. A cell wraps its
//! store in one, so when a phase is slow or times out because the store
//! was (a Rivet actor waiting for its runner), the report says so —
//! `persist (rivet): updateSession pending for 29.8 s` — instead of blaming
//! the sandbox-agent call that was waiting on it. Each call that ends is
//! also a `store` event in the cell's trace (`call`, `driver`, `ms`, `ok`,
//! `error`): the store is a server of the stack, and its answers count in
//! the cell's floor.

use super::{Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord};
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use async_trait::async_trait;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A finished call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FinishedCall {
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
pub(crate) struct ObservedDriver {
    inner: Arc<dyn PersistDriver>,
    calls: Arc<Mutex<Calls>>,
    trace: Trace,
}

/// The longest error a `store` event keeps.
const ERROR_LIMIT_CHARS: usize = 300;

/// What a phase asks the wrapped driver.
#[derive(Clone)]
pub(crate) struct CallLog {
    driver: &'static str,
    calls: Arc<Mutex<Calls>>,
}

impl ObservedDriver {
    /// [`ObservedDriver::wrap_traced`] with no trace (tests of the log alone).
    #[cfg(test)]
    pub(crate) fn wrap(inner: Arc<dyn PersistDriver>) -> (Arc<ObservedDriver>, CallLog) {
        Self::wrap_traced(inner, Trace::detached())
    }

    /// Wraps `inner`: the driver to use in its place, and the log a phase
    /// reads; each call that ends is a `store` event in `trace`.
    pub(crate) fn wrap_traced(
        inner: Arc<dyn PersistDriver>,
        trace: Trace,
    ) -> (Arc<ObservedDriver>, CallLog) {
        let calls = Arc::new(Mutex::new(Calls::default()));
        let log = CallLog {
            driver: inner.name(),
            calls: Arc::clone(&calls),
        };
        (
            Arc::new(ObservedDriver {
                inner,
                calls,
                trace,
            }),
            log,
        )
    }

    async fn observe<T>(
        &self,
        call: &'static str,
        work: impl std::future::Future<Output = Result<T, PersistError>>,
    ) -> Result<T, PersistError> {
        self.observe_writing(call, event::Handed::default(), work)
            .await
    }

    /// [`ObservedDriver::observe`] of a write of `handed` (an `insertEvent`'s
    /// event, as the checker follows it through the trace).
    async fn observe_writing<T>(
        &self,
        call: &'static str,
        handed: event::Handed,
        work: impl std::future::Future<Output = Result<T, PersistError>>,
    ) -> Result<T, PersistError> {
        let mut in_flight = InFlight::start(self, call);
        in_flight.handed = handed;
        let result = work.await;
        in_flight.error = Some(result.as_ref().err().map(|e| e.message.clone()));
        result
    }
}

/// One call from start to end. Dropped before it finished (its caller gave
/// up at a phase deadline), it is recorded as abandoned with its age.
struct InFlight<'a> {
    calls: &'a Mutex<Calls>,
    trace: &'a Trace,
    driver: &'static str,
    id: u64,
    call: &'static str,
    /// `Some(outcome)` once the call returned.
    error: Option<Option<String>>,
    /// The event an `insertEvent` writes.
    handed: event::Handed,
    /// In flight for the hang detector until it ends: a store call may
    /// still settle the client's pending call.
    _flight: crate::trace::FlightGuard,
}

impl<'a> InFlight<'a> {
    fn start(driver: &'a ObservedDriver, call: &'static str) -> Self {
        let calls = driver.calls.as_ref();
        let mut guard = calls.lock().unwrap_or_else(|p| p.into_inner());
        guard.next += 1;
        let id = guard.next;
        guard.pending.insert(id, (call, Instant::now()));
        let what = format!("the persist store ({}): {call}", driver.inner.name());
        InFlight {
            calls,
            trace: &driver.trace,
            driver: driver.inner.name(),
            id,
            call,
            error: None,
            handed: event::Handed::default(),
            _flight: driver.trace.in_flight(crate::trace::Flight::Store, what),
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, started)) = calls.pending.remove(&self.id) else {
            return;
        };
        let error = self
            .error
            .take()
            .unwrap_or_else(|| Some(ABANDONED.to_string()));
        let finished = FinishedCall {
            call: self.call,
            took: started.elapsed(),
            ended: Instant::now(),
            error,
        };
        calls.finished.push(finished.clone());
        drop(calls);
        let mut store = store_event(self.driver, &finished);
        store.event = std::mem::take(&mut self.handed);
        self.trace.emit(Event::Store(store));
    }
}

/// A finished call as the trace's `store` event: logged at its end with its
/// duration, as an `http` event is.
fn store_event(driver: &'static str, call: &FinishedCall) -> event::Store {
    event::Store {
        call: call.call.into(),
        driver: driver.into(),
        ms: Some((call.took.as_micros() as f64 / 100.0).round() / 10.0),
        ok: Some(call.error.is_none()),
        error: call
            .error
            .as_ref()
            .map(|error| error.chars().take(ERROR_LIMIT_CHARS).collect()),
        event: event::Handed::default(),
    }
}

/// The error of a call its caller stopped waiting for.
pub(crate) const ABANDONED: &str = "no answer yet when the caller gave up";

impl CallLog {
    /// The driver's short name: `rivet`, `sqlite`.
    pub(crate) fn driver(&self) -> &'static str {
        self.driver
    }

    /// The longest-running call still in flight, and for how long.
    pub(crate) fn oldest_pending(&self) -> Option<(&'static str, Duration)> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls
            .pending
            .values()
            .map(|(call, started)| (*call, started.elapsed()))
            .max_by_key(|(_, took)| *took)
    }

    /// The calls that ended at or after `since`.
    pub(crate) fn finished_since(&self, since: Instant) -> Vec<FinishedCall> {
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
        let mut handed = event::Handed {
            session: Some(event.session_id.clone()),
            event_index: u64::try_from(event.event_index).ok(),
            sender: Some(event.sender.as_str().to_string()),
            conn: Some(event.connection_id.clone()),
            ..event::Handed::default()
        };
        crate::trace::fill_handed(&mut handed, &event.payload);
        self.observe_writing(
            "insertEvent",
            handed,
            self.inner.insert_event(session_id, event),
        )
        .await
    }
}

#[cfg(test)]
pub(crate) mod tests;
