//! Issue 43, items 6 and 8: helpers (a candidate's `--version` check)
//! run in a process group of their own, bounded in time and output, and a
//! stopping signal is handled from a command's first instruction: a
//! `--server-bin` whose `--version` leaves a child holding its output no
//! longer hangs `run`, and a signal during that check exits 2 (not the
//! default action's 130/143) with nothing of the check left running.

use crate::support::continuity_command;
use crate::support::hostile_run::run_within;
use continuity::exit_codes;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A `--server-bin` stand-in: a script with `body`, executable.
fn script(dir: &Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("sandbox-agent");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Whether a live process's command line holds `word`.
fn running_with(word: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']));
        !zombie && String::from_utf8_lossy(&cmdline).contains(word)
    })
}

#[test]
fn a_version_check_whose_child_holds_its_output_does_not_hang_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    // Answers as sandbox-agent does, and leaves a child holding stdout.
    let bin = script(
        tmp.path(),
        "echo 'sandbox-agent 0.4.2'\nsleep 605.4343 &\nexit 0",
    );
    let spec = format!("fix={}", bin.display());
    let out = tmp.path().join("run");
    let started = Instant::now();
    let mut command = continuity_command([
        "run",
        "--server-bin",
        &spec,
        "--target",
        "no-such-target",
        "--out",
        out.to_str().unwrap(),
    ]);
    command.current_dir(tmp.path());
    let ran = run_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(
        ran.status.code(),
        Some(i32::from(exit_codes::USAGE)),
        "{stderr}"
    );
    assert!(stderr.contains("kept its output open"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        !running_with("605.4343"),
        "the check's child is left running"
    );
}

#[test]
fn a_signal_during_a_version_check_exits_2_and_leaves_nothing_running() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = script(
        tmp.path(),
        "echo started > \"$(dirname \"$0\")/started\"\nsleep 606.4343\necho 'sandbox-agent 0.4.2'",
    );
    let spec = format!("fix={}", bin.display());
    let mut command = continuity_command(["run", "--server-bin", &spec]);
    command
        .current_dir(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while !tmp.path().join("started").exists() {
        assert!(Instant::now() < until, "the version check never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("continuity did not end on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert_eq!(
        status.code(),
        Some(i32::from(exit_codes::INCOMPLETE)),
        "{status:?}: {stderr}"
    );
    let gone_by = Instant::now() + Duration::from_secs(5);
    while running_with("606.4343") && Instant::now() < gone_by {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !running_with("606.4343"),
        "the check's process is left running"
    );
}
