//! Session store: the TypeScript SDK's `SessionPersistDriver` contract.
//!
//! A driver keeps [`SessionRecord`]s and their [`SessionEvent`] history. Clients
//! in one cell share a driver, so a second client sees what the first recorded
//! (when the driver is shared storage, as SQLite or the Rivet actor are).
//! Paging follows the SDK: a cursor is the stringified offset of the next item.

mod choice;
mod memory;
pub(crate) mod observe;
mod postgres;
pub(crate) mod rivet;
mod sqlite;

pub(crate) use choice::{PersistChoice, PersistFactory, StackStores, StoreAbsent};
pub(crate) use continuity_report::Store;
pub use memory::MemoryDriver;
pub(crate) use postgres::{schema_for as postgres_schema_for, PostgresConfig, PostgresDriver};
pub(crate) use rivet::{RivetConfig, RivetDriver};
pub use sqlite::SqliteDriver;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The SDK's default page size for list calls.
pub(crate) const DEFAULT_LIST_LIMIT: usize = 100;

/// One client-side session: what the SDK stores in `updateSession`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub id: String,
    pub agent: String,
    pub agent_session_id: String,
    pub last_connection_id: String,
    #[serde(deserialize_with = "lenient::int")]
    pub created_at: i64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_int"
    )]
    pub destroyed_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_init: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Value>,
}

/// Who sent an envelope, from the client's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sender {
    Client,
    Agent,
}

impl Sender {
    /// As serialized: `client`, `agent`.
    pub(crate) fn as_str(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// The sender a SQL driver's `sender` column holds ([`Sender::as_str`]'s
    /// words), or `driver`'s error naming what it found instead.
    pub(crate) fn from_column(driver: &'static str, text: &str) -> Result<Sender, PersistError> {
        [Sender::Client, Sender::Agent]
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                PersistError::new(
                    driver,
                    format!("unknown sender {text:?} in the events table"),
                )
            })
    }
}

/// One JSON-RPC envelope sent or received for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEvent {
    pub id: String,
    #[serde(deserialize_with = "lenient::int")]
    pub event_index: i64,
    pub session_id: String,
    #[serde(deserialize_with = "lenient::int")]
    pub created_at: i64,
    pub connection_id: String,
    pub sender: Sender,
    pub payload: Value,
}

/// A page request: `cursor` is the offset returned as `next_cursor` by the previous page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// A page of results; `next_cursor` is `None` on the last page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// What went wrong in a store: the driver name, what kind of failure it
/// was, and a human-readable cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("persist ({driver}): {message}")]
pub struct PersistError {
    pub driver: &'static str,
    pub kind: PersistErrorKind,
    pub message: String,
}

/// The failures a caller reacts to differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistErrorKind {
    /// The event's `(sessionId, eventIndex)` is taken; the SDK retries with a new index.
    IndexConflict,
    /// The store's server, a part of continuity's own, cannot be reached
    /// or dropped the connection (refused, closed): unless the cell
    /// restarts that part on purpose, the harness's error, not the SDK's.
    Gone(crate::errors::HarnessPart),
    /// Anything else: the store refused the call or answered nonsense.
    Store,
}

impl PersistError {
    pub(crate) fn new(driver: &'static str, message: impl Into<String>) -> Self {
        Self {
            driver,
            kind: PersistErrorKind::Store,
            message: message.into(),
        }
    }

    pub(crate) fn index_conflict(driver: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind: PersistErrorKind::IndexConflict,
            ..Self::new(driver, message)
        }
    }

    /// `driver`'s error for a server (`part`) that cannot be reached or
    /// dropped the connection.
    pub(crate) fn gone(
        driver: &'static str,
        part: crate::errors::HarnessPart,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind: PersistErrorKind::Gone(part),
            ..Self::new(driver, message)
        }
    }

    pub(crate) fn is_index_conflict(&self) -> bool {
        self.kind == PersistErrorKind::IndexConflict
    }

    /// The part of continuity's own that is gone under the store, if that
    /// is the failure.
    pub(crate) fn harness_part(&self) -> Option<crate::errors::HarnessPart> {
        match self.kind {
            PersistErrorKind::Gone(part) => Some(part),
            PersistErrorKind::IndexConflict | PersistErrorKind::Store => None,
        }
    }
}

