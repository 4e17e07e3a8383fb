//! The run folder: `report.json`, `report.txt`, `report.md`,
//! `junit.xml` and `report.html`, each written atomically so an interrupted run (a second
//! Ctrl-C, a killed harness) never leaves a half-written report behind.
//!
//! Every file continuity writes into a run folder goes through
//! [`RunFolder`], which redacts the run's secrets from it; what other
//! programs wrote there (component logs, session stores) is scrubbed by
//! [`RunFolder::scrub`] once they have stopped.
//!
//! Over 400 lines on purpose: every file of the run folder goes through
//! `RunFolder`, which holds the run's redactor and lock; writing atomically,
//! reading the report back and scrubbing other programs' files are its own
//! steps over that same redactor.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::junit::render_junit;
use super::markdown::render_markdown;
use super::model::Report;
use super::table::render_text;
use crate::secret::Redactor;

mod scrub;

/// What a run writes at the top of its folder: `--force` removes these
/// (and only these, with the `stack-*` folders of further stacks) before a new run reuses the folder. A writer that adds
/// a file or folder of its own lists it here.
pub const RUN_FOLDER_ENTRIES: &[&str] = &[
    "report.json",
    "report.txt",
    "report.md",
    "junit.xml",
    "report.html",
    "cells",
    "persist",
    "stack",
];

/// The run folder's lock file: held (flock) for as long as the run or
/// merge writing the folder lives, so a second one on it is refused at once.
pub const RUN_LOCK_FILE: &str = "run.lock";

