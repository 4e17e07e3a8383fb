//! The Rivet Engine started afresh, against the real Engine and runner.
//! Woken from a freeze past its ping timeout, the Engine 2.3.19 can lose
//! its workflow worker and then place no actor on its data whoever
//! restarts it; that wedge comes ~1 cell in 3 to 10 of a long run of
//! `rivet-engine-pause-long`, so this test stands in a data folder the
//! Engine cannot start on (a file in its place) for data it can start on
//! but not serve: either way no restart brings the actor back. The
//! repair before the next cell must, through the stack's parts: the
//! Engine's restart and its runner's fail, the Engine starts afresh on an
//! empty folder (the old one kept aside), the runner registers with it,
//! and the run's store finds its actor again through its key.

use super::tests::real_stack;
use super::*;
use crate::persist::contract::record;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_no_restart_brings_back_is_started_afresh_and_the_store_answers_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut stack = real_stack(dir.path()).await;
    let driver = (stack.persist_factory())("afresh").expect("a driver for the run's actor");
    let (mut engine, mut runner) = stack.targets();
    // Each failed step waits its deadline: short ones, as the runner's is
    // still enough to register with a new Engine and place the actor.
    engine.ready_timeout = Duration::from_secs(5);
    runner.ready_timeout = Duration::from_secs(20);
    let data = engine_data(&std::path::absolute(dir.path()).unwrap());
    // Errors, not panics, until both targets are stopped.
    let checked: Result<(), String> = async {
        let write = |id: &str| driver.update_session(record(id, 1));
        write("before").await.map_err(|e| format!("before: {e}"))?;
        std::fs::rename(&data, data.with_extension("kept")).map_err(|e| e.to_string())?;
        std::fs::write(&data, "not a folder").map_err(|e| e.to_string())?;
        let left = engine.restart_lent("restart", &mut []).await.record;
        if left.ok || engine.unrecovered().is_none() {
            return Err(format!("the Engine came back on a file: {left:?}"));
        }
        let parts = &mut [&mut engine, &mut runner];
        crate::targets::bring_back(parts, 0)
            .await
            .map_err(|e| format!("not brought back: {e}"))?;
        let aside = std::path::PathBuf::from(format!("{}.set-aside-1", data.display()));
        let kept = std::fs::read_to_string(&aside).map_err(|e| format!("{aside:?}: {e}"))?;
        if kept != "not a folder" || !data.is_dir() {
            return Err(format!(
                "set aside {kept:?}, the new one a folder: {}",
                data.is_dir()
            ));
        }
        // The id learnt on the old Engine names nothing now: the key again.
        write("after").await.map_err(|e| format!("after: {e}"))?;
        match driver.get_session("after").await {
            Ok(Some(found)) if found.id == "after" => Ok(()),
            other => Err(format!("getSession after: {other:?}")),
        }
    }
    .await;
    runner.shutdown().await;
    engine.shutdown().await;
    checked.unwrap();
}
