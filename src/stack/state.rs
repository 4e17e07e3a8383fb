//! `stack.json`: what a stack folder holds running, so `stack status` and
//! `stack down` (or a person) can find it. It is written before the first
//! component starts and rewritten as each one starts or stops, so a stack
//! whose harness died half-way is still found. Each process is recorded with
//! its start time and the stack's owner tag: the proof, checked before any
//! signal, that a pid still names what the stack started. The folder's
//! `stack.lock` (flock) makes one `stack up` at a time per folder.

use super::local::Component;
use super::StackError;
use crate::supervise::Lifecycle;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const STATE_FILE: &str = "stack.json";
const LOCK_FILE: &str = "stack.lock";

/// What a stack folder holds running.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StackState {
    /// Empty until every component is up.
    #[serde(default)]
    pub base_url: String,
    /// The owner tag every component carries in its environment.
    #[serde(default)]
    pub owner: String,
    pub components: Vec<Component>,
}

impl StackState {
    pub fn read(dir: &Path) -> Result<StackState, StackError> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).map_err(StackError::Read)?;
        serde_json::from_str(&text).map_err(|source| StackError::Json { path, source })
    }

    /// Writes the file whole (a temporary file renamed over it): a reader
    /// never sees half a file.
    pub fn write(&self, dir: &Path) -> Result<(), StackError> {
        let path = dir.join(STATE_FILE);
        let temporary = dir.join(format!(".{STATE_FILE}.tmp"));
        let json = serde_json::to_string_pretty(self).map_err(StackError::Serialize)?;
        std::fs::write(&temporary, json)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(StackError::io(format!("cannot write {}", path.display())))
    }
}

/// The stack being started by this process, recorded as it goes.
struct Journal {
    dir: PathBuf,
    state: StackState,
}

static JOURNAL: Mutex<Option<Journal>> = Mutex::new(None);

fn journal() -> std::sync::MutexGuard<'static, Option<Journal>> {
    JOURNAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts recording the stack in `dir` (writes an empty `stack.json`).
pub fn begin_journal(dir: &Path, owner: &str) -> Result<(), StackError> {
    let state = StackState {
        base_url: String::new(),
        owner: owner.to_string(),
        components: Vec::new(),
    };
    state.write(dir)?;
    *journal() = Some(Journal {
        dir: dir.to_path_buf(),
        state,
    });
    crate::supervise::set_journal(Some(record));
    Ok(())
}

/// What supervision tells the journal while it is on.
fn record(change: &Lifecycle<'_>) {
    match *change {
        Lifecycle::Started {
            name,
            program,
            log,
            pid,
            started,
        } => record_start(name, program, log, pid, started),
        Lifecycle::Stopped { pid } => record_stop(pid),
    }
}

/// Records a started process under its target's name (replacing the
/// previous process of that target, after a restart).
pub fn record_start(target: &str, program: &Path, log: &Path, pid: u32, started: Option<u64>) {
    let mut guard = journal();
    let Some(journal) = guard.as_mut() else {
        return;
    };
    let program = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    journal.state.components.retain(|c| c.target != target);
    journal.state.components.push(Component {
        target: target.to_string(),
        program,
        url: String::new(),
        log: log.to_path_buf(),
        pid: Some(pid),
        started,
    });
    let _ = journal.state.write(&journal.dir);
}

/// Records that the harness stopped a process.
pub fn record_stop(pid: u32) {
    let mut guard = journal();
    let Some(journal) = guard.as_mut() else {
        return;
    };
    let before = journal.state.components.len();
    journal.state.components.retain(|c| c.pid != Some(pid));
    if journal.state.components.len() != before {
        let _ = journal.state.write(&journal.dir);
    }
}

/// Stops recording. A stack with nothing left running leaves no `stack.json`.
pub fn end_journal() {
    crate::supervise::set_journal(None);
    if let Some(journal) = journal().take() {
        if journal.state.components.is_empty() {
            let _ = std::fs::remove_file(journal.dir.join(STATE_FILE));
        }
    }
}

/// An exclusive `flock` on the folder's `stack.lock`, released when dropped
/// (or when the process dies, however it dies).
pub struct FolderLock {
    _file: std::fs::File,
}

impl FolderLock {
    /// Takes the lock, or says who holds it; never waits.
    pub fn try_acquire(dir: &Path) -> Result<FolderLock, StackError> {
        std::fs::create_dir_all(dir)
            .map_err(StackError::io(format!("cannot create {}", dir.display())))?;
        let path = dir.join(LOCK_FILE);
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(StackError::io(format!("cannot open {}", path.display())))?;
        // SAFETY: flock(2) on a file descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(StackError::Busy {
                dir: dir.to_path_buf(),
                lock: path,
            });
        }
        Ok(FolderLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_per_folder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::try_acquire(dir.path()).unwrap();
        let e = FolderLock::try_acquire(dir.path()).err().unwrap();
        assert!(matches!(e, StackError::Busy { .. }), "{e}");
        assert!(e.to_string().contains("stack.lock"), "{e}");
        drop(first);
        assert!(FolderLock::try_acquire(dir.path()).is_ok());
    }

    #[test]
    fn the_state_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let state = StackState {
            base_url: "http://127.0.0.1:1".into(),
            owner: "abc:/x".into(),
            components: vec![Component {
                target: "agent".into(),
                program: "sandbox-agent".into(),
                url: String::new(),
                log: "/x/a.log".into(),
                pid: Some(42),
                started: Some(7),
            }],
        };
        state.write(dir.path()).unwrap();
        assert_eq!(StackState::read(dir.path()).unwrap(), state);
    }
}
