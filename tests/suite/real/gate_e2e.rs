//! Release gating end to end against the real sandbox-agent 0.4.2 (the
//! `agent` target managed by the harness): expectations decide the exit
//! code, a pass on retry is `flaky` with both attempts in JSON and JUnit,
//! `baseline` records a run that then gates itself, the JSON event stream,
//! and every kind of bad input exits 64 naming the file and line.

use crate::support::{assert_exit, cell, continuity_with, managed_agent_config, report};
use continuity::exit_codes;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

struct Setup {
    dir: tempfile::TempDir,
    config: PathBuf,
}

fn setup(agent_env: &[(&str, &str)]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = managed_agent_config(dir.path(), agent_env);
    Setup { dir, config }
}

impl Setup {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `continuity run --config … EXTRA --out <dir>/<out>`.
    fn run(&self, out: &str, extra: &[&str]) -> (Output, PathBuf) {
        let out = self.path(out);
        let mut args = vec!["run", "--config", self.config.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        (continuity_with(&args, &[]), out)
    }
}

const KNOWN_BUG: &str = r#"[[expect]]
target = "agent"
scenario = "native-continuity"
verdict = "fail"
boundary = "promptSameHandleAfterRestart"
signature = "http 400 invalid_request"
reason = "sandbox-agent #189: the server forgets ACP server ids on restart"

[[expect]]
target = "agent"
scenario = "sandbox-reconnect"
verdict = "fail"
boundary = "processAfterRestart"
reason = "a restarted server no longer lists the processes it started"
"#;

fn stdout(run: &Output) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

fn stderr(run: &Output) -> String {
    String::from_utf8_lossy(&run.stderr).into_owned()
}

fn outcome(report: &Value, scenario: &str) -> String {
    cell(report, "agent", scenario)["expectation"]["outcome"]
        .as_str()
        .unwrap_or("none")
        .to_string()
}

#[test]
fn expectations_decide_the_exit_code() {
    let s = setup(&[]);
    // The known failure, expected: exit 0, and the table says so with the reason.
    let expect = s.write("expect.toml", KNOWN_BUG);
    let (run, out) = s.run("expected", &["--expect", expect.to_str().unwrap()]);
    assert_exit(&run, exit_codes::OK);
    let r = report(&out);
    assert_eq!(outcome(&r, "native-continuity"), "expected");
    assert_eq!(outcome(&r, "recreate-rehydrate"), "new");
    let native = cell(&r, "agent", "native-continuity");
    assert_eq!(native["verdict"], "fail");
    assert_eq!(
        native["expectation"]["entry"],
        format!("{}:1", expect.display())
    );
    let table = stdout(&run);
    assert!(table.contains("expected: sandbox-agent #189"), "{table}");
    assert!(table.contains("→ passes the gate"), "{table}");
    assert!(
        table.contains("summary\n"),
        "the summary table is printed: {table}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Expectations"), "{md}");
    assert!(md.contains("| agent | native-continuity | fail @ promptSameHandleAfterRestart | fail | expected | sandbox-agent #189"), "{md}");

    // The same cell expected to pass: regressed, exit 1.
    let expect = s.write(
        "pass.toml",
        &KNOWN_BUG.replace("verdict = \"fail\"", "verdict = \"pass\""),
    );
    let (run, out) = s.run("regressed", &["--expect", expect.to_str().unwrap()]);
    assert_exit(&run, exit_codes::FAILED);
    assert_eq!(outcome(&report(&out), "native-continuity"), "regressed");
    assert!(
        stdout(&run).contains("regressed (expected pass)"),
        "{}",
        stdout(&run)
    );

    // A failure expected of a passing cell: fixed, exit 1 — 0 with --allow-fixed.
    let fixed = format!("{KNOWN_BUG}\n[[expect]]\ntarget = \"agent\"\nscenario = \"recreate-*\"\nverdict = \"fail\"\nreason = \"was broken\"\n");
    let expect = s.write("fixed.toml", &fixed);
    let (run, out) = s.run("fixed", &["--expect", expect.to_str().unwrap()]);
    assert_exit(&run, exit_codes::FAILED);
    assert_eq!(outcome(&report(&out), "recreate-rehydrate"), "fixed");
    assert!(
        stderr(&run).contains("expected failures now pass"),
        "{}",
        stderr(&run)
    );
    let (run, out) = s.run(
        "allowed",
        &["--expect", expect.to_str().unwrap(), "--allow-fixed"],
    );
    assert_exit(&run, exit_codes::OK);
    let r = report(&out);
    assert_eq!(r["run"]["allowFixed"], true);
    assert_eq!(
        cell(&r, "agent", "recreate-rehydrate")["expectation"]["failsRun"],
        false
    );

