//! Which session store each cell of a run gets: the one persist choice,
//! from the command line (`--persist`), the config file (`[run] persist`)
//! or the local stack (its Rivet actor, with the factory that makes a
//! store per cell).

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
    /// A store made by `factory` (the local stack's Rivet actor), one per
    /// cell; `name` is what reports call it.
    Custom {
        name: String,
        factory: PersistFactory,
    },
}

impl PersistChoice {
    /// The name reports give the store: `sqlite`, `memory`, or the custom one's.
    pub fn name(&self) -> &str {
        match self {
            PersistChoice::Sqlite => "sqlite",
            PersistChoice::Memory => "memory",
            PersistChoice::Custom { name, .. } => name,
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
            (PersistChoice::Sqlite, PersistChoice::Sqlite)
            | (PersistChoice::Memory, PersistChoice::Memory) => true,
            _ => false,
        }
    }
}

impl fmt::Debug for PersistChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistChoice::Custom { name, .. } => write!(f, "Custom({name:?})"),
            other => f.write_str(other.name()),
        }
    }
}
