//! A helper program run for its output (a candidate's `--version`, `tar`
//! reading a package's manifest, `node` loading an SDK, `npm install`),
//! under the rules the stack's components live by: it leads a process
//! group of its own, listed in the registry while it runs (so a stopping
//! signal's handler, a panic or the end of the harness kills whatever it
//! started), and it is bounded: at most `cap` bytes of each output stream
//! are kept, and `within` covers its exit and the close of its pipes
//! together. A helper past its limit has its whole group killed and is
//! reaped; so does one that exited while something it started still holds
//! its output open (past a short grace). A pipe still held by a process
//! that left the group is abandoned, never waited on.

use std::io::Read;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a helper's pipes may stay open after it exited: what it
/// started gets this long to finish writing.
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// What a helper printed and how it ended.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a helper gave no output.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("cannot run it: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("it did not finish within {} s (killed with everything it started)", .0.as_secs())]
    TimedOut(Duration),
    #[error("it exited, but something it started kept its output open (killed)")]
    HeldOpen,
}

/// The helper's process group, in the registry until dropped; dropped
/// while the group lives, it is killed.
struct Group(i32);

impl Group {
    fn track(pgid: i32) -> Group {
        super::registry()
            .get_or_insert_with(std::collections::HashSet::new)
            .insert(pgid);
        Group(pgid)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if super::group_alive(self.0) {
            super::signal_group(self.0, libc::SIGKILL);
        }
        if let Some(set) = super::registry().as_mut() {
            set.remove(&self.0);
        }
    }
}

/// Runs `command` (stdin closed) to its [`Output`], as the module says.
pub async fn output(
    mut command: tokio::process::Command,
    within: Duration,
    cap: u64,
) -> Result<Output, HelperError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = command.spawn().map_err(HelperError::Spawn)?;
    let group = child.id().map(|pid| Group::track(pid as i32));
    let stdout = tokio::spawn(read_async(child.stdout.take(), cap));
    let stderr = tokio::spawn(read_async(child.stderr.take(), cap));
    let deadline = tokio::time::Instant::now() + within;
    let status = match tokio::time::timeout_at(deadline, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Err(HelperError::Spawn(e)),
        Err(_) => {
            // Not reaped yet: its group is still ours to kill.
            if let Some(group) = &group {
                super::kill_group_async(group.0).await;
            }
            let _ = child.wait().await;
            stdout.abort();
            stderr.abort();
            return Err(HelperError::TimedOut(within));
        }
    };
    let grace = deadline.min(tokio::time::Instant::now() + PIPE_GRACE);
    let pipes = tokio::time::timeout_at(grace, async { (stdout.await, stderr.await) }).await;
    match pipes {
        Ok((stdout, stderr)) => Ok(Output {
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
        }),
        Err(_) => {
            // The group outlives its leader while a member lives, so its
            // id is not reused: kill what holds the pipes.
            if let Some(group) = &group {
                super::kill_group_async(group.0).await;
            }
            Err(HelperError::HeldOpen)
        }
    }
}

/// Keeps the first `cap` bytes of `pipe` and reads the rest into nothing:
/// a pipe closed at the cap would kill a helper that writes on with
/// SIGPIPE (an `npm install` past its cap would fail), and the time limit
/// bounds the draining.
async fn read_async(pipe: Option<impl tokio::io::AsyncRead + Unpin>, cap: u64) -> Vec<u8> {
    use tokio::io::AsyncReadExt as _;
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = (&mut pipe).take(cap).read_to_end(&mut bytes).await;
        let _ = tokio::io::copy(&mut pipe, &mut tokio::io::sink()).await;
    }
    bytes
}

/// [`output`] for a caller off the runtime (a blocking thread): the same
/// group, bounds and kill, with a thread per pipe.
pub fn output_blocking(
    mut command: std::process::Command,
    within: Duration,
    cap: u64,
) -> Result<Output, HelperError> {
    use std::os::unix::process::CommandExt;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().map_err(HelperError::Spawn)?;
    let group = Group::track(child.id() as i32);
    let stdout = read_thread(child.stdout.take(), cap);
    let stderr = read_thread(child.stderr.take(), cap);
    let deadline = Instant::now() + within;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                super::kill_group(group.0);
                let _ = child.wait();
                return Err(HelperError::TimedOut(within));
            }
            Err(e) => {
                super::kill_group(group.0);
                let _ = child.wait();
                return Err(HelperError::Spawn(e));
            }
        }
    };
    let grace = deadline.min(Instant::now() + PIPE_GRACE);
    let take = |rx: std::sync::mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(grace.saturating_duration_since(Instant::now()))
    };
    match (take(stdout), take(stderr)) {
        (Ok(stdout), Ok(stderr)) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        _ => {
            super::kill_group(group.0);
            Err(HelperError::HeldOpen)
        }
    }
}

