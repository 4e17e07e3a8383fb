//! `stack.json`: what a stack folder holds running, so `stack status` and
//! `stack down` (or a person) can find it. It is written before the first
//! component starts and rewritten as each one starts or stops, so a stack
//! whose harness died half-way is still found. Each process is recorded with
//! its start time and the stack's owner tag: the proof, checked before any
//! signal, that a pid still names what the stack started. The folder's
//! `stack.lock` (flock) makes one `stack up` at a time per folder.

use super::StackError;
use crate::folder_lock::FolderLock;
use crate::supervise::Lifecycle;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) const STATE_FILE: &str = "stack.json";
const LOCK_FILE: &str = "stack.lock";

/// What a stack folder holds running.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct StackState {
    /// Empty until every component is up.
    #[serde(default)]
    pub base_url: String,
    /// The owner tag every component carries in its environment.
    #[serde(default)]
    pub owner: String,
    pub components: Vec<Component>,
}

impl StackState {
    pub(crate) fn read(dir: &Path) -> Result<StackState, StackError> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).map_err(StackError::Read)?;
        serde_json::from_str(&text).map_err(|source| StackError::Json { path, source })
    }

    /// Writes the file whole (a temporary file renamed over it): a reader
    /// never sees half a file.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), StackError> {
        let path = dir.join(STATE_FILE);
        let temporary = dir.join(format!(".{STATE_FILE}.tmp"));
        let json = serde_json::to_string_pretty(self).map_err(StackError::Serialize)?;
        std::fs::write(&temporary, json)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(StackError::io(format!("cannot write {}", path.display())))
    }
}

/// One running program of the stack.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Component {
    /// The restart target that owns the process.
    pub target: String,
    pub program: String,
    pub url: String,
    pub log: PathBuf,
    pub pid: Option<u32>,
    /// The process's start time (clock ticks since boot): with `pid`, the
    /// proof checked before signalling it.
    #[serde(default)]
    pub started: Option<u64>,
}

/// The record of one stack this process runs, kept as it goes: the
/// [`Journal`](crate::supervise::Journal) of its components' processes.
/// Every clone writes the same folder's file. When the last clone goes
/// (the stack and every process started under it are gone), a stack with
/// nothing left running leaves no `stack.json`.
#[derive(Clone)]
pub(crate) struct StackJournal {
    inner: Arc<Mutex<Recording>>,
}

struct Recording {
    dir: PathBuf,
    state: StackState,
    /// Off once the stack is handed over (`stack up`): the file is final.
    on: bool,
}

impl StackJournal {
    /// Starts recording the stack in `dir` (writes an empty `stack.json`).
    pub(crate) fn begin(dir: &Path, owner: &str) -> Result<StackJournal, StackError> {
        let state = StackState {
            base_url: String::new(),
            owner: owner.to_string(),
            components: Vec::new(),
        };
        state.write(dir)?;
        Ok(StackJournal {
            inner: Arc::new(Mutex::new(Recording {
                dir: dir.to_path_buf(),
                state,
                on: true,
            })),
        })
    }

    fn recording(&self) -> std::sync::MutexGuard<'_, Recording> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a started process under its target's name, replacing the
    /// previous process of that target (after a restart).
    pub(crate) fn record_start(
        &self,
        target: &str,
        program: &Path,
        log: &Path,
        pid: u32,
        started: Option<u64>,
    ) {
        let mut recording = self.recording();
        if !recording.on {
            return;
        }
        let program = program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let components = &mut recording.state.components;
        components.retain(|c| c.target != target);
        components.push(Component {
            target: target.to_string(),
            program,
            url: String::new(),
            log: log.to_path_buf(),
            pid: Some(pid),
            started,
        });
        let _ = recording.state.write(&recording.dir);
    }

    /// The process recorded under `target` now: its pid and start time.
    pub(crate) fn recorded(&self, target: &str) -> Option<(u32, Option<u64>)> {
        let recording = self.recording();
        let component = recording
            .state
            .components
            .iter()
            .find(|c| c.target == target)?;
        Some((component.pid?, component.started))
    }

