//! A hosted SDK client disposed with event writes still queued finishes
//! them, and hands each event to the application after its write: the
//! host's `retire` answers only once its store writes are over (bounded),
//! or continuity would judge those events lost on its own cut
//! (`stack/rivet/wire.mjs` `Flight.quiet`, used by the actor's and the
//! browser page's `retire`).

use serde_json::Value;
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

#[tokio::test]
async fn retire_waits_for_queued_store_writes_and_is_bounded() {
    let wire = Path::new(REPO).join("stack/rivet/wire.mjs");
    let stdout = crate::support::node_fixture("retire-quiet.mjs", &[wire]).await;
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    // Quiet only after the third write of the queue, not between two.
    assert_eq!(seen["quiet"], true, "{seen}");
    assert_eq!(seen["written"], 3, "{seen}");
    // A write that never ends holds it to its bound, and no further.
    assert_eq!(seen["bounded"], false, "{seen}");
    let waited = seen["waitedMs"].as_u64().unwrap();
    assert!((100..2_000).contains(&waited), "{seen}");
}
