//! Paths a report names (a cell's `trace`, a copied log) are relative to
//! its run folder, and a report is only text someone may have edited: each
//! is resolved here, and only here, to a path inside the folder. An
//! absolute path, a `..` component, or a symlink leading out of the folder
//! is refused, so `show`, `merge` and the page never read outside it.

use std::path::{Component, Path, PathBuf};

/// A report's path that does not stay inside its run folder.
#[derive(Debug, thiserror::Error)]
#[error("the report's path {given:?} leads outside its run folder {}: {why}", .run_dir.display())]
pub struct OutsideRun {
    pub given: String,
    pub run_dir: PathBuf,
    pub why: &'static str,
}

/// `relative`, as a report names it, inside `run_dir`; refused when it
/// is absolute, holds `..`, or resolves (links followed) outside the
/// folder. A path that does not exist is returned as joined: reading it
/// fails as a missing file does.
pub fn inside(run_dir: &Path, relative: &str) -> Result<PathBuf, OutsideRun> {
    let refuse = |why| OutsideRun {
        given: relative.to_string(),
        run_dir: run_dir.to_path_buf(),
        why,
    };
    let path = Path::new(relative);
    if relative.is_empty() {
        return Err(refuse("an empty path"));
    }
    for part in path.components() {
        match part {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(refuse("it climbs out with `..`")),
            Component::RootDir | Component::Prefix(_) => return Err(refuse("an absolute path")),
        }
    }
    let joined = run_dir.join(path);
    let (Ok(real), Ok(root)) = (joined.canonicalize(), run_dir.canonicalize()) else {
        return Ok(joined);
    };
    if !real.starts_with(&root) {
        return Err(refuse("a symlink leads out of the folder"));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_that_stay_in_the_run_folder_resolve() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        std::fs::create_dir_all(run.join("cells/a")).unwrap();
        std::fs::write(run.join("cells/a/trace.jsonl"), "x").unwrap();
        std::fs::write(tmp.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), run.join("cells/a/link")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), run.join("cells/up")).unwrap();
        let ok = inside(&run, "cells/a/trace.jsonl").unwrap();
        assert_eq!(std::fs::read_to_string(ok).unwrap(), "x");
        assert!(inside(&run, "cells/missing/trace.jsonl").is_ok());
        for (given, why) in [
            ("/etc/passwd", "absolute"),
            ("../secret", "`..`"),
            ("cells/../../secret", "`..`"),
            ("cells/a/link", "symlink"),
            ("cells/up/secret", "symlink"),
            ("", "empty"),
        ] {
            let e = inside(&run, given).unwrap_err();
            assert!(e.to_string().contains(why), "{given}: {e}");
        }
    }
}