    /// Records that the harness stopped a process.
    pub(crate) fn record_stop(&self, pid: u32) {
        let mut recording = self.recording();
        if !recording.on {
            return;
        }
        let before = recording.state.components.len();
        recording.state.components.retain(|c| c.pid != Some(pid));
        if recording.state.components.len() != before {
            let _ = recording.state.write(&recording.dir);
        }
    }

    /// Stops recording: the stack was handed over and its file written whole.
    pub(crate) fn close(&self) {
        self.recording().on = false;
    }
}

impl crate::supervise::Journal for StackJournal {
    fn record(&self, change: &Lifecycle<'_>) {
        match *change {
            Lifecycle::Started {
                name,
                program,
                log,
                pid,
                started,
            } => self.record_start(name, program, log, pid, started),
            Lifecycle::Stopped { pid } => self.record_stop(pid),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.on && self.state.components.is_empty() {
            let _ = std::fs::remove_file(self.dir.join(STATE_FILE));
        }
    }
}

/// One `stack` command at a time on a folder (see [`crate::folder_lock`]).
pub(crate) fn lock_folder(dir: &Path, command: &str) -> Result<FolderLock, StackError> {
    FolderLock::try_acquire(dir, LOCK_FILE, command).map_err(StackError::Lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_per_folder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_folder(dir.path(), "continuity stack up").unwrap();
        let e = lock_folder(dir.path(), "continuity stack down")
            .err()
            .unwrap();
        assert!(matches!(e, StackError::Lock(_)), "{e}");
        assert!(e.to_string().contains("stack.lock"), "{e}");
        assert!(e.to_string().contains("(continuity stack up)"), "{e}");
        drop(first);
        assert!(lock_folder(dir.path(), "continuity stack up").is_ok());
    }

    #[test]
    fn each_stack_folder_records_its_own_components() {
        let root = tempfile::tempdir().unwrap();
        let (one, two) = (root.path().join("stack"), root.path().join("stack-2"));
        let mut journals = Vec::new();
        for dir in [&one, &two] {
            std::fs::create_dir_all(dir).unwrap();
            journals.push(StackJournal::begin(dir, "tag").unwrap());
        }
        let program = Path::new("/bin/sandbox-agent");
        journals[0].record_start(
            "agent",
            program,
            &one.join("sandbox-agent/log"),
            1_000_001,
            None,
        );
        journals[1].record_start(
            "agent",
            program,
            &two.join("sandbox-agent/log"),
            1_000_002,
            None,
        );
        let pids = |dir: &Path| -> Vec<Option<u32>> {
            let state = StackState::read(dir).unwrap();
            state.components.iter().map(|c| c.pid).collect()
        };
        assert_eq!(pids(&one), [Some(1_000_001)]);
        assert_eq!(pids(&two), [Some(1_000_002)], "stack-2 is not `stack`");
        journals[1].record_stop(1_000_002);
        assert!(pids(&two).is_empty());
        assert_eq!(pids(&one), [Some(1_000_001)]);
        drop(journals);
        assert!(
            !two.join(STATE_FILE).exists(),
            "an empty stack leaves no file"
        );
        assert!(
            one.join(STATE_FILE).exists(),
            "a running one stays findable"
        );
    }

    #[test]
    fn a_closed_journal_leaves_the_handed_over_file_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let journal = StackJournal::begin(dir.path(), "tag").unwrap();
        journal.record_start(
            "agent",
            Path::new("/bin/x"),
            &dir.path().join("x.log"),
            7,
            None,
        );
        let whole = StackState {
            base_url: "http://127.0.0.1:1".into(),
            ..StackState::read(dir.path()).unwrap()
        };
        whole.write(dir.path()).unwrap();
        journal.close();
        journal.record_stop(7);
        drop(journal);
        assert_eq!(StackState::read(dir.path()).unwrap(), whole);
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
