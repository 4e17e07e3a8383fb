//! `continuity export RUN --chrome-trace FILE`: a finished run's cells,
//! phases, restarts, fault windows and HTTP exchanges as Chrome Trace
//! Event JSON, for Perfetto or `chrome://tracing`. The run is read through
//! the one reader of run folders (`report::RunDir`): each attempt's trace
//! confined to the folder, and a file several attempts name read once.
//! FILE is a new regular file, or (with `--force`) an existing one
//! replaced; never a link, a FIFO, a folder or a file of the run itself.

use super::{open_run, CommandError};
use crate::report::chrome_trace::{write_chrome_trace, Seen, TracedAttempt};
use std::path::{Path, PathBuf};

/// Writes `out`; returns the line to print (what was written, and any
/// trace that could not be read, whose attempt keeps the report's phases).
/// Each trace is read twice (where its attempt sits, then its events,
/// streamed into the file), so memory does not grow with the traces.
pub fn export_chrome_trace(run: &Path, out: &Path, force: bool) -> Result<String, CommandError> {
    let folder = open_run(run)?;
    let target = Target::check(out, folder.dir(), force)?;
    let report = folder
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))?;
    let records: Vec<(
        &crate::report::Cell,
        Option<&crate::report::Attempt>,
        Option<&str>,
    )> = report
        .cells
        .iter()
        .flat_map(|cell| match cell.attempts.len() {
            0 | 1 => vec![(cell, None, cell.trace.as_deref())],
            _ => cell
                .attempts
                .iter()
                .map(|a| (cell, Some(a), a.trace.as_deref()))
                .collect(),
        })
        .collect();
    let mut unread = Unread::default();
    let attempts: Vec<TracedAttempt<'_>> = records
        .iter()
        .map(|(cell, attempt, trace)| {
            let mut seen = Seen::default();
            if let Some(path) = trace {
                if let Err(e) = folder.for_each_event(path, |line| seen.see(&line)) {
                    unread.note(e);
                }
            }
            TracedAttempt {
                cell,
                attempt: *attempt,
                seen,
            }
        })
        .collect();
    unread.print();
    // The second pass: a trace read once above is its attempt's own again.
    let again = crate::report::RunDir::open(run).map_err(|e| CommandError::usage(e.to_string()))?;
    let events = |i: usize, each: &mut dyn FnMut(&crate::trace::event::Line)| {
        if let Some(path) = records[i].2 {
            let _ = again.for_each_event(path, |line| each(&line));
        }
    };
    target.write(|file| {
        write_chrome_trace(&report, &attempts, events, &mut |piece: &str| {
            std::io::Write::write_all(file, crate::secret::redact_known(piece).as_bytes())
        })
    })?;
    Ok(format!(
        "{}: {} attempts of run {} as Chrome trace events (open in https://ui.perfetto.dev)",
        out.display(),
        attempts.len(),
        crate::untrusted::Untrusted::new(&report.run.id).terminal()
    ))
}

/// The traces that could not be read, said once each kind: a report that
/// names one file for hundreds of attempts gets one line, not hundreds.
#[derive(Default)]
struct Unread {
    first: Option<String>,
    shared: usize,
    others: usize,
}

impl Unread {
    fn note(&mut self, e: crate::trace::TraceError) {
        match e {
            crate::trace::TraceError::ReadBefore { .. } => self.shared += 1,
            e => {
                self.others += 1;
                if self.first.is_none() {
                    self.first = Some(e.to_string());
                }
            }
        }
    }

    fn print(&self) {
        if let Some(first) = &self.first {
            let more = match self.others {
                1 => String::new(),
                n => format!(" (and {} more traces)", n - 1),
            };
            crate::console::errln(&format!(
                "warning: {first}{more}; their attempts keep the events before the damage, or the report's phases"
            ));
        }
        if self.shared > 0 {
            crate::console::errln(&format!(
                "warning: {} attempt(s) name a trace file another attempt names already: it is read once, for the first (a run writes one trace per attempt)",
                self.shared
            ));
        }
    }
}

