//! What the user sees while a run goes, and the signal handling (Ctrl-C,
//! SIGTERM, SIGHUP, SIGQUIT alike): the first stops after cleanup, the
//! second kills everything and keeps what finished.
//!
//! Everything is read from the runner's [`RunEvent`]s and the stacks'
//! [`Note`]s, never from runner internals. On a terminal (stderr, human
//! format) a live area at the bottom: the run's bar (finished of total
//! cells, elapsed time, how many run and failed), one line per worker with
//! the cell it runs and for how long (a spinner, so a 60 s wait visibly
//! waits), and one per install in progress; each finished cell's line
//! scrolls above it. Elsewhere (a pipe, a CI log) plain lines only. Either
//! way a finished cell is counted when it finishes, `[done/total]`, not by
//! its place in the matrix. A worker's line is a lane: a cell takes the
//! first lane free when it starts and gives it back once judged, which is
//! when its worker moves on.

use super::cell_line::finished_line;
use super::partial::PartialRun;
use crate::console::live::{self, LineStyle, LiveLine};
use crate::runner::RunEvent;
use crate::stack::progress::Note;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The run's progress display; clones share it (the event callback, each
/// stack coming up).
#[derive(Clone)]
pub(super) struct Progress {
    view: Arc<Mutex<View>>,
}

struct View {
    color: bool,
    /// Finished and total cells of the run (one `RunStarted` for the
    /// whole matrix, every axis in it).
    done: usize,
    total: usize,
    failed: usize,
    /// Attempts with a verdict, and each cell's planned attempts (`--repeat`).
    judged: usize,
    repeat: u32,
    live: Option<Live>,
}

struct Live {
    width: usize,
    header: LiveLine,
    lanes: Vec<Lane>,
    /// Lines of installs (and waits for another's install) by stack.
    installs: Vec<Install>,
}

struct Lane {
    line: LiveLine,
    /// The attempt running on it: its cell's index and its number (one
    /// cell's repeats may run on several stacks at once).
    cell: Option<(usize, u32)>,
}

struct Install {
    stack: String,
    what: String,
    line: LiveLine,
}

impl Progress {
    /// The live area when `live` is asked for and stderr is a terminal that
    /// can redraw; plain lines otherwise.
    pub(super) fn start(live: bool, color: bool) -> Progress {
        let live = (live && live::start()).then(|| {
            let width = crate::console::width(crate::console::Stream::Stderr);
            let header = live::add(LineStyle::Spinner);
            header.set("preparing the run", LineStyle::Spinner, width);
            Live {
                width,
                header,
                lanes: Vec::new(),
                installs: Vec::new(),
            }
        });
        Progress {
            view: Arc::new(Mutex::new(View {
                color,
                done: 0,
                total: 0,
                failed: 0,
                judged: 0,
                repeat: 1,
                live,
            })),
        }
    }

    /// Takes the live area off the terminal (before the final output).
    pub(super) fn clear(&self) {
        live::clear();
    }

    /// A runner event.
    pub(super) fn event(&self, event: &RunEvent) {
        let mut view = self.lock();
        view.event(event);
    }

