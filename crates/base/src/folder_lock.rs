//! One command at a time per folder: an exclusive `flock` on a lock file
//! inside it (`run.lock` for a run folder, `stack.lock` for a stack
//! folder). The kernel drops the lock when the process dies, however it
//! dies, so a crashed run never leaves a folder locked. The holder writes
//! its pid and command into the file, so the one refused can name it.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Why a folder could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error("{} is in use by {holder} (it holds {}): wait for it to end, or choose another folder", .dir.display(), .lock.display())]
    Busy {
        dir: PathBuf,
        lock: PathBuf,
        /// `pid 123 (continuity run)`, or what is known of it.
        holder: String,
    },
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An exclusive lock on a folder, released when dropped (or when the
/// process dies).
#[derive(Debug)]
pub struct FolderLock {
    _file: std::fs::File,
}

impl FolderLock {
    /// Takes the lock on `dir` (created if missing) through its file `name`,
    /// recording `command` (`continuity run`) as the holder; or says who
    /// holds it. Never waits.
    pub fn try_acquire(dir: &Path, name: &str, command: &str) -> Result<FolderLock, LockError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LockError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(name);
        let mut file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        // std's lock is flock(2) here, the lock other continuity commands take.
        if let Err(e) = file.try_lock() {
            if let std::fs::TryLockError::Error(source) = e {
                return Err(LockError::Io { path, source });
            }
            let mut text = String::new();
            let _ = file.take(256).read_to_string(&mut text);
            let holder = match text.trim() {
                "" => "another continuity command".to_string(),
                said => said.to_string(),
            };
            return Err(LockError::Busy {
                dir: dir.to_path_buf(),
                lock: path,
                holder,
            });
        }
        let holder = format!("pid {} ({command})\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(io(&path))?;
        Ok(FolderLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_per_folder_named_to_the_next_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::try_acquire(dir.path(), "x.lock", "continuity run").unwrap();
        let e = FolderLock::try_acquire(dir.path(), "x.lock", "continuity run").unwrap_err();
        let pid = format!("pid {} (continuity run)", std::process::id());
        assert!(
            matches!(&e, LockError::Busy { holder, .. } if *holder == pid),
            "{e}"
        );
        assert!(e.to_string().contains("x.lock"), "{e}");
        drop(first);
        // Free once dropped. A child another test forks at that moment
        // shares the lock's open file until its exec closes it (the file is
        // close-on-exec), so the lock may still be held for that moment on
        // a busy machine: up to 2 s, and never past it.
        let free = (0..40).any(|_| {
            let got = FolderLock::try_acquire(dir.path(), "x.lock", "continuity run").is_ok();
            if !got {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            got
        });
        assert!(free, "the lock is free again once dropped");
    }
}
