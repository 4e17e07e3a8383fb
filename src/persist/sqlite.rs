//! SQLite driver: one database file that several clients, in this process or
//! others, open at once. WAL mode and a busy timeout let a second client read
//! while the first writes.

use super::{
    normalize_limit, parse_cursor, Page, PageRequest, PersistDriver, PersistError, Sender,
    SessionEvent, SessionRecord,
};
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The store this driver is, as errors and the trace name it.
const DRIVER: super::Store = super::Store::Sqlite;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    event_index INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    connection_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    payload TEXT NOT NULL,
    UNIQUE (session_id, event_index)
);
";

/// Session store in one SQLite file.
pub struct SqliteDriver {
    conn: Arc<Mutex<Connection>>,
}

fn err(e: impl std::fmt::Display) -> PersistError {
    PersistError::new(DRIVER.name(), e.to_string())
}

impl SqliteDriver {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PersistError> {
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path)
            .map_err(|e| err(format!("cannot open {}: {e}", path.display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs a query on the blocking pool so a slow disk never stalls the reactor.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, PersistError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, PersistError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&guard)
        })
        .await
        .map_err(|e| err(format!("query task failed: {e}")))?
    }
}

#[async_trait]
impl PersistDriver for SqliteDriver {
    fn name(&self) -> &'static str {
        DRIVER.name()
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        let id = id.to_string();
        self.with_conn(move |c| {
            let json: Option<String> = c
                .query_row("SELECT record FROM sessions WHERE id = ?1", [&id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(err)?;
            json.map(|j| serde_json::from_str(&j).map_err(err))
                .transpose()
        })
        .await
    }

    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        self.with_conn(move |c| {
            let offset = parse_cursor(page.cursor.as_deref());
            let limit = normalize_limit(page.limit);
            let total: usize = c
                .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get::<_, i64>(0))
                .map_err(err)? as usize;
            let mut stmt = c
                .prepare("SELECT record FROM sessions ORDER BY created_at, id LIMIT ?1 OFFSET ?2")
                .map_err(err)?;
            let rows = stmt
                .query_map(params![limit as i64, offset as i64], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(err)?;
            let mut items = Vec::new();
            for row in rows {
                items.push(serde_json::from_str(&row.map_err(err)?).map_err(err)?);
            }
            let end = offset + items.len();
            Ok(Page {
                items,
                next_cursor: (end < total).then(|| end.to_string()),
            })
        })
        .await
    }

    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError> {
        self.with_conn(move |c| {
            let json = serde_json::to_string(&record).map_err(err)?;
            c.execute(
                "INSERT INTO sessions (id, created_at, record) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET created_at = excluded.created_at, record = excluded.record",
                params![record.id, record.created_at, json],
            )
            .map_err(err)?;
            Ok(())
        })
        .await
    }

    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        let session_id = session_id.to_string();
        self.with_conn(move |c| {
            let offset = parse_cursor(page.cursor.as_deref());
            let limit = normalize_limit(page.limit);
            let total: usize = c
                .query_row(
                    "SELECT COUNT(*) FROM events WHERE session_id = ?1",
                    [&session_id],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(err)? as usize;
            let mut stmt = c
                .prepare(
                    "SELECT id, event_index, session_id, created_at, connection_id, sender, payload
                     FROM events WHERE session_id = ?1 ORDER BY event_index, id LIMIT ?2 OFFSET ?3",
                )
                .map_err(err)?;
            let rows = stmt
                .query_map(params![session_id, limit as i64, offset as i64], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                    ))
                })
                .map_err(err)?;
            let mut items = Vec::new();
            for row in rows {
                let (id, event_index, session_id, created_at, connection_id, sender, payload) =
                    row.map_err(err)?;
                items.push(SessionEvent {
                    id,
                    event_index,
                    session_id,
                    created_at,
                    connection_id,
                    sender: Sender::from_column(DRIVER.name(), &sender)?,
                    payload: serde_json::from_str(&payload).map_err(err)?,
                });
            }
            let end = offset + items.len();
            Ok(Page {
                items,
                next_cursor: (end < total).then(|| end.to_string()),
            })
        })
        .await
    }

    async fn insert_event(
        &self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<(), PersistError> {
        let session_id = session_id.to_string();
        self.with_conn(move |c| {
            let payload = serde_json::to_string(&event.payload).map_err(err)?;
            let result = c.execute(
                "INSERT INTO events (id, session_id, event_index, created_at, connection_id, sender, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    event.id,
                    session_id,
                    event.event_index,
                    event.created_at,
                    event.connection_id,
                    event.sender.as_str(),
                    payload
                ],
            );
            match result {
                Ok(_) => Ok(()),
                Err(rusqlite::Error::SqliteFailure(f, msg))
                    if f.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    Err(PersistError::index_conflict(
                        DRIVER.name(),
                        format!(
                            "event index {} of session {session_id} is taken: {}",
                            event.event_index,
                            msg.unwrap_or_default()
                        ),
                    ))
                }
                Err(e) => Err(err(e)),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::contract;

    #[tokio::test]
    async fn satisfies_the_driver_contract() {
        let dir = tempfile::tempdir().unwrap();
        contract::check_driver(&SqliteDriver::open(dir.path().join("s.db")).unwrap()).await;
    }

    #[tokio::test]
    async fn a_second_handle_on_the_same_file_sees_the_first_ones_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let first = SqliteDriver::open(&path).unwrap();
        let second = SqliteDriver::open(&path).unwrap();
        first
            .update_session(contract::record("s", 1))
            .await
            .unwrap();
        first
            .insert_event("s", contract::event("s", 1))
            .await
            .unwrap();
        first
            .insert_event("s", contract::event("s", 2))
            .await
            .unwrap();
        assert_eq!(
            second.get_session("s").await.unwrap(),
            Some(contract::record("s", 1))
        );
        let events = second
            .list_events("s", PageRequest::default())
            .await
            .unwrap();
        assert_eq!(
            events.items,
            vec![contract::event("s", 1), contract::event("s", 2)]
        );
    }

    #[tokio::test]
    async fn a_duplicate_event_index_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let driver = SqliteDriver::open(dir.path().join("c.db")).unwrap();
        driver
            .insert_event("s", contract::event("s", 1))
            .await
            .unwrap();
        let mut dup = contract::event("s", 1);
        dup.id = "other".into();
        let e = driver.insert_event("s", dup).await.unwrap_err();
        assert_eq!(
            e.kind,
            crate::persist::PersistErrorKind::IndexConflict,
            "{e}"
        );
    }

    /// A file that is not a database (corrupted, or another program's): a
    /// clear error naming the driver at open, never a panic.
    #[test]
    fn a_corrupted_file_is_an_error_naming_the_driver() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.db");
        std::fs::write(
            &path,
            b"this is not an SQLite database, only a few garbage bytes".repeat(200),
        )
        .unwrap();
        let e = SqliteDriver::open(&path).err().expect("must fail");
        assert_eq!(e.driver, "sqlite");
        assert!(e.to_string().contains("file is not a database"), "{e}");
    }

    #[test]
    fn an_unopenable_path_is_an_error_not_a_panic() {
        let e = SqliteDriver::open("/nonexistent-dir/x/y.db")
            .err()
            .expect("must fail");
        assert!(e.message.contains("cannot open"), "{e}");
    }
}
