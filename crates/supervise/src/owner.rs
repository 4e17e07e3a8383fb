//! Which processes are ours, provably. A run (or `stack up`) has an owner
//! tag, a random id plus its folder, put into the environment of every
//! process it starts as `CONTINUITY_OWNER`; the descendants inherit it
//! (sandbox-agent's agent processes, the engine a RivetKit runner may spawn).
//! A process is signalled only after it is pinned with a pidfd and then
//! checked: its start time matches the one recorded when it was started
//! (and it carries our tag, or runs in our folder), or, for what we never
//! recorded, its environment carries our tag. Never by name, never by a bare pid.

use std::io::Read;
use std::time::{Duration, Instant};

/// The environment variable that marks a process as started by one run.
pub(crate) const OWNER_ENV: &str = "CONTINUITY_OWNER";

/// How long a sweep waits for what it killed to disappear from `/proc`.
const SWEEP_BOUND: Duration = Duration::from_secs(3);

/// A new owner tag for a run or stack in `dir`: unique, and readable by
/// a person looking at `/proc/PID/environ`.
pub fn new_tag(dir: &std::path::Path) -> String {
    format!(
        "{}:{}",
        &uuid::Uuid::new_v4().simple().to_string()[..16],
        dir.display()
    )
}

/// When the process started, in clock ticks since boot (`/proc/PID/stat`
/// field 22): with the pid, it names one process for the machine's uptime.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command: state (3), ppid (4), … starttime (22).
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `pid` names a running process (not a zombie waiting to be reaped).
pub(crate) fn running_pid(pid: i32) -> bool {
    group_and_state(pid).is_some_and(|(_, zombie)| !zombie)
}

/// The process's state letter in `/proc/PID/stat`: `R` running, `S`
/// sleeping, `T` stopped by a signal, `t` stopped under a tracer, `Z` a
/// zombie, … (`None` once the process is gone).
pub fn state_of(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// The process's parent, from `/proc/PID/stat`.
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The live (non-zombie) children of `pid`.
pub fn children_of(pid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|child| {
            parent_of(*child) == Some(pid) && !matches!(state_of(*child), Some('Z' | 'X') | None)
        })
        .collect()
}

/// The process's group id and whether it is a zombie.
fn group_and_state(pid: i32) -> Option<(i32, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let zombie = matches!(fields.next(), Some("Z" | "X"));
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((pgrp, zombie))
}

/// Whether the process's environment holds `CONTINUITY_OWNER=tag`.
pub(crate) fn carries_tag(pid: i32, tag: &str) -> bool {
    environ_holds(pid, &format!("{OWNER_ENV}={tag}"))
}

