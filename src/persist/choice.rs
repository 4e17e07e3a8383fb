//! Which session store each cell of a run gets on its worker's stack: the
//! [`Store`] of its point, and what each stack can provide
//! ([`StackStores`]: the factories of its Rivet actor and its Postgres),
//! which turns a store that needs a stack's server into that stack's
//! factory, or into the reason it cannot run.

use super::{PersistDriver, Store};
use std::fmt;
use std::sync::Arc;

/// Makes a cell's persist store; `key` is unique per cell.
pub(crate) type PersistFactory =
    Arc<dyn Fn(&str) -> Result<Arc<dyn PersistDriver>, super::PersistError> + Send + Sync>;

/// A cell's store as one worker's stack provides it: the [`Store`] of the
/// cell's point, with the stack's factory when the store is a server of
/// the stack's own.
#[derive(Clone)]
pub(crate) enum PersistChoice {
    /// A store the harness makes itself per cell (memory, SQLite), or that
    /// the browser client's page keeps (IndexedDB); a served store here is
    /// one no stack resolved yet ([`StackStores::resolve`]).
    Own(Store),
    /// A store of the stack's own server (Postgres, the Rivet actor), one
    /// per cell from `factory`.
    Served {
        store: Store,
        factory: PersistFactory,
    },
    /// A store the stack cannot provide: its cells are skipped (or, when
    /// the store's server failed to start, errors) with `reason`.
    Unavailable {
        store: Store,
        reason: String,
        failed: bool,
    },
}

/// What one stack can provide beyond SQLite and memory: a factory per
/// server, or why there is none (its message names the install command or
/// the start failure).
#[derive(Clone)]
pub(crate) struct StackStores {
    pub rivet: Result<PersistFactory, StoreAbsent>,
    pub postgres: Result<PersistFactory, StoreAbsent>,
    /// The Postgres database as a URL, for the hosted client's `pg` driver.
    pub postgres_url: Option<String>,
}

/// Why a stack has no such store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreAbsent {
    pub reason: String,
    /// Its server failed to start (the cells are errors), rather than
    /// being absent or not asked for (skipped).
    pub failed: bool,
}

impl StoreAbsent {
    pub(crate) fn skipped(reason: impl Into<String>) -> Self {
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
    /// `store` as this stack's cells run it: a served store becomes this
    /// stack's factory, or the reason it has none.
    pub(crate) fn resolve(&self, store: Store) -> PersistChoice {
        let found = match store {
            Store::Postgres => &self.postgres,
            Store::Rivet => &self.rivet,
            own => return PersistChoice::Own(own),
        };
        match found {
            Ok(factory) => PersistChoice::Served {
                store,
                factory: factory.clone(),
            },
            Err(absent) => PersistChoice::Unavailable {
                store,
                reason: absent.reason.clone(),
                failed: absent.failed,
            },
        }
    }
}

impl PersistChoice {
    /// The store, whichever way the stack provides it.
    pub(crate) fn store(&self) -> Store {
        match self {
            PersistChoice::Own(store)
            | PersistChoice::Served { store, .. }
            | PersistChoice::Unavailable { store, .. } => *store,
        }
    }
}

/// A served store is known by its store (its factory is a closure).
impl PartialEq for PersistChoice {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PersistChoice::Own(a), PersistChoice::Own(b))
            | (PersistChoice::Served { store: a, .. }, PersistChoice::Served { store: b, .. }) => {
                a == b
            }
            (
                PersistChoice::Unavailable {
                    store: a,
                    reason: r,
                    ..
                },
                PersistChoice::Unavailable {
                    store: b,
                    reason: s,
                    ..
                },
            ) => a == b && r == s,
            _ => false,
        }
    }
}

impl fmt::Debug for PersistChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistChoice::Own(store) => write!(f, "{store}"),
            PersistChoice::Served { store, .. } => write!(f, "Served({store})"),
            PersistChoice::Unavailable { store, reason, .. } => {
                write!(f, "Unavailable({store}: {reason})")
            }
        }
    }
}
