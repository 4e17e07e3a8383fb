//! The real SDK on the mid-turn, sandbox and client-restart scenarios:
//! `--client ts-sdk` (the SDK in the Rivet actor) and `--client browser`
//! (the SDK in Chromium) take each step through the SDK's own calls, and
//! the report holds what those calls returned, on the `agent` and
//! `gateway` targets. Needs nginx, node/npm and Chromium; fails loudly
//! without them.

use crate::support::{self, cell_where, phase};
use serde_json::Value;

/// `continuity run ARGS` for both SDK clients on both targets, in a stack slot of its own.
fn run_sdk_clients(scenarios: &[&str]) -> (tempfile::TempDir, Value) {
    let mut args = vec!["--client", "ts-sdk", "--client", "browser"];
    args.extend([
        "--persist",
        "memory",
        "--target",
        "agent",
        "--target",
        "gateway",
    ]);
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    // Long enough that a loaded machine cannot push a hang past the deadline.
    args.extend(["--timeout-ms", "15000"]);
    let (dir, _, report) = support::run_to_report(&args);
    (dir, report)
}

#[test]
fn the_sdk_leaves_a_turn_pending_across_a_restart_and_takes_every_sandbox_step() {
    let (_dir, report) = run_sdk_clients(&["restart-mid-turn", "sandbox-reconnect"]);
    for client in ["ts-sdk", "browser"] {
        for target in ["agent", "gateway"] {
            // The turn: session.prompt never settles; the POST's failure is an
            // unhandled rejection of the phase that started it (#306/#307).
            let mid = cell_where(
                &report,
                &[
                    ("client", client),
                    ("target", target),
                    ("scenario", "restart-mid-turn"),
                ],
            );
            assert_eq!(mid["verdict"], "fail", "{mid}");
            assert_eq!(mid["failureBoundary"], "awaitTurn", "{mid}");
            let start = phase(mid, "startLongTurn");
            assert_eq!(start["outcome"], "ok", "{start}");
            assert_eq!(start["detail"]["handle"], "held", "{start}");
            let rejections = start["detail"]["unhandledRejections"].as_array();
            assert!(rejections.is_some_and(|r| !r.is_empty()), "{start}");
            let wait = phase(mid, "awaitTurn");
            assert_eq!(wait["detail"]["turnOutcome"], "lost", "{wait}");
            // Nothing in flight could settle the turn: the await was cut
            // short as hung, and still says what the SDK delivered.
            assert_eq!(wait["signature"]["kind"], "hung", "{wait}");
            let delivered = wait["detail"]["sdkChunksDelivered"].as_u64().unwrap();
            assert!((1..40).contains(&delivered), "{wait}");
            let history = phase(mid, "turnHistory");
            assert_eq!(history["detail"]["sdkChunksDelivered"], delivered);
            assert_eq!(history["detail"]["chunksStored"], delivered, "{history}");
            // Behind the gateway the agent streams on: the SDK stored none of the rest.
            if target == "gateway" {
                assert_eq!(history["detail"]["chunksSent"], 40, "{history}");
                assert_eq!(history["outcome"], "fail", "{history}");
            }

            let sandbox = cell_where(
                &report,
                &[
                    ("client", client),
                    ("target", target),
                    ("scenario", "sandbox-reconnect"),
                ],
            );
            assert_eq!(sandbox["verdict"], "fail", "{sandbox}");
            let probe = phase(sandbox, "probeAfterRestart");
            assert_eq!(probe["detail"]["status"], "connected", "{probe}");
            let file = phase(sandbox, "fileAfterRestart");
            assert_eq!(file["detail"]["sameBytes"], true, "{file}");
            let old = phase(sandbox, "oldTerminalSend");
            assert_eq!(old["signature"]["kind"], "stream_closed", "{old}");
            let process = phase(sandbox, "processAfterRestart");
            if target == "agent" {
                // A new server forgot the process: getProcess answers 404.
                assert_eq!(process["signature"]["httpStatus"], 404, "{process}");
                assert_eq!(process["detail"]["listed"], false, "{process}");
                assert_eq!(sandbox["failureBoundary"], "processAfterRestart");
            } else {
                assert_eq!(process["detail"]["logsRetained"], true, "{process}");
                assert_eq!(sandbox["failureBoundary"], "oldTerminalSend");
                let again = phase(sandbox, "reattachTerminal");
                assert_eq!(again["detail"]["oldCloseCode"], 1006, "{again}");
                let echo = phase(sandbox, "terminalEchoAfterReattach");
                assert_eq!(echo["outcome"], "ok", "{echo}");
            }
        }
    }
}

