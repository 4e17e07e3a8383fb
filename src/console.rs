//! The terminal: every line continuity prints goes through here. Text is
//! redacted with the run's [`Redactor`] (installed with
//! [`crate::secret::install`] once the run knows its secrets) and made
//! [`printable`] (no control character but line feed, tab and colour, no
//! line that starts a GitHub workflow command unless it is one of
//! continuity's own, [`command`]), and a stdout that is closed (`continuity list | head -1`) ends
//! output quietly, as ripgrep does, instead of panicking; any other stdout
//! failure (a full disk) is kept for the exit code. Writing to stderr never
//! fails a run. While the [`live`] area is shown, stderr lines go above it
//! and stdout is written with it taken off the screen.

pub mod live;

use crate::secret::redact_known as redact;
#[cfg(doc)]
use crate::secret::Redactor;
use crate::supervise::os;
use crate::untrusted::{printable, CommandLine, Printed};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Where a block of text goes, for [`color`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Whether text for `stream` may carry ANSI colours: the stream is a
/// terminal and `NO_COLOR` is unset. Decided here only, once per stream.
pub(crate) fn color(stream: Stream) -> bool {
    static STDOUT: OnceLock<bool> = OnceLock::new();
    static STDERR: OnceLock<bool> = OnceLock::new();
    let no_color = || std::env::var_os("NO_COLOR").is_some();
    match stream {
        Stream::Stdout => *STDOUT.get_or_init(|| io::stdout().is_terminal() && !no_color()),
        Stream::Stderr => *STDERR.get_or_init(|| io::stderr().is_terminal() && !no_color()),
    }
}

/// Columns a layout for `stream` may fill when nothing says otherwise:
/// a CI log is read in a browser or a wide terminal.
pub(crate) const DEFAULT_WIDTH: usize = 120;

/// The columns text for `stream` should fit in: `COLUMNS` when set (it
/// wins, as for `ls`: a user or a test asks for a width), else the
/// terminal's when the stream is one, else [`DEFAULT_WIDTH`].
pub(crate) fn width(stream: Stream) -> usize {
    columns_from(std::env::var("COLUMNS").ok().as_deref())
        .or_else(|| terminal_width(stream))
        .unwrap_or(DEFAULT_WIDTH)
}

fn columns_from(value: Option<&str>) -> Option<usize> {
    value?.trim().parse::<usize>().ok().filter(|n| *n > 0)
}

/// The terminal's width from the kernel (`TIOCGWINSZ`), when `stream` is one.
fn terminal_width(stream: Stream) -> Option<usize> {
    use std::os::fd::AsFd;
    let columns = match stream {
        Stream::Stdout => os::terminal_columns(io::stdout().as_fd()),
        Stream::Stderr => os::terminal_columns(io::stderr().as_fd()),
    };
    columns.map(usize::from)
}

/// Writes `text` to stdout, [`printable`] (no newline added).
pub fn out(text: &str) {
    write_out(&printable(&redact(text), Printed::MaybeJson));
}

/// Writes one of continuity's own workflow commands and a newline to
/// `stream`, whole: the only line that may start with `::`.
pub(crate) fn command(line: &CommandLine, stream: Stream) {
    let text = redact(line.as_str());
    match stream {
        Stream::Stdout => write_out(&format!("{text}\n")),
        Stream::Stderr => write_err(&text),
    }
}

fn write_out(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let result = live::suspended(|| {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
    });
    if let Err(e) = result {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            let mut slot = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Writes `line` and a newline to stdout.
pub(crate) fn outln(line: &str) {
    out(&format!("{line}\n"));
}

/// Writes `line` and a newline to stderr, [`printable`]; a failure to do
/// so is ignored.
pub fn errln(line: &str) {
    write_err(&printable(&redact(line), Printed::Text));
}

fn write_err(line: &str) {
    if live::print_above(line) {
        return;
    }
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_all(format!("{line}\n").as_bytes());
}

/// Why stdout could not be written, unless it was only closed by its reader.
pub(crate) fn stdout_error() -> Option<String> {
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

#[cfg(test)]
mod tests {
    use super::columns_from;

    #[test]
    fn columns_must_be_a_positive_number() {
        assert_eq!(columns_from(Some("80")), Some(80));
        assert_eq!(columns_from(Some(" 132\n")), Some(132));
        for bad in ["", "0", "-1", "wide", "80x"] {
            assert_eq!(columns_from(Some(bad)), None, "{bad}");
        }
        assert_eq!(columns_from(None), None);
    }
}