/// Why a run folder could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// Another run (or merge) is writing the folder, or its lock could not be taken.
    #[error(transparent)]
    Lock(#[from] crate::folder_lock::LockError),
    #[error("{} is not empty (an earlier run?): choose another --out, or add --force to replace the earlier run's reports and session stores", .0.display())]
    NotEmpty(PathBuf),
    #[error("{} is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("cannot write into {}: {source}; choose another --out", .path.display())]
    NotWritable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot prepare {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A run's folder and the redactor every write into it goes through.
#[derive(Debug, Clone)]
pub struct RunFolder {
    dir: PathBuf,
    redactor: Redactor,
    /// Held while the report is written; true once it has been (clones share it).
    report_written: Arc<Mutex<bool>>,
    /// The folder's lock, for a folder claimed by [`Self::create`]: held
    /// until the last clone goes (or the process dies).
    _lock: Option<Arc<crate::folder_lock::FolderLock>>,
}

impl RunFolder {
    /// Claims `dir` for a new run, creating it, and locks it
    /// ([`RUN_LOCK_FILE`]) for as long as the folder lives: `command` names
    /// the holder to a second one, refused at once. A folder that already
    /// holds anything is refused unless `force`, which removes what an earlier
    /// run wrote there ([`RUN_FOLDER_ENTRIES`]) so that no session store or
    /// report of it is reused; other files are left alone.
    pub fn create(
        dir: &Path,
        force: bool,
        redactor: Redactor,
        command: &str,
    ) -> Result<RunFolder, FolderError> {
        let io_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FolderError::Io { path, source }
        };
        // A link to a folder is that folder.
        match fs::metadata(dir) {
            Ok(meta) if !meta.is_dir() => return Err(FolderError::NotAFolder(dir.to_path_buf())),
            Ok(_) => {}
            Err(_) => fs::create_dir_all(dir).map_err(io_error(dir))?,
        }
        let holds_others = || -> Result<bool, FolderError> {
            Ok(fs::read_dir(dir)
                .map_err(io_error(dir))?
                .any(|e| e.map_or(true, |e| e.file_name() != RUN_LOCK_FILE)))
        };
        // Refused as it is (no lock file left in someone's folder), unless a
        // run may hold it: then that run is named.
        if !force && holds_others()? && !dir.join(RUN_LOCK_FILE).exists() {
            return Err(FolderError::NotEmpty(dir.to_path_buf()));
        }
        // Before anything is looked at or removed: a second run on the
        // folder must not see (or --force away) the first one's files.
        let lock = crate::folder_lock::FolderLock::try_acquire(dir, RUN_LOCK_FILE, command)
            .map_err(|e| match e {
                crate::folder_lock::LockError::Io { source, .. } => FolderError::NotWritable {
                    path: dir.to_path_buf(),
                    source,
                },
                busy => FolderError::Lock(busy),
            })?;
        if !force && holds_others()? {
            return Err(FolderError::NotEmpty(dir.to_path_buf()));
        }
        if force {
            // `stack-*`: a version's stack, a `--jobs` worker's stack.
            let stacks: Vec<String> = fs::read_dir(dir)
                .map_err(io_error(dir))?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with("stack-"))
                .collect();
            let entries = RUN_FOLDER_ENTRIES
                .iter()
                .copied()
                .chain(stacks.iter().map(String::as_str));
            for entry in entries {
                let path = dir.join(entry);
                let removed = match fs::symlink_metadata(&path) {
                    Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
                    Ok(_) => fs::remove_file(&path),
                    Err(_) => Ok(()),
                };
                removed.map_err(io_error(&path))?;
            }
        }
        // Found now, not once the whole matrix has run.
        check_writable(dir)?;
        Ok(RunFolder {
            _lock: Some(Arc::new(lock)),
            ..RunFolder::open(dir, redactor)
        })
    }

    /// A folder to write into as it is (re-writing a finished run's reports).
    pub fn open(dir: &Path, redactor: Redactor) -> RunFolder {
        RunFolder {
            dir: dir.to_path_buf(),
            redactor,
            report_written: Arc::default(),
            _lock: None,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Writes `text`, redacted, to `name` (relative to the folder; parent
    /// folders are created), atomically.
    pub fn write_text(&self, name: impl AsRef<Path>, text: &str) -> io::Result<PathBuf> {
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        write_atomic(&path, self.redactor.redact(text).as_bytes())?;
        Ok(path)
    }

    /// Appends `line` (redacted, with a newline) to `name`, creating it and
    /// its parent folders: for files written while the run goes, such as a
    /// cell's trace. Each call is one `write`, so a line is never torn by a
    /// crash between two of them.
    pub fn append_line(&self, name: impl AsRef<Path>, line: &str) -> io::Result<PathBuf> {
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut text = self.redactor.redact(line).into_owned();
        text.push('\n');
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?
            .write_all(text.as_bytes())?;
        Ok(path)
    }

    /// Writes `bytes` to `name` as they are, atomically: for files rendered
    /// from an already redacted report, whose structure (JSON keys, XML
    /// tags, a page's script) a text pass could rewrite.
    fn write_rendered(&self, name: &str, text: &str) -> io::Result<PathBuf> {
        let path = self.dir.join(name);
        write_atomic(&path, text.as_bytes())?;
        Ok(path)
    }

    /// The report files. The report is redacted (its string values only)
    /// before it is rendered, so every format sees the same text; the
    /// structured renderings (JSON, XML, the page) are written as rendered,
    /// the plain-text ones redacted again as text.
    pub fn write_report(&self, report: &Report) -> io::Result<ReportFiles> {
        let mut written = self.lock_report();
        let files = self.write_report_files(report)?;
        *written = true;
        Ok(files)
    }

    /// [`Self::write_report`], unless a report was written into this
    /// folder already (a partial report must not replace the run's own).
    pub fn write_report_once(&self, report: &Report) -> io::Result<Option<ReportFiles>> {
        let mut written = self.lock_report();
        if *written {
            return Ok(None);
        }
        let files = self.write_report_files(report)?;
        *written = true;
        Ok(Some(files))
    }

    fn lock_report(&self) -> std::sync::MutexGuard<'_, bool> {
        self.report_written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn write_report_files(&self, report: &Report) -> io::Result<ReportFiles> {
        let dir = self.dir.as_path();
        fs::create_dir_all(dir)?;
        let report = &self.redacted(report)?;
        let json = serde_json::to_string_pretty(report).map_err(io::Error::other)? + "\n";
        let junit = render_junit(report).map_err(io::Error::other)?;
        let files = ReportFiles {
            dir: dir.to_path_buf(),
            json: self.write_rendered("report.json", &json)?,
            text: self.write_text("report.txt", &render_text(report, false))?,
            markdown: self.write_text("report.md", &render_markdown(report))?,
            junit: self.write_rendered("junit.xml", &junit)?,
            // The page reads the cells' traces, which their writer already
            // redacted, through the one reader of run folders.
            html: self.write_rendered("report.html", &self.render_page(report))?,
        };
        // The renames are durable only once the directory entry is on disk;
        // some filesystems refuse to open a directory for sync, which is not
        // worth failing a finished run over.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(files)
    }

    /// `report.html`, each cell's trace read back from the folder.
    fn render_page(&self, report: &Report) -> String {
        let traces = match super::run_dir::RunDir::open(&self.dir) {
            Ok(run) => super::html::cell_traces(&run, report),
            Err(e) => {
                let why = e.to_string();
                let note = || {
                    Err(crate::trace::TraceError::Io {
                        path: self.dir.clone(),
                        source: io::Error::other(why.clone()),
                    })
                };
                report.cells.iter().map(|_| note()).collect()
            }
        };
        super::html::render_html(report, &traces)
    }

    /// The report with the run's secrets taken out, as the files hold it:
    /// what a renderer that cuts text to a width must start from, since a
    /// secret cut in half is no longer found by the redactor.
    pub fn redacted_report(&self, report: &Report) -> Report {
        self.redacted(report).unwrap_or_else(|_| report.clone())
    }

    /// The report with the run's secrets redacted from its string values.
    /// A secret equal to a word of the report's own vocabulary (a verdict,
    /// an outcome: `SA_TOKEN=pass`) would leave a value the model cannot
    /// read: those values keep the word, which the schema itself spells out.
    fn redacted(&self, report: &Report) -> io::Result<Report> {
        if self.redactor.is_empty() {
            return Ok(report.clone());
        }
        let original = serde_json::to_value(report).map_err(io::Error::other)?;
        let mut value = original.clone();
        self.redactor.redact_json(&mut value);
        if let Ok(redacted) = serde_json::from_value(value.clone()) {
            return Ok(redacted);
        }
        let mut changed = Vec::new();
        changed_strings(&original, &value, String::new(), &mut changed);
        for pointer in changed {
            let mut one = original.clone();
            if let (Some(slot), Some(new)) = (one.pointer_mut(&pointer), value.pointer(&pointer)) {
                *slot = new.clone();
            }
            if serde_json::from_value::<Report>(one).is_err() {
                if let (Some(slot), Some(old)) =
                    (value.pointer_mut(&pointer), original.pointer(&pointer))
                {
                    *slot = old.clone();
                }
            }
        }
        serde_json::from_value(value).map_err(io::Error::other)
    }

    /// Reads `report.json` back and parses it into the model, as `show`,
    /// `compare` and `merge` will: a run reports success only on a report
    /// they can read.
    pub fn check_report(&self, files: &ReportFiles) -> Result<(), ReadBackError> {
        let error = |reason: String| ReadBackError {
            path: files.json.clone(),
            reason,
        };
        let text = fs::read_to_string(&files.json).map_err(|e| error(e.to_string()))?;
        super::compare::read_report(&text)
            .map(|_| ())
            .map_err(|e| error(e.to_string()))
    }
}

/// The JSON pointers of the string values that differ between two values
/// of the same shape.
fn changed_strings(
    before: &serde_json::Value,
    after: &serde_json::Value,
    at: String,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (before, after) {
        (Value::String(a), Value::String(b)) if a != b => out.push(at),
        (Value::Array(a), Value::Array(b)) => {
            for (n, (a, b)) in a.iter().zip(b).enumerate() {
                changed_strings(a, b, format!("{at}/{n}"), out);
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (key, a) in a {
                if let Some(b) = b.get(key) {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    changed_strings(a, b, format!("{at}/{key}"), out);
                }
            }
        }
        _ => {}
    }
}

/// `report.json` as written does not read back into the model.
#[derive(Debug, thiserror::Error)]
#[error("{} does not read back as a report ({reason}): the run's results are not trustworthy", .path.display())]
pub struct ReadBackError {
    pub path: PathBuf,
    pub reason: String,
}

/// Writes and removes a file in `dir`: the folder takes the run's files.
fn check_writable(dir: &Path) -> Result<(), FolderError> {
    let probe = dir.join(format!(".continuity-write-check-{}", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"ok"));
    let _ = fs::remove_file(&probe);
    written.map_err(|source| FolderError::NotWritable {
        path: dir.to_path_buf(),
        source,
    })
}

/// What [`RunFolder::write_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    pub dir: PathBuf,
    pub json: PathBuf,
    pub text: PathBuf,
    pub markdown: PathBuf,
    pub junit: PathBuf,
    /// The self-contained page with the matrix and each cell's timeline.
    pub html: PathBuf,
}

/// `<root>/<UTC timestamp>-<short id>`, e.g. `reports/20261129T120102Z-ab12cd`:
/// sortable by time, unique by id.
pub fn default_run_dir(root: &Path, started: SystemTime, short_id: &str) -> PathBuf {
    let stamp: String = humantime::format_rfc3339_seconds(started)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    // The id becomes a path component: nothing in it may climb out of root.
    let id = crate::file_name::safe(short_id);
    if short_id.is_empty() {
        root.join(stamp)
    } else {
        root.join(format!("{stamp}-{id}"))
    }
}

/// Distinguishes temp files of concurrent writers within one process;
/// the pid distinguishes processes.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Write to a temp file beside `path`, fsync it, then rename over `path`:
/// readers see the old file or the new one, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".to_string());
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp-{}-{seq}", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
