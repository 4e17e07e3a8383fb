//! Stores every envelope observed for a session as a [`SessionEvent`], in the
//! order the transport saw them, with `eventIndex` 1, 2, 3… per session.
//!
//! As in the SDK, the next index is seeded from the highest index already in
//! the store, so a second client continuing a session carries on the count, and
//! an index conflict is retried with a fresh index (three attempts). Failures
//! never reach the caller of `prompt` (the SDK only logs them); they are kept
//! for the report, where lost events are exactly what the rivet target checks.

use crate::persist::{list_all_events, PersistDriver, PersistError, Sender, SessionEvent};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

const MAX_INSERT_ATTEMPTS: usize = 3;

/// A request to the recording task.
enum Job {
    Record {
        session_id: String,
        connection_id: String,
        sender: Sender,
        envelope: Value,
    },
    Flush(oneshot::Sender<()>),
}

/// Handle to a client's recording task.
#[derive(Clone)]
pub(crate) struct Recorder {
    jobs: mpsc::UnboundedSender<Job>,
    failures: Arc<Mutex<Vec<String>>>,
    stored: Arc<Mutex<HashMap<String, u64>>>,
}

impl Recorder {
    /// Starts the task that writes events into `persist`.
    pub(crate) fn start(persist: Arc<dyn PersistDriver>) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        let failures = Arc::new(Mutex::new(Vec::new()));
        let stored = Arc::new(Mutex::new(HashMap::new()));
        tokio::spawn(run(persist, rx, Arc::clone(&failures), Arc::clone(&stored)));
        Self {
            jobs,
            failures,
            stored,
        }
    }

    /// Queues one envelope for a session.
    pub(crate) fn record(
        &self,
        session_id: String,
        connection_id: String,
        sender: Sender,
        envelope: Value,
    ) {
        let _ = self.jobs.send(Job::Record {
            session_id,
            connection_id,
            sender,
            envelope,
        });
    }

    /// Waits until everything queued so far is stored (or has failed).
    pub(crate) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.jobs.send(Job::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// How many events of a session this recorder stored successfully.
    pub(crate) fn stored(&self, session_id: &str) -> u64 {
        self.stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session_id)
            .copied()
            .unwrap_or(0)
    }

    /// Every event that could not be stored, as a message.
    pub(crate) fn failures(&self) -> Vec<String> {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

async fn run(
    persist: Arc<dyn PersistDriver>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    failures: Arc<Mutex<Vec<String>>>,
    stored: Arc<Mutex<HashMap<String, u64>>>,
) {
    let mut next_index: HashMap<String, i64> = HashMap::new();
    while let Some(job) = jobs.recv().await {
        match job {
            Job::Flush(done) => {
                let _ = done.send(());
            }
            Job::Record {
                session_id,
                connection_id,
                sender,
                envelope,
            } => {
                match store(
                    persist.as_ref(),
                    &mut next_index,
                    &session_id,
                    &connection_id,
                    sender,
                    envelope,
                )
                .await
                {
                    Ok(()) => {
                        *stored
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .entry(session_id)
                            .or_default() += 1;
                    }
                    Err(e) => failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(e.to_string()),
                }
            }
        }
    }
}

/// Why one event did not reach the store.
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error("cannot seed event index of {session_id}: {source}")]
    Seed {
        session_id: String,
        #[source]
        source: PersistError,
    },
    #[error("event of {session_id} lost: {source}")]
    Lost {
        session_id: String,
        #[source]
        source: PersistError,
    },
}

async fn store(
    persist: &dyn PersistDriver,
    next_index: &mut HashMap<String, i64>,
    session_id: &str,
    connection_id: &str,
    sender: Sender,
    envelope: Value,
) -> Result<(), RecordError> {
    if !next_index.contains_key(session_id) {
        let existing = list_all_events(persist, session_id)
            .await
            .map_err(|source| RecordError::Seed {
                session_id: session_id.to_string(),
                source,
            })?;
        let max = existing.iter().map(|e| e.event_index).max().unwrap_or(0);
        next_index.insert(session_id.to_string(), max.max(0) + 1);
    }
    let mut attempts_left = MAX_INSERT_ATTEMPTS;
    loop {
        let index = next_index.get_mut(session_id).expect("seeded above");
        let event = SessionEvent {
            id: uuid::Uuid::new_v4().to_string(),
            event_index: *index,
            session_id: session_id.to_string(),
            created_at: now_ms(),
            connection_id: connection_id.to_string(),
            sender,
            payload: envelope.clone(),
        };
        *index += 1;
        match persist.insert_event(session_id, event).await {
            Ok(()) => return Ok(()),
            // A taken index: the SDK retries with the next one, a few times.
            Err(e) if e.is_index_conflict() && attempts_left > 1 => attempts_left -= 1,
            Err(source) => {
                return Err(RecordError::Lost {
                    session_id: session_id.to_string(),
                    source,
                })
            }
        }
    }
}

/// Milliseconds since the Unix epoch, as JavaScript's `Date.now()`.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
