//! `--partition cost:K/N` and `--timings` through the binary, where no
//! stack is needed: the refusals (exit 64, the flag named, no `--out` left
//! behind), and a shard the split leaves empty, which starts nothing and
//! still writes its run folder for `merge`. The split itself is tested in
//! `runner::cost` (400 cells with skewed durations), merging cost shards in
//! `report::merge`; `bench/scale.sh` runs and merges real cost shards.

use crate::support::{assert_exit, continuity_with, report};
use continuity::exit_codes;

const TIMINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report-v2");

fn stderr(run: &std::process::Output) -> String {
    String::from_utf8_lossy(&run.stderr).into_owned()
}

#[test]
fn timings_are_refused_when_unreadable_or_without_a_cost_split() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let out = dir.path().join("out");
    let (bad, out_s) = (bad.to_str().unwrap(), out.to_str().unwrap());
    let cases: [(&[&str], &str); 4] = [
        (&["--partition", "cost:1/2", "--timings", bad], "--timings"),
        (
            &["--partition", "cost:1/2", "--timings", "/nonexistent/run"],
            "--timings",
        ),
        (
            &["--partition", "count:1/2", "--timings", TIMINGS],
            "--partition cost:K/N",
        ),
        (&["--partition", "cost:3/2"], "cost:K/N"),
    ];
    for (flags, words) in cases {
        let mut args = vec!["run", "--out", out_s];
        args.extend_from_slice(flags);
        let run = continuity_with(&args, &[]);
        assert_exit(&run, exit_codes::USAGE);
        assert!(stderr(&run).contains(words), "{flags:?}: {}", stderr(&run));
        assert!(!out.exists(), "{flags:?} left {out_s} behind");
    }
}

#[test]
fn an_empty_cost_shard_starts_nothing_and_writes_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shard-2");
    // One cell, two shards: the cell goes to the first, the second is empty.
    let run = continuity_with(
        &[
            "run",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--partition",
            "cost:2/2",
            "--timings",
            TIMINGS,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    assert!(stderr(&run).contains("holds no cell"), "{}", stderr(&run));
    let r = report(&out);
    assert_eq!(r["run"]["partition"], "cost:2/2");
    assert_eq!(r["cells"].as_array().unwrap().len(), 0);
}