/// The five operations of the SDK's `SessionPersistDriver`.
#[async_trait]
pub trait PersistDriver: Send + Sync {
    /// A short name for reports: `memory`, `sqlite`, `postgres`, `rivet`.
    fn name(&self) -> &'static str;
    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError>;
    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError>;
    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError>;
    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError>;
    async fn insert_event(&self, session_id: &str, event: SessionEvent)
        -> Result<(), PersistError>;
}

/// Reads every event of a session, following cursors to the end.
pub async fn list_all_events(
    driver: &dyn PersistDriver,
    session_id: &str,
) -> Result<Vec<SessionEvent>, PersistError> {
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = driver
            .list_events(
                session_id,
                PageRequest {
                    cursor,
                    limit: Some(500),
                },
            )
            .await?;
        all.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(all),
        }
    }
}

/// The SDK's cursor parsing: anything that is not a non-negative integer means "from the start".
pub(crate) fn parse_cursor(cursor: Option<&str>) -> usize {
    cursor
        .and_then(|c| c.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

/// The SDK's limit normalisation: missing or zero falls back to the default.
pub(crate) fn normalize_limit(limit: Option<usize>) -> usize {
    match limit {
        Some(n) if n >= 1 => n,
        _ => DEFAULT_LIST_LIMIT,
    }
}

/// Slices an already ordered list the way the SDK's `paginate` does.
pub(crate) fn paginate<T: Clone>(items: &[T], page: &PageRequest) -> Page<T> {
    let offset = parse_cursor(page.cursor.as_deref()).min(items.len());
    let limit = normalize_limit(page.limit);
    let end = offset.saturating_add(limit).min(items.len());
    Page {
        items: items[offset..end].to_vec(),
        next_cursor: (end < items.len()).then(|| end.to_string()),
    }
}

/// Integers that a store may hand back as floats (Rivet's JSON encoding
/// returns integers above 2^32, such as millisecond timestamps, as `1.7e12`).
mod lenient {
    use serde::{Deserialize, Deserializer};

    fn to_int<E: serde::de::Error>(n: serde_json::Number) -> Result<i64, E> {
        if let Some(i) = n.as_i64() {
            return Ok(i);
        }
        match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
            _ => Err(E::custom(format!("expected an integer, got {n}"))),
        }
    }

    pub(super) fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        to_int(serde_json::Number::deserialize(d)?)
    }

    pub(super) fn opt_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        Option::<serde_json::Number>::deserialize(d)?
            .map(to_int)
            .transpose()
    }
}

#[cfg(test)]
pub(crate) mod contract;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_prints_its_wire_name_as_serde_writes_it() {
        assert_eq!(
            serde_json::to_value(Sender::Agent).unwrap(),
            Sender::Agent.as_str()
        );
        assert_eq!(crate::wire_name::of(&Sender::Agent), Sender::Agent.as_str());
    }

    #[test]
    fn integers_sent_back_as_floats_are_accepted() {
        let json = r#"{"id":"e","eventIndex":3.0,"sessionId":"s","createdAt":1795954397216.0,"connectionId":"c","sender":"agent","payload":{}}"#;
        let event: SessionEvent = serde_json::from_str(json).unwrap();
        assert_eq!(
            (event.event_index, event.created_at),
            (3, 1_795_954_397_216)
        );
        assert!(serde_json::from_str::<SessionEvent>(&json.replace("3.0", "3.5")).is_err());
        let record = r#"{"id":"s","agent":"mock","agentSessionId":"a","lastConnectionId":"c","createdAt":1.0,"destroyedAt":2.0}"#;
        let record: SessionRecord = serde_json::from_str(record).unwrap();
        assert_eq!(record.destroyed_at, Some(2));
    }

    #[test]
    fn an_index_conflict_stays_matchable_through_the_client() {
        let conflict =
            PersistError::index_conflict("sqlite", "event index 3 of session s is taken");
        let through = crate::client::ClientError::from(conflict.clone());
        assert!(
            matches!(&through, crate::client::ClientError::Persist(e) if e.is_index_conflict()),
            "{through}"
        );
        assert_eq!(through.to_string(), conflict.to_string());
        assert!(!PersistError::new("sqlite", "disk I/O error").is_index_conflict());
    }
}