#[test]
fn the_sdk_carries_a_session_across_a_gateway_restart_and_not_an_agent_restart() {
    let (_dir, report) = run_sdk_clients(&["client-restart"]);
    for client in ["ts-sdk", "browser"] {
        let gateway = cell_where(
            &report,
            &[
                ("client", client),
                ("target", "gateway"),
                ("scenario", "client-restart"),
            ],
        );
        support::passed_or_lost_the_tail(gateway);
        let after = phase(gateway, "promptAfterRestart");
        assert_eq!(after["detail"]["stopReason"], "end_turn", "{after}");
        let agent = cell_where(
            &report,
            &[
                ("client", client),
                ("target", "agent"),
                ("scenario", "client-restart"),
            ],
        );
        assert_eq!(agent["verdict"], "fail", "{agent}");
        assert_eq!(agent["failureBoundary"], "promptAfterRestart", "{agent}");
        // The SDK's prompt on the lost server id: a 400 nobody awaits, and
        // nothing in flight after it: hung.
        let lost = phase(agent, "promptAfterRestart");
        assert_eq!(lost["signature"]["kind"], "hung", "{lost}");
        let rejections = lost["detail"]["unhandledRejections"].as_array().unwrap();
        assert!(rejections.iter().any(|r| r["status"] == 400), "{lost}");
        // The restart can land on the first prompt's tail here too.
        let events = phase(agent, "getEvents");
        if events["outcome"] != "ok" {
            assert_eq!(events["detail"]["writes"], "neverWritten", "{events}");
        }
    }
}

/// The hosted SDK lives in the Rivet app, which the `rivet` target
/// restarts: the terminal socket and the turn it held in memory go with
/// it. The report says so (boundary `client`, the host restarted), a new
/// attach to the same process works (the executor names the process the
/// host forgot), and the 0.4.2 expectations know both cells.
#[test]
fn a_restart_of_the_sdks_own_host_takes_its_terminal_and_turn_and_the_terminal_reattaches() {
    let args = [
        "--client",
        "ts-sdk",
        "--target",
        "rivet",
        "--scenario",
        "sandbox-reconnect",
        "--scenario",
        "restart-mid-turn",
        "--expect",
        support::EXPECTATIONS,
        "--timeout-ms",
        "8000",
    ];
    let (_dir, _, report) = support::run_to_report(&args);
    // The cell's boundary is a phase of the client's, whose message says its host may have restarted.
    let lost_with_the_host = |c: &Value, boundary: &str| {
        assert_eq!(c["failureBoundary"], boundary, "{c}");
        let failed = phase(c, boundary);
        assert_eq!(failed["signature"]["kind"], "client", "{failed}");
        let said = failed["signature"]["message"].as_str().unwrap();
        assert!(said.contains("restarted since"), "{said}");
    };

    let sandbox = cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "rivet"),
            ("scenario", "sandbox-reconnect"),
        ],
    );
    lost_with_the_host(sandbox, "oldTerminalSend");
    let again = phase(sandbox, "reattachTerminal");
    assert_eq!(again["outcome"], "ok", "{again}");
    assert_eq!(again["detail"]["oldSocket"], "gone", "{again}");
    let echo = phase(sandbox, "terminalEchoAfterReattach");
    assert_eq!(echo["outcome"], "ok", "{echo}");

    let mid = cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "rivet"),
            ("scenario", "restart-mid-turn"),
        ],
    );
    lost_with_the_host(mid, "awaitTurn");
    assert_eq!(phase(mid, "promptAfterTurn")["outcome"], "ok", "{mid}");

    for c in [sandbox, mid] {
        assert_eq!(c["expectation"]["outcome"], "expected", "{c}");
    }
}