    /// A note from the stack `stack` (`stack 2`) coming up.
    pub(super) fn note(&self, stack: &str, note: Note) {
        let mut view = self.lock();
        view.note(stack, note);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl View {
    fn event(&mut self, event: &RunEvent) {
        match event {
            RunEvent::OverallTimeout { timeout_ms } => {
                crate::console::errln(&format!(
                    "\nthe overall timeout ({timeout_ms} ms, --overall-timeout-ms) ran out:\nstopping, cleaning up and writing the partial report"
                ));
            }
            RunEvent::RunStarted { total, repeat, .. } => {
                (self.done, self.total, self.failed) = (0, *total, 0);
                (self.judged, self.repeat) = (0, *repeat);
                if let Some(live) = &self.live {
                    live.header.restyle(LineStyle::Bar);
                }
            }
            RunEvent::CellStarted {
                index,
                target,
                scenario,
                attempt,
                ..
            } => {
                let text = match attempt {
                    1 => format!("{target} × {scenario}"),
                    n => format!("{target} × {scenario} (attempt {n})"),
                };
                if let Some(live) = &mut self.live {
                    live.run_on_lane((*index, *attempt), &text);
                }
            }
            RunEvent::Retrying {
                attempt,
                target,
                scenario,
                ..
            } => {
                let at = attempt
                    .failure_boundary
                    .as_deref()
                    .map(|b| format!(" @ {b}"))
                    .unwrap_or_default();
                crate::console::errln(&format!(
                    "{target} × {scenario} attempt {}: {}{at}; retrying",
                    attempt.attempt,
                    paint(attempt.verdict.as_str(), "33", self.color)
                ));
            }
            RunEvent::AttemptJudged { index, attempt, .. } => {
                self.judged += 1;
                if let Some(live) = &mut self.live {
                    live.free_lane(|(i, a)| (i, a) == (*index, *attempt));
                }
            }
            RunEvent::CellJudged { .. } | RunEvent::RunEnded { .. } => {}
            RunEvent::CellFinished { index, cell, .. } => {
                self.done += 1;
                if cell.fails_run_alone(crate::report::FlakyResult::Pass) {
                    self.failed += 1;
                }
                let width = self.live.as_ref().map(|l| l.width);
                if let Some(live) = &mut self.live {
                    live.free_lane(|(i, _)| i == *index);
                }
                crate::console::errln(&finished_line(
                    cell,
                    (self.done, self.total),
                    self.color,
                    width,
                ));
            }
        }
        self.redraw_header();
    }

    fn note(&mut self, stack: &str, note: Note) {
        let Some(live) = &mut self.live else {
            crate::console::errln(&format!("{stack}: {note}"));
            return;
        };
        // Whatever a stack says next, its wait for another's install is over.
        live.end_installs(stack, |i| i.what.is_empty());
        match &note {
            Note::WaitingForInstall { .. } => {
                let line = live::add(LineStyle::Spinner);
                line.set(&format!("{stack}: {note}"), LineStyle::Spinner, live.width);
                // No `what`: the next note of this stack ends it, whatever it is.
                live.installs.push(Install {
                    stack: stack.to_string(),
                    what: String::new(),
                    line,
                });
                return;
            }
            Note::Installing { what, .. } => {
                let line = live::add(LineStyle::Spinner);
                line.set(
                    &format!("{stack}: installing {what}"),
                    LineStyle::Spinner,
                    live.width,
                );
                live.installs.push(Install {
                    stack: stack.to_string(),
                    what: what.clone(),
                    line,
                });
            }
            Note::Installed { what, .. } => live.end_installs(stack, |i| i.what == *what),
            Note::Step(_) => {}
        }
        // Cut, not wrapped, on the terminal (redacted first: a secret cut in
        // half would not be found); the whole path is in the stack's folder.
        let line = crate::secret::redact_known(&format!("{stack}: {note}"));
        crate::console::errln(&crate::fit::cut(&line, live.width));
    }

    fn redraw_header(&self) {
        let Some(live) = &self.live else {
            return;
        };
        if self.total == 0 {
            return;
        }
        let running = live.lanes.iter().filter(|l| l.cell.is_some()).count();
        let mut text = match self.repeat {
            0 | 1 => "cells".to_string(),
            n => format!(
                "cells ({} of {} attempts)",
                self.judged,
                self.total * n as usize
            ),
        };
        text.push_str(&format!(", {running} running"));
        if self.failed > 0 {
            text.push_str(&format!(", {} not passed", self.failed));
        }
        live.header
            .set_counts(self.done as u64, self.total.max(self.done) as u64);
        live.header.set(&text, LineStyle::Bar, live.width);
    }
}

impl Live {
    /// Shows `text` on the first free lane, else on a new one.
    fn run_on_lane(&mut self, attempt: (usize, u32), text: &str) {
        let at = self.lanes.iter().position(|l| l.cell.is_none());
        let at = at.unwrap_or_else(|| {
            self.lanes.push(Lane {
                line: live::add(LineStyle::Spinner),
                cell: None,
            });
            self.lanes.len() - 1
        });
        let lane = &mut self.lanes[at];
        lane.cell = Some(attempt);
        lane.line.restyle(LineStyle::Spinner);
        lane.line.restart_clock();
        lane.line.set(text, LineStyle::Spinner, self.width);
    }

    /// Frees the lanes of the attempts `which` picks.
    fn free_lane(&mut self, which: impl Fn((usize, u32)) -> bool) {
        for lane in self.lanes.iter_mut().filter(|l| l.cell.is_some_and(&which)) {
            lane.cell = None;
            lane.line.restyle(LineStyle::Still);
            lane.line.set("idle", LineStyle::Still, self.width);
        }
    }

    fn end_installs(&mut self, stack: &str, which: impl Fn(&Install) -> bool) {
        let (ended, kept): (Vec<Install>, Vec<Install>) = self
            .installs
            .drain(..)
            .partition(|i| i.stack == stack && which(i));
        self.installs = kept;
        for install in ended {
            install.line.remove();
        }
    }
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The first stopping signal: the running cell stops where it is
/// (recorded as interrupted), cleans up, and the partial report is
/// written; the live area goes at once, so the lines that follow read
/// plainly. The second: every process group is killed at once, the
/// report of the cells that finished is written, and the harness exits.
/// It ends with its run (when nothing watches `cancel` any more), so the
/// next run of one process (`bisect`'s probes) has the signals alone.
/// A signal that came before the run's watch began (a `bisect` between
/// its points) counts as the first.
pub(super) fn spawn_signal_handler(cancel: watch::Sender<bool>, partial: PartialRun) {
    super::interrupts::listen(crate::exit_codes::INCOMPLETE);
    let Some(mut counted) = super::interrupts::presses() else {
        return;
    };
    let handling = super::interrupts::Handling::take();
    tokio::spawn(async move {
        let _handling = handling;
        let mut presses = 0;
        let mut seen = 0;
        loop {
            let now = *counted.borrow_and_update();
            if now.count == seen {
                tokio::select! {
                    changed = counted.changed() => if changed.is_err() { return },
                    () = cancel.closed() => return,
                }
                continue;
            }
            presses += now.count - seen;
            seen = now.count;
            let name = now.last;
            live::clear();
            if presses == 1 {
                // Two lines, each within 80 columns: a terminal must not wrap them.
                crate::console::errln(&format!(
                    "\ninterrupted ({name}): stopping, cleaning up and writing the partial report\n(Ctrl-C again to kill everything now)"
                ));
                let _ = cancel.send(true);
            } else {
                crate::supervise::kill_all_groups();
                crate::scenario::sandbox_root::remove_run(partial.id());
                match partial.write() {
                    Ok(Some(cells)) => crate::console::errln(&format!(
                        "killed ({name}): the report holds the {cells} cell(s) that had finished"
                    )),
                    Ok(None) => {}
                    Err(e) => crate::console::errln(&format!(
                        "killed ({name}): cannot write the partial report: {e}"
                    )),
                }
                std::process::exit(i32::from(super::Outcome::Killed.exit_code()));
            }
        }
    });
}
