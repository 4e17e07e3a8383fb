//! Postgres driver: session records and events in two tables of one schema
//! (a schema per cell, as the SDK's reference driver takes a `schema`
//! option), over one connection that is made again on the next call when
//! the server went away — what `pg.Pool` does for the SDK's Node drivers.
//! A call in flight when the server stops fails; it is not retried (neither
//! is it by `pg.Pool`), so a store restart shows up as failed writes, which
//! the client records and the integrity checks count.
//!
//! Records and payloads are stored as text, not JSONB: JSONB re-orders an
//! object's keys, and the history must come back as it was written.
//! `tokio-postgres` is the async client the `postgres` crate wraps; the
//! harness is async throughout, so it uses that one directly.

use super::{
    normalize_limit, parse_cursor, Page, PageRequest, PersistDriver, PersistError, Sender,
    SessionEvent, SessionRecord,
};
use async_trait::async_trait;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// The store this driver is, as errors and the trace name it.
const DRIVER: super::Store = super::Store::Postgres;

/// How long one call may wait for the server (a stopped or wedged server
/// must not hold a phase until its deadline without a word).
const CALL_BOUND: Duration = Duration::from_secs(20);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the store is.
#[derive(Debug, Clone)]
pub(crate) struct PostgresConfig {
    /// A libpq connection string: `host=127.0.0.1 port=5432 user=u dbname=d`.
    pub connection: String,
    /// The schema holding this store's tables (letters, digits, `_`).
    pub schema: String,
}

/// Session store in a Postgres schema.
pub(crate) struct PostgresDriver {
    config: PostgresConfig,
    client: tokio::sync::Mutex<Option<Client>>,
}

fn err(message: impl Into<String>) -> PersistError {
    PersistError::new(DRIVER.name(), message)
}

/// The server cannot be reached, or dropped the connection under a call.
fn gone(message: impl Into<String>) -> PersistError {
    PersistError::gone(DRIVER.name(), crate::errors::HarnessPart::Postgres, message)
}

/// A server error's own words (`duplicate key value violates …`), or the
/// cause chain of a connection failure (`connection refused`).
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => crate::errors::error_chain(e),
    }
}

/// A schema name safe to quote into SQL: `[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes.
pub(super) fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && schema.len() <= 63
}

/// A schema name for a cell key (`run-3` → `c_run_3`).
pub(crate) fn schema_for(key: &str) -> String {
    let cleaned: String = key
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '_',
        })
        .collect();
    let mut name = format!("c_{cleaned}");
    name.truncate(63);
    name
}

impl PostgresDriver {
    /// A driver for `config`; nothing is connected until the first call.
    pub(crate) fn new(config: PostgresConfig) -> Result<Self, PersistError> {
        if !valid_schema(&config.schema) {
            return Err(err(format!(
                "invalid schema name {:?}: use letters, digits and _",
                config.schema
            )));
        }
        config
            .connection
            .parse::<tokio_postgres::Config>()
            .map_err(|e| err(format!("invalid connection string: {e}")))?;
        Ok(Self {
            config,
            client: tokio::sync::Mutex::new(None),
        })
    }

    fn table(&self, name: &str) -> String {
        format!("\"{}\".{name}", self.config.schema)
    }

    /// Connects and makes the schema and tables if they are missing.
    async fn connect(&self) -> Result<Client, PersistError> {
        let mut config: tokio_postgres::Config = self
            .config
            .connection
            .parse()
            .map_err(|e| err(format!("invalid connection string: {e}")))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| gone(format!("cannot connect: {}", describe(&e))))?;
        // The connection ends when the server goes away; the client then
        // reports itself closed and the next call connects again.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let schema = &self.config.schema;
        let ddl = format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
             CREATE TABLE IF NOT EXISTS {sessions} (
                 id TEXT PRIMARY KEY,
                 created_at BIGINT NOT NULL,
                 record TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS {events} (
                 id TEXT PRIMARY KEY,
                 session_id TEXT NOT NULL,
                 event_index BIGINT NOT NULL,
                 created_at BIGINT NOT NULL,
                 connection_id TEXT NOT NULL,
                 sender TEXT NOT NULL,
                 payload TEXT NOT NULL,
                 UNIQUE (session_id, event_index)
             );",
            sessions = self.table("sessions"),
            events = self.table("events"),
        );
        match client.batch_execute(&ddl).await {
            Ok(()) => Ok(client),
            // Two stores of one schema creating it at once: the other won.
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(client),
            Err(e) => Err(err(format!("cannot create the tables: {}", describe(&e)))),
        }
    }

    /// Runs `work` on the connection (made first when there is none or the
    /// last one closed), bounded by [`CALL_BOUND`].
    async fn call<T, F>(&self, what: &str, work: F) -> Result<T, PersistError>
    where
        F: for<'c> FnOnce(
            &'c Client,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<T, PersistError>> + Send + 'c>,
        >,
    {
        let bounded = async {
            let mut held = self.client.lock().await;
            if held.as_ref().is_none_or(Client::is_closed) {
                *held = Some(self.connect().await?);
            }
            let client = held.as_ref().expect("connected above");
            let result = work(client).await;
            if client.is_closed() {
                *held = None;
                // The call failed because the connection went: the server's doing.
                return result.map_err(|e| gone(e.message));
            }
            result
        };
        match tokio::time::timeout(CALL_BOUND, bounded).await {
            Ok(result) => result.map_err(|e| PersistError {
                message: format!("{what}: {}", e.message),
                ..e
            }),
            Err(_) => {
                // The connection may be wedged: the next call starts afresh.
                if let Ok(mut held) = self.client.try_lock() {
                    *held = None;
                }
                Err(err(format!(
                    "{what}: no answer within {} s",
                    CALL_BOUND.as_secs()
                )))
            }
        }
    }
}

