//! A `continuity run` started in the background, as a test watches it:
//! its `--message-format json` events as they come, its exit code and
//! stderr once it ends, and the process killed should the test fail first.

use serde_json::Value;
use std::path::Path;

/// A started harness, SIGKILLed (its keeper then sweeps) should a failed
/// assertion leave it running.
pub struct Harness(pub std::process::Child);

impl std::ops::Deref for Harness {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Harness {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `continuity run ARGS --message-format json --out OUT`, started: its
/// stdout's lines arrive on the receiver as they are printed.
pub fn spawn_run(out: &Path, args: &[&str]) -> (Harness, std::sync::mpsc::Receiver<Value>) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--message-format", "json", "--out", out.to_str().unwrap()]);
    let mut child = super::continuity_command(&all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(value) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(value);
            }
        }
    });
    (Harness(child), rx)
}

/// The child's exit code, waiting two minutes at most.
pub fn exit_code(child: &mut std::process::Child) -> Option<i32> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::time::Instant::now() < until {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("the run did not end within two minutes of its signals");
}

/// Waits (two minutes at most) for the first event of type `kind`.
pub fn first_event(events: &std::sync::mpsc::Receiver<Value>, kind: &str) -> Value {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        let event = events
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {kind} within two minutes"));
        if event["type"] == kind {
            return event;
        }
    }
}

/// What the child wrote on stderr, once it has exited.
pub fn stderr_of(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Running processes in `dir` whose command line holds `word`, by pid.
pub fn pids_with(dir: &Path, word: &str) -> Vec<i32> {
    super::processes_in(dir)
        .into_iter()
        .filter(|p| p.contains(word))
        .filter_map(|p| p.split(':').next()?.parse().ok())
        .collect()
}

/// SIGKILLs the process group `member` is in: a component of a run this
/// test started (every component leads its own group), killed as a crash
/// or someone else would.
#[allow(unsafe_code)]
pub fn kill_group(member: i32) {
    let stat = std::fs::read_to_string(format!("/proc/{member}/stat")).unwrap();
    // `pid (comm) state ppid pgrp …`: the name may hold spaces, not `)`.
    let group: i32 = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .nth(2)
        .and_then(|g| g.parse().ok())
        .unwrap();
    // SAFETY: kill(2) on the group of a process the test's own run started.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGKILL) }, 0);
}
