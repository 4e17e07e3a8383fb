//! The client axis end to end: continuity's own client and the real
//! TypeScript SDK (npm `sandbox-agent`, hosted in the local stack's RivetKit
//! app) run the same cells on one stack. These tests need nginx and
//! node/npm (`.ci/run` installs them); without them they fail, loudly.

mod support;

use support::{assert_exit, continuity_with, phase, report};

use serde_json::Value;
use std::sync::Mutex;

/// One stack at a time: each one is five real programs on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cell of `client` for a target and scenario.
fn client_cell<'a>(report: &'a Value, client: &str, target: &str, scenario: &str) -> &'a Value {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"] == client && c["target"] == target && c["scenario"] == scenario)
        .unwrap_or_else(|| panic!("no {client} cell {target} × {scenario} in {report}"))
}

#[test]
fn both_clients_fail_native_continuity_at_the_same_boundary_on_the_agent_target() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = continuity_with(
        &[
            "run",
            "--client",
            "rust",
            "--client",
            "ts-sdk",
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
    // Both clients fail the cell: the run fails, it does not break.
    assert_exit(&run, 1);
    let report = report(&out);
    let rust = client_cell(&report, "rust", "agent", "native-continuity");
    let ts = client_cell(&report, "ts-sdk", "agent", "native-continuity");
    for cell in [rust, ts] {
        assert_eq!(cell["verdict"], "fail", "{cell}");
        assert_eq!(
            cell["failureBoundary"], "promptSameHandleAfterRestart",
            "{cell}"
        );
        assert_eq!(phase(cell, "promptBeforeRestart")["outcome"], "ok");
        // resumeSession "succeeds" on the same live connection in both: a no-op.
        assert_eq!(
            phase(cell, "resumeSession")["detail"]["action"],
            "same_handle"
        );
    }
    // Signatures differ, as the bug report said: continuity names the 400,
    // the SDK leaves the prompt pending until the caller's deadline.
    let rust_sig = &phase(rust, "promptSameHandleAfterRestart")["signature"];
    assert_eq!(
        (rust_sig["kind"].as_str(), rust_sig["httpStatus"].as_u64()),
        (Some("http"), Some(400)),
        "{rust_sig}"
    );
    let ts_phase = phase(ts, "promptSameHandleAfterRestart");
    assert_eq!(ts_phase["outcome"], "timeout", "{ts_phase}");
    // The 400 is still there: as the unhandled rejection the SDK raised in that phase.
    let rejections = ts_phase["detail"]["unhandledRejections"]
        .as_array()
        .unwrap_or_else(|| panic!("no rejection recorded in {ts_phase}"));
    assert!(
        rejections
            .iter()
            .any(|r| r["name"] == "AcpHttpError" && r["status"] == 400),
        "{rejections:?}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Where the clients disagree"), "{md}");
    assert!(md.contains("agree on every cell both ran"), "{md}");
    assert!(
        md.contains("## Unhandled rejections in the hosted SDK"),
        "{md}"
    );
    assert!(md.contains("AcpHttpError"), "{md}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("agent · ts-sdk"), "{junit}");
    assert!(junit.contains("agent · rust"), "{junit}");
}

#[test]
fn an_sdk_version_the_registry_lacks_skips_the_ts_sdk_cells_and_rust_still_runs() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = continuity_with(
        &[
            "run",
            "--client",
            "rust",
            "--client",
            "ts-sdk",
            "--sdk-version",
            "0.0.999",
            "--target",
            "agent",
            "--scenario",
            "recreate-rehydrate",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    // A skipped cell is not a pass: the run says so with its exit code.
    assert_exit(&run, 1);
    let report = report(&out);
    assert_eq!(
        client_cell(&report, "rust", "agent", "recreate-rehydrate")["verdict"],
        "pass"
    );
    let ts = client_cell(&report, "ts-sdk", "agent", "recreate-rehydrate");
    assert_eq!(ts["verdict"], "skipped", "{ts}");
    let reason = ts["reason"].as_str().unwrap();
    assert!(reason.contains("0.0.999"), "{reason}");
}

#[test]
fn ts_sdk_on_a_configured_deployment_without_rivet_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("continuity.toml");
    std::fs::write(
        &cfg,
        "[run]\nbase_url = \"http://127.0.0.1:9\"\n\n[targets.cmd]\nrestart = { command = \"true\" }\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = continuity_with(
        &[
            "run",
            "--client",
            "ts-sdk",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, 64);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("--client ts-sdk"), "{stderr}");
    assert!(stderr.contains("Rivet"), "{stderr}");
    // rust alone against the same config is not refused for that reason.
    let run = continuity_with(
        &[
            "run",
            "--client",
            "rust",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            dir.path().join("run2").to_str().unwrap(),
        ],
        &[],
    );
    assert!(!String::from_utf8_lossy(&run.stderr).contains("--client ts-sdk"));
}
