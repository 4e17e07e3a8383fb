//! The browser's tests (`browser.rs`): Chromium's temp folder is its own and goes with it, and the page app pins the SDK.

use super::{PACKAGE, PACKAGE_LOCK};
use crate::stack::rivet::PINNED_SDK_VERSION;

/// The Chromium tests one at a time: each looks at the temp folders of
/// this process.
static ONE_CHROMIUM: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Chromium's temp files (its singleton socket's folder, which it
/// leaves behind when killed) go into a folder of its own, and that
/// folder goes with it, nothing left in `/tmp`; a profile deeper than
/// a socket's path may be long still starts.
#[tokio::test]
async fn a_chromiums_temp_folder_is_its_own_and_goes_with_it() {
    let _one = ONE_CHROMIUM.lock().await;
    let chromium =
        super::find_chromium().unwrap_or_else(|e| panic!("this test needs Chromium: {e}"));
    let host = super::BrowserHost {
        chromium,
        page_url: "about:blank".into(),
        supervisor: Default::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("a-run-folder-".repeat(8)).join("cell");
    let browser = super::Chromium::launch(&host, &profile)
        .await
        .unwrap_or_else(|e| panic!("Chromium would not start: {e}"));
    let tmp = browser._tmp.0.clone();
    let made: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        made.iter().any(|name| name.starts_with("org.chromium.")),
        "{made:?}"
    );
    // Dropped without a stop, as when a cell is cut short.
    drop(browser);
    assert!(!tmp.exists(), "{}", tmp.display());
}

/// Issue 43, item 8: Ctrl-C while Chromium launched (the launch
/// dropped where it waits for the DevTools endpoint) left its
/// `/tmp/continuity-chromium-*` behind; and the folders of a harness
/// that died before any drop are swept by the next launch.
#[tokio::test]
async fn a_launch_cut_short_leaves_no_temp_folder() {
    let _one = ONE_CHROMIUM.lock().await;
    let chromium =
        super::find_chromium().unwrap_or_else(|e| panic!("this test needs Chromium: {e}"));
    let host = super::BrowserHost {
        chromium,
        page_url: "about:blank".into(),
        supervisor: Default::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let temp = tempfile::tempdir().unwrap();
    // A dead harness's folder (no process 4000000000 exists).
    let dead = temp
        .path()
        .join("continuity-chromium-4000000000-deadbeef0000");
    std::fs::create_dir_all(&dead).unwrap();
    let profile = dir.path().join("cell");
    let launch = super::Chromium::launch_in(&host, &profile, temp.path());
    let cut = tokio::time::timeout(std::time::Duration::from_millis(30), launch).await;
    assert!(cut.is_err(), "the launch was cut short");
    let left: Vec<_> = std::fs::read_dir(temp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left in the temp directory: {left:?}");
}

/// The page bundles the SDK the hosted client runs, every package
/// pinned by the lock (an install without it took whatever esbuild's
/// and the SDK's dependencies resolved to that day).
#[test]
fn the_page_app_pins_the_sdk_version() {
    assert!(PACKAGE.contains(&format!("\"sandbox-agent\": \"{PINNED_SDK_VERSION}\"")));
    assert!(PACKAGE_LOCK.contains(&format!(
        "\"node_modules/sandbox-agent\": {{\n      \"version\": \"{PINNED_SDK_VERSION}\""
    )));
}
