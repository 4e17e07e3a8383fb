//! The `pause` action: a component frozen and woken, as a VM or container
//! freeze, or a sandbox its provider pauses, does it. Its whole process
//! group gets SIGSTOP (nginx's master and workers, the server and its
//! agent processes), and so does every descendant of its leader that left
//! the group (each Postgres backend leads a group of its own; a terminal's
//! process runs in a session of its own), each pinned; the pause takes
//! only when every one of them is seen stopped (state `T` in
//! `/proc/PID/stat`); then SIGCONT after `hold`, or when the cell's phases
//! end, whichever comes first, and the wake is seen too (none left stopped). A paused process keeps
//! its sockets open: clients see silence, not a refused connection. Like a
//! fault target's window, the pause goes on under the phases that follow
//! the restart step. A pause that did not take is the restart phase's
//! failure (the test's setup), never a pass.

use super::fmt_duration;
use super::process_of::{NotOurs, ProcessOf};
use crate::supervise::owner::{self, Pinned};
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How long the group may take to be seen stopped, or running again.
const SEEN_WITHIN: Duration = Duration::from_secs(2);

/// A component's process group stopped for a window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PauseAction {
    /// The restart target whose component it is (the trace names it so;
    /// a component that does not wake is restarted through it).
    pub component: super::BuiltinTarget,
    pub process: ProcessOf,
    /// How long it stays stopped (at most: the cell's phases may end first).
    pub hold: Duration,
}

/// Why a pause did not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum PauseError {
    #[error(transparent)]
    NotOurs(#[from] NotOurs),
    #[error("{what}: process {pid} leads no process group of its own")]
    NoGroup { what: String, pid: i32 },
    #[error("{what}: SIGSTOP to group {pgid} was not delivered")]
    NotSent { what: String, pgid: i32 },
    #[error(
        "{what}: after SIGSTOP to group {pgid}, {seen} (within {}); it was continued",
        fmt_duration(SEEN_WITHIN)
    )]
    NotStopped { what: String, pgid: i32, seen: Left },
    #[error(
        "{what}: after SIGCONT to group {pgid}, {seen} (within {})",
        fmt_duration(SEEN_WITHIN)
    )]
    NotWoken { what: String, pgid: i32, seen: Left },
}

impl PauseAction {
    /// `pause: SIGSTOP to the sandbox-agent server's process group for 2 s, then SIGCONT`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "pause: SIGSTOP to {}'s whole process group for {}, then SIGCONT",
            self.process.what(),
            fmt_duration(self.hold)
        )
    }

    /// Stops the group and sees it stopped; the window heals (SIGCONT) after
    /// the hold or when closed. Records both ends into `trace`.
    pub(super) async fn open(&self, trace: &Trace) -> Result<OpenPause, PauseError> {
        let what = self.process.what().to_string();
        let pinned = self.process.proven()?;
        let pid = pinned.pid();
        let pgid = pinned.led_group().ok_or_else(|| PauseError::NoGroup {
            what: what.clone(),
            pid,
        })?;
        if !pinned.send_to_group(crate::signal::Signal::STOP.number()) {
            return Err(PauseError::NotSent { what, pgid });
        }
        let outside = stop_outside(pid, pgid);
        let outside_pids: Vec<i32> = outside.iter().map(Pinned::pid).collect();
        let members = match seen(pgid, &outside_pids, |state| matches!(state, 'T' | 't')).await {
            Ok(members) => members,
            Err(left) => {
                pinned.send_to_group(crate::signal::Signal::CONT.number());
                for member in &outside {
                    member.send(crate::signal::Signal::CONT.number());
                }
                return Err(PauseError::NotStopped {
                    what,
                    pgid,
                    seen: left,
                });
            }
        };
        trace.emit(Event::PauseStart(event::PauseStart {
            component: self.component.name().to_string(),
            pid: pid as u32,
            members: members.iter().map(|m| *m as u32).collect(),
            hold_ms: self.hold.as_millis() as u64,
        }));
        let paused = Arc::new(Paused {
            pinned,
            outside,
            pgid,
            what,
            component: self.component,
            trace: trace.clone(),
            healed: AtomicBool::new(false),
            woke: Mutex::new(None),
        });
        let timed = Arc::clone(&paused);
        let hold = self.hold;
        let timer = tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            timed.wake().await;
        });
        Ok(OpenPause {
            paused,
            timer: Some(timer),
            started: Instant::now(),
        })
    }
}

/// What was seen of a group instead of the state a pause waited for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Left {
    #[error("no process of the group is left")]
    Empty,
    #[error("{} of its {of} processes were not ({})", .off.len(), off.iter().map(|(pid, state)| format!("{pid} in state {state}")).collect::<Vec<_>>().join(", "))]
    Off { off: Vec<(i32, char)>, of: usize },
}

/// How many times the leader's descendants are looked for again after a
/// round stopped new ones (one may have forked before it stopped).
const STOP_ROUNDS: usize = 10;

/// SIGSTOP to each descendant of `leader` outside its group `pgid`, each
/// pinned and still a child of the component when signalled; looked for
/// again until a round finds none new. The pinned processes, to wake.
fn stop_outside(leader: i32, pgid: i32) -> Vec<Pinned> {
    let mut stopped: Vec<Pinned> = Vec::new();
    for _ in 0..STOP_ROUNDS {
        let known: Vec<i32> = stopped.iter().map(Pinned::pid).collect();
        let new: Vec<Pinned> = outside_group(leader, pgid)
            .into_iter()
            .filter(|pid| !known.contains(pid))
            .filter_map(Pinned::open)
            // Pinned after the scan: still the child of one of ours.
            .filter(|p| {
                owner::parent_of(p.pid()).is_some_and(|parent| {
                    parent == leader
                        || known.contains(&parent)
                        || crate::supervise::group_members(pgid).contains(&parent)
                        || outside_group(leader, pgid).contains(&parent)
                })
            })
            .collect();
        if new.is_empty() {
            break;
        }
        for process in &new {
            process.send(crate::signal::Signal::STOP.number());
        }
        stopped.extend(new);
    }
    stopped
}

