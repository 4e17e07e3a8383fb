//! Network faults on the real local stack: a 3 s partition on the gateway
//! hop during native-continuity (the prompt sent into it waits, then the
//! same handle carries on), a reset_peer in the middle of a streaming turn
//! (named as the fault proxy's), and a latency that crosses a phase's
//! deadline next to one that stays under it (no false failure). Then bad
//! input, which never starts a cell: an unknown toxic or hop, a negative
//! parameter, a proxy port already taken.

use crate::support;

use continuity::exit_codes;
use serde_json::Value;
use std::path::Path;
use support::{assert_exit, cell, phase, report};

/// The trace events of a cell, in order.
fn trace(out: &Path, cell: &Value) -> Vec<Value> {
    let path = out.join(cell["trace"].as_str().expect("the cell has a trace"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'a>(trace: &'a [Value], ev: &str) -> Vec<&'a Value> {
    trace.iter().filter(|e| e["ev"] == ev).collect()
}

fn run(args: &[&str], out: &Path) -> std::process::Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--jobs", "1", "--out", out.to_str().unwrap()]);
    support::continuity_with(&all, &[])
}

#[test]
fn a_3_s_partition_on_the_gateway_hop_holds_the_prompt_until_it_heals() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let ran = run(
        &[
            "--target",
            "gateway-partition",
            "--scenario",
            "native-continuity",
        ],
        &out,
    );
    assert_exit(&ran, exit_codes::OK);
    let report = report(&out);
    let cell = cell(&report, "gateway-partition", "native-continuity");
    assert_eq!(cell["verdict"], "pass", "{cell}");
    assert_eq!(phase(cell, "restart")["detail"]["action"], "fault");
    // The prompt after the "restart" went into the partition: it waited
    // for the heal, then the same handle answered.
    let held = phase(cell, "promptSameHandleAfterRestart");
    assert!(
        held["durationMs"].as_u64().unwrap() >= 2000,
        "the prompt was held by the partition: {held}"
    );
    let trace = trace(&out, cell);
    let start = events(&trace, "fault_start");
    let end = events(&trace, "fault_end");
    assert_eq!((start.len(), end.len()), (1, 1), "one window");
    assert_eq!(
        (&start[0]["hop"], &start[0]["toxic"], &start[0]["holdMs"]),
        (&"gateway".into(), &"partition".into(), &3000.into())
    );
    assert_eq!(end[0]["ok"], true);
    let window = end[0]["t"].as_f64().unwrap() - start[0]["t"].as_f64().unwrap();
    assert!(window >= 2900.0, "held for its 3 s: {window} ms");
    // The window is what the HTML report draws.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("fault_start") && html.contains("fault-window"));
}

