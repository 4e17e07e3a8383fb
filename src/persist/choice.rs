//! Which session store each cell of a run gets: a persist choice from the
//! command line (`--persist`, repeatable: the persistence axis), the config
//! file (`[run] persist`) or the local stack (its Rivet actor), and what
//! each stack can provide ([`StackStores`]: the factories of its Rivet
//! actor and its Postgres), which turns a choice that needs a stack's
//! server into that stack's factory, or into the reason it cannot run.

use super::PersistDriver;
use std::fmt;
use std::sync::Arc;

/// Makes a cell's persist store; `key` is unique per cell.
pub type PersistFactory =
    Arc<dyn Fn(&str) -> Result<Arc<dyn PersistDriver>, super::PersistError> + Send + Sync>;

/// Which session store each cell gets.
#[derive(Clone)]
pub enum PersistChoice {
    /// A fresh SQLite file per cell, in the run folder.
    Sqlite,
    /// The SDK's default in-memory store, as the seed script uses.
    Memory,
    /// The local stack's Postgres, a schema per cell (resolved per stack by
    /// [`StackStores::resolve`]).
    Postgres,
    /// The local stack's Rivet actor (resolved per stack by [`StackStores::resolve`]).
    Rivet,
    /// IndexedDB in the browser client's page: a store only that client
    /// has (its cells keep no store on the harness's side).
    IndexedDb,
    /// A store made by `factory` (the local stack's Rivet actor), one per
    /// cell; `name` is what reports call it.
    Custom {
        name: String,
        factory: PersistFactory,
    },
    /// A store the stack cannot provide: its cells are skipped (or, when
    /// the store's server failed to start, errors) with `reason`.
    Unavailable {
        name: String,
        reason: String,
        failed: bool,
    },
}

/// What one stack can provide beyond SQLite and memory: a factory per
/// server, or why there is none (its message names the install command or
/// the start failure).
#[derive(Clone)]
pub struct StackStores {
    pub rivet: Result<PersistFactory, StoreAbsent>,
    pub postgres: Result<PersistFactory, StoreAbsent>,
    /// The Postgres database as a URL, for the hosted client's `pg` driver.
    pub postgres_url: Option<String>,
}

/// Why a stack has no such store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreAbsent {
    pub reason: String,
    /// Its server failed to start (the cells are errors), rather than
    /// being absent or not asked for (skipped).
    pub failed: bool,
}

impl StoreAbsent {
    pub fn skipped(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            failed: false,
        }
    }
}

impl Default for StackStores {
    fn default() -> Self {
        let none = |what: &str| {
            Err(StoreAbsent::skipped(format!(
                "{what} runs on continuity's local stack only; this run has none"
            )))
        };
        Self {
            rivet: none("the Rivet actor store"),
            postgres: none("the Postgres store"),
            postgres_url: None,
        }
    }
}

impl StackStores {
    /// `choice` as this stack's cells run it.
    pub fn resolve(&self, choice: &PersistChoice) -> PersistChoice {
        let from = |name: &str, found: &Result<PersistFactory, StoreAbsent>| match found {
            Ok(factory) => PersistChoice::Custom {
                name: name.into(),
                factory: factory.clone(),
            },
            Err(absent) => PersistChoice::Unavailable {
                name: name.into(),
                reason: absent.reason.clone(),
                failed: absent.failed,
            },
        };
        match choice {
            PersistChoice::Postgres => from("postgres", &self.postgres),
            PersistChoice::Rivet => from("rivet", &self.rivet),
            other => other.clone(),
        }
    }
}

impl PersistChoice {
    /// The name reports give the store: `sqlite`, `memory`, `postgres`, `rivet`.
    pub fn name(&self) -> &str {
        match self {
            PersistChoice::Sqlite => "sqlite",
            PersistChoice::Memory => "memory",
            PersistChoice::Postgres => "postgres",
            PersistChoice::Rivet => "rivet",
            PersistChoice::IndexedDb => "indexeddb",
            PersistChoice::Custom { name, .. } | PersistChoice::Unavailable { name, .. } => name,
        }
    }
}

/// A custom store is known by its name (its factory is a closure).
impl PartialEq for PersistChoice {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PersistChoice::Custom { name: a, .. }, PersistChoice::Custom { name: b, .. }) => {
                a == b
            }
            (
                PersistChoice::Unavailable {
                    name: a, reason: r, ..
                },
                PersistChoice::Unavailable {
                    name: b, reason: s, ..
                },
            ) => a == b && r == s,
            (PersistChoice::Sqlite, PersistChoice::Sqlite)
            | (PersistChoice::Memory, PersistChoice::Memory)
            | (PersistChoice::Postgres, PersistChoice::Postgres)
            | (PersistChoice::Rivet, PersistChoice::Rivet)
            | (PersistChoice::IndexedDb, PersistChoice::IndexedDb) => true,
            _ => false,
        }
    }
}

impl fmt::Debug for PersistChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistChoice::Custom { name, .. } => write!(f, "Custom({name:?})"),
            PersistChoice::Unavailable { name, reason, .. } => {
                write!(f, "Unavailable({name:?}: {reason})")
            }
            other => f.write_str(other.name()),
        }
    }
}
