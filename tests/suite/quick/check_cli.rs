//! `continuity check` on runs it did not make: two shards of a run made
//! before the checker existed (tests/fixtures/pre-checker, through a
//! gateway that duplicated one event after its restart, both cells
//! passed), merged here; the merged run checked, a shard checked, a copy
//! checked by a user who may not write to it, and run folders whose traces
//! lead out of the folder or are no regular file.

use crate::support::{assert_exit, continuity_command, continuity_with};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn fixture(shard: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pre-checker")
        .join(format!("shard-{shard}"))
}

fn stdout(run: &std::process::Output) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// Copies a folder, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file and folder under `dir`, with its size and modification time.
fn listing(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        out.push((entry.path(), meta.len(), meta.modified().unwrap()));
        if meta.is_dir() {
            out.extend(listing(&entry.path()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_merged_run_made_before_the_checker_fails_where_its_gateway_duplicated() {
    let tmp = tempfile::tempdir().unwrap();
    let merged = tmp.path().join("merged");
    let (one, two) = (fixture(1), fixture(2));
    let merge = continuity_with(
        &[
            "merge",
            "--out",
            merged.to_str().unwrap(),
            one.to_str().unwrap(),
            two.to_str().unwrap(),
        ],
        &[],
    );
    // The merge judges the cells as they were recorded: both passed.
    assert_exit(&merge, 0);
    let check = continuity_with(&["check", merged.to_str().unwrap()], &[]);
    assert_exit(&check, 1);
    let out = stdout(&check);
    for (scenario, boundary, id) in [
        ("recreate-rehydrate", "promptRehydrate", "SSE id 3"),
        ("native-load", "loadSessionAfterRestart", "SSE id 5"),
    ] {
        assert!(
            out.contains("FAIL") && out.contains(&format!("gateway × {scenario} @ {boundary}")),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "gateway × {scenario}: stream duplicate at client — {id} came twice"
            )),
            "{out}"
        );
    }
    // What those traces cannot tell is said, not taken as valid.
    assert!(out.contains("2 of 2 cells checked, 2 violations"), "{out}");
    assert!(
        out.contains("not checkable in 2 cells — ground_truth"),
        "{out}"
    );
    // One shard alone, by its report.json.
    let shard = continuity_with(&["check", one.join("report.json").to_str().unwrap()], &[]);
    assert_exit(&shard, 1);
    assert!(
        stdout(&shard).contains("1 of 1 cells checked, 1 violations"),
        "{}",
        stdout(&shard)
    );
}

#[test]
fn a_run_folder_it_may_not_write_to_is_checked_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    // Readable by everyone, writable by no one but root, who is not who checks it.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = tmp.path().join("artifact");
    copy_dir(&fixture(2), &run);
    fn seal(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                seal(&entry.path());
                std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o555))
                    .unwrap();
            } else {
                std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o444))
                    .unwrap();
            }
        }
    }
    seal(&run);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = listing(&run);
    let mut command = continuity_command(["check", run.to_str().unwrap()]);
    let root = running_as_root();
    if root {
        // As `nobody`: the folder is theirs to read, not to write. With an
        // empty environment but these, so nothing of the harness's leaks in.
        command = std::process::Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_continuity"))
            .args(["check", run.to_str().unwrap()])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", tmp.path())
            .env("NO_COLOR", "1");
    }
    let check = command.output().unwrap();
    assert_exit(&check, 1);
    assert!(
        stdout(&check).contains("gateway × recreate-rehydrate: stream duplicate at client"),
        "{}",
        stdout(&check)
    );
    assert_eq!(listing(&run), before, "check wrote into the run folder");
    // A no-write user really could not have written there.
    if root {
        let probe = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                "touch",
            ])
            .arg(run.join("probe"))
            .output()
            .unwrap();
        assert!(
            !probe.status.success(),
            "nobody could write into the folder"
        );
    }
}

/// Whether this test runs as root (then `nobody` checks the folder).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
}

#[test]
fn a_trace_that_leads_out_of_the_run_folder_or_is_no_file_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_dir(&fixture(1), &run);
    let trace = run.join("cells/001-gateway-native-load-1/trace.jsonl");
    // The real trace moved out, a link to it left in its place.
    let outside = tmp.path().join("outside.jsonl");
    std::fs::rename(&trace, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &trace).unwrap();
    let check = continuity_with(&["check", run.to_str().unwrap()], &[]);
    let out = stdout(&check);
    assert!(out.contains("0 of 1 cells checked"), "{out}");
    assert!(
        out.contains("unreadable:") && out.contains("outside its run folder"),
        "{out}"
    );
    // The recorded verdict stands (the cell passed when it ran), but the
    // check could not be made: exit 2, never the 0 of a check that passed.
    assert!(out.contains("✅"), "{out}");
    assert_exit(&check, 2);
    // A FIFO where the trace should be: refused at once, never waited on.
    std::fs::remove_file(&trace).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&trace)
        .status()
        .unwrap();
    assert!(made.success());
    let check = continuity_with(&["check", run.to_str().unwrap()], &[]);
    let out = stdout(&check);
    assert!(
        out.contains("unreadable:") && out.contains("not a regular file"),
        "{out}"
    );
    // No report at all is a usage error naming the file.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let check = continuity_with(&["check", empty.to_str().unwrap()], &[]);
    assert_exit(&check, 64);
    assert!(String::from_utf8_lossy(&check.stderr).contains("report.json"));
}
