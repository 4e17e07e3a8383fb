//! Bad input that the harness refuses before it starts anything: flags and
//! the seed script's variables named as the user set them, unknown or
//! repeated agents, a client the deployment cannot host. Exit 64, a clear
//! message, never a panic. (Bad input that needs the real server to show,
//! a refused token or a full stdout, is in `real::bad_input_e2e`.)

use crate::support::{assert_exit, continuity_with};
use continuity::exit_codes;
use std::path::Path;
use std::process::Output;

fn continuity(args: &[&str], env: &[(&str, &str)]) -> Output {
    continuity_with(args, env)
}

fn stderr(run: &Output) -> String {
    String::from_utf8_lossy(&run.stderr).into_owned()
}

/// Extra flags, environment, and the name the error must show.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn flags_and_variables_are_named_in_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[targets.cmd]\nrestart = { command = \"true\" }\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for url in [
        "ftp://127.0.0.1/x",
        "http://127.0.0.1:99999",
        "not-a-url",
        "http://:80",
    ] {
        let run = continuity(
            &["run", "--config", cfg, "--out", out, "--base-url", url],
            &[],
        );
        assert_exit(&run, exit_codes::USAGE);
        assert!(
            stderr(&run).contains("--base-url"),
            "{url}: {}",
            stderr(&run)
        );
        let run = continuity(
            &["run", "--config", cfg, "--out", out],
            &[("SA_BASE_URL", url)],
        );
        assert_exit(&run, exit_codes::USAGE);
        assert!(
            stderr(&run).contains("SA_BASE_URL"),
            "{url}: {}",
            stderr(&run)
        );
        assert!(!stderr(&run).contains("--base-url"), "{}", stderr(&run));
    }
    let cases: [Case<'_>; 7] = [
        (&["--agent", ""], &[], "--agent"),
        (&["--agent", "a b/c"], &[], "--agent"),
        (&[], &[("SA_AGENT", "  ")], "SA_AGENT"),
        (&[], &[("SA_TIMEOUT_MS", "abc")], "SA_TIMEOUT_MS"),
        (&[], &[("SA_TIMEOUT_MS", "0")], "SA_TIMEOUT_MS"),
        (&["--server-version", "../../etc"], &[], "--server-version"),
        (
            &["--timeout-ms", "abc"],
            &[("SA_TIMEOUT_MS", "5")],
            "--timeout-ms",
        ),
    ];
    for (args, env, named) in cases {
        let mut argv = vec![
            "run",
            "--config",
            cfg,
            "--out",
            out,
            "--base-url",
            "http://127.0.0.1:1",
        ];
        argv.extend_from_slice(args);
        let run = continuity(&argv, env);
        assert_exit(&run, exit_codes::USAGE);
        let text = stderr(&run);
        assert!(text.contains(named), "{args:?} {env:?}: {text}");
        if named == "SA_TIMEOUT_MS" {
            assert!(!text.contains("--timeout-ms"), "{text}");
        }
    }
    // A token pasted where its variable's name belongs is not shown.
    let run = continuity(
        &[
            "run",
            "--config",
            cfg,
            "--out",
            out,
            "--token-env",
            "sk-pasted.token-4711",
        ],
        &[],
    );
    assert_exit(&run, exit_codes::USAGE);
    assert!(stderr(&run).contains("--token-env"), "{}", stderr(&run));
    assert!(!stderr(&run).contains("4711"), "{}", stderr(&run));
    // Nothing was started or written for any of them.
    assert!(!Path::new(out).exists());
    assert!(!dir.path().join("etc").exists());
    let run = continuity(
        &["stack", "up", "--dir", out, "--server-version", "../../etc"],
        &[],
    );
    assert_exit(&run, exit_codes::USAGE);
}

#[test]
fn an_unknown_agent_is_a_usage_error_naming_the_known_ones() {
    let run = crate::support::continuity_command(["run", "--agent", "gemini", "--out"])
        .arg(tempfile::tempdir().unwrap().path().join("run"))
        .output()
        .unwrap();
    assert_exit(&run, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("unknown agent \"gemini\" (known: mock, opencode, claude, codex)"),
        "{stderr}"
    );
}

