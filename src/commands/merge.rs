//! `continuity merge` (shard runs → one run folder, gated like a run) and
//! `continuity baseline` (a finished run → an expectations file on stdout).

use super::{gate, load_report, CommandError};
use crate::cli::{MergeArgs, MessageFormat};
use crate::report::merge::{merge as merge_shards, ShardRun};
use crate::report::{baseline::render_baseline, SCHEMA_ID};
use std::path::{Path, PathBuf};

/// `continuity merge --out DIR RUN...`. The inputs are only read; a refused
/// merge writes nothing.
pub fn merge(args: MergeArgs) -> Result<super::Outcome, CommandError> {
    let out = &args.out;
    let out_absolute = std::path::absolute(out)
        .map_err(|e| CommandError::usage(format!("{}: {e}", out.display())))?;
    let mut shards = Vec::new();
    let mut seen: Vec<(PathBuf, String)> = Vec::new();
    for given in &args.runs {
        let dir = if given.is_file() {
            given.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            given.clone()
        };
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            return Err(CommandError::usage(format!(
                "{} and {first} are the same run folder: merging a run with itself would count its cells twice",
                given.display()
            )));
        }
        seen.push((canonical.clone(), given.display().to_string()));
        let schema = declared_schema(given)?;
        let report = load_report(given)?;
        // Shard folders are named relative to the merged folder, so the
        // merged report's log links hold wherever the folders are copied together.
        let absolute = std::path::absolute(&dir).unwrap_or(canonical);
        shards.push(ShardRun {
            dir: relative_to(&absolute, &out_absolute).display().to_string(),
            schema,
            report,
        });
    }
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
        // The shards' targets and scenarios, and the local stack's and the
        // built-in ones, which a file made for them names whichever the
        // shards ran (as `run` checks what it knows).
        let mut known: Vec<String> = crate::stack::local::known_targets(&[])
            .into_iter()
            .map(|(n, _, _)| n)
            .collect();
        known.extend(report.run.targets.iter().cloned());
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
        gate::judge(x, &mut report, &args.gate);
    } else {
        report.run.flaky_result = args.gate.flaky_result.into();
    }
    // The shards' own texts were redacted when they were written; the
    // environment's secrets are what could still reach the merged folder.
    let mut redactor = crate::secret::Redactor::none();
    redactor.add_secret_variables(std::env::vars());
    crate::secret::install(redactor.clone());
    let folder = crate::report::RunFolder::create(out, false, redactor)?;
    gate::finish(&report, &folder, MessageFormat::Human, false)
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
/// to mix schemas even where it could read both.
fn declared_schema(path: &Path) -> Result<String, CommandError> {
    let (file, text) = super::read_report_text(path)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        CommandError::usage(format!("{}: not a continuity report: {e}", file.display()))
    })?;
    Ok(value["schema"].as_str().unwrap_or(SCHEMA_ID).to_string())
}

/// `continuity baseline RUN`: the expectations file that makes this run
/// pass. A report holding a cell twice is refused, as `compare` refuses
/// it (which of the two would the file record?); interrupted cells are left
/// out, and said so.
pub fn baseline(run: &Path) -> Result<String, CommandError> {
    let report = load_report(run)?;
    let duplicated = crate::report::compare::duplicated_cells(&report);
    if !duplicated.is_empty() {
        return Err(CommandError::usage(format!(
            "{}: the report holds these cells more than once: {}",
            run.display(),
            duplicated.join(", ")
        )));
    }
    let baseline = render_baseline(&report);
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
mod tests {
    use super::relative_to;
    use std::path::Path;

    #[test]
    fn shard_folders_are_named_from_the_merged_folder() {
        let rel = |a: &str, b: &str| {
            relative_to(Path::new(a), Path::new(b))
                .display()
                .to_string()
        };
        assert_eq!(rel("/w/runs/shard-1", "/w/runs/merged"), "../shard-1");
        assert_eq!(rel("/w/runs/merged/in", "/w/runs/merged"), "in");
        assert_eq!(rel("/a/b", "/c/d"), "../../a/b");
        assert_eq!(rel("/a", "/a"), ".");
    }
}
