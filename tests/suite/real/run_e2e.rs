//! `continuity run` end to end against the real sandbox-agent 0.4.2, with the
//! `agent` target as a managed process the harness starts and restarts itself.

use crate::support;

use crate::support::{assert_exit, cell, phase, report};
use continuity::exit_codes;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

struct Setup {
    dir: tempfile::TempDir,
    config: PathBuf,
    base_url: String,
}

/// Writes a config whose `agent` target is the real server, managed by the harness.
fn setup(agent_env: &[(&str, &str)]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (config, base_url) = support::managed_agent_config(dir.path(), agent_env);
    Setup {
        config,
        dir,
        base_url,
    }
}

fn continuity(args: &[&str]) -> Output {
    support::continuity_with(args, &[])
}

impl Setup {
    /// `continuity run --config <this config> <extra> --out <dir>/<out>`.
    fn run(&self, out: &str, extra: &[&str]) -> (Output, PathBuf) {
        let out = self.dir.path().join(out);
        let mut args = vec!["run", "--config", self.config.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        (continuity(&args), out)
    }
}

/// Runs one scenario file (given as TOML text) against the `agent` target.
fn run_scenario(s: &Setup, name: &str, toml: &str) -> (Output, PathBuf) {
    let scenarios = s.dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(scenarios.join(format!("{name}.toml")), toml).unwrap();
    s.run(
        &format!("out-{name}"),
        &["--scenarios-dir", scenarios.to_str().unwrap()],
    )
}

#[test]
fn the_matrix_against_the_real_server_reproduces_the_reported_failure() {
    let s = setup(&[]);
    let (run, out) = s.run("out", &[]);
    // A failed cell exits 1.
    assert_exit(&run, exit_codes::FAILED);
    let stdout = String::from_utf8_lossy(&run.stdout);

    let report = report(&out);
    assert_eq!(report["schema"], "continuity.report/v2");
    assert_eq!(report["run"]["baseUrl"], s.base_url.as_str());
    assert_eq!(report["totals"]["cells"], 4, "the four default scenarios");
    // A --config deployment's agent restart loses the sandbox's processes and terminals.
    let sandbox = cell(&report, "agent", "sandbox-reconnect");
    assert_eq!(
        sandbox["failureBoundary"], "processAfterRestart",
        "{sandbox}"
    );
    assert_eq!(phase(sandbox, "fileAfterRestart")["ok"], true);
    assert_eq!(
        phase(sandbox, "reattachTerminal")["signature"]["httpStatus"],
        404
    );
    assert_eq!(phase(sandbox, "sandboxCleanup")["ok"], true);
    // The recovering client gets the session back where the SDK loses it.
    let load = cell(&report, "agent", "native-load");
    assert_eq!(load["verdict"], "pass", "{load}");
    let recovered = &phase(load, "loadSessionAfterRestart")["detail"];
    assert_eq!(recovered["method"], "session/load");
    assert_eq!(recovered["replayedUserChunks"], 1);

    let native = cell(&report, "agent", "native-continuity");
    assert_eq!(native["verdict"], "fail");
    assert_eq!(native["failureBoundary"], "promptSameHandleAfterRestart");
    let same = phase(native, "promptSameHandleAfterRestart");
    assert_eq!(same["outcome"], "fail");
    assert_eq!(same["signature"]["kind"], "http");
    assert_eq!(same["signature"]["httpStatus"], 400);
    assert_eq!(same["signature"]["problemType"], "invalid_request");
    // Fast: well before its deadline, which a lost answer would wait out
    // (relative, so a loaded machine does not fail it; it was 1 s).
    assert!(
        same["durationMs"].as_u64().unwrap() < same["deadlineMs"].as_u64().unwrap() / 2,
        "the failure is fast: {same}"
    );
    let after = phase(native, "promptAfterResume");
    assert_eq!(after["outcome"], "fail");
    assert!(after["signature"]["message"]
        .as_str()
        .unwrap()
        .starts_with("ACP client is closed"));
    assert_eq!(
        phase(native, "resumeSession")["detail"]["action"],
        "same_handle"
    );
    assert_eq!(phase(native, "getEvents")["ok"], true);
    assert_eq!(
        phase(native, "promptBeforeRestart")["detail"]["stopReason"],
        "end_turn"
    );
    let restart = &native["restarts"][0];
    assert_eq!(restart["ok"], true);
    assert!(restart["readyMs"].as_u64().is_some());
    let rehydrate = cell(&report, "agent", "recreate-rehydrate");
    assert_eq!(rehydrate["verdict"], "pass", "{rehydrate}");
    assert_eq!(
        phase(rehydrate, "promptRehydrate")["detail"]["rehydratedPrompts"],
        2
    );
    // The cell's two clients are disposed side by side: the second
    // dispose starts before the first one ends (each still timed alone).
    // Trace order, not timestamps: a dispose with nothing open ends within
    // the clock's resolution.
    let events =
        continuity::trace::read_trace(&out.join(rehydrate["trace"].as_str().unwrap())).unwrap();
    let at = |ev: &str, phase: &str| {
        events
            .iter()
            .position(|e| e["ev"] == ev && e["phase"] == phase)
            .unwrap_or_else(|| panic!("no {ev} of {phase} in the trace"))
    };
    assert!(
        at("phase_start", "disposeAfter") < at("phase_end", "disposeBefore"),
        "disposes ran one after the other"
    );
    for name in ["disposeBefore", "disposeAfter"] {
        let dispose = phase(rehydrate, name);
        assert_eq!(dispose["cleanup"], true, "{dispose}");
        assert_eq!(dispose["outcome"], "ok", "{dispose}");
    }

    // The table on stdout and the files beside the JSON.
    assert!(stdout.contains("promptSameHandleAfterRestart"), "{stdout}");
    assert!(stdout.contains("  http 400 invalid_request"), "{stdout}");
    assert!(!stdout.contains('\x1b'), "NO_COLOR is respected");
    for file in ["report.txt", "report.md", "junit.xml", "report.html"] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    // Every cell's wire trace, with the exchanges of its phases.
    for cell in report["cells"].as_array().unwrap() {
        let trace = out.join(cell["trace"].as_str().expect("a trace per cell"));
        let events = continuity::trace::read_trace(&trace).unwrap();
        let kinds: Vec<&str> = events.iter().filter_map(|e| e["ev"].as_str()).collect();
        // Sandbox state (files, processes, terminals) goes over REST and
        // WebSocket, not ACP: no envelopes, no event stream.
        let acp = cell["scenario"] != "sandbox-reconnect";
        let acp_only = ["rpc", "sse"];
        for kind in [
            "phase_start",
            "http",
            "rpc",
            "sse",
            "restart_start",
            "component_stop",
            "component_start",
            "ready_probe",
            "restart_end",
            "cell_end",
        ] {
            if !acp && acp_only.contains(&kind) {
                continue;
            }
            assert!(kinds.contains(&kind), "no {kind} in {}", trace.display());
        }
    }
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("invalid_request"), "{markdown}");

