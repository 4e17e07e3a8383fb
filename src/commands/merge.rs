//! `continuity merge` (shard runs → one run folder, gated like a run) and
//! `continuity baseline` (a finished run → an expectations file on stdout).

use super::{gate, load_report, open_run, CommandError};
use crate::cli::{MergeArgs, MessageFormat};
use crate::report::baseline::{render_baseline, Quarantine};
use crate::report::merge::{merge as merge_shards, ShardRun};
use crate::report::{RunDir, SCHEMA_ID};
use crate::run_path::{FileId, RunPathError};
use crate::trace::TRACE_READ_LIMIT;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// `continuity merge --out DIR RUN...`. The inputs are only read; a refused
/// merge writes nothing.
pub fn merge(args: MergeArgs) -> Result<super::Outcome, CommandError> {
    let out = &args.out;
    let out_absolute = std::path::absolute(out)
        .map_err(|e| CommandError::usage(format!("{}: {e}", out.display())))?;
    let (shards, traces) = read_shards(&args.runs, &out_absolute)?;
    if out.join("report.json").exists() {
        return Err(CommandError::usage(format!(
            "{} already holds a report: merge into a new folder (nothing is overwritten)",
            out.display()
        )));
    }
    let expectations = gate::load_expectations(&args.gate, None)?;
    let id = format!("merged-{}", super::short_id());
    let mut report = merge_shards(&id, &shards)?;
    if let Some(x) = &expectations {
        check_expectations(x, &report)?;
        gate::judge(x, &mut report, &args.gate);
    } else {
        report.run.flaky_result = args.gate.flaky_result.into();
    }
    // The shards' own texts were redacted when they were written; the
    // environment's secrets are what could still reach the merged folder.
    let mut redactor = crate::secret::Redactor::none();
    redactor.add_secret_variables(std::env::vars());
    crate::secret::install(redactor.clone());
    let folder = crate::report::RunFolder::create(out, false, redactor, "continuity merge")?;
    traces.copy_into(folder.dir())?;
    gate::finish(&report, &folder, MessageFormat::Human, false)
}

/// Each run given, read with its traces claimed, as a shard named
/// relative to the merged folder `out_absolute`; a folder given twice is
/// refused.
fn read_shards(
    runs: &[PathBuf],
    out_absolute: &Path,
) -> Result<(Vec<ShardRun>, Traces), CommandError> {
    let mut shards = Vec::new();
    let mut traces = Traces::default();
    let mut seen: Vec<(PathBuf, String)> = Vec::new();
    for given in runs {
        let run = open_run(given)?;
        let dir = run.dir().to_path_buf();
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            return Err(CommandError::usage(format!(
                "{} and {first} are the same run folder: merging a run with itself would count its cells twice",
                given.display()
            )));
        }
        seen.push((canonical.clone(), given.display().to_string()));
        let text = run
            .report_text()
            .map_err(|e| CommandError::usage(e.to_string()))?;
        let schema = declared_schema(&run, &text)?;
        let mut report = crate::report::compare::read_report(&text)
            .map_err(|e| CommandError::usage(format!("{}: {e}", run.report_path().display())))?;
        drop(text);
        traces.claim(run, &mut report)?;
        // Shard folders are named relative to the merged folder, so the
        // merged report's log links hold wherever the folders are copied together.
        let absolute = std::path::absolute(&dir).unwrap_or(canonical);
        shards.push(ShardRun {
            dir: relative_to(&absolute, out_absolute).display().to_string(),
            schema,
            report,
        });
    }
    Ok((shards, traces))
}

/// The expectations name only what the merged run knows: the shards'
/// targets and scenarios, and the local stack's and the built-in ones,
/// which a file made for them names whichever the shards ran (as `run`
/// checks what it knows); and only its server and SDK points.
fn check_expectations(
    x: &crate::report::expect::Expectations,
    report: &crate::report::Report,
) -> Result<(), CommandError> {
    let mut known: Vec<String> = crate::stack::local::known_targets(&[])
        .into_iter()
        .map(|k| k.id.to_string())
        .collect();
    known.extend(report.run.targets.iter().map(|t| t.to_string()));
    let mut scenarios: Vec<String> = crate::scenario::builtin_scenarios()
        .into_iter()
        .map(|s| s.name)
        .collect();
    scenarios.extend(report.run.scenarios.iter().cloned());
    x.check_names(&known, &scenarios)?;
    let labels = |axis| {
        report
            .run
            .points_of(axis)
            .map(|p| p.label.clone())
            .collect::<Vec<_>>()
    };
    x.check_points(
        &labels(crate::report::Axis::Server),
        &labels(crate::report::Axis::Sdk),
    )?;
    Ok(())
}

/// The shards' traces, copied into the merged folder so that its report's
/// `trace` paths hold: each shard's cell folder (`cells/NAME`) keeps its
/// name, or gets `~N` (the Nth shard) when an earlier shard has the name.
/// Each file is copied once, however many paths or links name it: a
/// trace named by a second cell (a run writes one per attempt) is left
/// out of that cell, so the merged folder never holds more than the
/// shards do.
#[derive(Default)]
struct Traces {
    /// The shards' folders, held open: every trace is read beneath its own.
    runs: Vec<RunDir>,
    /// Cell folders of the merged run taken so far.
    taken: Vec<String>,
    /// Each file claimed: its identity, the cell that named it (shard,
    /// index) and where it goes.
    claimed: HashMap<FileId, (usize, usize, String)>,
    /// What to copy: the shard, the path in it, and where in the merged folder.
    copies: Vec<(usize, String, String)>,
    /// Traces left out because another cell named the same file.
    shared: usize,
}

