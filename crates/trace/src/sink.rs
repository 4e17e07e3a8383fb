//! The `trace.jsonl` file: one JSON object per line, appended through a
//! buffer, bounded (past the limit one `truncated` marker and nothing more);
//! and its reader, which names the file and line of anything damaged.

use super::event::{Event, Line, Truncated};
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// A cell's trace file name, inside the cell's folder.
pub const TRACE_FILE: &str = "trace.jsonl";
/// The schema id on a trace's first line.
pub const TRACE_SCHEMA: &str = "continuity.trace/v1";
/// Bytes of events kept per cell before the truncation marker.
pub const TRACE_LIMIT_BYTES: u64 = 8 * 1024 * 1024;

pub(super) struct Sink {
    file: BufWriter<File>,
    written: u64,
    limit: u64,
    truncated: bool,
    /// Set once a write failed: the trace is best effort, the run goes on.
    broken: bool,
}

impl Sink {
    pub(super) fn create(path: &Path, limit: u64) -> std::io::Result<Sink> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        Ok(Sink {
            file: BufWriter::new(File::create(path)?),
            written: 0,
            limit,
            truncated: false,
            broken: false,
        })
    }

    pub(super) fn append(&mut self, line: &str, t: f64) {
        if self.truncated || self.broken {
            return;
        }
        let len = line.len() as u64 + 1;
        if self.written + len > self.limit {
            self.truncated = true;
            let marker = Line {
                t,
                event: Event::Truncated(Truncated {
                    limit_bytes: self.limit,
                }),
            };
            self.write_line(&marker.to_value().to_string());
            self.flush();
            return;
        }
        self.written += len;
        self.write_line(line);
    }

    fn write_line(&mut self, line: &str) {
        if writeln!(self.file, "{line}").is_err() {
            self.broken = true;
        }
    }

    pub(super) fn flush(&mut self) {
        if self.file.flush().is_err() {
            self.broken = true;
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read {}: {source}", shown(path))]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: line {line}: {}", shown(path), crate::untrusted::Untrusted::new(reason).terminal())]
    Damaged {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// The report names a trace that cannot be opened inside its run
    /// folder: outside it, not a regular file, too large.
    #[error(transparent)]
    Unopened(#[from] crate::run_path::RunPathError),
    /// Another attempt's trace, read already: a run writes one trace per
    /// attempt, so a report naming one file for several is read once.
    #[error("{}: the trace of {} already (a file a report names for several attempts is read once)", shown(path), crate::untrusted::Untrusted::new(first).terminal())]
    ReadBefore { path: PathBuf, first: String },
}

/// A path that holds a report's text, for a message: escaped.
fn shown(path: &Path) -> String {
    crate::untrusted::Untrusted::new(&path.to_string_lossy()).terminal()
}

/// The largest a trace file read back may be: the bound it is written
/// with, and room for the truncation marker.
pub const TRACE_READ_LIMIT: u64 = TRACE_LIMIT_BYTES + 64 * 1024;

/// [`for_each_event`] of a trace opened already (beneath its run folder).
pub fn for_each_event_in(
    file: crate::run_path::RunFile,
    mut keep: impl FnMut(Line),
) -> Result<(), TraceError> {
    let path = file.path.clone();
    for_each_line_of(file.bounded(), &path, |value| {
        if let Some(line) = Line::from_value(&value) {
            keep(line);
        }
    })
}

/// Reads a trace: every line as written, in order (for a reader that wants
/// the wire itself). See [`for_each_line`].
pub fn read_trace(path: &Path) -> Result<Vec<Value>, TraceError> {
    let mut events = Vec::new();
    for_each_line(path, |event| events.push(event))?;
    Ok(events)
}

/// Hands each event of a trace to `keep` as its type, one line at a time.
/// See [`for_each_line`].
pub fn for_each_event(path: &Path, mut keep: impl FnMut(Line)) -> Result<(), TraceError> {
    for_each_line(path, |value| {
        if let Some(line) = Line::from_value(&value) {
            keep(line);
        }
    })
}

/// Hands each line of a trace to `keep`, one at a time, so a reader that
/// keeps only some of them holds no more than those. The first line must
/// be this schema's header; a line that is not a JSON object with `t` and
/// `ev`, or a file far past the size a trace can have, is an error naming
/// the file (and the line).
fn for_each_line(path: &Path, keep: impl FnMut(Value)) -> Result<(), TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let damaged = |line: usize, reason: String| TraceError::Damaged {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    // A FIFO or a device is refused before it is opened (an open would wait).
    if !meta.is_file() {
        return Err(damaged(0, "not a regular file".into()));
    }
    let size = meta.len();
    if size > TRACE_READ_LIMIT {
        return Err(damaged(
            0,
            format!(
                "{size} bytes, more than a trace holds ({TRACE_LIMIT_BYTES} bytes and a marker)"
            ),
        ));
    }
    let file = File::open(path).map_err(io)?;
    for_each_line_of(file.take(TRACE_READ_LIMIT + 1), path, keep)
}

/// [`for_each_line`] of an open trace, read at most one byte past
/// [`TRACE_READ_LIMIT`].
fn for_each_line_of(
    reader: impl Read,
    path: &Path,
    mut keep: impl FnMut(Value),
) -> Result<(), TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let damaged = |line: usize, reason: String| TraceError::Damaged {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let reader = std::io::BufReader::new(reader);
    let mut seen = 0;
    for (n, line) in reader.split(b'\n').enumerate() {
        let number = n + 1;
        let line = line.map_err(io)?;
        let line =
            String::from_utf8(line).map_err(|e| damaged(number, format!("not UTF-8: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let event: Value =
            serde_json::from_str(&line).map_err(|e| damaged(number, format!("not JSON: {e}")))?;
        let valid = event.get("ev").is_some_and(Value::is_string)
            && event.get("t").is_some_and(Value::is_number);
        if !valid {
            return Err(damaged(
                number,
                "an event needs `t` (number) and `ev` (string)".into(),
            ));
        }
        if seen == 0 {
            let schema = event.get("schema").and_then(Value::as_str);
            if event["ev"] != "trace" || schema != Some(TRACE_SCHEMA) {
                return Err(damaged(
                    number,
                    format!(
                        "schema {:?}, expected {TRACE_SCHEMA}",
                        schema.unwrap_or("none")
                    ),
                ));
            }
        }
        seen += 1;
        keep(event);
    }
    if seen == 0 {
        return Err(damaged(0, "empty: no header line".into()));
    }
    Ok(())
}
