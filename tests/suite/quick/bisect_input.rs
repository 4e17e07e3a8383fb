//! `bisect` and `rerun` refuse what cannot work before any stack starts,
//! with exit 64, a message naming what is wrong, and no folder left.

use crate::support::{assert_exit, continuity_with};
use continuity::exit_codes;

#[test]
fn bad_points_cells_and_axes_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bisect");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--axis",
                "server",
                "--cell",
                "agent/native-continuity",
                "0.4.2",
                "latest",
            ],
            "bisect point \"latest\": neither a version number",
        ),
        (
            &["--axis", "server", "--cell", "agent", "0.4.0", "0.4.2"],
            "--cell \"agent\": expected TARGET/SCENARIO",
        ),
        (
            &[
                "--axis",
                "agent",
                "--cell",
                "agent/native-continuity",
                "0.4.0",
                "0.4.2",
            ],
            "invalid value 'agent' for '--axis <AXIS>'",
        ),
        (
            &[
                "--axis",
                "server",
                "--cell",
                "agent/no-such-scenario",
                "0.4.0",
                "0.4.2",
            ],
            "unknown scenario `no-such-scenario`",
        ),
    ];
    for (args, said) in cases {
        let mut all = vec!["bisect", "--out", out];
        all.extend_from_slice(args);
        let refused = continuity_with(&all, &[]);
        assert_exit(&refused, exit_codes::USAGE);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!std::path::Path::new(out).exists(), "{args:?} left {out}");
    }
    let missing = continuity_with(&["rerun", dir.path().join("none").to_str().unwrap()], &[]);
    assert_exit(&missing, exit_codes::USAGE);
}

/// Issue 43, item 8: `bisect` with a first point that is not there
/// exits 64, as `run` does for a `--server-bin` that is not there, where
/// the docs said 2. The code and both tables say the same now.
#[test]
fn a_first_point_that_is_not_there_is_bad_usage_as_the_docs_say() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bisect");
    let missing = format!("p1={}", dir.path().join("missing/sandbox-agent").display());
    let refused = continuity_with(
        &[
            "bisect",
            "--axis",
            "server",
            "--cell",
            "agent/native-continuity",
            "--out",
            out.to_str().unwrap(),
            &missing,
            "0.4.2",
        ],
        &[],
    );
    assert_exit(&refused, exit_codes::USAGE);
    assert!(!out.exists(), "a refused bisect left its folder");
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let usage_row = readme
        .lines()
        .find(|l| l.starts_with("| 64 |"))
        .expect("the README's exit-code table has a 64 row");
    assert!(
        usage_row.contains("`bisect`") && usage_row.contains("first point"),
        "{usage_row}"
    );
    let guide = std::fs::read_to_string(format!("{root}/docs/verify-a-fix.md")).unwrap();
    let table: Vec<&str> = guide
        .split("| `bisect` exits | when |")
        .nth(1)
        .expect("verify-a-fix.md has bisect's exit table")
        .lines()
        .take_while(|l| l.starts_with('|') || l.is_empty())
        .collect();
    let row = |code: &str| {
        table
            .iter()
            .find(|l| l.starts_with(&format!("| {code} |")))
            .copied()
            .unwrap_or_default()
    };
    assert!(
        row("64").contains("a first point that is not there"),
        "{table:?}"
    );
    assert!(!row("2").contains("could not be run"), "{table:?}");
}
