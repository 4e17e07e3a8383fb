//! The live area: a few lines at the bottom of stderr on a terminal, redrawn
//! in place by indicatif (the run's counts, each running cell, each install),
//! while every other line printed to stderr goes above them. Everything it
//! draws passes the run's redactor first: a [`LiveLine`]'s text is redacted
//! when it is set, before it is cut to the width, and the templates hold
//! nothing but placeholders. Off a terminal (or with `TERM=dumb`) there is
//! no live area and [`start`] says so; [`clear`] takes the area away for
//! good (before the final output, on Ctrl-C, on a panic), after which lines
//! still set draw nowhere.

use crate::supervise::os;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle, WeakProgressBar};
use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::time::Duration;

/// The area while it is shown; `None` before [`start`] and after [`clear`].
/// Every change to a line is made under this lock, so none can redraw the
/// area while (or after) [`clear`] erases it.
static AREA: Mutex<Option<Area>> = Mutex::new(None);

struct Area {
    multi: MultiProgress,
    /// Its lines, whose spinners [`clear`] stops.
    lines: Vec<WeakProgressBar>,
}

/// The terminal's settings before [`start`] turned its `^C` echo off.
static ECHO: Mutex<Option<os::TerminalSettings>> = Mutex::new(None);

/// How often spinners turn: enough to see that a 60 s wait is a wait.
const TICK: Duration = Duration::from_millis(120);

/// Shows the live area when stderr is a terminal that can redraw; `false`
/// when there is none to show (the caller prints plain lines instead).
pub(crate) fn start() -> bool {
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    if dumb || !std::io::stderr().is_terminal() {
        return false;
    }
    let mut area = lock();
    if area.is_none() {
        quiet_control_echo();
        *area = Some(Area {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            lines: Vec::new(),
        });
    }
    true
}

/// Turns off the terminal's echo of control keys (`ECHOCTL`) while the area
/// is shown: the `^C` a Ctrl-C echoes would land after the area's last
/// column, wrap to a line the area does not know of, and leave its top line
/// on the screen once it is cleared. [`clear`] puts the setting back.
fn quiet_control_echo() {
    if let Some(saved) = os::quiet_control_echo(std::io::stderr().as_fd()) {
        *ECHO.lock().unwrap_or_else(|p| p.into_inner()) = Some(saved);
    }
}

fn restore_control_echo() {
    if let Some(saved) = ECHO.lock().unwrap_or_else(|p| p.into_inner()).take() {
        os::restore_settings(std::io::stderr().as_fd(), &saved);
    }
}

/// Takes the area off the terminal for good: its lines are erased and any
/// line set afterwards draws nowhere. Safe to call at any time, twice.
pub fn clear() {
    let mut shown = lock();
    if let Some(area) = shown.take() {
        for line in area.lines.iter().filter_map(WeakProgressBar::upgrade) {
            line.disable_steady_tick();
        }
        let _ = area.multi.clear();
        area.multi.set_draw_target(ProgressDrawTarget::hidden());
    }
    restore_control_echo();
}

/// Prints `line` (already redacted) above the area; `false` when there is
/// no area, so the caller writes it itself.
pub(super) fn print_above(line: &str) -> bool {
    match lock().as_ref() {
        Some(area) => {
            let _ = area.multi.println(line);
            true
        }
        None => false,
    }
}

/// Runs `write` with the area taken off the screen for the while, so text
/// written to the same terminal (stdout) does not tear it.
pub(super) fn suspended<R>(write: impl FnOnce() -> R) -> R {
    let shown = lock();
    match shown.as_ref() {
        Some(area) => area.multi.suspend(write),
        None => write(),
    }
}

/// A line of the area: a spinner with its text and elapsed time, or the
/// run's bar. Dropping it leaves it drawn: [`LiveLine::remove`] takes it away.
pub(crate) struct LiveLine {
    bar: ProgressBar,
}

/// How a line looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineStyle {
    /// `⠋ TEXT 12s`: a cell running, an install, a stack coming up.
    Spinner,
    /// `⠋ [00:01:23] ███░░░ 7/20 TEXT`: the run's cells.
    Bar,
    /// `  TEXT`, nothing moving: an idle worker.
    Still,
}

impl LineStyle {
    fn style(self) -> ProgressStyle {
        let template = match self {
            LineStyle::Spinner => "{spinner:.cyan} {msg} {elapsed:.dim}",
            LineStyle::Bar => {
                "{spinner:.cyan} [{elapsed_precise}] {bar:24.cyan/blue} {pos}/{len} {msg}"
            }
            LineStyle::Still => "  {msg:.dim}",
        };
        ProgressStyle::with_template(template)
            .expect("the templates are valid")
            .progress_chars("█▉▊▋▌▍▎▏ ")
    }

    /// Columns the template itself takes beside the text, at most.
    pub(crate) fn overhead(self) -> usize {
        match self {
            // Spinner, two spaces, `59m 59s`.
            LineStyle::Spinner => 10,
            // Spinner, `[hh:mm:ss]`, the bar, `999/999`, spaces.
            LineStyle::Bar => 2 + 11 + 25 + 8,
            LineStyle::Still => 2,
        }
    }
}

/// A new line at the bottom of the area (a hidden one when there is no area).
pub(crate) fn add(style: LineStyle) -> LiveLine {
    let mut shown = lock();
    let bar = match shown.as_mut() {
        Some(area) => {
            let bar = area
                .multi
                .add(ProgressBar::new(0).with_style(style.style()));
            area.lines.retain(|l| l.upgrade().is_some());
            area.lines.push(bar.downgrade());
            if style != LineStyle::Still {
                bar.enable_steady_tick(TICK);
            }
            bar
        }
        None => ProgressBar::hidden(),
    };
    LiveLine { bar }
}

impl LiveLine {
    /// Sets the line's text, redacted, then cut to what `width` columns
    /// leave beside the template.
    pub(crate) fn set(&self, text: &str, style: LineStyle, width: usize) {
        let redacted = crate::secret::redact_known(text);
        let room = width.saturating_sub(style.overhead()).max(8);
        let text = crate::fit::cut(&redacted, room).into_owned();
        self.while_shown(|bar| bar.set_message(text));
    }

    /// Switches the line's look (an idle worker's line stops spinning).
    pub(crate) fn restyle(&self, style: LineStyle) {
        self.while_shown(|bar| {
            bar.set_style(style.style());
            if style == LineStyle::Still {
                bar.disable_steady_tick();
            } else {
                bar.enable_steady_tick(TICK);
            }
        });
    }

    /// The clock of `{elapsed}` starts again (a new cell on the line).
    pub(crate) fn restart_clock(&self) {
        self.while_shown(ProgressBar::reset_elapsed);
    }

    /// The bar's `done/total`.
    pub(crate) fn set_counts(&self, done: u64, total: u64) {
        self.while_shown(|bar| {
            bar.set_length(total);
            bar.set_position(done);
        });
    }

    /// Takes the line out of the area.
    pub(crate) fn remove(self) {
        let shown = lock();
        self.bar.disable_steady_tick();
        if let Some(area) = shown.as_ref() {
            self.bar.finish_and_clear();
            area.multi.remove(&self.bar);
        }
    }

    /// Runs `change` on the bar unless the area is gone.
    fn while_shown(&self, change: impl FnOnce(&ProgressBar)) {
        let shown = lock();
        if shown.is_some() {
            change(&self.bar);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<Area>> {
    AREA.lock().unwrap_or_else(|p| p.into_inner())
}
