//! `merge`'s tests (`merge.rs`): where the merged report's traces point and how shard folders are named.

use super::relative_to;
use std::path::Path;

/// A shard run folder holding `keep` cells of the fixture, each with a
/// trace in `cells/FOLDER/trace.jsonl` whose text names the shard.
fn shard(dir: &Path, id: &str, partition: &str, keep: &[(usize, &str)]) {
    let mut report = crate::report::fixture::report();
    report.run.id = id.into();
    report.run.partition = Some(partition.into());
    let all = std::mem::take(&mut report.cells);
    for (i, folder) in keep {
        let mut cell = all[*i].clone();
        let trace = format!("cells/{folder}/trace.jsonl");
        std::fs::create_dir_all(dir.join("cells").join(folder)).unwrap();
        std::fs::write(dir.join(&trace), format!("{id}\n")).unwrap();
        cell.trace = Some(trace);
        report.cells.push(cell);
    }
    report.totals = crate::report::Totals::of(&report.cells);
    let json = serde_json::to_string_pretty(&report).unwrap();
    std::fs::write(dir.join("report.json"), json).unwrap();
}

#[test]
fn the_merged_report_points_at_copies_of_every_shards_traces() {
    use clap::Parser;
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("m"),
    );
    // Both shards have a cell folder named `001`.
    shard(&a, "a1", "count:1/2", &[(0, "001"), (2, "002")]);
    shard(&b, "b1", "count:2/2", &[(1, "001"), (3, "b-only")]);
    let args = ["continuity", "merge", "--out", out.to_str().unwrap()];
    let cli = crate::cli::Cli::try_parse_from(
        args.iter()
            .chain([&a.to_str().unwrap(), &b.to_str().unwrap()]),
    )
    .unwrap();
    let crate::cli::Command::Merge(args) = cli.command else {
        panic!("not merge")
    };
    super::merge(args).unwrap();
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let mut shards_seen = Vec::new();
    for cell in merged["cells"].as_array().unwrap() {
        let trace = cell["trace"].as_str().expect("a trace path");
        let text =
            std::fs::read_to_string(out.join(trace)).unwrap_or_else(|e| panic!("{trace}: {e}"));
        shards_seen.push((trace.to_string(), text.trim().to_string()));
    }
    shards_seen.sort();
    assert_eq!(
        shards_seen,
        [
            ("cells/001/trace.jsonl".into(), "a1".into()),
            ("cells/001~2/trace.jsonl".into(), "b1".into()),
            ("cells/002/trace.jsonl".into(), "a1".into()),
            ("cells/b-only/trace.jsonl".into(), "b1".into()),
        ] as [(String, String); 4]
    );
}

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