/// Reads `pipe` (up to `cap` bytes) on a thread of its own; the bytes
/// arrive on the channel once it closes.
fn read_thread(
    pipe: Option<impl Read + Send + 'static>,
    cap: u64,
) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // As `read_async`: the rest drained, never a SIGPIPE.
            let _ = (&mut pipe).take(cap).read_to_end(&mut bytes);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        }
        let _ = tx.send(bytes);
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A helper that exits at once but leaves a child holding its stdout
    /// (as a `--server-bin` whose `--version` daemonises would): the wait
    /// for its output once had no end.
    #[tokio::test]
    async fn a_child_holding_the_output_open_is_killed_and_the_wait_ends() {
        // A sleep of this process's own, as below.
        let secs = format!("601.{}", std::process::id());
        let mut command = tokio::process::Command::new("sh");
        command.args([
            "-c",
            &format!("echo sandbox-agent 0.4.2; sleep {secs} & exit 0"),
        ]);
        let started = Instant::now();
        let e = output(command, Duration::from_secs(10), 1024)
            .await
            .unwrap_err();
        assert!(matches!(e, HelperError::HeldOpen), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let mut command = std::process::Command::new("sh");
        command.args(["-c", &format!("echo x; sleep {secs} & exit 0")]);
        let e = output_blocking(command, Duration::from_secs(10), 1024).unwrap_err();
        assert!(matches!(e, HelperError::HeldOpen), "{e}");
        assert!(
            gone_soon(&["sleep", secs.as_str()].join("\0")),
            "the helper's child is gone"
        );
    }

    /// Whether no live process runs with this command line within 10 s. A
    /// killed process must still be scheduled to die, and on 2 cores at a
    /// load of 12 that took more than 2 s once; a process never killed
    /// (the tests' sleeps last 600 s) still fails it, and a passing run
    /// waits none.
    fn gone_soon(cmdline: &str) -> bool {
        (0..200).any(|_| {
            let left = running(cmdline);
            if left {
                std::thread::sleep(Duration::from_millis(50));
            }
            !left
        })
    }

    /// Whether a live (not zombie) process runs with this command line.
    fn running(cmdline: &str) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        entries.flatten().any(|e| {
            let dir = e.path();
            let line = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']));
            String::from_utf8_lossy(&line).trim_end_matches('\0') == cmdline && !zombie
        })
    }

    #[tokio::test]
    async fn a_helper_past_its_limit_is_killed_with_its_group() {
        // A sleep of this process's own: the /proc scan below sees every
        // process on the machine, another test run's among them.
        let secs = format!("602.{}", std::process::id());
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", &format!("sleep {secs} & sleep {secs}")]);
        let e = output(command, Duration::from_millis(300), 1024)
            .await
            .unwrap_err();
        assert!(matches!(e, HelperError::TimedOut(_)), "{e}");
        assert!(
            gone_soon(&["sleep", secs.as_str()].join("\0")),
            "its whole group is gone within 10 s of the kill"
        );
    }

    /// A helper that writes past its cap is drained, not cut: a pipe
    /// closed at the cap killed it with SIGPIPE once the pipe's buffer
    /// (64 KiB) was full, and a short output only lost that race sometimes.
    #[tokio::test]
    async fn an_output_past_its_cap_is_kept_to_the_cap_and_the_rest_drained() {
        let mut command = tokio::process::Command::new("head");
        command.args(["-c", "300000", "/dev/zero"]);
        let out = output(command, Duration::from_secs(10), 100).await.unwrap();
        assert_eq!(out.stdout.len(), 100, "the output is capped");
        assert!(out.status.success(), "{:?}", out.status);
        let mut command = std::process::Command::new("head");
        command.args(["-c", "300000", "/dev/zero"]);
        let out = output_blocking(command, Duration::from_secs(10), 100).unwrap();
        assert_eq!(out.stdout.len(), 100, "the output is capped");
        assert!(out.status.success(), "{:?}", out.status);
    }
}
