//! The run folder: `report.json`, `report.txt`, `report.md`,
//! `junit.xml` and `report.html`, each written atomically so an interrupted run (a second
//! Ctrl-C, a killed harness) never leaves a half-written report behind.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use super::junit::render_junit;
use super::markdown::render_markdown;
use super::model::Report;
use super::table::render_text;

/// What `write_report_dir` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    pub dir: PathBuf,
    pub json: PathBuf,
    pub text: PathBuf,
    pub markdown: PathBuf,
    pub junit: PathBuf,
    /// The self-contained page with the matrix and each cell's timeline.
    pub html: PathBuf,
    /// The table rendering for the terminal, coloured as asked, so the
    /// caller prints exactly what it wrote without rendering twice.
    /// `report.txt` itself is always plain.
    pub stdout: String,
}

pub fn write_report_dir(dir: &Path, report: &Report, color: bool) -> io::Result<ReportFiles> {
    fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(report).map_err(io::Error::other)? + "\n";
    let junit = render_junit(report).map_err(io::Error::other)?;
    let files = ReportFiles {
        dir: dir.to_path_buf(),
        json: dir.join("report.json"),
        text: dir.join("report.txt"),
        markdown: dir.join("report.md"),
        junit: dir.join("junit.xml"),
        html: dir.join("report.html"),
        stdout: render_text(report, color),
    };
    write_atomic(&files.json, json.as_bytes())?;
    write_atomic(&files.text, render_text(report, false).as_bytes())?;
    write_atomic(&files.markdown, render_markdown(report).as_bytes())?;
    write_atomic(&files.junit, junit.as_bytes())?;
    let traces = super::html::cell_traces(dir, report);
    write_atomic(
        &files.html,
        super::html::render_html(report, &traces).as_bytes(),
    )?;
    // The renames are durable only once the directory entry is on disk;
    // some filesystems refuse to open a directory for sync, which is not
    // worth failing a finished run over.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(files)
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
    let id: String = short_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.is_empty() {
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
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