    // `[run] expect` in the config works as --expect does.
    let config = std::fs::read_to_string(&s.config).unwrap().replace(
        "[run]\n",
        &format!(
            "[run]\nexpect = {:?}\n",
            s.path("expect.toml").display().to_string()
        ),
    );
    let with_expect = s.write("with-expect.toml", &config);
    let out = s.path("from-config");
    let run = continuity_with(
        &[
            "run",
            "--config",
            with_expect.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    assert_eq!(outcome(&report(&out), "native-continuity"), "expected");

    // `baseline` records the run; judged against it, the run is all expected.
    let run = continuity_with(&["baseline", s.path("regressed").to_str().unwrap()], &[]);
    assert_exit(&run, exit_codes::OK);
    let baseline = s.write("baseline.toml", &stdout(&run));
    // A run against a URL does not know the server version: entries are not scoped to one.
    assert!(!stdout(&run).contains("server_version"), "{}", stdout(&run));
    assert!(
        stdout(&run).contains("boundary = \"promptSameHandleAfterRestart\""),
        "{}",
        stdout(&run)
    );
    let (run, out) = s.run("rebased", &["--expect", baseline.to_str().unwrap()]);
    assert_exit(&run, exit_codes::OK);
    let r = report(&out);
    for scenario in ["native-continuity", "recreate-rehydrate"] {
        assert_eq!(outcome(&r, scenario), "expected", "{scenario}");
    }
}

#[test]
fn bad_expectations_and_partitions_exit_64_with_file_and_line() {
    let s = setup(&[]);
    let cases = [
        ("unmatched.toml", "[[expect]]\nverdict = \"pass\"\n\n[[expect]]\ntarget = \"agnet\"\nverdict = \"pass\"\n", ":4:", "matches no target"),
        ("glob.toml", "[[expect]]\ntarget = \"agent[\"\nverdict = \"pass\"\n", ":2:", "not a valid glob"),
        ("verdict.toml", "[[expect]]\ntarget = \"agent\"\nverdict = \"flakey\"\n", ":3:", "not a verdict"),
        ("version.toml", "[[expect]]\nverdict = \"pass\"\nserver_version = \"newest\"\n", ":3:", "semver"),
    ];
    for (name, text, line, what) in cases {
        let file = s.write(name, text);
        let (run, out) = s.run(
            &format!("out-{name}"),
            &["--expect", file.to_str().unwrap()],
        );
        assert_exit(&run, exit_codes::USAGE);
        let err = stderr(&run);
        assert!(
            err.contains(&format!("{}{line}", file.display())) && err.contains(what),
            "{name}: {err}"
        );
        assert!(!out.join("report.json").exists(), "{name}: nothing ran");
    }
    let missing = s.path("no-such.toml");
    let (run, _) = s.run("missing", &["--expect", missing.to_str().unwrap()]);
    assert_exit(&run, exit_codes::USAGE);
    assert!(stderr(&run).contains("no-such.toml"), "{}", stderr(&run));
    for bad in ["count:0/2", "count:3/2", "hash:1/0", "slice:1/2"] {
        let (run, _) = s.run("p", &["--partition", bad]);
        assert_exit(&run, exit_codes::USAGE);
        assert!(
            stderr(&run).contains("--partition"),
            "{bad}: {}",
            stderr(&run)
        );
    }
}

/// A scenario whose one prompt makes the agent exit the first time only.
fn flaky_scenario(s: &Setup, key: &str) -> PathBuf {
    let dir = s.path(&format!("scenarios-{key}"));
    s.write(
        &format!("scenarios-{key}/first-try.toml"),
        &format!("name = \"first-try\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n[[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"c\"\nsession = \"s\"\n[[phase]]\nname = \"promptOnce\"\nstep = \"prompt\"\nclient = \"c\"\nsession = \"s\"\ntext = \"hello [[exit:3]] [[once:{key}]]\"\ntimeout_ms = 5000\n[[cleanup]]\nstep = \"dispose\"\nclient = \"c\"\n"),
    );
    dir
}

#[test]
fn a_pass_on_retry_is_flaky_with_both_attempts_in_json_and_junit() {
    let s = setup(&[]);
    let scenarios = flaky_scenario(&s, "k1");
    let (run, out) = s.run(
        "flaky",
        &[
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--retries",
            "2",
            "--message-format",
            "json",
        ],
    );
    // Counted as passed by default, with a warning.
    assert_exit(&run, exit_codes::OK);
    assert!(
        stderr(&run).contains("1 flaky cell(s) counted as passed"),
        "{}",
        stderr(&run)
    );
    let r = report(&out);
    let c = cell(&r, "agent", "first-try");
    assert_eq!(c["verdict"], "flaky", "{c}");
    assert_eq!(c["passRate"], 0.5);
    let attempts = c["attempts"].as_array().unwrap();
    assert_eq!(
        attempts.len(),
        2,
        "a pass on the first retry stops retrying"
    );
    assert_eq!(attempts[0]["verdict"], "fail");
    assert_eq!(attempts[0]["retry"], false);
    assert_eq!(attempts[0]["failureBoundary"], "promptOnce");
    assert_eq!(attempts[1]["verdict"], "pass");
    assert_eq!(attempts[1]["retry"], true);
    assert_eq!(r["totals"]["flaky"], 1);
    assert_eq!(r["run"]["retries"], 2);
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("<flakyFailure"), "{junit}");
    assert!(junit.contains("attempt 1: fail @ promptOnce"), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");

    // The JSON stream: one object per line, the finished cell exactly as report.json holds it.
    let lines: Vec<Value> = stdout(&run)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "run-started",
            "cell-started",
            "attempt-judged",
            "cell-retrying",
            "cell-started",
            "attempt-judged",
            "cell-judged",
            "cell-finished",
            "run-finished"
        ]
    );
    assert_eq!(lines[0]["repeat"], 1);
    assert_eq!(
        (&lines[2]["attempt"], &lines[2]["verdict"]),
        (&1.into(), &"fail".into())
    );
    assert_eq!(
        (&lines[5]["attempt"], &lines[5]["verdict"]),
        (&2.into(), &"pass".into())
    );
    assert_eq!(lines[6]["verdicts"], serde_json::json!(["fail", "pass"]));
    assert_eq!(lines[7]["cell"], *c);
    assert_eq!(lines[8]["exitCode"], 0);
    assert!(
        stderr(&run).contains("first-try"),
        "the table goes to stderr"
    );

