//! Which session store a cell keeps its sessions in: one value of the
//! persistence axis, the one type that `--persist`, the config file's
//! `[run] persist`, the matrix, the report's `persist` and the
//! expectations' `persist` glob all convert into. Each store's name is its
//! variant's, lowercased by serde, so it is spelled nowhere else.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

crate::listed_enum! {
    /// A session store: a value of the persistence axis.
    #[derive(
        Debug,
        Clone,
        Copy,
        PartialEq,
        Eq,
        Hash,
        PartialOrd,
        Ord,
        Serialize,
        Deserialize,
    )]
    #[serde(rename_all = "lowercase")]
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
}

impl Store {
    /// Every store, in `--persist`'s order.
    pub fn all() -> &'static [Store] {
        <Store as crate::wire_name::Listed>::VARIANTS
    }

    /// The name reports, flags and the config file give the store.
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// What `--persist NAME` keeps sessions in, as its help says it.
    pub fn help(self) -> &'static str {
        match self {
            Store::Memory => "In-memory per client, as the seed script (a second client sees nothing)",
            Store::Sqlite => "A SQLite file per cell in the run folder: clients of a cell share history",
            Store::Postgres => {
                "The local stack's Postgres server (Debian's package), a schema per cell"
            }
            Store::Rivet => "The local stack's Rivet actor (the default when the Rivet layer runs)",
            Store::IndexedDb => {
                "IndexedDB in the browser client's page (--client browser only), a database per cell"
            }
        }
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStore(pub String);

impl std::fmt::Display for UnknownStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = crate::wire_name::names::<Store>();
        write!(f, "{:?} is no session store ({known})", self.0)
    }
}

impl std::error::Error for UnknownStore {}

/// A store from its name, as a report or the config file writes it.
impl FromStr for Store {
    type Err = UnknownStore;

    fn from_str(name: &str) -> Result<Store, UnknownStore> {
        crate::wire_name::parse(name).ok_or_else(|| UnknownStore(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_reports_and_the_config_file_spell_every_store_alike() {
        for &store in Store::all() {
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