/// The descendants of `leader` (found through `/proc`'s parent links) that
/// are not in its group `pgid`.
fn outside_group(leader: i32, pgid: i32) -> Vec<i32> {
    let group = crate::supervise::group_members(pgid);
    let mut found: Vec<i32> = Vec::new();
    let mut next = vec![leader];
    while let Some(pid) = next.pop() {
        for child in owner::children_of(pid) {
            if child != leader && !found.contains(&child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found.retain(|pid| !group.contains(pid));
    found
}

/// Polls the group and the processes `outside` it until every live one's
/// state passes `wanted`, for [`SEEN_WITHIN`] at most: them, or what was
/// seen instead.
async fn seen(pgid: i32, outside: &[i32], wanted: impl Fn(char) -> bool) -> Result<Vec<i32>, Left> {
    let until = Instant::now() + SEEN_WITHIN;
    loop {
        let mut members = crate::supervise::group_members(pgid);
        let away: Vec<i32> = outside
            .iter()
            .filter(|pid| !members.contains(pid))
            .copied()
            .collect();
        members.extend(away);
        let states: Vec<(i32, char)> = members
            .iter()
            .filter_map(|pid| Some((*pid, owner::state_of(*pid)?)))
            .collect();
        let off: Vec<(i32, char)> = states
            .iter()
            .filter(|(_, state)| !wanted(*state))
            .copied()
            .collect();
        if !states.is_empty() && off.is_empty() {
            return Ok(members);
        }
        if Instant::now() >= until {
            return Err(match states.is_empty() {
                true => Left::Empty,
                false => Left::Off {
                    off,
                    of: states.len(),
                },
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A group stopped (and its leader's descendants outside it); woken once,
/// by its timer or by whoever closes it.
struct Paused {
    pinned: Pinned,
    /// The leader's descendants outside its group, stopped one by one.
    outside: Vec<Pinned>,
    pgid: i32,
    what: String,
    component: super::BuiltinTarget,
    trace: Trace,
    healed: AtomicBool,
    /// How the wake went, once it did.
    woke: Mutex<Option<Result<String, PauseError>>>,
}

impl Paused {
    async fn wake(&self) {
        if self.healed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.continue_all();
        let outside: Vec<i32> = self.outside.iter().map(Pinned::pid).collect();
        let result = match seen(self.pgid, &outside, |state| !matches!(state, 'T' | 't')).await {
            Ok(members) => Ok(format!(
                "SIGCONT to group {}{}: its {} process{} running again",
                self.pgid,
                self.outside_words(),
                members.len(),
                if members.len() == 1 { "" } else { "es" }
            )),
            Err(left) => Err(PauseError::NotWoken {
                what: self.what.clone(),
                pgid: self.pgid,
                seen: left,
            }),
        };
        self.trace.emit(Event::PauseEnd(event::PauseEnd {
            component: self.component.name().to_string(),
            ok: result.is_ok(),
            detail: Some(match &result {
                Ok(note) => note.clone(),
                Err(e) => e.to_string(),
            }),
        }));
        *self.woke.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
    }

    /// ` and 2 of its leader's descendants outside it`, when there are some.
    fn outside_words(&self) -> String {
        match self.outside.len() {
            0 => String::new(),
            n => format!(" and {n} of its leader's descendants outside it"),
        }
    }

    /// SIGCONT to the group and to each process stopped outside it.
    fn continue_all(&self) {
        self.pinned
            .send_to_group(crate::signal::Signal::CONT.number());
        for process in &self.outside {
            process.send(crate::signal::Signal::CONT.number());
        }
    }

    fn woke(&self) -> Option<Result<String, PauseError>> {
        self.woke.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A pause in force, woken on drop at the latest.
pub(super) struct OpenPause {
    paused: Arc<Paused>,
    timer: Option<JoinHandle<()>>,
    started: Instant,
}

impl OpenPause {
    /// How the pause was seen to take, for the restart's `down`.
    pub(super) fn taken(&self) -> String {
        format!(
            "{}: SIGSTOP to group {}{}, every process of it seen stopped",
            self.paused.what,
            self.paused.pgid,
            self.paused.outside_words()
        )
    }

    /// The restart target whose component is paused.
    pub(super) fn component(&self) -> super::BuiltinTarget {
        self.paused.component
    }

    /// Wakes now if the timer has not, and says how the wake went.
    pub(super) async fn close(mut self) -> Result<String, PauseError> {
        if let Some(timer) = self.timer.take() {
            timer.abort();
        }
        self.paused.wake().await;
        let stopped_for = fmt_duration(self.started.elapsed());
        self.paused
            .woke()
            .unwrap_or_else(|| Ok("woken".into()))
            .map(|note| format!("{note} (stopped about {stopped_for})"))
    }
}

impl std::fmt::Debug for OpenPause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenPause({})", self.paused.what)
    }
}

impl Drop for OpenPause {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.abort();
        }
        // Never leave a group stopped: SIGCONT at least, unseen.
        if !self.paused.healed.swap(true, Ordering::SeqCst) {
            self.paused.continue_all();
        }
    }
}

#[cfg(test)]
#[path = "pause_tests.rs"]
mod tests;
