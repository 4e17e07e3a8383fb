//! A node script of `tests/fixtures/` run to its end: its stdout, once it
//! exited 0 (else the test fails with both streams). Node is on every
//! machine the local stack runs on (`.ci/setup` installs it).

use std::ffi::OsStr;
use std::path::Path;

/// `tests/fixtures/<fixture>` run by node with `args`; its stdout.
pub async fn node_fixture<A: AsRef<OsStr>>(fixture: &str, args: &[A]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let output = tokio::process::Command::new("node")
        .arg(&script)
        .args(args)
        .output()
        .await
        .expect("node runs (the local stack needs it too)");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{fixture} failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
