//! The terminal: every line continuity prints goes through here. Text is
//! redacted with the run's [`Redactor`] (installed with
//! [`crate::secret::install`] once the run knows its secrets), and a stdout that is closed (`continuity list | head -1`) ends
//! output quietly, as ripgrep does, instead of panicking; any other stdout
//! failure (a full disk) is kept for the exit code. Writing to stderr never
//! fails a run.

use crate::secret::redact_known as redact;
#[cfg(doc)]
use crate::secret::Redactor;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Writes `text` to stdout as it is (no newline added).
pub fn out(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let text = redact(text);
    let mut stdout = io::stdout().lock();
    let result = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(e) = result {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            let mut slot = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Writes `line` and a newline to stdout.
pub fn outln(line: &str) {
    out(&format!("{line}\n"));
}

/// Writes `line` and a newline to stderr; a failure to do so is ignored.
pub fn errln(line: &str) {
    let text = redact(line) + "\n";
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
}

/// Why stdout could not be written, unless it was only closed by its reader.
pub fn stdout_error() -> Option<String> {
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}
