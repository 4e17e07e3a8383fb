//! The handle a process is started under: its run's owner tag and keeper,
//! and the journal of the stack it belongs to. Made once by the command
//! that owns a run (`run`, `stack up`), cloned to whoever starts a process;
//! nothing here is process-wide but the group registry it adds to.

use super::{keeper, owner, registry, ProcessError};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// A start or stop of a [`super::ManagedProcess`], told to the journal.
#[derive(Debug)]
pub enum Lifecycle<'a> {
    Started {
        name: &'a str,
        program: &'a Path,
        log: &'a Path,
        pid: u32,
        /// The leader's start time, the proof that the pid is still ours.
        started: Option<u64>,
    },
    Stopped {
        pid: u32,
    },
}

/// Hears every [`Lifecycle`] change of the processes started under a
/// [`Supervisor`] that carries it.
pub trait Journal: Send + Sync {
    fn record(&self, change: &Lifecycle<'_>);
}

/// What the processes of one run (or one `stack up`) are started under.
/// Cheap to clone: every clone shares the owner tag and the keeper.
/// [`Supervisor::default`] has neither (a library caller's, a test's):
/// its groups are still in the process-wide registry.
#[derive(Clone, Default)]
pub struct Supervisor {
    owner: Option<Arc<Owner>>,
    journal: Option<Arc<dyn Journal>>,
}

/// A run's owner tag and the keeper that knows its groups.
struct Owner {
    tag: String,
    /// `None` only in unit tests: a keeper re-executes the running binary,
    /// which there is the test harness.
    keeper: Option<keeper::Keeper>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("owner", &self.owner_tag())
            .field("journal", &self.journal.is_some())
            .finish()
    }
}

impl Supervisor {
    /// Everything started under the returned handle carries `tag` (see
    /// [`owner::new_tag`]), and a keeper process, started here, kills it all
    /// should the harness die without cleaning up.
    pub fn owned(tag: String) -> Result<Supervisor, ProcessError> {
        let keeper = Some(keeper::Keeper::start(&tag)?);
        Ok(Supervisor {
            owner: Some(Arc::new(Owner { tag, keeper })),
            journal: None,
        })
    }

    #[cfg(test)]
    pub(super) fn tagged_without_keeper(tag: &str) -> Supervisor {
        Supervisor {
            owner: Some(Arc::new(Owner {
                tag: tag.to_string(),
                keeper: None,
            })),
            journal: None,
        }
    }

    fn keeper(&self) -> Option<&keeper::Keeper> {
        self.owner.as_ref().and_then(|o| o.keeper.as_ref())
    }

    /// This handle, with every start and stop also told to `journal`.
    pub fn with_journal(&self, journal: Arc<dyn Journal>) -> Supervisor {
        Supervisor {
            owner: self.owner.clone(),
            journal: Some(journal),
        }
    }

    /// The owner tag every process started under this handle carries.
    pub fn owner_tag(&self) -> Option<&str> {
        self.owner.as_ref().map(|o| o.tag.as_str())
    }

    /// Lists a process group the caller spawned itself (outside
    /// [`super::ManagedProcess`]) so [`super::kill_all_groups`] and the keeper reach it
    /// too; pair with [`Supervisor::untrack_group`].
    pub fn track_group(&self, pgid: i32) {
        registry().get_or_insert_with(HashSet::new).insert(pgid);
        if let Some(keeper) = self.keeper() {
            keeper.track(pgid);
        }
    }

    /// Removes a group from the registry (and the keeper's list) once the
    /// caller has dealt with it.
    pub fn untrack_group(&self, pgid: i32) {
        if let Some(set) = registry().as_mut() {
            set.remove(&pgid);
        }
        if let Some(keeper) = self.keeper() {
            keeper.untrack(pgid);
        }
    }

    pub(super) fn record(&self, change: &Lifecycle<'_>) {
        if let Some(journal) = &self.journal {
            journal.record(change);
        }
    }

    /// SIGKILLs everything that carries the owner tag, wherever it runs,
    /// and waits until it is gone; how many processes there were.
    pub async fn sweep(&self) -> usize {
        let Some(tag) = self.owner_tag().map(str::to_string) else {
            return 0;
        };
        tokio::task::spawn_blocking(move || owner::sweep(&tag))
            .await
            .unwrap_or(0)
    }

    /// Lets the keeper go without killing anything: `stack up` hands its
    /// components over to `stack down`.
    pub fn release_keeper(&self) {
        if let Some(keeper) = self.keeper() {
            keeper.release();
        }
    }

    /// On the way out, after the harness's own cleanup: the keeper's last
    /// sweep, waited for. Dropping the last clone does the same.
    pub fn finish_keeper(&self) {
        if let Some(keeper) = self.keeper() {
            keeper.finish();
        }
    }
}
