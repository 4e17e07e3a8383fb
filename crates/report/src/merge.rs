//! Shard runs into one report (`continuity merge`), as Playwright's
//! `merge-reports`: the cells of every shard, one run header over them, and
//! refusals instead of a wrong matrix — a run given twice, different
//! harness versions or schemas, a cell in two shards, a missing shard.
//! Shards of different server versions become a version axis.

use std::collections::HashMap;
use std::time::SystemTime;

use crate::partition::Partition;

use super::model::{Axis, AxisValue, LogFile, Point, Report, RunInfo, ShardInfo};

/// One run to merge: its folder as given, the schema its file declared
/// (before any upgrade) and the report.
pub struct ShardRun {
    pub dir: String,
    pub schema: String,
    pub report: Report,
}

/// Why shards were not merged: a message naming what the shards' reports
/// say (their ids, agents, versions, cells), shown on one inert line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", crate::untrusted::Untrusted::new(.0).terminal())]
pub struct MergeError(pub String);

/// One report from `shards` (in the order given); `id` names the merged run.
pub fn merge(id: &str, shards: &[ShardRun]) -> Result<Report, MergeError> {
    let refuse = |m: String| Err(MergeError(m));
    let Some(first) = shards.first() else {
        return refuse("nothing to merge: give at least one run folder".into());
    };
    for (i, a) in shards.iter().enumerate() {
        for b in &shards[i + 1..] {
            if a.report.run.id == b.report.run.id {
                return refuse(format!(
                    "{} and {} are the same run ({}): merging a run with itself would count its cells twice",
                    a.dir, b.dir, a.report.run.id
                ));
            }
        }
    }
    for s in shards {
        if s.schema != first.schema {
            return refuse(format!(
                "{} has schema {}, {} has {}: merge runs of one harness version",
                first.dir, first.schema, s.dir, s.schema
            ));
        }
        let (va, vb) = (
            &first.report.run.harness_version,
            &s.report.run.harness_version,
        );
        if va != vb {
            return refuse(format!(
                "{} was made by continuity {va}, {} by {vb}: merge runs of one harness version",
                first.dir, s.dir
            ));
        }
        if s.report.run.agent != first.report.run.agent {
            return refuse(format!(
                "{} ran agent {}, {} ran {}: a matrix has one agent",
                first.dir, first.report.run.agent, s.dir, s.report.run.agent
            ));
        }
    }
    check_partitions(shards)?;
    let versions: Vec<Option<&String>> = shards
        .iter()
        .map(|s| s.report.run.server_version.as_ref())
        .collect();
    let version_axis = versions.iter().any(|v| *v != versions[0]);

    let mut owner: HashMap<Point, &str> = HashMap::new();
    let mut cells = Vec::new();
    for s in shards {
        for cell in &s.report.cells {
            let mut cell = cell.clone();
            if version_axis && cell.point.get(Axis::Server).is_none() {
                if let Some(version) = &s.report.run.server_version {
                    cell.point.set(AxisValue::Server(version.clone()));
                }
            }
            if let Some(other) = owner.insert(cell.point.clone(), &s.dir) {
                return refuse(format!(
                    "cell {} is in both {other} and {}: shards must not overlap",
                    cell.key(),
                    s.dir
                ));
            }
            cells.push(cell);
        }
    }
    Ok(super::join::join(
        merged_run(id, shards, version_axis),
        cells,
    ))
}

/// Either no run is a shard, or they are all the shards of one split, once each.
fn check_partitions(shards: &[ShardRun]) -> Result<(), MergeError> {
    let parsed: Vec<Option<Partition>> = shards
        .iter()
        .map(|s| {
            s.report
                .run
                .partition
                .as_deref()
                .and_then(|p| p.parse().ok())
        })
        .collect();
    let Some(reference) = parsed.iter().flatten().next().copied() else {
        return Ok(());
    };
    // The count a report states sizes this: bounded when parsed
    // (`partition::MAX_SHARDS`; `count:1/4294967295` once asked for 68 GB).
    let mut seen: Vec<Option<&str>> = vec![None; reference.total as usize];
    for (s, p) in shards.iter().zip(&parsed) {
        let Some(p) = p else {
            return Err(MergeError(format!(
                "{} is not a shard (no --partition) but other runs are: merge the shards of one split",
                s.dir
            )));
        };
        if !p.same_split(&reference) {
            return Err(MergeError(format!(
                "{} is shard {p}, other runs are shards of {}: merge the shards of one split",
                s.dir,
                Partition {
                    shard: 1,
                    ..reference
                }
                .to_string()
                .replace(":1/", ":K/")
            )));
        }
        let slot = &mut seen[p.shard as usize - 1];
        if let Some(other) = slot {
            return Err(MergeError(format!(
                "shard {p} is given twice ({other} and {})",
                s.dir
            )));
        }
        *slot = Some(&s.dir);
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| {
            Partition {
                shard: i as u32 + 1,
                ..reference
            }
            .to_string()
        })
        .collect();
    if !missing.is_empty() {
        return Err(MergeError(format!(
            "missing shard {}: the merged matrix would silently lack its cells",
            missing.join(", ")
        )));
    }
    Ok(())
}