fn query_err(e: tokio_postgres::Error) -> PersistError {
    err(describe(&e))
}

#[async_trait]
impl PersistDriver for PostgresDriver {
    fn name(&self) -> &'static str {
        DRIVER.name()
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        let sql = format!(
            "SELECT record FROM {} WHERE id = $1",
            self.table("sessions")
        );
        let id = id.to_string();
        self.call("getSession", move |c| {
            Box::pin(async move {
                let row = c.query_opt(&sql, &[&id]).await.map_err(query_err)?;
                row.map(|r| {
                    serde_json::from_str(r.get::<_, &str>(0)).map_err(|e| err(e.to_string()))
                })
                .transpose()
            })
        })
        .await
    }

    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        let offset = parse_cursor(page.cursor.as_deref()) as i64;
        let limit = normalize_limit(page.limit) as i64;
        let table = self.table("sessions");
        self.call("listSessions", move |c| {
            Box::pin(async move {
                let total: i64 = c
                    .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
                    .await
                    .map_err(query_err)?
                    .get(0);
                let rows = c
                    .query(
                        &format!(
                            "SELECT record FROM {table} ORDER BY created_at, id LIMIT $1 OFFSET $2"
                        ),
                        &[&limit, &offset],
                    )
                    .await
                    .map_err(query_err)?;
                let items = rows
                    .iter()
                    .map(|r| {
                        serde_json::from_str(r.get::<_, &str>(0)).map_err(|e| err(e.to_string()))
                    })
                    .collect::<Result<Vec<SessionRecord>, _>>()?;
                let end = offset + items.len() as i64;
                Ok(Page {
                    items,
                    next_cursor: (end < total).then(|| end.to_string()),
                })
            })
        })
        .await
    }

    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError> {
        let sql = format!(
            "INSERT INTO {} (id, created_at, record) VALUES ($1, $2, $3)
             ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at, record = EXCLUDED.record",
            self.table("sessions")
        );
        let json = serde_json::to_string(&record).map_err(|e| err(e.to_string()))?;
        self.call("updateSession", move |c| {
            Box::pin(async move {
                c.execute(&sql, &[&record.id, &record.created_at, &json])
                    .await
                    .map_err(query_err)?;
                Ok(())
            })
        })
        .await
    }

    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        let offset = parse_cursor(page.cursor.as_deref()) as i64;
        let limit = normalize_limit(page.limit) as i64;
        let table = self.table("events");
        let session_id = session_id.to_string();
        self.call("listEvents", move |c| {
            Box::pin(async move {
                let total: i64 = c
                    .query_one(
                        &format!("SELECT COUNT(*) FROM {table} WHERE session_id = $1"),
                        &[&session_id],
                    )
                    .await
                    .map_err(query_err)?
                    .get(0);
                let rows = c
                    .query(
                        &format!(
                            "SELECT id, event_index, session_id, created_at, connection_id, sender, payload
                             FROM {table} WHERE session_id = $1 ORDER BY event_index, id LIMIT $2 OFFSET $3"
                        ),
                        &[&session_id, &limit, &offset],
                    )
                    .await
                    .map_err(query_err)?;
                let mut items = Vec::with_capacity(rows.len());
                for r in &rows {
                    items.push(SessionEvent {
                        id: r.get(0),
                        event_index: r.get(1),
                        session_id: r.get(2),
                        created_at: r.get(3),
                        connection_id: r.get(4),
                        sender: Sender::from_column(DRIVER.name(), r.get(5))?,
                        payload: serde_json::from_str(r.get::<_, &str>(6))
                            .map_err(|e| err(e.to_string()))?,
                    });
                }
                let end = offset + items.len() as i64;
                Ok(Page {
                    items,
                    next_cursor: (end < total).then(|| end.to_string()),
                })
            })
        })
        .await
    }

    async fn insert_event(
        &self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<(), PersistError> {
        // Idempotent on the event's id (a write sent again is no second
        // event); a taken (session, eventIndex) is the SDK's index conflict.
        let sql = format!(
            "INSERT INTO {} (id, session_id, event_index, created_at, connection_id, sender, payload)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
            self.table("events")
        );
        let payload = serde_json::to_string(&event.payload).map_err(|e| err(e.to_string()))?;
        let session_id = session_id.to_string();
        self.call("insertEvent", move |c| {
            Box::pin(async move {
                let sender = event.sender.as_str();
                match c
                    .execute(
                        &sql,
                        &[
                            &event.id,
                            &session_id,
                            &event.event_index,
                            &event.created_at,
                            &event.connection_id,
                            &sender,
                            &payload,
                        ],
                    )
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                        Err(PersistError::index_conflict(
                            DRIVER.name(),
                            format!(
                                "event index {} of session {session_id} is taken: {}",
                                event.event_index,
                                describe(&e)
                            ),
                        ))
                    }
                    Err(e) => Err(query_err(e)),
                }
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests;
