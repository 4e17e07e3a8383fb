//! The client axis end to end: continuity's own client and the real
//! TypeScript SDK (npm `sandbox-agent`, hosted in the local stack's RivetKit
//! app) run the same cells on one stack. These tests need nginx and
//! node/npm (`.ci/setup` installs them); without them they fail, loudly.

use crate::support::{assert_exit, cell_where, phase, report, run_on_the_local_stack};

use continuity::exit_codes;

#[test]
fn both_clients_fail_native_continuity_at_the_same_boundary_on_the_agent_target() {
    let (_dir, out, run) = run_on_the_local_stack(&[
        "--client",
        "rust",
        "--client",
        "ts-sdk",
        "--target",
        "agent",
        "--scenario",
        "native-continuity",
        "--timeout-ms",
        "10000",
    ]);
    // Both clients fail the cell: the run fails, it does not break.
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    let rust = cell_where(
        &report,
        &[
            ("client", "rust"),
            ("target", "agent"),
            ("scenario", "native-continuity"),
        ],
    );
    let ts = cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "agent"),
            ("scenario", "native-continuity"),
        ],
    );
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
    // the SDK leaves the prompt pending, which continuity diagnoses as hung.
    let rust_sig = &phase(rust, "promptSameHandleAfterRestart")["signature"];
    assert_eq!(
        (rust_sig["kind"].as_str(), rust_sig["httpStatus"].as_u64()),
        (Some("http"), Some(400)),
        "{rust_sig}"
    );
    let ts_phase = phase(ts, "promptSameHandleAfterRestart");
    assert_eq!(ts_phase["signature"]["kind"], "hung", "{ts_phase}");
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
    assert!(md.contains("## Unhandled rejections in the SDK"), "{md}");
    assert!(md.contains("AcpHttpError"), "{md}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("agent · ts-sdk"), "{junit}");
    assert!(junit.contains("agent · rust"), "{junit}");
}

/// The SDK has no call to `session/load` on a new server id: its
/// native-load cell prompts before the restart and takes no step after
/// it. It says nothing about the restart: `not_applicable`, naming the
/// call, never a pass; and by itself it fails nothing (exit 0).
#[test]
fn the_sdks_native_load_cell_is_not_applicable_naming_the_call_and_exits_0() {
    let (_dir, out, run) = run_on_the_local_stack(&[
        "--client",
        "ts-sdk",
        "--target",
        "agent",
        "--scenario",
        "native-load",
    ]);
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    let cell = cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "agent"),
            ("scenario", "native-load"),
        ],
    );
    assert_eq!(cell["verdict"], "not_applicable", "{cell}");
    assert!(cell["failureBoundary"].is_null(), "{cell}");
    let reason = cell["reason"].as_str().unwrap_or_default();
    assert_eq!(
        reason, "loadSessionAfterRestart: no call for session/load on a new server id",
        "{cell}"
    );
    // What it judged on ran: the prompt before the restart, the restart.
    assert_eq!(phase(cell, "promptBeforeRestart")["outcome"], "ok");
    let load = phase(cell, "loadSessionAfterRestart");
    assert_eq!(load["outcome"], "not_applicable", "{load}");
    assert_eq!(
        load["detail"]["missingCall"], "session/load on a new server id",
        "{load}"
    );
    assert_eq!(report["totals"]["passed"], 0, "{}", report["totals"]);
    assert_eq!(report["totals"]["notApplicable"], 1, "{}", report["totals"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("- total: 0/0 success (1 not applicable)"),
        "{md}"
    );
    assert!(
        md.contains("n/a not applicable (loadSessionAfterRestart: no call for session/load on a new server id)"),
        "{md}"
    );
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        text.contains("0/0 cells passed (0 failed, 0 errors, 0 skipped, 1 not applicable)"),
        "{text}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<skipped message=\"not applicable: loadSessionAfterRestart: no call for session/load on a new server id\" type=\"not_applicable\">"),
        "{junit}"
    );
}

#[test]
fn an_sdk_version_the_registry_lacks_skips_the_ts_sdk_cells_and_rust_still_runs() {
    let (_dir, out, run) = run_on_the_local_stack(&[
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
    ]);
    // A skipped cell is not a pass: the run says so with its exit code.
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    assert_eq!(
        cell_where(
            &report,
            &[
                ("client", "rust"),
                ("target", "agent"),
                ("scenario", "recreate-rehydrate")
            ],
        )["verdict"],
        "pass"
    );
    let ts = cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "agent"),
            ("scenario", "recreate-rehydrate"),
        ],
    );
    assert_eq!(ts["verdict"], "skipped", "{ts}");
    let reason = ts["reason"].as_str().unwrap();
    assert!(reason.contains("0.0.999"), "{reason}");
}

#[test]
fn a_graceful_rivet_stop_sends_the_runner_that_holds_the_sdk_client_sigterm() {
    let (_dir, out, run) = run_on_the_local_stack(&[
        "--client",
        "ts-sdk",
        "--target",
        "rivet",
        "--scenario",
        "native-continuity",
        "--rivet-stop",
        "graceful",
    ]);
    let report = report(&out);
    let cell = &report["cells"][0];
    assert_eq!(cell["target"], "rivet", "{cell}");
    // The restart happened, and it was a shutdown, not a crash.
    let restart = &cell["restarts"][0];
    assert_eq!(restart["ok"], true, "{cell}");
    let events = continuity::trace::read_trace(&out.join(cell["trace"].as_str().unwrap())).unwrap();
    let stop = events
        .iter()
        .find(|e| e["ev"] == "component_stop" && e["component"] == "rivet")
        .unwrap_or_else(|| panic!("no stop of the runner in the trace"));
    // SIGTERM lets RivetKit drain and exit on its own (an exit code) or, at
    // worst, end by that signal: never the SIGKILL of the default stop.
    assert_ne!(stop["signal"], "SIGKILL", "{stop}");
    assert!(
        stop["exitCode"].is_i64() || stop["signal"] == "SIGTERM",
        "{stop}"
    );
    // Whatever the hosted client made of it, the cell says so with an exit code to match.
    let code = match cell["verdict"].as_str() {
        Some("pass") => exit_codes::OK,
        _ => exit_codes::FAILED,
    };
    assert_exit(&run, code);
}
