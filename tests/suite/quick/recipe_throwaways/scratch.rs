//! The scratch copy the throwaways are applied to: the tree copied as
//! the working tree has it, each patch applied with git, the result
//! synced into the copy cargo checks (a file written only when its bytes
//! differ), and that `cargo check` into a target dir of its own.

use super::{recipes_dir, top, Throwaway, REDO};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files of the tree: tracked ones and new ones git does not ignore,
/// as the working tree has them (uncommitted changes included).
fn tree_files() -> Vec<PathBuf> {
    let out = Command::new("git")
        .current_dir(top())
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .expect("git ls-files: the test copies the tree git knows, and applies patches with git");
    assert!(
        out.status.success(),
        "git ls-files: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .filter(|p| top().join(p).is_file())
        .collect()
}

/// Every file under `dir`, by its path from `dir`.
fn files_under(dir: &Path, from: &Path, out: &mut BTreeSet<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the scratch copy") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files_under(&path, from, out);
        } else {
            out.insert(path.strip_prefix(from).expect("under it").to_path_buf());
        }
    }
}

/// Makes `tree` hold exactly `staging`'s files, writing only those whose
/// bytes differ: cargo then rechecks only what changed since the last run.
pub(crate) fn sync(staging: &Path, tree: &Path) {
    let mut wanted = BTreeSet::new();
    files_under(staging, staging, &mut wanted);
    for rel in &wanted {
        let bytes = std::fs::read(staging.join(rel)).expect("read staging");
        let dest = tree.join(rel);
        if std::fs::read(&dest).ok().as_deref() != Some(&bytes[..]) {
            std::fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
            std::fs::write(&dest, bytes).expect("write the scratch copy");
        }
    }
    let mut present = BTreeSet::new();
    if tree.is_dir() {
        files_under(tree, tree, &mut present);
    }
    for stale in present.difference(&wanted) {
        std::fs::remove_file(tree.join(stale)).expect("remove a stale file of the copy");
    }
}

/// A fresh copy of the tree in `staging`, each throwaway applied in the
/// table's order; `Err` names the one that did not apply.
pub(crate) fn copy_and_apply(
    table: &[Throwaway],
    scratch: &Path,
    staging: &Path,
) -> Result<(), String> {
    if staging.exists() {
        std::fs::remove_dir_all(staging).expect("remove the last staging copy");
    }
    for rel in tree_files() {
        let dest = staging.join(&rel);
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(top().join(&rel), &dest).expect("copy the tree");
    }
    for (i, t) in table.iter().enumerate() {
        // The ceiling keeps git from finding the repository the scratch
        // dir sits in: it would apply the patch there, or skip its paths.
        let out = Command::new("git")
            .current_dir(staging)
            .env("GIT_CEILING_DIRECTORIES", scratch)
            .args(["apply", "--whitespace=nowarn"])
            .arg(recipes_dir().join(&t.patch))
            .output()
            .expect("run git apply");
        if !out.status.success() {
            let before: Vec<&str> = table[..i].iter().map(|t| t.patch.as_str()).collect();
            return Err(format!(
                "tests/recipes/{} (the throwaway of `{}`) no longer applies to the tree{}: {}\n{REDO}",
                t.patch,
                t.recipe,
                if before.is_empty() { String::new() } else { format!(" with {} applied first", before.join(", ")) },
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    Ok(())
}

/// `cargo check` of the copy, into a target dir of its own, at a lower
/// priority (`nice`): the stack tests beside it keep the CPU when they
/// need it, and it takes what their waits leave. (One job starved it: it
/// ended last, after 840 s of a suite under load 9.)
pub(crate) fn check(tree: &Path, target: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new("nice")
        .args(["-n", "10"])
        .arg(cargo)
        .current_dir(tree)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .args([
            "check",
            "--workspace",
            "--all-targets",
            "--offline",
            "--locked",
            "--quiet",
            "--target-dir",
        ])
        .arg(target)
        .output()
        .expect("run cargo check on the scratch copy");
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    Err(lines[lines.len().saturating_sub(60)..].join("\n"))
}
