//! Which session store a cell keeps its sessions in: one value of the
//! persistence axis, the one type that `--persist`, the config file's
//! `[run] persist`, the matrix and the report's `persist` all convert into.
//! Each store's name is its variant's, lowercased alike by clap and serde
//! (a test holds the two together), so it is spelled nowhere else.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A session store. The doc comments are `--persist`'s help.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ValueEnum,
)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lower")]
pub enum Store {
    /// In-memory per client, as the seed script (a second client sees nothing).
    Memory,
    /// A SQLite file per cell in the run folder: clients of a cell share history.
    Sqlite,
    /// The local stack's Postgres server (Debian's package), a schema per cell.
    Postgres,
    /// The local stack's Rivet actor (the default when the Rivet layer runs).
    Rivet,
    /// IndexedDB in the browser client's page (--client browser only), a database per cell.
    IndexedDb,
}

impl Store {
    /// Every store, in `--persist`'s order.
    pub fn all() -> &'static [Store] {
        Store::value_variants()
    }

    /// The name reports, flags and the config file give the store.
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// Whether the store is a server of the stack's own (Postgres, the
    /// Rivet actor), which each stack resolves to its own factory.
    pub fn served(self) -> bool {
        matches!(self, Store::Postgres | Store::Rivet)
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no store's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{:?} is no session store ({})", .0, Store::all().iter().map(|s| s.name()).collect::<Vec<_>>().join(", "))]
pub struct UnknownStore(pub String);

/// A store from its name, as a report or the config file writes it.
impl FromStr for Store {
    type Err = UnknownStore;

    fn from_str(name: &str) -> Result<Store, UnknownStore> {
        Store::all()
            .iter()
            .copied()
            .find(|s| s.name() == name)
            .ok_or_else(|| UnknownStore(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_reports_and_the_config_file_spell_every_store_alike() {
        for &store in Store::all() {
            let flag = store.to_possible_value().unwrap();
            assert_eq!(flag.get_name(), store.name());
            assert_eq!(serde_json::to_value(store).unwrap(), store.name());
            assert_eq!(store.name().parse::<Store>(), Ok(store));
        }
        let names: Vec<_> = Store::all().iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            ["memory", "sqlite", "postgres", "rivet", "indexeddb"]
        );
        let unknown = "mysql".parse::<Store>().unwrap_err().to_string();
        assert!(unknown.contains("memory, sqlite"), "{unknown}");
    }
}