    // The report is valid against the published schema.
    let schema: Value =
        serde_json::from_str(include_str!("../../../docs/report.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    // The harness stopped the server it started.
    let port = s.base_url.rsplit(':').next().unwrap();
    assert_eq!(
        support::processes_with(&["sandbox-agent", port]),
        Vec::<String>::new(),
        "a server is still running"
    );
}

#[test]
fn a_hanging_agent_phase_ends_at_its_deadline_as_a_timeout() {
    let s = setup(&[]);
    let (run, out) = run_scenario(&s, "hang", "name = \"hang\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n[[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"c\"\nsession = \"s\"\n[[phase]]\nname = \"promptHang\"\nstep = \"prompt\"\nclient = \"c\"\nsession = \"s\"\ntext = \"[[hang]]\"\ntimeout_ms = 600\n[[cleanup]]\nstep = \"dispose\"\nclient = \"c\"\n");
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    let hang = phase(cell(&report, "agent", "hang"), "promptHang");
    assert_eq!(hang["outcome"], "timeout");
    assert_eq!(hang["signature"]["kind"], "timeout");
    assert!(hang["signature"]["pending"]
        .as_str()
        .unwrap()
        .contains("session/prompt"));
    let took = hang["durationMs"].as_u64().unwrap();
    assert!(
        (600..700).contains(&took),
        "ended {took} ms into a 600 ms deadline"
    );
}

#[test]
fn exit_codes_tell_pass_unreachable_and_bad_usage_apart() {
    let s = setup(&[]);
    // Only the scenario that passes on 0.4.2: exit 0.
    let (run, out) = s.run("pass", &["--scenario", "recreate-rehydrate"]);
    assert_exit(&run, exit_codes::OK);

    // `compare`: a run against itself is unchanged (0); a candidate whose
    // passing cell now fails is a regression (1).
    let same = continuity(&[
        "compare",
        out.to_str().unwrap(),
        out.join("report.json").to_str().unwrap(),
    ]);
    assert_exit(&same, exit_codes::OK);
    let mut worse = report(&out);
    worse["cells"][0]["verdict"] = "fail".into();
    let worse_path = s.dir.path().join("worse.json");
    std::fs::write(&worse_path, worse.to_string()).unwrap();
    let compared = continuity(&[
        "compare",
        out.to_str().unwrap(),
        worse_path.to_str().unwrap(),
    ]);
    assert_exit(&compared, exit_codes::FAILED);
    assert!(
        String::from_utf8_lossy(&compared.stdout).contains("1 regressed"),
        "{}",
        String::from_utf8_lossy(&compared.stdout)
    );

    // Nothing listening: the run cannot be completed, exit 2, no phase ran.
    let port = continuity::supervise::free_port().unwrap();
    let run = continuity(&[
        "run",
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--config",
        s.config.to_str().unwrap(),
        "--out",
        s.dir.path().join("x").to_str().unwrap(),
    ]);
    assert_exit(&run, exit_codes::INCOMPLETE);
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("unreachable"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // Bad usage and bad config: 64, with the file and line.
    assert_exit(&continuity(&["run", "--repeat", "0"]), exit_codes::USAGE);
    assert_exit(
        &continuity(&[
            "run",
            "--config",
            s.config.to_str().unwrap(),
            "--target",
            "nope",
        ]),
        exit_codes::USAGE,
    );
    let bad = s.dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[run]\nbase_url = \"http://127.0.0.1:1\"\ncolour = 1\n",
    )
    .unwrap();
    let run = continuity(&["validate", "--config", bad.to_str().unwrap()]);
    assert_exit(&run, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("bad.toml:3") && stderr.contains("colour"),
        "{stderr}"
    );
    let run = continuity(&["validate", "--config", s.config.to_str().unwrap()]);
    assert_exit(&run, exit_codes::OK);
}

#[test]
fn health_and_liveness_probe_steps_report_connected() {
    let s = setup(&[]);
    let (run, out) = run_scenario(&s, "probe", "name = \"probe\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n[[phase]]\nname = \"health\"\nstep = \"health\"\nclient = \"c\"\n[[phase]]\nname = \"restart\"\nstep = \"restart\"\n[[phase]]\nname = \"probe\"\nstep = \"probe\"\nclient = \"c\"\n");
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    let cell = cell(&report, "agent", "probe");
    assert_eq!(phase(cell, "health")["detail"]["health"]["status"], "ok");
    let probe = phase(cell, "probe");
    assert_eq!(probe["detail"]["status"], "connected", "{probe}");
    assert!(
        probe["detail"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .starts_with('/'),
        "{probe}"
    );
}

#[test]
fn the_overall_deadline_interrupts_the_run_and_keeps_finished_cells() {
    let s = setup(&[]);
    // Long enough for the first cell (a restart and a few prompts), not for both.
    let (run, out) = s.run("out", &["--repeat", "20", "--overall-timeout-ms", "3000"]);
    assert_exit(&run, exit_codes::INCOMPLETE);
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], true);
    let cells = report["cells"].as_array().unwrap().len();
    assert!((1..40).contains(&cells), "{cells} cells finished");
    let port = s.base_url.rsplit(':').next().unwrap();
    assert_eq!(
        support::processes_with(&["sandbox-agent", port]),
        Vec::<String>::new(),
        "the managed server was stopped"
    );
}

#[test]
fn the_token_never_reaches_a_report_or_the_output() {
    let s = setup(&[]);
    let out = s.dir.path().join("out");
    let run = support::continuity_command([
        "run",
        "--config",
        s.config.to_str().unwrap(),
        "--scenario",
        "recreate-rehydrate",
        "--token-env",
        "MY_SA_TOKEN",
        "--out",
        out.to_str().unwrap(),
    ])
    .env("MY_SA_TOKEN", "tok-do-not-leak-4711")
    .output()
    .unwrap();
    assert_exit(&run, exit_codes::OK);
    let mut seen =
        String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr);
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            seen.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    assert!(seen.contains("recreate-rehydrate"), "the files were read");
    assert!(!seen.contains("tok-do-not-leak-4711"), "the token leaked");
    // Naming a variable that is not set is a usage error, not a silent anonymous run.
    let run = continuity(&[
        "run",
        "--config",
        s.config.to_str().unwrap(),
        "--token-env",
        "UNSET_TOKEN_VAR_XYZ",
    ]);
    assert_exit(&run, exit_codes::USAGE);
}