fn merged_run(id: &str, shards: &[ShardRun], version_axis: bool) -> RunInfo {
    let runs: Vec<&RunInfo> = shards.iter().map(|s| &s.report.run).collect();
    let first = runs[0];
    fn union<T: Clone + PartialEq>(runs: &[&RunInfo], pick: fn(&RunInfo) -> &Vec<T>) -> Vec<T> {
        let mut out: Vec<T> = Vec::new();
        for run in runs {
            for name in pick(run) {
                if !out.contains(name) {
                    out.push(name.clone());
                }
            }
        }
        out
    }
    let started = runs
        .iter()
        .map(|r| r.started_at.clone())
        .min()
        .unwrap_or_default();
    let finished = runs
        .iter()
        .map(|r| r.finished_at.clone())
        .max()
        .unwrap_or_default();
    let span = |a: &str, b: &str| -> Option<u64> {
        let a: SystemTime = humantime::parse_rfc3339(a).ok()?;
        let b: SystemTime = humantime::parse_rfc3339(b).ok()?;
        Some(b.duration_since(a).ok()?.as_millis() as u64)
    };
    let mut versions: Vec<String> = Vec::new();
    for v in runs.iter().filter_map(|r| r.server_version.clone()) {
        if !versions.contains(&v) {
            versions.push(v);
        }
    }
    RunInfo {
        id: id.into(),
        harness_version: first.harness_version.clone(),
        duration_ms: span(&started, &finished)
            .unwrap_or_else(|| runs.iter().map(|r| r.duration_ms).sum()),
        started_at: started,
        finished_at: finished,
        base_url: first.base_url.clone(),
        agent: first.agent.clone(),
        server_version: if version_axis {
            (!versions.is_empty()).then(|| versions.join(", "))
        } else {
            first.server_version.clone()
        },
        timeout_ms: first.timeout_ms,
        overall_timeout_ms: first.overall_timeout_ms,
        repeat: runs.iter().map(|r| r.repeat).max().unwrap_or(1),
        persist: first.persist.clone(),
        client_stores: first.client_stores.clone(),
        targets: union(&runs, |r| &r.targets),
        scenarios: union(&runs, |r| &r.scenarios),
        interrupted: runs.iter().any(|r| r.interrupted),
        logs: shards
            .iter()
            .flat_map(|s| {
                s.report.run.logs.iter().map(|l| LogFile {
                    name: format!("{} {}", s.report.run.id, l.name),
                    path: if std::path::Path::new(&l.path).is_absolute() {
                        l.path.clone()
                    } else {
                        format!("{}/{}", s.dir.trim_end_matches('/'), l.path)
                    },
                })
            })
            .collect(),
        retries: runs.iter().map(|r| r.retries).max().unwrap_or(0),
        timing: None,
        flaky_result: first.flaky_result,
        partition: None,
        shards: shards
            .iter()
            .map(|s| ShardInfo {
                id: s.report.run.id.clone(),
                partition: s.report.run.partition.clone(),
                dir: s.dir.clone(),
                cells: s.report.cells.len() as u32,
            })
            .collect(),
        expect_file: None,
        allow_fixed: false,
        points: first.points.clone(),
        // One seed only when every shard ran with it.
        seed: first
            .seed
            .filter(|seed| runs.iter().all(|r| r.seed == Some(*seed))),
        // One recipe only when every shard ran with it.
        recipe: first
            .recipe
            .clone()
            .filter(|recipe| runs.iter().all(|r| r.recipe.as_ref() == Some(recipe))),
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
