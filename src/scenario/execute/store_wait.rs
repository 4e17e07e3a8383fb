//! What a phase's calls to the session store cost: the calls that ended
//! during the phase (one abandoned at its deadline included) and the one
//! still running, so a timeout caused by a slow store is attributed to it.

use super::millis;
use crate::persist::observe::{CallLog, FinishedCall};
use serde_json::Value;
use std::time::{Duration, Instant};

/// What a phase's calls to the session store cost.
pub(super) struct StoreWait {
    driver: &'static str,
    finished: Vec<FinishedCall>,
    pending: Option<(&'static str, Duration)>,
}

impl StoreWait {
    pub(super) fn since(log: &CallLog, started: Instant) -> Self {
        StoreWait {
            driver: log.driver(),
            finished: log.finished_since(started),
            // A call that started before the phase only counts for the phase's time.
            pending: log
                .oldest_pending()
                .map(|(call, took)| (call, took.min(started.elapsed()))),
        }
    }

    /// The slowest call (finished, abandoned or still running) and its wait.
    fn slowest(&self) -> Option<(&'static str, Duration, Option<&str>)> {
        self.finished
            .iter()
            .map(|c| (c.call, c.took, c.error.as_deref()))
            .chain(self.pending.map(|(call, took)| (call, took, None)))
            .max_by_key(|(_, took, _)| *took)
    }

    /// The call that kept a timed-out phase waiting for at least half its deadline.
    pub(super) fn blocking(
        &self,
        deadline: Duration,
    ) -> Option<(&'static str, &'static str, Duration)> {
        self.slowest()
            .filter(|(_, took, _)| *took >= deadline / 2)
            .map(|(call, took, _)| (self.driver, call, took))
    }

    pub(super) fn summary(&self) -> Option<Value> {
        let (call, took, error) = self.slowest()?;
        let total: Duration = self.finished.iter().map(|c| c.took).sum();
        Some(serde_json::json!({
            "driver": self.driver,
            "calls": self.finished.len() + usize::from(self.pending.is_some()),
            "totalMs": millis(total),
            "slowest": { "call": call, "ms": millis(took), "error": error },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::observe::tests::{record, Hanging};
    use crate::persist::observe::ObservedDriver;
    use crate::persist::{MemoryDriver, PersistDriver};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_store_call_that_held_the_phase_is_named_with_its_wait() {
        let (driver, log) = ObservedDriver::wrap(Arc::new(Hanging(MemoryDriver::default())));
        let started = Instant::now();
        assert!(driver.get_session("s").await.unwrap().is_none());
        let deadline = Duration::from_millis(200);
        assert!(
            tokio::time::timeout(deadline, driver.update_session(record("s")))
                .await
                .is_err()
        );
        let wait = StoreWait::since(&log, started);
        let (name, call, waited) = wait.blocking(deadline).unwrap();
        assert_eq!((name, call), ("hanging", "updateSession"));
        assert!(waited >= deadline, "{waited:?}");
        let summary = wait.summary().unwrap();
        assert_eq!(summary["calls"], 2);
        assert_eq!(summary["slowest"]["call"], "updateSession");
        // A fast store never takes the blame for a timeout.
        let (fast, log) = ObservedDriver::wrap(Arc::new(MemoryDriver::default()));
        let started = Instant::now();
        fast.update_session(record("s")).await.unwrap();
        assert!(StoreWait::since(&log, started).blocking(deadline).is_none());
    }
}
