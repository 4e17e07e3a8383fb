//! A run folder read back: the one way every command that reads a run
//! (`show`, `compare`, `merge`, `baseline`, `export`, `rerun`, `bisect`,
//! the page a run writes, and any later reader) opens it. A run folder is
//! data from wherever it was made, never instructions:
//!
//! - any path form (the folder, its `report.json`, relative or bare) names
//!   one folder, and every file read from it is opened beneath it
//!   ([`crate::run_path::RunRoot`]: no path, `..` or symlink leads out);
//! - only regular files are read, each within a size bound, so a FIFO, a
//!   device or a sparse giant never hangs a command or fills its memory;
//! - the report is parsed in linear time and the counts it states are
//!   checked against what it holds before anything is sized by them;
//! - a trace a report names for several attempts is read once
//!   ([`RunDir::for_each_event`]), so reading a run never costs more than
//!   its files hold;
//! - its text reaches an output only through `untrusted::Untrusted` (the
//!   renderers), and nothing in it chooses a URL, a credential, a path
//!   outside it or a program to run (`rerun` takes those from the user).
//!
//! ```no_run
//! # use continuity_report::RunDir;
//! # use std::path::Path;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let run = RunDir::open(Path::new("reports/latest"))?;
//! let report = run.report()?;
//! for cell in &report.cells {
//!     if let Some(trace) = &cell.trace {
//!         run.for_each_event(trace, |line| { /* … */ })?;
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use crate::run_path::{FileId, RunFile, RunPathError, RunRoot};
use crate::trace::event::Line;
use crate::trace::{for_each_event_in, TraceError, TRACE_READ_LIMIT};
use crate::untrusted::Untrusted;
use crate::upgrade::{UpgradeError, MAX_REPORT_BYTES};
use crate::Report;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The report's file name in a run folder.
pub const REPORT_FILE: &str = "report.json";

/// Why a run folder (or its report) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// The folder or the report file cannot be opened as one.
    #[error(transparent)]
    Unopened(#[from] RunPathError),
    /// The file is not a report this build reads.
    #[error("{}: not a continuity report: {}", .path.display(), Untrusted::new(&.source.to_string()).terminal())]
    NotAReport {
        path: PathBuf,
        #[source]
        source: UpgradeError,
    },
}

/// A run folder opened for reading. See the module's doc.
#[derive(Debug)]
pub struct RunDir {
    root: RunRoot,
    /// The report's name in the folder (`report.json` unless a file of
    /// another name was given).
    report_name: String,
    /// The traces read so far, by identity, with the path first read by.
    traces_read: Mutex<HashMap<FileId, String>>,
}

impl RunDir {
    /// The run that `given` names: a run folder, or a report file in one
    /// (`report.json`, `runs/a/report.json`), in any path form. A report
    /// named without a folder is in the current folder, which then is its
    /// run folder and confines it as any other.
    pub fn open(given: &Path) -> Result<RunDir, RunDirError> {
        let is_dir = std::fs::metadata(given).is_ok_and(|m| m.is_dir());
        let (dir, name) = match (is_dir, given.file_name()) {
            (false, Some(name)) => (
                given.parent().unwrap_or(Path::new("")),
                name.to_string_lossy().into_owned(),
            ),
            _ => (given, REPORT_FILE.to_string()),
        };
        Ok(RunDir {
            root: RunRoot::open(dir)?,
            report_name: name,
            traces_read: Mutex::default(),
        })
    }

    /// The folder, as given (`.` for a bare report file).
    pub fn dir(&self) -> &Path {
        self.root.dir()
    }

    /// The report file's path, for messages.
    pub fn report_path(&self) -> PathBuf {
        self.root.dir().join(&self.report_name)
    }

    /// The report's text, bounded by [`MAX_REPORT_BYTES`].
    pub fn report_text(&self) -> Result<String, RunDirError> {
        let file = self.root.open_file(&self.report_name, MAX_REPORT_BYTES)?;
        file.read_text().map_err(|why| {
            RunDirError::Unopened(RunPathError::File {
                given: self.report_name.clone(),
                run_dir: self.dir().to_path_buf(),
                why,
            })
        })
    }

