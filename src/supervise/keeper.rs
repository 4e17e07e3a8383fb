//! The keeper: a small process (`continuity keeper`, hidden) that outlives
//! the harness just long enough to kill what the harness started when the
//! harness dies in a way it cannot clean up after — SIGKILL, a crash, the
//! OOM killer. The harness holds one end of a socket pair whose other end
//! is the keeper's stdin, and tells it each process group it starts (`group
//! PGID STARTTIME`) or stops (`ungroup PGID`); when that closes without
//! `release` (the kernel closes it however the harness dies), the keeper
//! SIGKILLs every group whose leader is still the process recorded, then
//! every process carrying the run's owner tag (see [`super::owner`]).
//!
//! `PR_SET_PDEATHSIG` alone would not do: it fires when the spawning
//! *thread* exits (tokio's blocking threads come and go), and it reaches
//! neither grandchildren nor programs that start their own group.

use super::owner;
use std::collections::HashMap;
use std::io::BufRead;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the harness waits, on its way out, for the keeper's last sweep.
const FINISH_BOUND: Duration = Duration::from_secs(5);

/// The harness's side of a keeper: the keeper process and the harness's
/// end of its stdin, owned by the run's [`super::Supervisor`].
pub(super) struct Keeper {
    line: Mutex<Option<(Child, UnixStream)>>,
}

impl Keeper {
    /// Starts the keeper for the owner `tag` (the running binary,
    /// re-executed). Its own process group keeps it out of a terminal's Ctrl-C.
    pub(super) fn start(tag: &str) -> Result<Keeper, super::ProcessError> {
        use super::ProcessError;
        let exe = std::env::current_exe()
            .map_err(ProcessError::io("cannot find the continuity binary"))?;
        let (line, keeper_end) =
            UnixStream::pair().map_err(ProcessError::io("cannot start the keeper process"))?;
        let child = Command::new(exe)
            .args(["keeper", "--owner", tag])
            .stdin(Stdio::from(OwnedFd::from(keeper_end)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(ProcessError::io("cannot start the keeper process"))?;
        Ok(Keeper {
            line: Mutex::new(Some((child, line))),
        })
    }

    #[allow(unsafe_code)]
    fn send(&self, line: &str) {
        let guard = self.line.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, socket)) = guard.as_ref() else {
            return;
        };
        let text = format!("{line}\n");
        // A socket, not a pipe: a keeper that died gets the harness an EPIPE
        // (MSG_NOSIGNAL), never a SIGPIPE, whatever that signal's disposition.
        // A dead keeper cannot be helped; the harness still cleans up itself.
        // SAFETY: send(2) of a live buffer on a socket we own.
        let _ = unsafe {
            libc::send(
                socket.as_raw_fd(),
                text.as_ptr().cast(),
                text.len(),
                libc::MSG_NOSIGNAL,
            )
        };
    }

    /// Tells the keeper about a group the harness started (its leader's pid).
    pub(super) fn track(&self, pgid: i32) {
        if let Some(started) = owner::start_time(pgid) {
            self.send(&format!("group {pgid} {started}"));
        }
    }

    /// Tells the keeper a group was stopped (or handed over) by the harness.
    pub(super) fn untrack(&self, pgid: i32) {
        self.send(&format!("ungroup {pgid}"));
    }

    /// Lets the keeper go without killing anything.
    pub(super) fn release(&self) {
        self.send("release");
        self.finish();
    }

    /// Closes the keeper's stdin and waits (a few seconds at most) for its
    /// final sweep, so the keeper is not left running either. Idempotent.
    pub(super) fn finish(&self) {
        let taken = self.line.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some((mut child, line)) = taken else {
            return;
        };
        drop(line);
        let until = Instant::now() + FINISH_BOUND;
        while Instant::now() < until {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The keeper's main loop: reads the harness's lines until the pipe closes.
/// Returns the exit code.
#[allow(unsafe_code)]
pub fn run(tag: &str) -> i32 {
    for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGPIPE] {
        // SAFETY: ignoring a signal installs no handler code.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
    let mut groups: HashMap<i32, u64> = HashMap::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("group"), Some(pgid), Some(started)) => {
                if let (Ok(pgid), Ok(started)) = (pgid.parse(), started.parse()) {
                    groups.insert(pgid, started);
                }
            }
            (Some("ungroup"), Some(pgid), None) => {
                if let Ok(pgid) = pgid.parse() {
                    groups.remove(&pgid);
                }
            }
            (Some("release"), None, None) => return 0,
            _ => {}
        }
    }
    // The harness is gone without releasing us: nothing it started may stay.
    for (pgid, started) in groups {
        if let Some(leader) = owner::verified(pgid, started) {
            leader.send_to_group(libc::SIGKILL);
        }
    }
    owner::sweep(tag);
    0
}
