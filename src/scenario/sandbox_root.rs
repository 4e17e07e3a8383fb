//! `/tmp/continuity-sandbox`, where each cell keeps its sandbox files
//! (`<run id>-<cell>/`, through the server's filesystem API). A cell's
//! teardown removes its folder; what no teardown got to (a second Ctrl-C,
//! SIGKILL, a crash) is removed by the run at its end, and by the next run
//! that starts: each run holds an `flock` on `.runs/<run id>.lock` while it
//! lives, so a folder whose run holds no lock belongs to a dead run. On a
//! deployment the server's `/tmp` is elsewhere and nothing is found here.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where the cells' sandbox folders are.
pub(crate) const ROOT: &str = "/tmp/continuity-sandbox";

/// A folder with no lock file at all (a run from before locks) is a dead
/// run's only once nothing has touched it for this long.
const UNLOCKED_AGE: Duration = Duration::from_secs(3600);

/// The lock a live run holds on its id: released when dropped or when the
/// process dies, however it dies. The file stays: the next sweep removes
/// it with whatever folders the run left.
pub(crate) struct RunClaim {
    _file: std::fs::File,
}

fn lock_path(root: &Path, id: &str) -> PathBuf {
    root.join(".runs")
        .join(format!("{}.lock", crate::file_name::safe(id)))
}

/// An exclusive lock on `path` (std's is flock(2) here), or `None` when
/// another process holds it.
fn try_lock(path: &Path) -> Option<std::fs::File> {
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    file.try_lock().is_ok().then_some(file)
}

/// Marks run `id` as alive until the claim is dropped; `None` when the
/// lock cannot be made (the sweep then spares the run's folders for an hour).
pub(crate) fn claim(id: &str) -> Option<RunClaim> {
    claim_in(Path::new(ROOT), id)
}

fn claim_in(root: &Path, id: &str) -> Option<RunClaim> {
    let path = lock_path(root, id);
    std::fs::create_dir_all(path.parent()?).ok()?;
    let file = try_lock(&path)?;
    Some(RunClaim { _file: file })
}

/// The run id a cell's folder belongs to: `<run id>-<cell>`.
fn run_of(folder: &str) -> Option<&str> {
    folder.split_once('-').map(|(id, _)| id)
}

/// Removes the sandbox folders of run `id` (all its cells).
pub(crate) fn remove_run(id: &str) -> usize {
    remove_in(Path::new(ROOT), |run| run == id)
}

/// Removes the sandbox folders of runs that are no longer alive.
pub(crate) fn sweep_dead() -> usize {
    sweep_dead_in(Path::new(ROOT))
}

fn sweep_dead_in(root: &Path) -> usize {
    let removed = remove_in(root, |run| {
        let lock = lock_path(root, run);
        if lock.exists() {
            // Dropped at once: the lock was free, so its run is gone.
            try_lock(&lock).is_some()
        } else {
            let folder_age = |name: &str| {
                std::fs::read_dir(root).ok().and_then(|entries| {
                    entries
                        .flatten()
                        .filter(|e| run_of(&e.file_name().to_string_lossy()) == Some(name))
                        .filter_map(|e| e.metadata().ok()?.modified().ok())
                        .max()
                })
            };
            folder_age(run).is_some_and(|m| {
                SystemTime::now()
                    .duration_since(m)
                    .is_ok_and(|age| age > UNLOCKED_AGE)
            })
        }
    });
    // The lock files of dead runs go too.
    if let Ok(entries) = std::fs::read_dir(root.join(".runs")) {
        for entry in entries.flatten() {
            if try_lock(&entry.path()).is_some() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    removed
}

/// Removes every cell folder under `root` whose run `gone` says is over.
fn remove_in(root: &Path, mut gone: impl FnMut(&str) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_folder = entry.file_type().is_ok_and(|t| t.is_dir());
        if name.starts_with('.') || !is_folder {
            continue;
        }
        if run_of(&name).is_some_and(&mut gone) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_folders_of_dead_runs_are_swept() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let live = claim_in(root, "aaaa1111").unwrap();
        for folder in ["aaaa1111-1", "bbbb2222-1", "bbbb2222-ts-2", "cccc3333-1"] {
            std::fs::create_dir_all(root.join(folder).join("x")).unwrap();
        }
        // bbbb2222 was killed: its lock file stays, nobody holds the lock.
        std::fs::write(lock_path(root, "bbbb2222"), b"").unwrap();
        // cccc3333 has no lock file and was touched just now: spared.
        assert_eq!(sweep_dead_in(root), 2);
        let mut left: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        left.sort();
        assert_eq!(left, ["aaaa1111-1", "cccc3333-1"]);
        assert_eq!(remove_in(root, |run| run == "aaaa1111"), 1);
        assert!(
            lock_path(root, "aaaa1111").exists(),
            "a live run's lock stays"
        );
        drop(live);
        sweep_dead_in(root);
        assert!(!lock_path(root, "aaaa1111").exists(), "a dead run's goes");
    }
}
