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
//! A keeper that dies while the harness runs (killed by hand) is noticed
//! within half a second, said so, and replaced by one told the same groups.
//!
//! `PR_SET_PDEATHSIG` alone would not do: it fires when the spawning
//! *thread* exits (tokio's blocking threads come and go), and it reaches
//! neither grandchildren nor programs that start their own group.

use super::owner;
use std::collections::HashMap;
use std::io::BufRead;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long the harness waits, on its way out, for the keeper's last sweep.
const FINISH_BOUND: Duration = Duration::from_secs(5);

/// How often the harness checks that its keeper still runs.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// The keeper process, the harness's end of its stdin, and what it was
/// told (so a new keeper can be told it again).
struct Live {
    child: Child,
    line: UnixStream,
    tag: String,
    groups: HashMap<i32, u64>,
}

type Shared = Arc<Mutex<Option<Live>>>;

/// The harness's side of a keeper, owned by the run's [`super::Supervisor`];
/// a watch thread replaces the keeper process should it die.
pub(super) struct Keeper {
    live: Shared,
}

fn lock(live: &Mutex<Option<Live>>) -> std::sync::MutexGuard<'_, Option<Live>> {
    live.lock().unwrap_or_else(|p| p.into_inner())
}

fn send_to(live: &Live, line: &str) {
    let text = format!("{line}\n");
    // A socket, not a pipe: a keeper that died gets the harness an EPIPE
    // (MSG_NOSIGNAL), never a SIGPIPE, whatever that signal's disposition.
    // A dead keeper is replaced by the watch (see `watch`).
    let _ = super::os::send_without_sigpipe(live.line.as_fd(), text.as_bytes());
}

/// A keeper process for `tag` (the running binary, re-executed), told
/// `groups`. Its own process group keeps it out of a terminal's Ctrl-C.
fn spawn(tag: &str, groups: HashMap<i32, u64>) -> Result<Live, super::ProcessError> {
    use super::ProcessError;
    let exe =
        std::env::current_exe().map_err(ProcessError::io("cannot find the continuity binary"))?;
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
    let live = Live {
        child,
        line,
        tag: tag.to_string(),
        groups,
    };
    for (pgid, started) in &live.groups {
        send_to(&live, &format!("group {pgid} {started}"));
    }
    Ok(live)
}

/// Until the keeper is finished, released or dropped: a keeper that exited
/// is said so and replaced by one told every group the old one knew.
fn watch(live: Weak<Mutex<Option<Live>>>) {
    loop {
        std::thread::sleep(WATCH_EVERY);
        let Some(live) = live.upgrade() else {
            return;
        };
        let mut guard = lock(&live);
        let Some(current) = guard.as_mut() else {
            return;
        };
        let Ok(Some(status)) = current.child.try_wait() else {
            continue;
        };
        let pid = current.child.id();
        let (tag, groups) = (current.tag.clone(), current.groups.clone());
        match spawn(&tag, groups) {
            Ok(replacement) => {
                super::warn(&format!(
                    "warning: the keeper process (pid {pid}) ended ({status}); a new one (pid {}) now makes sure nothing outlives the harness",
                    replacement.child.id()
                ));
                *guard = Some(replacement);
            }
            Err(e) => {
                super::warn(&format!(
                    "warning: the keeper process (pid {pid}) ended ({status}) and cannot be replaced ({e}): should the harness be killed, what it started may outlive it"
                ));
                *guard = None;
                return;
            }
        }
    }
}

/// Whether a keeper for `tag` runs: the harness that owns the tag (a run,
/// a `stack up` still starting) is alive, since a keeper outlives its
/// harness only for its last sweep.
pub fn running_for(tag: &str) -> bool {
    let wanted = format!(" keeper --owner {tag}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(owner::command_line)
        .any(|line| line.ends_with(&wanted))
}

impl Keeper {
    /// Starts the keeper for the owner `tag`, and the watch that replaces it.
    pub(super) fn start(tag: &str) -> Result<Keeper, super::ProcessError> {
        let live: Shared = Arc::new(Mutex::new(Some(spawn(tag, HashMap::new())?)));
        let watched = Arc::downgrade(&live);
        std::thread::spawn(move || watch(watched));
        Ok(Keeper { live })
    }

    /// Tells the keeper about a group the harness started (its leader's pid).
    pub(super) fn track(&self, pgid: i32) {
        if let Some(started) = owner::start_time(pgid) {
            if let Some(live) = lock(&self.live).as_mut() {
                live.groups.insert(pgid, started);
                send_to(live, &format!("group {pgid} {started}"));
            }
        }
    }

    /// Tells the keeper a group was stopped (or handed over) by the harness.
    pub(super) fn untrack(&self, pgid: i32) {
        if let Some(live) = lock(&self.live).as_mut() {
            live.groups.remove(&pgid);
            send_to(live, &format!("ungroup {pgid}"));
        }
    }

    /// Lets the keeper go without killing anything: `stack up` hands its
    /// components over to `stack down`. Taken out of the watch's reach
    /// first, so a keeper that exits on `release` is not taken for one that died.
    pub(super) fn release(&self) {
        let taken = lock(&self.live).take();
        if let Some(live) = taken {
            send_to(&live, "release");
            wait_out(live);
        }
    }

    /// Closes the keeper's stdin and waits (a few seconds at most) for its
    /// final sweep, so the keeper is not left running either. Idempotent.
    pub(super) fn finish(&self) {
        let taken = lock(&self.live).take();
        if let Some(live) = taken {
            wait_out(live);
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.finish();
    }
}

fn wait_out(live: Live) {
    let Live {
        mut child, line, ..
    } = live;
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

/// The keeper's main loop: reads the harness's lines until the pipe closes.
/// Returns the exit code.
pub fn run(tag: &str) -> i32 {
    super::os::ignore_signals(&[libc::SIGINT, libc::SIGHUP, libc::SIGPIPE]);
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