    /// The report, upgraded to the current schema.
    pub fn report(&self) -> Result<Report, RunDirError> {
        let text = self.report_text()?;
        crate::upgrade::parse_report(&text).map_err(|source| RunDirError::NotAReport {
            path: self.report_path(),
            source,
        })
    }

    /// A file the report names (`relative` to the folder), opened beneath
    /// it: a regular file of at most `limit` bytes.
    pub fn open_file(&self, relative: &str, limit: u64) -> Result<RunFile, RunPathError> {
        self.root.open_file(relative, limit)
    }

    /// Each event of the trace at `relative` (a cell's or an attempt's
    /// `trace`), one at a time. A file read already through this `RunDir`
    /// under another path (a report naming one trace for several cells, or
    /// links to one) is refused ([`TraceError::ReadBefore`]): a run writes
    /// one trace per attempt, and reading one file once keeps every reader
    /// bounded by what the folder holds.
    pub fn for_each_event(&self, relative: &str, keep: impl FnMut(Line)) -> Result<(), TraceError> {
        let file = self.root.open_file(relative, TRACE_READ_LIMIT)?;
        self.claim_trace(relative, &file)?;
        for_each_event_in(file, keep)
    }

    /// Notes `file` as read under `relative`; refused when it was read
    /// under another path before.
    fn claim_trace(&self, relative: &str, file: &RunFile) -> Result<(), TraceError> {
        let mut read = self.traces_read.lock().unwrap_or_else(|p| p.into_inner());
        match read.get(&file.id) {
            Some(first) if first != relative => Err(TraceError::ReadBefore {
                path: file.path.clone(),
                first: first.clone(),
            }),
            Some(_) => Ok(()),
            None => {
                read.insert(file.id, relative.to_string());
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_run(dir: &Path) -> Report {
        let mut report = crate::fixture::report();
        std::fs::create_dir_all(dir.join("cells/a")).unwrap();
        std::fs::write(
            dir.join("cells/a/trace.jsonl"),
            format!(
                "{{\"t\":0,\"ev\":\"trace\",\"schema\":\"{}\"}}\n",
                crate::trace::TRACE_SCHEMA
            ),
        )
        .unwrap();
        report.cells[0].trace = Some("cells/a/trace.jsonl".into());
        report.cells[1].trace = Some("cells/../cells/a/trace.jsonl".into());
        std::fs::write(
            dir.join(REPORT_FILE),
            serde_json::to_string(&report).unwrap(),
        )
        .unwrap();
        report
    }

    #[test]
    fn every_path_form_names_one_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        let report = write_run(&run);
        for given in [run.clone(), run.join(REPORT_FILE)] {
            let dir = RunDir::open(&given).unwrap();
            assert_eq!(dir.dir(), run.as_path());
            assert_eq!(dir.report().unwrap().run.id, report.run.id);
        }
    }

    /// A cell's trace that is a symlink out of the folder is refused,
    /// whichever form named the run (the bare `report.json` is
    /// `quick::hostile_run_folders`'s, which runs in the folder).
    #[test]
    fn a_trace_linked_out_of_the_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        write_run(&run);
        std::fs::write(tmp.path().join("outside"), "secret").unwrap();
        std::fs::remove_file(run.join("cells/a/trace.jsonl")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), run.join("cells/a/trace.jsonl"))
            .unwrap();
        let dir = RunDir::open(&run.join(REPORT_FILE)).unwrap();
        let e = dir
            .for_each_event("cells/a/trace.jsonl", |_| {})
            .unwrap_err();
        assert!(e.to_string().contains("leads outside"), "{e}");
    }

    #[test]
    fn one_trace_named_by_two_cells_is_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        write_run(tmp.path());
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut events = 0;
        dir.for_each_event("cells/a/trace.jsonl", |_| events += 1)
            .unwrap();
        // The same path again (a cell and its attempt) reads it again.
        dir.for_each_event("cells/a/trace.jsonl", |_| events += 1)
            .unwrap();
        assert_eq!(events, 2);
        // `..` is refused before anything is opened; a link to it is the same file.
        std::os::unix::fs::symlink("a", tmp.path().join("cells/b")).unwrap();
        let e = dir
            .for_each_event("cells/b/trace.jsonl", |_| {})
            .unwrap_err();
        assert!(matches!(e, TraceError::ReadBefore { .. }), "{e}");
    }
}
