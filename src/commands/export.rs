//! `continuity export RUN --chrome-trace FILE`: a finished run's cells,
//! phases, restarts, fault windows and HTTP exchanges as Chrome Trace
//! Event JSON, for Perfetto or `chrome://tracing`. The run is read through
//! the one reader of run folders (`report::RunDir`): each attempt's trace
//! confined to the folder, and a file several attempts name read once.
//! FILE is a new regular file, or (with `--force`) an existing one
//! replaced; never a link, a FIFO, a folder or a file of the run itself.

use super::{open_run, CommandError};
use crate::report::chrome_trace::{render_chrome_trace, TracedAttempt};
use std::path::{Path, PathBuf};

/// Writes `out`; returns the line to print (what was written, and any
/// trace that could not be read, whose attempt keeps the report's phases).
pub fn export_chrome_trace(run: &Path, out: &Path, force: bool) -> Result<String, CommandError> {
    let folder = open_run(run)?;
    let target = Target::check(out, folder.dir(), force)?;
    let report = folder
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))?;
    let mut attempts = Vec::new();
    for cell in &report.cells {
        let records: Vec<_> = match cell.attempts.len() {
            0 | 1 => vec![(None, cell.trace.as_deref())],
            _ => cell
                .attempts
                .iter()
                .map(|a| (Some(a), a.trace.as_deref()))
                .collect(),
        };
        for (attempt, trace) in records {
            let mut events = Vec::new();
            if let Some(path) = trace {
                if let Err(e) = folder.for_each_event(path, |line| events.push(line)) {
                    crate::console::errln(&format!(
                        "warning: {e}; its attempt keeps the events before it, or the report's phases"
                    ));
                }
            }
            attempts.push(TracedAttempt {
                cell,
                attempt,
                events,
            });
        }
    }
    let document = render_chrome_trace(&report, &attempts);
    drop(attempts);
    let text = serde_json::to_string(&document)
        .map_err(|e| CommandError::incomplete(format!("cannot write the trace: {e}")))?;
    drop(document);
    let written = crate::secret::redact_known(&text);
    target.write(written.as_bytes())?;
    Ok(format!(
        "{}: {} attempts of run {} as Chrome trace events (open in https://ui.perfetto.dev)",
        out.display(),
        report
            .cells
            .iter()
            .map(|c| c.attempts.len().max(1))
            .sum::<usize>(),
        crate::untrusted::Untrusted::new(&report.run.id).terminal()
    ))
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
        let lexical = std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf());
        let run_lexical = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
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
    fn write(&self, bytes: &[u8]) -> Result<(), CommandError> {
        crate::user_file::place_file(&self.path, bytes, self.replace).map_err(|e| {
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
