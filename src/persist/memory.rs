//! In-memory driver, bounded like the SDK's `InMemorySessionPersistDriver`:
//! at most 1024 sessions (oldest by `createdAt` evicted first) and 500 events per
//! session (oldest dropped first). Nothing is shared between drivers.

use super::{
    paginate, Page, PageRequest, PersistDriver, PersistError, SessionEvent, SessionRecord,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;

pub(super) const DEFAULT_MAX_SESSIONS: usize = 1024;
pub(super) const DEFAULT_MAX_EVENTS_PER_SESSION: usize = 500;

#[derive(Default)]
struct State {
    sessions: HashMap<String, SessionRecord>,
    events: HashMap<String, Vec<SessionEvent>>,
}

/// Session store in process memory.
pub struct MemoryDriver {
    max_sessions: usize,
    max_events_per_session: usize,
    state: Mutex<State>,
}

impl Default for MemoryDriver {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_SESSIONS, DEFAULT_MAX_EVENTS_PER_SESSION)
    }
}

impl MemoryDriver {
    /// A store with the given caps; a zero cap falls back to the SDK default.
    pub(crate) fn new(max_sessions: usize, max_events_per_session: usize) -> Self {
        Self {
            max_sessions: if max_sessions == 0 {
                DEFAULT_MAX_SESSIONS
            } else {
                max_sessions
            },
            max_events_per_session: if max_events_per_session == 0 {
                DEFAULT_MAX_EVENTS_PER_SESSION
            } else {
                max_events_per_session
            },
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-updated in a way
        // that matters to readers, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn by_creation(a: &SessionRecord, b: &SessionRecord) -> std::cmp::Ordering {
    a.created_at
        .cmp(&b.created_at)
        .then_with(|| a.id.cmp(&b.id))
}

#[async_trait]
impl PersistDriver for MemoryDriver {
    fn name(&self) -> &'static str {
        super::Store::Memory.name()
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        Ok(self.lock().sessions.get(id).cloned())
    }

    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        let state = self.lock();
        let mut sorted: Vec<SessionRecord> = state.sessions.values().cloned().collect();
        sorted.sort_by(by_creation);
        Ok(paginate(&sorted, &page))
    }

    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError> {
        let mut state = self.lock();
        state.events.entry(record.id.clone()).or_default();
        state.sessions.insert(record.id.clone(), record);
        if state.sessions.len() > self.max_sessions {
            let overflow = state.sessions.len() - self.max_sessions;
            let mut sorted: Vec<SessionRecord> = state.sessions.values().cloned().collect();
            sorted.sort_by(by_creation);
            for evicted in sorted.into_iter().take(overflow) {
                state.sessions.remove(&evicted.id);
                state.events.remove(&evicted.id);
            }
        }
        Ok(())
    }

    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        let state = self.lock();
        let mut all = state.events.get(session_id).cloned().unwrap_or_default();
        all.sort_by(|a, b| {
            a.event_index
                .cmp(&b.event_index)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(paginate(&all, &page))
    }

    async fn insert_event(
        &self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<(), PersistError> {
        let mut state = self.lock();
        let events = state.events.entry(session_id.to_string()).or_default();
        events.push(event);
        if events.len() > self.max_events_per_session {
            let excess = events.len() - self.max_events_per_session;
            events.drain(..excess);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::contract;

    #[tokio::test]
    async fn satisfies_the_driver_contract() {
        contract::check_driver(&MemoryDriver::default()).await;
    }

    #[tokio::test]
    async fn evicts_the_oldest_session_past_the_cap() {
        let driver = MemoryDriver::new(2, 10);
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            driver
                .update_session(contract::record(id, i as i64))
                .await
                .unwrap();
        }
        assert!(driver.get_session("a").await.unwrap().is_none());
        assert!(driver.get_session("b").await.unwrap().is_some());
        assert!(driver.get_session("c").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn keeps_only_the_newest_events_past_the_cap() {
        let driver = MemoryDriver::new(10, 3);
        driver
            .update_session(contract::record("s", 1))
            .await
            .unwrap();
        for i in 1..=5 {
            driver
                .insert_event("s", contract::event("s", i))
                .await
                .unwrap();
        }
        let page = driver
            .list_events("s", PageRequest::default())
            .await
            .unwrap();
        let indexes: Vec<i64> = page.items.iter().map(|e| e.event_index).collect();
        assert_eq!(indexes, vec![3, 4, 5]);
    }
}