/// `path` absolute, its `.` and `..` resolved by name (links not
/// followed): where the user's path says it goes.
fn lexical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where the export goes, checked before the run is read.
struct Target {
    path: PathBuf,
    replace: bool,
}

impl Target {
    /// `out` may be a new file, or with `force` an existing regular file;
    /// never a link (followed, it could lead anywhere an artifact planted
    /// it to), a folder, a FIFO or a device, nor a file inside the run
    /// folder or a path that a link in it leads out of.
    fn check(out: &Path, run_dir: &Path, force: bool) -> Result<Target, CommandError> {
        let refuse =
            |why: &str| CommandError::usage(format!("--chrome-trace {}: {why}", out.display()));
        let name = out.file_name().ok_or_else(|| refuse("not a file name"))?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let parent_real = parent
            .canonicalize()
            .map_err(|e| refuse(&format!("its folder: {e}")))?;
        let run_real = run_dir
            .canonicalize()
            .map_err(|e| refuse(&format!("the run folder: {e}")))?;
        let (lexical, run_lexical) = (lexical(parent), lexical(run_dir));
        if lexical.starts_with(&run_lexical) && !parent_real.starts_with(&run_real) {
            return Err(refuse(
                "a link in the run folder leads out of it (the export is not written through it)",
            ));
        }
        let path = parent_real.join(name);
        let replace = match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(refuse(&e.to_string())),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refuse("a symbolic link (the export is never written through one)"))
            }
            Ok(meta) if meta.is_dir() => return Err(refuse("a folder: name a file")),
            Ok(meta) if !meta.is_file() => {
                return Err(refuse("not a regular file (a FIFO, a socket or a device)"))
            }
            Ok(_) if parent_real.starts_with(&run_real) => {
                return Err(refuse(
                    "a file of the run folder itself: export to a new file (a run's own files are never replaced)",
                ))
            }
            Ok(_) if !force => {
                return Err(refuse(
                    "the file exists: name a new file, or add --force to replace it",
                ))
            }
            Ok(_) => true,
        };
        Ok(Target { path, replace })
    }

    /// Writes the file: onto nothing (a file that appeared meanwhile is
    /// kept), or onto the regular file `--force` replaces.
    fn write(
        &self,
        write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
    ) -> Result<(), CommandError> {
        crate::user_file::place_file(&self.path, self.replace, write).map_err(|e| {
            CommandError::incomplete(format!("cannot write {}: {e}", self.path.display()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::{CellId, Event, RestartEnd};
    use crate::trace::{Exchange, Purpose, Trace, TraceLevel};
    use serde_json::Value;
    use std::time::Duration;

    /// A cell's trace as the executor writes it: two phases, a restart
    /// inside the second, a fault window and an exchange with a hostile URL.
    fn write_trace(dir: &Path, folder: &str, cell: &crate::report::Cell) {
        let trace = Trace::create(
            &dir.join(folder),
            TraceLevel::Summary,
            None,
            Some(CellId {
                target: cell.point.target.clone(),
                scenario: cell.point.scenario.clone(),
                attempt: 1,
            }),
        )
        .unwrap();
        trace.phase_start("createSession", "create_session");
        let mut exchange = Exchange::new(
            "POST",
            "/v1/acp/x?\"q\"=</script>\u{202e}",
            Purpose::AcpPost,
        );
        exchange.status = Some(200);
        exchange.elapsed = Duration::from_millis(3);
        std::thread::sleep(Duration::from_millis(5));
        trace.http(exchange);
        trace.phase_end("createSession", "ok", 5);
        trace.phase_start("restart", "restart");
        trace.emit(Event::RestartStart);
        trace.fault_start("gateway", "reset_peer", "reset_peer downstream", 1000);
        std::thread::sleep(Duration::from_millis(5));
        trace.emit(Event::RestartEnd(RestartEnd {
            ok: true,
            action: "fault".into(),
            ..RestartEnd::default()
        }));
        trace.fault_end("gateway", "reset_peer", true, None);
        trace.phase_end("restart", "ok", 5);
        trace.flush();
    }

    fn events<'a>(doc: &'a Value, ph: &str, cat: Option<&str>) -> Vec<&'a Value> {
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == ph && cat.is_none_or(|c| e["cat"] == c))
            .collect()
    }

    #[test]
    fn a_run_with_traces_exports_nested_slices_per_worker_lane() {
        let dir = tempfile::tempdir().unwrap();
        let mut report = crate::report::fixture::report();
        // Two attempts that ran at once (two workers), the others without a trace.
        for (i, cell) in report.cells.iter_mut().take(2).enumerate() {
            let folder = format!("cells/00{i}/");
            cell.trace = Some(format!("{folder}trace.jsonl"));
            write_trace(dir.path(), &folder, cell);
        }
        std::fs::write(
            dir.path().join("report.json"),
            serde_json::to_string(&report).unwrap(),
        )
        .unwrap();
        let out = dir.path().join("chrome.json");
        export_chrome_trace(dir.path(), &out, false).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let cells = events(&doc, "X", Some("cell"));
        assert_eq!(cells.len(), report.cells.len());
        let named: Vec<&Value> = events(&doc, "M", None)
            .into_iter()
            .filter(|m| m["name"] == "thread_name")
            .map(|m| &m["tid"])
            .collect();
        // Every cell on a named worker track; the two at once on different ones.
        for cell in &cells {
            assert!(named.contains(&&cell["tid"]), "{cell}");
        }
        assert_ne!(
            cells[0]["tid"], cells[1]["tid"],
            "overlapping cells share a track"
        );
        let bounds = |e: &Value| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, ts + e["dur"].as_f64().unwrap_or(0.0))
        };
        let phases = events(&doc, "X", Some("phase"));
        assert!(phases.len() >= 4, "{phases:?}");
        for phase in &phases {
            let (start, end) = bounds(phase);
            let inside = cells.iter().any(|c| {
                let (cs, ce) = bounds(c);
                c["tid"] == phase["tid"] && cs <= start && end <= ce
            });
            assert!(inside, "a phase outside its cell: {phase}");
        }
        let restarts: Vec<&Value> = events(&doc, "i", Some("restart"))
            .into_iter()
            .filter(|e| e["name"] == "restart")
            .collect();
        assert_eq!(restarts.len(), 2, "one restart instant per traced cell");
        let restart_phase = |tid: &Value| {
            phases
                .iter()
                .find(|p| p["tid"] == *tid && p["name"] == "restart")
                .map(|p| bounds(p))
                .unwrap()
        };
        for r in &restarts {
            let (start, end) = restart_phase(&r["tid"]);
            let ts = r["ts"].as_f64().unwrap();
            assert!(
                start <= ts && ts <= end,
                "the restart within its phase: {r}"
            );
        }
        assert_eq!(events(&doc, "b", Some("fault")).len(), 2);
        assert_eq!(events(&doc, "e", Some("fault")).len(), 2);
        // The server's text arrives exactly, as a JSON string.
        let http = events(&doc, "b", Some("http"));
        assert_eq!(http[0]["name"], "POST /v1/acp/x?\"q\"=</script>\u{202e}");
    }

    #[test]
    fn a_v2_report_without_traces_exports_its_phases_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let v2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2/report.json");
        let out = dir.path().join("chrome.json");
        export_chrome_trace(&v2, &out, false).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let cells = events(&doc, "X", Some("cell"));
        assert_eq!(cells.len(), 4);
        let phases = events(&doc, "X", Some("phase"));
        assert!(!phases.is_empty());
        // No trace: the report's phases one after another, inside their cell.
        for phase in &phases {
            let start = phase["ts"].as_f64().unwrap();
            let end = start + phase["dur"].as_f64().unwrap();
            let inside = cells.iter().any(|c| {
                let cs = c["ts"].as_f64().unwrap();
                c["tid"] == phase["tid"] && cs <= start && end <= cs + c["dur"].as_f64().unwrap()
            });
            assert!(inside, "a phase outside its cell: {phase}");
        }
    }
}
