//! The browser client against the real programs: the sandbox-agent SDK
//! 0.4.2 bundled by esbuild, in Debian's headless Chromium, driven over
//! the DevTools protocol, its sessions in IndexedDB. The `client` target
//! reloads the page: a fresh `SandboxAgent` over the same IndexedDB must
//! restore the session by replay, the replay cut as documented for a
//! history past 50 events, the history intact; with the SDK's in-memory
//! store the same reload loses the session (the test that shows the check
//! can fail). The page's wire is in the cell's trace. A missing Chromium
//! skips the browser cells with the install command.

use crate::support::{self, cell_where, phase, report};
use serde_json::Value;

fn number(phase: &Value, key: &str) -> u64 {
    phase["detail"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {phase}"))
}

/// The events of `ev` in the cell's trace.
fn trace_events(out: &std::path::Path, cell: &Value, ev: &str) -> Vec<Value> {
    let path = out.join(cell["trace"].as_str().expect("the cell has a trace"));
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["ev"] == ev)
        .collect()
}

#[test]
fn a_page_reload_restores_the_session_from_indexeddb_by_replay() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "browser",
            "--persist",
            "indexeddb",
            "--persist",
            "memory",
            "--target",
            "client",
            "--scenario",
            "client-restart",
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let report = report(&out);
    assert_eq!(report["run"]["persist"], "indexeddb, memory");

    let kept = cell_where(&report, &[("persist", "indexeddb")]);
    assert_eq!(kept["client"], "browser", "{kept}");
    let whole = support::passed_or_lost_the_tail(kept);
    assert_eq!(kept["restarts"][0]["action"], "reload", "{kept}");
    let after = phase(kept, "promptAfterRestart");
    assert_eq!(after["detail"]["clientRebuilt"], true, "{after}");
    let replay = phase(kept, "replayCheck");
    assert_eq!(replay["detail"]["restored"], true, "{replay}");
    assert!(number(replay, "replayEvents") <= 50, "{replay}");
    assert!(number(replay, "replayChars") <= 12_000 + 20, "{replay}");
    let events = phase(kept, "getEvents");
    // A lost tail leaves the stored history (and so the replay) short of
    // the 50 events the cut needs.
    if whole {
        assert!(number(replay, "historyEvents") > 50, "{replay}");
        assert_eq!(replay["detail"]["replayCutByEvents"], true, "{replay}");
        assert_eq!(events["detail"]["writes"], "intact", "{events}");
        assert_eq!(number(events, "eventsLost"), 0, "{events}");
    }

    // The page's own wire, from Chromium's network events.
    let http = trace_events(&out, kept, "http");
    assert!(
        http.iter()
            .any(|e| e["purpose"] == "acp" && e["method"] == "POST" && e["status"] == 200),
        "{http:?}"
    );
    assert!(http.iter().any(|e| e["purpose"] == "health"), "{http:?}");
    let posted = trace_events(&out, kept, "rpc");
    assert!(
        posted
            .iter()
            .any(|e| e["dir"] == "out" && e["method"] == "session/prompt"),
        "{posted:?}"
    );
    let streamed = trace_events(&out, kept, "sse");
    assert!(streamed.len() > 50, "{} stream events", streamed.len());

    // Page memory does not outlive a reload: the SDK's in-memory store loses the session.
    let lost = cell_where(&report, &[("persist", "memory")]);
    assert_eq!(lost["verdict"], "fail", "{lost}");
    assert_eq!(lost["failureBoundary"], "promptAfterRestart", "{lost}");

    assert!(run.status.code().is_some(), "exited, not killed");
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// No `--persist`: each client on its own default store, the browser on
/// IndexedDB (a page can open no store of a server's), the rust client on
/// the stack's Rivet actor; so no cell is skipped for its store, and the
/// run says which client kept its sessions where. (Every browser cell was
/// skipped before, "a page cannot open `rivet`".)
#[test]
fn with_no_store_named_each_client_runs_on_its_own_default() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "rust",
            "--client",
            "browser",
            "--target",
            "agent",
            "--scenario",
            "recreate-rehydrate",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let report = report(&out);
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{report}");
    for c in cells {
        assert_eq!(c["verdict"], "pass", "{c}");
        assert!(c.get("persist").is_none(), "no persistence axis: {c}");
    }
    assert_eq!(report["run"]["persist"], "rivet, indexeddb");
    assert_eq!(
        report["run"]["clientStores"],
        serde_json::json!([{"client": "rust", "store": "rivet"},
                           {"client": "browser", "store": "indexeddb"}])
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(
            "session stores: rivet (rust), indexeddb (browser), each client's own default"
        ),
        "{stderr}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("- persist: rivet (rust), indexeddb (browser)"),
        "{md}"
    );
    support::assert_exit(&run, continuity::exit_codes::OK);
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_missing_chromium_skips_the_browser_cells_with_the_install_command() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "browser",
            "--client",
            "rust",
            "--persist",
            "memory",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("CONTINUITY_CHROMIUM", "/nonexistent/chromium")],
    );
    let report = report(&out);
    let cells = report["cells"].as_array().unwrap();
    let browser = cells.iter().find(|c| c["client"] == "browser").unwrap();
    assert_eq!(browser["verdict"], "skipped", "{browser}");
    let reason = browser["reason"].as_str().unwrap();
    assert!(
        reason.contains("apt-get install -y --no-install-recommends chromium"),
        "{reason}"
    );
    let rust = cells.iter().find(|c| c["client"] == "rust").unwrap();
    assert_ne!(rust["verdict"], "skipped", "{rust}");
    assert!(run.status.code().is_some(), "exited, not killed");
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Chromium killed mid-cell once left the cell a FAIL blaming "the Rivet
/// Engine is unreachable", each later phase and the cleanup waiting about
/// 29.5 s on the closed DevTools connection (154 s for the cell). Now the
/// closed connection fails every call at once: the cell ends at the next
/// page call, an `error` naming Chromium, well within one phase deadline.
#[test]
fn a_chromium_killed_mid_cell_ends_it_at_once_as_an_error_naming_it() {
    use support::spawned::{exit_code, kill_group, pids_with, spawn_run, stderr_of};
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    // A session, then a hold long enough for the kill to land before the
    // prompt after it.
    std::fs::write(
        scenarios.join("hold.toml"),
        r#"name = "hold"
[[phase]]
name = "connect"
step = "connect"
client = "c"

[[phase]]
name = "createSession"
step = "create_session"
client = "c"
session = "s"

[[phase]]
name = "hold"
step = "sleep"
ms = 3000

[[phase]]
name = "promptAfterHold"
step = "prompt"
client = "c"
session = "s"
text = "Return only OK"

[[cleanup]]
name = "dispose"
step = "dispose"
client = "c"
"#,
    )
    .unwrap();
    let out = dir.path().join("run");
    let (mut child, _events) = spawn_run(
        &out,
        &[
            "--client",
            "browser",
            "--persist",
            "memory",
            "--target",
            "agent",
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
    );
    // The cell's trace is made once its page is open: the cell runs.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let browser = loop {
        let traced = std::fs::read_dir(out.join("cells"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("trace.jsonl").exists());
        let browser = pids_with(&out, "--user-data-dir");
        if traced && !browser.is_empty() {
            break browser;
        }
        assert!(std::time::Instant::now() < until, "no cell ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::thread::sleep(std::time::Duration::from_millis(1000));
    kill_group(browser[0]);
    let code = exit_code(&mut child);
    let stderr = stderr_of(&mut child);
    let report = report(&out);
    let cell = &report["cells"][0];
    assert_eq!(cell["verdict"], "error", "{cell}");
    let boundary = phase(cell, cell["failureBoundary"].as_str().unwrap());
    let signature = &boundary["signature"];
    assert_eq!(signature["component"], "chromium", "{boundary}");
    assert_eq!(signature["kind"], "harness", "{boundary}");
    let message = signature["message"].as_str().unwrap();
    assert!(
        message.starts_with("chromium (the browser client's page): "),
        "{message}"
    );
    assert!(!message.contains("Rivet"), "{message}");
    // Three phase deadlines (30 s each) were once waited out; a closed
    // connection now waits for nothing.
    let ms = cell["durationMs"].as_u64().unwrap();
    assert!(ms < 20_000, "the cell took {ms} ms: {cell}");
    assert_eq!(
        code,
        Some(continuity::exit_codes::INCOMPLETE.into()),
        "{stderr}"
    );
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// The SDK in Chromium raises the same unhandled rejection the hosted SDK
/// does when the restarted server refuses its POST (400, no `?agent=`):
/// the page records it, and report.md lists it as it lists the hosted
/// SDK's (it listed only `ts-sdk` cells before).
#[test]
fn report_md_lists_the_browser_clients_unhandled_rejections() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "browser",
            "--persist",
            "memory",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--timeout-ms",
            "6000",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(run.status.code().is_some(), "exited, not killed");
    let report = report(&out);
    let browser = &report["cells"][0];
    assert_eq!(browser["client"], "browser", "{browser}");
    let recorded: Vec<&Value> = browser["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            p["detail"]["unhandledRejections"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .collect();
    assert!(!recorded.is_empty(), "no rejection recorded: {browser}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md
        .split("## Unhandled rejections in the SDK")
        .nth(1)
        .unwrap_or_else(|| panic!("no rejections section in\n{md}"));
    assert!(!section.starts_with("\n\nnone recorded"), "{md}");
    let row = section
        .lines()
        .find(|l| l.starts_with("| agent · browser × native-continuity |"))
        .unwrap_or_else(|| panic!("the browser's rejection is not listed:\n{md}"));
    let name = recorded[0]["name"].as_str().unwrap_or_default();
    assert!(row.contains(name), "{row}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("\"rejections\":[{"),
        "report.html carries them"
    );
    let left = support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}
