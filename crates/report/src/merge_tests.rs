use super::*;
use crate::SCHEMA_ID;
use crate::{fixture, Axis};

fn shard(dir: &str, id: &str, partition: Option<&str>, keep: &[usize]) -> ShardRun {
    let mut report = fixture::report();
    report.run.id = id.into();
    report.run.partition = partition.map(str::to_string);
    report.cells = keep.iter().map(|i| report.cells[*i].clone()).collect();
    ShardRun {
        dir: dir.into(),
        schema: SCHEMA_ID.into(),
        report,
    }
}

#[test]
fn two_shards_make_the_whole_matrix() {
    let whole = fixture::report();
    let merged = merge(
        "m",
        &[
            shard("a", "a1", Some("count:1/2"), &[0, 2]),
            shard("b", "b1", Some("count:2/2"), &[1, 3]),
        ],
    )
    .unwrap();
    let mut got: Vec<_> = merged.cells.iter().map(|c| (c.key(), c.verdict)).collect();
    let mut want: Vec<_> = whole.cells.iter().map(|c| (c.key(), c.verdict)).collect();
    got.sort_by(|a, b| a.0.cmp(b.0));
    want.sort_by(|a, b| a.0.cmp(b.0));
    assert_eq!(got, want);
    assert_eq!(merged.totals, whole.totals);
    assert_eq!(merged.run.shards.len(), 2);
    assert_eq!(merged.run.partition, None);
    assert_eq!(merged.run.logs[0].path, "a/logs/sandbox-agent.log");
}

#[test]
fn cost_shards_merge_like_the_others_and_not_with_them() {
    let merged = merge(
        "m",
        &[
            shard("a", "a1", Some("cost:1/2"), &[1, 2]),
            shard("b", "b1", Some("cost:2/2"), &[0, 3]),
        ],
    )
    .unwrap();
    assert_eq!(merged.cells.len(), fixture::report().cells.len());
    let e = merge(
        "m",
        &[
            shard("a", "a1", Some("cost:1/2"), &[1, 2]),
            shard("b", "b1", Some("count:2/2"), &[0, 3]),
        ],
    )
    .unwrap_err()
    .0;
    assert!(e.contains("one split") && e.contains("cost:K/2"), "{e}");
}

#[test]
fn refusals_name_what_is_wrong() {
    let err = |shards: &[ShardRun]| merge("m", shards).unwrap_err().0;
    let a = || shard("a", "a1", Some("count:1/2"), &[0, 2]);
    let b = || shard("b", "b1", Some("count:2/2"), &[1, 3]);
    let e = err(&[a(), shard("a-again", "a1", Some("count:1/2"), &[0, 2])]);
    assert!(e.contains("itself"), "{e}");
    let e = err(&[a()]);
    assert!(e.contains("missing shard count:2/2"), "{e}");
    let e = err(&[a(), shard("c", "c1", Some("count:1/2"), &[1])]);
    assert!(e.contains("given twice"), "{e}");
    let e = err(&[a(), shard("c", "c1", Some("count:2/2"), &[0, 1])]);
    assert!(
        e.contains("agent × native-continuity") && e.contains("overlap"),
        "{e}"
    );
    let e = err(&[a(), shard("c", "c1", Some("hash:2/2"), &[1, 3])]);
    assert!(e.contains("one split"), "{e}");
    let e = err(&[a(), shard("c", "c1", None, &[1, 3])]);
    assert!(e.contains("not a shard"), "{e}");
    let mut other = b();
    other.report.run.harness_version = "9.9.9".into();
    let e = err(&[a(), other]);
    assert!(e.contains("9.9.9"), "{e}");
    let mut old = b();
    old.schema = "continuity.report/v1".into();
    let e = err(&[a(), old]);
    assert!(e.contains("schema"), "{e}");
}

#[test]
fn runs_of_different_server_versions_become_a_version_axis() {
    let mut old = shard("old", "o1", None, &[0, 1, 2, 3]);
    old.report.run.server_version = Some("0.4.0".into());
    let new = shard("new", "n1", None, &[0, 1, 2, 3]);
    let merged = merge("m", &[old, new]).unwrap();
    assert_eq!(merged.cells.len(), 8);
    assert_eq!(merged.cells[0].point.name_on(Axis::Server), Some("0.4.0"));
    assert_eq!(merged.cells[4].point.name_on(Axis::Server), Some("0.4.2"));
    assert_eq!(merged.cells[4].label(), "agent @ 0.4.2");
}