#[test]
fn an_agent_given_twice_is_a_usage_error() {
    let run =
        crate::support::continuity_command(["run", "--agent", "mock", "--agent", "mock", "--out"])
            .arg(tempfile::tempdir().unwrap().path().join("run"))
            .output()
            .unwrap();
    assert_exit(&run, exit_codes::USAGE);
    assert!(String::from_utf8_lossy(&run.stderr).contains("--agent mock is given twice"));
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
    assert_exit(&run, exit_codes::USAGE);
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

/// One expectations file gates the whole matrix and any `--target` subset:
/// an entry naming a target the run knows but does not run is fine (the
/// shipped file names `gateway-reset`, and `--target agent` runs were
/// refused with 64), while a target nothing knows is still a typo.
#[test]
fn an_expectation_for_a_known_target_outside_the_subset_is_no_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("continuity.toml");
    std::fs::write(
        &cfg,
        "[run]\nbase_url = \"http://127.0.0.1:1\"\n\n[targets.a]\nrestart = { command = \"true\" }\n\n[targets.b]\nrestart = { command = \"true\" }\n",
    )
    .unwrap();
    let expect = |name: &str, target: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("[[expect]]\ntarget = \"{target}\"\nverdict = \"fail\"\n"),
        )
        .unwrap();
        path
    };
    let run = |expect: &std::path::Path, out: &str| {
        continuity(
            &[
                "run",
                "--config",
                cfg.to_str().unwrap(),
                "--target",
                "a",
                "--expect",
                expect.to_str().unwrap(),
                "--out",
                dir.path().join(out).to_str().unwrap(),
            ],
            &[],
        )
    };
    let outside = run(&expect("b.toml", "b"), "out-b");
    let stderr = String::from_utf8_lossy(&outside.stderr);
    assert!(!stderr.contains("matches no target"), "{stderr}");
    // The deployment is unreachable: the run gets past the file and stops there.
    assert_exit(&outside, exit_codes::INCOMPLETE);
    let typo = run(&expect("typo.toml", "bb"), "out-typo");
    assert_exit(&typo, exit_codes::USAGE);
    assert!(String::from_utf8_lossy(&typo.stderr).contains("matches no target this run knows"));
}

/// A timeout of zero or below is refused with the file and the line: an
/// idle cut of its own (`idle_cut`), and a scenario phase's `timeout_ms`.
#[test]
fn a_timeout_of_zero_or_below_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("continuity.toml");
    for idle in ["0", "-2000"] {
        let text = format!(
            "# an LB in front of the gateway\n[targets.lb-idle]\nfault = {{ hop = \"gateway\", toxic = \"idle_cut\", idle = {idle} }}\n"
        );
        std::fs::write(&cfg, text).unwrap();
        let run = continuity(&["validate", "--config", cfg.to_str().unwrap()], &[]);
        assert_exit(&run, exit_codes::USAGE);
        let err = stderr(&run);
        assert!(
            err.contains("continuity.toml:3:")
                && err.contains("targets.lb-idle.fault.idle")
                && err.contains("from 1 to"),
            "{err}"
        );
    }
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    let long = std::fs::read_to_string("scenarios/long-turn.toml").unwrap();
    let line = long
        .lines()
        .position(|l| l == "timeout_ms = 4000")
        .expect("the built-in long turn bounds its await")
        + 1;
    for (value, says) in [
        ("0", "timeout_ms must be greater than 0"),
        ("-1", "expected u64"),
    ] {
        let bad = long.replace("timeout_ms = 4000", &format!("timeout_ms = {value}"));
        std::fs::write(scenarios.join("long-turn.toml"), bad).unwrap();
        let run = continuity(
            &["validate", "--scenarios-dir", scenarios.to_str().unwrap()],
            &[],
        );
        assert_exit(&run, exit_codes::USAGE);
        let err = stderr(&run);
        // A zero names the phase's table, a negative its key: both in the await's phase.
        let at = err
            .split("long-turn.toml:")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no line: {err}"));
        assert!(
            (line - 4..=line).contains(&at) && err.contains(says),
            "{err}"
        );
    }
}