/// Whether the process's environment holds `entry` (`NAME=value`) exactly.
///
/// A process in the middle of an exec has, for a moment, no whole
/// environment to read: the new program's is not mapped yet and
/// `/proc/PID/environ` reads empty, or a read that spans the exec stops
/// where the old program's memory went away. Such a read is retried (up to
/// [`EXEC_SETTLE`]) rather than taken for a process without the entry, or a
/// sweep would miss a process that happens to be changing programs (a shell
/// exec'ing node, `setsid` its command) and report it gone.
pub fn environ_holds(pid: i32, entry: &str) -> bool {
    let until = Instant::now() + EXEC_SETTLE;
    loop {
        match read_environ(pid) {
            // Every entry ends with a NUL: a block without one was cut short.
            Some(environ) if environ.ends_with(&[0]) => {
                return environ
                    .split(|b| *b == 0)
                    .any(|found| found == entry.as_bytes());
            }
            // Unreadable (gone, or another user's), or empty or cut for good.
            None => return false,
            Some(_) if !may_be_between_programs(pid) || Instant::now() >= until => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// How long an empty environment is re-read before it counts as empty.
const EXEC_SETTLE: Duration = Duration::from_millis(200);

/// The environment block, read in one `read` when it fits (the kernel
/// then copies it from one program's memory, never half of each).
fn read_environ(pid: i32) -> Option<Vec<u8>> {
    const AT_ONCE: usize = 256 * 1024;
    let mut file = std::fs::File::open(format!("/proc/{pid}/environ")).ok()?;
    let mut environ = vec![0u8; AT_ONCE];
    let read = file.read(&mut environ).ok()?;
    environ.truncate(read);
    if read == AT_ONCE {
        file.read_to_end(&mut environ).ok()?;
    }
    Some(environ)
}

/// Whether an empty environment may be an exec's passing moment: the
/// process runs and is not a kernel thread (those never have one).
fn may_be_between_programs(pid: i32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let running = !matches!(fields.next(), Some("Z" | "X"));
    // Fields after the state: ppid, pgrp, session, tty_nr, tpgid, flags.
    let flags: u64 = fields.nth(5).and_then(|f| f.parse().ok()).unwrap_or(0);
    running && flags & PF_KTHREAD == 0
}

/// The owner tag in the process's environment, if it carries one.
pub(crate) fn tag_of(pid: i32) -> Option<String> {
    let mut environ = Vec::new();
    std::fs::File::open(format!("/proc/{pid}/environ"))
        .and_then(|mut f| f.read_to_end(&mut environ))
        .ok()?;
    let prefix = format!("{OWNER_ENV}=");
    environ.split(|b| *b == 0).find_map(|entry| {
        let tag = entry.strip_prefix(prefix.as_bytes())?;
        Some(String::from_utf8_lossy(tag).into_owned())
    })
}

/// The folder an owner tag names: [`new_tag`] writes `<id>:<folder>`.
pub(crate) fn tag_folder(tag: &str) -> Option<&str> {
    tag.split_once(':').map(|(_, folder)| folder)
}

/// The process's command line, its arguments joined by spaces.
pub fn command_line(pid: i32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = bytes
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    Some(words.join(" "))
}

/// A process held by a pidfd: while it is open, the number cannot name
/// another process for us, so what we read from `/proc` after opening it and
/// the signal we send through it concern the same process.
pub struct Pinned {
    pid: i32,
    fd: std::os::fd::OwnedFd,
}

impl Pinned {
    pub fn open(pid: i32) -> Option<Pinned> {
        if pid <= 1 || pid == std::process::id() as i32 {
            return None;
        }
        let fd = super::os::pidfd_open(pid)?;
        Some(Pinned { pid, fd })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether the pinned process still runs (and so the reads were about it).
    fn alive(&self) -> bool {
        self.send(0)
    }

    /// Whether it still runs: alive and not a zombie waiting to be reaped.
    pub fn running(&self) -> bool {
        self.alive() && group_and_state(self.pid).is_some_and(|(_, zombie)| !zombie)
    }

    /// Signals the pinned process itself; false if it is gone.
    pub fn send(&self, signal: i32) -> bool {
        use std::os::fd::AsFd;
        super::os::pidfd_send_signal(self.fd.as_fd(), signal)
    }

    /// Whether this is the process that started at `started`.
    pub fn started_at(&self, started: u64) -> bool {
        start_time(self.pid) == Some(started) && self.alive()
    }

    /// Whether the process carries our owner tag.
    pub fn owned_by(&self, tag: &str) -> bool {
        carries_tag(self.pid, tag) && self.alive()
    }

    /// Whether the process's working folder is `dir` or inside it: the
    /// evidence for a program that overwrites its own environment block with
    /// its process title (nginx does), whose tag can no longer be read.
    pub fn runs_in(&self, dir: &std::path::Path) -> bool {
        std::fs::read_link(format!("/proc/{}/cwd", self.pid)).is_ok_and(|cwd| cwd.starts_with(dir))
            && self.alive()
    }

    /// The group it leads, if it leads one (its group id is its pid).
    pub fn led_group(&self) -> Option<i32> {
        match group_and_state(self.pid) {
            Some((pgrp, false)) if pgrp == self.pid && self.alive() => Some(pgrp),
            _ => None,
        }
    }

    /// When it started (clock ticks since boot), while it runs.
    pub fn start_time(&self) -> Option<u64> {
        start_time(self.pid).filter(|_| self.alive())
    }

    /// Signals the process's whole group when it leads one, else itself.
    /// The leader is pinned and alive, so the group id is still its group.
    pub fn send_to_group(&self, signal: i32) -> bool {
        match group_and_state(self.pid) {
            Some((pgrp, false)) if pgrp == self.pid && self.alive() => {
                super::os::signal_group(pgrp, signal)
            }
            _ => self.send(signal),
        }
    }
}

/// Pins `pid` if it is still the process that started at `started`.
pub fn verified(pid: i32, started: u64) -> Option<Pinned> {
    Pinned::open(pid).filter(|p| p.started_at(started))
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every live process carrying `tag`, pinned.
pub(crate) fn tagged(tag: &str) -> Vec<Pinned> {
    all_pids()
        .into_iter()
        .filter_map(Pinned::open)
        .filter(|p| !group_and_state(p.pid).is_some_and(|(_, zombie)| zombie))
        .filter(|p| p.owned_by(tag))
        .collect()
}

/// Every live process whose owner tag names `dir` as its folder (any run
/// or `stack up` there, whichever its id), pinned, with its tag.
pub fn tagged_in(dir: &std::path::Path) -> Vec<(String, Pinned)> {
    let folder = dir.display().to_string();
    all_pids()
        .into_iter()
        .filter_map(Pinned::open)
        .filter(|p| p.running())
        .filter_map(|p| {
            let tag = tag_of(p.pid)?;
            (tag_folder(&tag) == Some(folder.as_str()) && p.alive()).then_some((tag, p))
        })
        .collect()
}

/// SIGKILLs every process carrying `tag` (with the group each one leads)
/// and waits, a few seconds at most, until none is left. Returns how many
/// processes it found. Nothing without the tag is touched except the
/// members of a group a tagged process leads (nginx's workers, whose
/// environment nginx empties).
pub fn sweep(tag: &str) -> usize {
    let mut found = 0;
    let until = Instant::now() + SWEEP_BOUND;
    loop {
        let live = tagged(tag);
        if live.is_empty() || Instant::now() >= until {
            return found.max(live.len());
        }
        found = found.max(live.len());
        for process in &live {
            process.send_to_group(libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests;