#[test]
fn a_reset_peer_in_the_middle_of_a_turn_is_named_as_the_fault_proxys() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let ran = run(
        &[
            "--target",
            "gateway-reset",
            "--scenario",
            "restart-mid-turn",
        ],
        &out,
    );
    assert_exit(&ran, exit_codes::FAILED);
    let report = report(&out);
    let cell = cell(&report, "gateway-reset", "restart-mid-turn");
    assert_eq!(cell["verdict"], "fail", "{cell}");
    let fault = phase(cell, "restartMidTurn");
    assert_eq!(fault["detail"]["action"], "fault");
    assert!(fault["detail"]["startedIntoTurnMs"].as_u64().unwrap() >= 1500);
    // The proxy reset the turn's stream towards the client.
    let trace = trace(&out, cell);
    let resets = events(&trace, "fault_action");
    assert!(!resets.is_empty(), "the proxy reset something");
    for r in &resets {
        assert_eq!(
            (&r["hop"], &r["toxic"], &r["action"], &r["toward"]),
            (
                &"gateway".into(),
                &"reset_peer".into(),
                &"reset".into(),
                &"downstream".into()
            )
        );
    }
    let ends = &phase(cell, "awaitTurn")["detail"]["streamEnds"];
    assert!(
        ends.to_string().contains("reset"),
        "the stream was reset: {ends}"
    );
    // Every failed phase names the hop and the toxic; none is put on the server.
    let failed: Vec<&Value> = cell["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["signature"].is_null())
        .collect();
    assert!(!failed.is_empty());
    for p in failed {
        let sig = &p["signature"];
        assert_eq!(
            (&sig["fault"]["hop"], &sig["fault"]["toxic"]),
            (&"gateway".into(), &"reset_peer".into()),
            "{p}"
        );
        let message = sig["message"].as_str().unwrap();
        assert!(
            message.starts_with("reset by the fault proxy on the gateway hop (reset_peer)")
                || message.contains("reset_peer on the gateway hop"),
            "{message}"
        );
    }
    assert_eq!(
        phase(cell, cell["failureBoundary"].as_str().unwrap())["outcome"],
        "fail"
    );
    // Signatures with a fault are valid against the published schema.
    let schema: Value =
        serde_json::from_str(include_str!("../../../docs/report.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// A prompt under a latency fault with a 1 s deadline.
const LATENCY_SCENARIO: &str = r#"name = "latency-deadline"
description = "a prompt under a latency fault, deadline 1 s"
verdict = ["promptUnderLatency"]

[[phase]]
name = "connect"
step = "connect"
client = "primary"

[[phase]]
name = "createSession"
step = "create_session"
client = "primary"
session = "s"

[[phase]]
name = "fault"
step = "restart"

[[phase]]
name = "promptUnderLatency"
step = "prompt"
client = "primary"
session = "s"
text = "Return only LATE-OK"
timeout_ms = 1000

[[cleanup]]
step = "dispose"
client = "primary"
"#;

#[test]
fn a_latency_past_the_deadline_times_out_named_and_one_under_it_passes() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(scenarios.join("latency.toml"), LATENCY_SCENARIO).unwrap();
    // The built-in gateway-latency (2 s a chunk) beside a config file's own
    // 150 ms on the same hop, which the local stack runs too.
    let config = dir.path().join("continuity.toml");
    std::fs::write(
        &config,
        "[targets.gateway-slight-latency]\nfault = { hop = \"gateway\", toxic = \"latency\", latency = 150, hold_ms = 5000 }\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let ran = run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--target",
            "gateway-latency",
            "--target",
            "gateway-slight-latency",
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
        ],
        &out,
    );
    assert_exit(&ran, exit_codes::FAILED);
    let report = report(&out);

    let over = cell(&report, "gateway-latency", "latency-deadline");
    assert_eq!(over["verdict"], "fail", "{over}");
    let late = phase(over, "promptUnderLatency");
    assert_eq!(late["outcome"], "timeout", "{late}");
    let sig = &late["signature"];
    assert!(
        sig["message"]
            .as_str()
            .unwrap()
            .starts_with("during latency on the gateway hop: timed out after 1000 ms"),
        "{sig}"
    );
    assert_eq!(sig["fault"]["when"], "during");
    assert!(
        sig["fault"]["byProxy"].is_null(),
        "latency resets nothing: {sig}"
    );

    // Under the deadline: slower, and a pass.
    let under = cell(&report, "gateway-slight-latency", "latency-deadline");
    assert_eq!(under["verdict"], "pass", "{under}");
    let slow = phase(under, "promptUnderLatency");
    assert!(
        slow["durationMs"].as_u64().unwrap() >= 150,
        "the latency was in force: {slow}"
    );
    let trace = trace(&out, under);
    assert_eq!(events(&trace, "fault_start")[0]["holdMs"], 5000);
}

fn usage_error(config: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("continuity.toml");
    std::fs::write(&path, config).unwrap();
    let out = dir.path().join("run");
    let mut args = vec!["run", "--config", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let ran = support::continuity_with(&args, &[]);
    assert_exit(&ran, exit_codes::USAGE);
    assert!(!out.join("report.json").exists(), "no cell ran");
    String::from_utf8_lossy(&ran.stderr).into_owned()
}

#[test]
fn bad_faults_are_usage_errors_before_any_cell() {
    let base = "[run]\nbase_url = \"http://127.0.0.1:9\"\n[faults]\n";
    let e = usage_error(
        &format!("{base}[targets.x]\nfault = {{ hop = \"front\", toxic = \"reset_per\" }}\n"),
        &[],
    );
    assert!(
        e.contains("unknown toxic `reset_per` (did you mean `reset_peer`?)"),
        "{e}"
    );
    let e = usage_error(
        &format!(
            "{base}[targets.x]\nfault = {{ hop = \"front\", toxic = \"latency\", latency = -5 }}\n"
        ),
        &[],
    );
    assert!(
        e.contains("targets.x.fault.latency") && e.contains("from 0 to 600000"),
        "{e}"
    );
    let e = usage_error(
        &format!("{base}[targets.x]\nfault = {{ hop = \"gateway\", toxic = \"partition\" }}\n"),
        &[],
    );
    assert!(e.contains("unknown hop") && e.contains("front"), "{e}");
    // A hop whose listening port is taken: refused before the server is even asked.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let e = usage_error(
        &format!("{base}[faults.hops.db]\nlisten = \"127.0.0.1:{port}\"\nupstream = \"127.0.0.1:5432\"\n[targets.x]\nfault = {{ hop = \"db\", toxic = \"down\" }}\n"),
        &[],
    );
    assert!(
        e.contains("the db hop") && e.contains("the port is taken"),
        "{e}"
    );
    // A fault on a deployment without [faults]; an unknown built-in target.
    let e = usage_error(
        "[run]\nbase_url = \"http://127.0.0.1:9\"\n[targets.x]\nfault = { hop = \"gateway\", toxic = \"down\" }\n",
        &[],
    );
    assert!(e.contains("no [faults] table"), "{e}");
}