#[test]
fn with_the_sdks_in_memory_store_a_second_client_sees_no_history() {
    let s = setup(&[]);
    let (run, out) = s.run(
        "out",
        &["--scenario", "native-continuity", "--persist", "memory"],
    );
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    assert_eq!(report["run"]["persist"], "memory");
    let native = cell(&report, "agent", "native-continuity");
    // As in the bug report: getEvents "succeeds" with nothing useful.
    let events = phase(native, "getEvents");
    assert_eq!(events["ok"], true);
    assert_eq!(events["detail"]["eventsObserved"], 0);
    assert_eq!(native["failureBoundary"], "promptSameHandleAfterRestart");
}

#[test]
fn the_overall_deadline_mid_cell_interrupts_the_cell_and_still_runs_its_cleanup() {
    let s = setup(&[]);
    let scenarios = s.dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("hold.toml"),
        "name = \"hold\"\ndescription = \"a session held open\"\nverdict = [\"never\"]\n\
         [[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n\
         [[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"c\"\nsession = \"s\"\n\
         [[phase]]\nname = \"hold\"\nstep = \"sleep\"\nms = 120000\ntimeout_ms = 130000\n\
         [[phase]]\nname = \"never\"\nstep = \"prompt\"\nclient = \"c\"\nsession = \"s\"\ntext = \"x\"\n\
         [[cleanup]]\nname = \"destroy\"\nstep = \"destroy_session\"\nclient = \"c\"\nsession = \"s\"\n\
         [[cleanup]]\nname = \"dispose\"\nstep = \"dispose\"\nclient = \"c\"\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (run, out) = s.run(
        "deadline",
        &[
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--overall-timeout-ms",
            "5000",
        ],
    );
    assert_exit(&run, exit_codes::INCOMPLETE);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the deadline and the cleanup bound held: {:?}",
        started.elapsed()
    );
    let report = report(&out);
    assert_eq!(report["run"]["interrupted"], true);
    let cell = cell(&report, "agent", "hold");
    assert_eq!(cell["verdict"], "interrupted", "{cell:#}");
    assert_eq!(phase(cell, "create")["outcome"], "ok");
    assert_eq!(phase(cell, "hold")["outcome"], "interrupted");
    assert_eq!(phase(cell, "never")["outcome"], "not_run");
    assert_eq!(phase(cell, "destroy")["outcome"], "ok", "{cell:#}");
    assert_eq!(phase(cell, "dispose")["outcome"], "ok", "{cell:#}");
    // Every renderer knows the verdict.
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("interrupted"), "{junit}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("interrupted"), "{markdown}");
    assert!(String::from_utf8_lossy(&run.stdout).contains("interrupted"));
}