    // Counted as failed: exit 1, and JUnit has the failure with its rerun.
    let scenarios = flaky_scenario(&s, "k2");
    let (run, out) = s.run(
        "flaky-fails",
        &[
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--retries",
            "1",
            "--flaky-result",
            "fail",
        ],
    );
    assert_exit(&run, exit_codes::FAILED);
    let r = report(&out);
    let c = cell(&r, "agent", "first-try");
    assert_eq!(c["verdict"], "flaky", "{c}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<failure") && junit.contains("flaky (1/2 passed)"),
        "{junit}"
    );

    // --repeat: attempts that disagree make the cell flaky too (none of them a retry).
    let scenarios = flaky_scenario(&s, "k4");
    let (run, out) = s.run(
        "repeat",
        &[
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--repeat",
            "3",
        ],
    );
    assert_exit(&run, exit_codes::OK);
    let c = cell(&report(&out), "agent", "first-try").clone();
    assert_eq!(c["verdict"], "flaky");
    let verdicts: Vec<(&Value, &Value)> = c["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (&a["verdict"], &a["retry"]))
        .collect();
    assert_eq!(
        verdicts,
        [
            (&Value::from("fail"), &Value::from(false)),
            (&Value::from("pass"), &Value::from(false)),
            (&Value::from("pass"), &Value::from(false)),
        ]
    );
    let rate = c["passRate"].as_f64().unwrap();
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");

    // Without retries the same first-time fault is a plain failure.
    let scenarios = flaky_scenario(&s, "k3");
    let (run, out) = s.run(
        "no-retry",
        &["--scenarios-dir", scenarios.to_str().unwrap()],
    );
    assert_exit(&run, exit_codes::FAILED);
    let c = cell(&report(&out), "agent", "first-try").clone();
    assert_eq!(c["verdict"], "fail");
    assert_eq!(c["attempts"], Value::Array(Vec::new()));
}
