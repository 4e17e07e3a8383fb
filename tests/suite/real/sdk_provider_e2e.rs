//! The real SDK's provider path (`scenario sandbox-provider`), for
//! `--client ts-sdk` (the SDK in the Rivet actor, its store the actor's
//! state) and `--client browser` (the SDK in Chromium, IndexedDB): a
//! sandbox made through the stack's own `SandboxProvider`, its
//! `sdk.sandboxId` persisted by the SDK's host, a restart, then the
//! reconnect route (`SandboxAgent.start({ sandbox, sandboxId })`) and the
//! session on the reattached client. continuity's Rust client has no
//! provider: its provider phases are not applicable, naming what it lacks.
//! Needs nginx, node/npm and Chromium; fails loudly without them.

use crate::support::{self, cell_where, phase};
use serde_json::Value;

/// `continuity run` of the provider scenario on `target` for the three clients.
fn run_provider(target: &str) -> (tempfile::TempDir, Value) {
    let args = [
        "--client",
        "ts-sdk",
        "--client",
        "browser",
        "--client",
        "rust",
        // The ts-sdk's store is the actor's state, the browser's IndexedDB
        // (each client's other store is skipped).
        "--persist",
        "rivet",
        "--persist",
        "indexeddb",
        "--target",
        target,
        "--scenario",
        "sandbox-provider",
        "--timeout-ms",
        "15000",
    ];
    let (dir, out, report) = support::run_to_report(&args);
    // Every sandbox the cells made is gone with them: servers and folders.
    let left: Vec<_> = std::fs::read_dir(out.join("stack/sandboxes"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "sandboxes left behind: {left:?}");
    (dir, report)
}

/// The provider calls of a phase, as (call, caller, action).
fn calls(phase: &Value) -> Vec<(String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    phase["detail"]["providerCalls"]
        .as_array()
        .unwrap_or_else(|| panic!("no provider calls in {phase}"))
        .iter()
        .map(|c| (text(&c["call"]), text(&c["caller"]), text(&c["action"])))
        .collect()
}

/// What both SDK clients' cells show after the reattach, whatever the target:
/// the session recreated on the new client and answered; the destroyed
/// sandbox `expired`, nothing persisted `no_sandbox`.
fn the_session_carries_on_and_the_other_statuses_hold(cell: &Value) {
    assert_eq!(cell["verdict"], "pass", "{cell}");
    let started = phase(cell, "startSandbox");
    let id = started["detail"]["sandboxId"].as_str().unwrap();
    assert!(id.starts_with("continuity/sbx-"), "{started}");
    let reattached = phase(cell, "reattachAfterRestart");
    assert_eq!(reattached["detail"]["sandboxId"], id, "{reattached}");
    assert_eq!(reattached["detail"]["status"], "connected", "{reattached}");
    let resumed = phase(cell, "resumeAfterReattach");
    assert_eq!(resumed["detail"]["action"], "recreated", "{resumed}");
    let after = phase(cell, "promptAfterReattach");
    assert_eq!(after["detail"]["stopReason"], "end_turn", "{after}");
    let gone = phase(cell, "reattachAfterDestroy");
    assert_eq!(gone["detail"]["status"], "expired", "{gone}");
    let why = gone["detail"]["expiredBecause"].as_str().unwrap();
    assert!(why.starts_with("SandboxDestroyedError"), "{gone}");
    let nothing = phase(cell, "reattachNothingPersisted");
    assert_eq!(nothing["detail"]["status"], "no_sandbox", "{nothing}");
}

/// continuity's own client: each provider phase not applicable, naming
/// the SDK call it has no counterpart of; no verdict phase after the
/// restart left, so the cell has no verdict on it: `not_applicable`.
fn the_rust_client_names_what_it_lacks(report: &Value) {
    let rust = cell_where(report, &[("client", "rust"), ("persist", "rivet")]);
    assert_eq!(rust["verdict"], "not_applicable", "{rust}");
    let reason = rust["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("no call for SandboxAgent.start({ sandbox, sandboxId })"),
        "{rust}"
    );
    let start = phase(rust, "startSandbox");
    assert_eq!(start["outcome"], "not_applicable", "{start}");
    let why = start["detail"]["notApplicable"].as_str().unwrap();
    assert!(
        why.contains("SandboxAgent.start({ sandbox, sandboxId })"),
        "{why}"
    );
    // The steps on the client it would have made are not applicable too.
    let prompt = phase(rust, "promptBeforeRestart");
    assert_eq!(prompt["outcome"], "not_applicable", "{prompt}");
}

#[test]
fn the_sdk_reattaches_by_its_persisted_sandbox_id_after_the_client_restarts() {
    let (_dir, report) = run_provider("client");
    for (client, persist) in [("ts-sdk", "rivet"), ("browser", "indexeddb")] {
        let cell = cell_where(&report, &[("client", client), ("persist", persist)]);
        the_session_carries_on_and_the_other_statuses_hold(cell);
        // The server never went down: start's ensureServer left it alone.
        let reattached = phase(cell, "reattachAfterRestart");
        let ensured: Vec<_> = calls(reattached)
            .into_iter()
            .filter(|(call, ..)| call == "ensureServer")
            .collect();
        assert_eq!(
            ensured,
            [("ensureServer".into(), "start".into(), "running".into())]
        );
        assert!(
            reattached["detail"]["serverBroughtBackBy"].is_null(),
            "{reattached}"
        );
    }
    the_rust_client_names_what_it_lacks(&report);
}

#[test]
fn the_sdks_ensure_server_brings_a_killed_server_back_and_the_session_carries_on() {
    let (_dir, report) = run_provider("server-kill");
    for (client, persist) in [("ts-sdk", "rivet"), ("browser", "indexeddb")] {
        let cell = cell_where(&report, &[("client", client), ("persist", persist)]);
        // The harness saw the server go down, and did not bring it back.
        let restart = &cell["restarts"][0];
        assert_eq!(restart["action"], "left_down", "{restart}");
        let down = restart["down"].as_str().unwrap();
        assert!(
            down.contains("killed by SIGKILL") && down.contains("refused connections"),
            "{down}"
        );
        assert!(restart["readyMs"].is_null(), "{restart}");
        the_session_carries_on_and_the_other_statuses_hold(cell);
        // SandboxAgent.start's own ensureServer found it down and started it:
        // a new process, answering /v1/health again.
        let reattached = phase(cell, "reattachAfterRestart");
        let detail = &reattached["detail"];
        assert_eq!(
            detail["serverBroughtBackBy"], "ensureServer (start)",
            "{reattached}"
        );
        let ensure = detail["providerCalls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["call"] == "ensureServer")
            .unwrap();
        assert_eq!(ensure["action"], "started", "{ensure}");
        assert!(ensure["readyMs"].is_u64(), "{ensure}");
        assert!(
            ensure["wasDown"].as_str().unwrap().contains("SIGKILL"),
            "{ensure}"
        );
        let killed = format!("(pid {})", ensure["pid"]);
        assert!(
            !down.contains(&killed),
            "the same pid came back: {down} / {ensure}"
        );
    }
    // Nothing of continuity's client's to take down: not applicable,
    // naming the call it lacks.
    let rust = cell_where(&report, &[("client", "rust"), ("persist", "rivet")]);
    assert_eq!(rust["verdict"], "not_applicable", "{rust}");
    let why = rust["reason"].as_str().unwrap_or_default();
    assert!(why.contains("SandboxProvider"), "{rust}");
}
