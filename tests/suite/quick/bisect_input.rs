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
