//! A cell's session store, from its point on the matrix's persistence
//! axis ([`Store`], resolved to the worker's own stack by
//! [`super::Worker::take_point`]): which target × store combinations cannot
//! run (and why), and the store the cell's Rust clients get (the driver a
//! hosted client builds is `client_axis::hosted_store`).
//!
//! Skipped combinations, each with its reason in the cell:
//! - target `store` restarts the store's server, so it runs with
//!   `postgres` only: `memory` lives in the client's own memory and
//!   `sqlite` is a file the client's process opens (no server to restart);
//!   the Rivet actor's restarts are the `rivet` and `rivet-engine` targets.
//! - a store the stack cannot provide (no Postgres installed, the Rivet
//!   layer down): skipped with the install command, or an error when its
//!   server failed to start.

use super::PersistChoice;
use crate::persist::{SqliteDriver, Store};
use crate::scenario::CellStore;
use crate::targets::{BuiltinTarget, TargetId};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the `store` target (or a pause of the store) is not applicable to
/// `persist`, if it is not: a store with no server of its own has nothing
/// to restart or pause, so its cell would say nothing about a restart
/// (`not_applicable`).
pub(super) fn not_applicable(target: &TargetId, persist: &PersistChoice) -> Option<String> {
    let pauses_store = target
        .builtin()
        .and_then(BuiltinTarget::paused)
        .is_some_and(|(of, _)| of == BuiltinTarget::Store);
    if *target != BuiltinTarget::Store && !pauses_store {
        return None;
    }
    if matches!(persist, PersistChoice::Unavailable { .. }) {
        return None;
    }
    let why = match persist.store() {
        Store::Postgres => return None,
        Store::IndexedDb => "IndexedDB is the page's own storage, in the browser",
        Store::Memory => "--persist memory keeps the store in the client's own memory",
        Store::Sqlite => "--persist sqlite is a file the client's own process opens",
        Store::Rivet => {
            "the Rivet actor's restarts are the `rivet` (runner) and `rivet-engine` targets"
        }
    };
    Some(format!(
        "the `{target}` target acts on the session store's server (Postgres): {why}, so there is no store server to act on"
    ))
}

/// Why a cell's persist store could not be made.
#[derive(Debug, thiserror::Error)]
pub(super) enum StoreError {
    #[error("cannot create {}: {source}", .dir.display())]
    Folder {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Persist(#[from] crate::persist::PersistError),
    /// The stack has no such store: skipped (`failed`: its server did not start, an error).
    #[error("the {store} store cannot run here: {reason}")]
    Unavailable {
        store: Store,
        reason: String,
        failed: bool,
    },
}

/// Where a cell attempt's SQLite file lives (the Rust and the hosted client's alike).
pub(super) fn sqlite_file(run_dir: &Path, cell: &str) -> PathBuf {
    run_dir.join("persist").join(format!("{cell}.db"))
}

/// The store the cell's Rust clients share (or each their own in memory).
pub(super) fn cell_store(
    persist: &PersistChoice,
    run_dir: &Path,
    cell: &str,
    key: &str,
) -> Result<CellStore, StoreError> {
    match persist {
        // The page holds the browser client's store; no Rust client runs.
        PersistChoice::Own(Store::Memory | Store::IndexedDb) => Ok(CellStore::PerClientMemory),
        PersistChoice::Own(Store::Sqlite) => {
            let file = sqlite_file(run_dir, cell);
            let dir = file.parent().unwrap_or(run_dir).to_path_buf();
            std::fs::create_dir_all(&dir).map_err(|source| StoreError::Folder { dir, source })?;
            Ok(CellStore::Shared(Arc::new(SqliteDriver::open(file)?)))
        }
        PersistChoice::Served { factory, .. } => Ok(CellStore::Shared(factory(key)?)),
        PersistChoice::Unavailable {
            store,
            reason,
            failed,
        } => Err(StoreError::Unavailable {
            store: *store,
            reason: reason.clone(),
            failed: *failed,
        }),
        PersistChoice::Own(unresolved @ (Store::Postgres | Store::Rivet)) => {
            Err(StoreError::Unavailable {
                store: *unresolved,
                reason: "no stack resolved it to its server".into(),
                failed: true,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_postgres_has_a_store_server_to_restart() {
        assert!(not_applicable(
            &BuiltinTarget::Store.into(),
            &PersistChoice::Own(Store::Postgres)
        )
        .is_none());
        assert!(not_applicable(
            &BuiltinTarget::Agent.into(),
            &PersistChoice::Own(Store::Memory)
        )
        .is_none());
        let memory = not_applicable(
            &BuiltinTarget::Store.into(),
            &PersistChoice::Own(Store::Memory),
        )
        .unwrap();
        assert!(memory.contains("client's own memory"), "{memory}");
        let sqlite = not_applicable(
            &BuiltinTarget::Store.into(),
            &PersistChoice::Own(Store::Sqlite),
        )
        .unwrap();
        assert!(sqlite.contains("file"), "{sqlite}");
        let rivet = not_applicable(
            &BuiltinTarget::Store.into(),
            &PersistChoice::Own(Store::Rivet),
        )
        .unwrap();
        assert!(rivet.contains("`rivet`"), "{rivet}");
    }
}