impl Traces {
    /// Rewrites the trace paths of `report` (the shard in `run`) to where
    /// they will be in the merged folder. A trace that is gone (or not a
    /// file) is dropped from the report rather than pointed at; one that
    /// leads outside the shard's folder refuses the merge.
    fn claim(
        &mut self,
        run: RunDir,
        report: &mut crate::report::Report,
    ) -> Result<(), CommandError> {
        let shard = self.runs.len();
        let mut renamed: Vec<(String, String)> = Vec::new();
        for (index, cell) in report.cells.iter_mut().enumerate() {
            let attempts = cell.attempts.iter_mut().map(|a| &mut a.trace);
            for trace in std::iter::once(&mut cell.trace).chain(attempts) {
                let Some(given) = trace.take() else { continue };
                let id = match run.open_file(&given, TRACE_READ_LIMIT) {
                    Ok(file) => file.id,
                    Err(e @ RunPathError::Outside { .. }) => {
                        return Err(CommandError::usage(format!("{}: {e}", run.dir().display())))
                    }
                    // Gone, not a regular file, too large: not pointed at.
                    Err(_) => continue,
                };
                if let Some((s, i, merged)) = self.claimed.get(&id) {
                    if (*s, *i) == (shard, index) {
                        *trace = Some(merged.clone());
                    } else {
                        self.shared += 1;
                    }
                    continue;
                }
                let (folder, rest) = split_cell_folder(&given);
                let target = match renamed.iter().find(|(from, _)| *from == folder) {
                    Some((_, to)) => to.clone(),
                    None => {
                        let mut to = folder.clone();
                        if self.taken.contains(&to) {
                            to = format!("{folder}~{}", shard + 1);
                        }
                        self.taken.push(to.clone());
                        renamed.push((folder, to.clone()));
                        to
                    }
                };
                let mut merged = format!("{target}/{rest}");
                if self.copies.iter().any(|(_, _, to)| *to == merged) {
                    // Two files of one shard mapped to one place: keep both.
                    merged = format!("{target}/{}-{rest}", self.copies.len());
                }
                self.claimed.insert(id, (shard, index, merged.clone()));
                self.copies.push((shard, given, merged.clone()));
                *trace = Some(merged);
            }
        }
        self.runs.push(run);
        Ok(())
    }

    /// Copies each claimed trace, streamed, into the merged folder `out`
    /// (a new file each: the folder is the merge's own).
    fn copy_into(&self, out: &Path) -> Result<(), CommandError> {
        if self.shared > 0 {
            crate::console::errln(&format!(
                "continuity: {} trace path(s) name a file another cell's trace names already: left out of the merged run (a run writes one trace per attempt)",
                self.shared
            ));
        }
        for (shard, from, to) in &self.copies {
            let run = &self.runs[*shard];
            let to = out.join(to);
            let cannot = |e: &dyn std::fmt::Display| {
                CommandError::incomplete(format!(
                    "cannot copy {}/{} to {}: {e}",
                    run.dir().display(),
                    crate::untrusted::Untrusted::new(from).terminal(),
                    to.display()
                ))
            };
            let source = run
                .open_file(from, TRACE_READ_LIMIT)
                .map_err(|e| cannot(&e))?;
            let copied = to
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&to)?;
                    std::io::copy(&mut source.bounded(), &mut file).map(|_| ())
                });
            copied.map_err(|e| cannot(&e))?;
        }
        Ok(())
    }
}

/// `cells/NAME/attempt-2/trace.jsonl` → (`cells/NAME`, `attempt-2/trace.jsonl`):
/// a cell's folder and the path inside it (a path of one part is its own folder).
fn split_cell_folder(path: &str) -> (String, String) {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let cut = match parts.len() {
        0 | 1 => 0,
        2 => 1,
        _ => 2,
    };
    let folder = if cut == 0 {
        "cells".to_string()
    } else {
        parts[..cut].join("/")
    };
    (folder, parts[cut..].join("/"))
}

/// `path` as seen from the folder `base` (both absolute): `../shard-1`.
fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let path: Vec<_> = path.components().collect();
    let base: Vec<_> = base.components().collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    for part in &path[common..] {
        out.push(part.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// The `schema` a report file declares, before any upgrade: merge refuses
/// to mix schemas even where it could read both. Only that field is kept
/// from the parse.
fn declared_schema(run: &RunDir, text: &str) -> Result<String, CommandError> {
    #[derive(serde::Deserialize)]
    struct Declared {
        schema: Option<String>,
    }
    let declared: Declared = serde_json::from_str(text).map_err(|e| {
        CommandError::usage(format!(
            "{}: not a continuity report: {e}",
            run.report_path().display()
        ))
    })?;
    Ok(declared.schema.unwrap_or_else(|| SCHEMA_ID.to_string()))
}

/// `continuity baseline RUN`: the expectations file that makes this run
/// pass. A report holding a cell twice is refused, as `compare` refuses
/// it (which of the two would the file record?); interrupted cells are left
/// out, and said so.
pub fn baseline(
    run: &Path,
    until: Option<jiff::civil::Date>,
    issue: Option<String>,
) -> Result<String, CommandError> {
    let report = load_report(run)?;
    let duplicated = crate::report::compare::duplicated_cells(&report);
    if !duplicated.is_empty() {
        return Err(CommandError::usage(format!(
            "{}: the report holds these cells more than once: {}",
            run.display(),
            duplicated.join(", ")
        )));
    }
    let baseline = render_baseline(&report, &Quarantine { until, issue });
    if !baseline.left_out.is_empty() {
        crate::console::errln(&format!(
            "continuity: left out {} interrupted cell(s), which have no verdict to expect: {} (run them again to record them)",
            baseline.left_out.len(),
            baseline.left_out.join(", ")
        ));
    }
    Ok(baseline.text)
}

#[cfg(test)]
mod tests;
