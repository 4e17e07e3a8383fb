//! Bad input gets a clear message and the right exit code, through the
//! built binary, where showing it takes the real sandbox-agent: a token it
//! refuses, a closed or full stdout, a run folder that is not empty, a
//! comparison with missing or duplicated cells. (What is refused before
//! anything starts is in `quick::bad_input`.)

use crate::support;

use crate::support::{assert_exit, report, Ready};
use continuity::exit_codes;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const TOKEN: &str = "tok-right-123456789";

fn continuity(args: &[&str], env: &[(&str, &str)]) -> Output {
    command(args, env).output().unwrap()
}

fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = support::continuity_command(args);
    command.envs(env.iter().copied());
    command
}

fn stderr(run: &Output) -> String {
    String::from_utf8_lossy(&run.stderr).into_owned()
}

/// A config whose `agent` target is the real server (managed by the
/// harness), started with `--token TOKEN` when `token`, probed by `ready`.
fn config(dir: &Path, token: bool, ready: Ready) -> PathBuf {
    support::managed_agent_config_with(dir, &[], token.then_some(TOKEN), ready).0
}

#[test]
fn readiness_probes_send_the_token_and_a_wrong_token_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // The right token: the HTTP probe of /v1/health passes (it sends the token).
    let cfg = config(dir.path(), true, Ready::Http);
    let args = |out: &str| {
        vec![
            "run".to_string(),
            "--config".into(),
            cfg.to_str().unwrap().into(),
            "--scenario".into(),
            "recreate-rehydrate".into(),
            "--out".into(),
            dir.path().join(out).to_str().unwrap().into(),
        ]
    };
    let argv = args("right");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let run = continuity(&argv, &[("SA_TOKEN", TOKEN)]);
    assert_exit(&run, exit_codes::OK);

    // The wrong token: the probe stops at once and says why.
    let argv = args("wrong");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let run = continuity(&argv, &[("SA_TOKEN", "tok-wrong-987654321")]);
    assert_exit(&run, exit_codes::INCOMPLETE);
    assert!(
        stderr(&run).contains("gave up at once")
            && stderr(&run).contains("last error: the server rejected the token (HTTP 401)"),
        "{}",
        stderr(&run)
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "it waited for the probe's deadline"
    );

    // With a probe that needs no token, the health check before the first
    // cell names the refusal, with and without a token.
    let cfg = config(dir.path(), true, Ready::Tcp);
    for (env, says) in [
        (
            vec![("SA_TOKEN", "tok-wrong-987654321")],
            "sandbox-agent rejected the token (HTTP 401)",
        ),
        (vec![], "sandbox-agent wants a token (HTTP 401)"),
    ] {
        let out = dir.path().join(format!("tcp-{}", env.len()));
        let run = continuity(
            &[
                "run",
                "--config",
                cfg.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            &env,
        );
        assert_exit(&run, exit_codes::INCOMPLETE);
        assert!(stderr(&run).contains(says), "{}", stderr(&run));
        assert!(!stderr(&run).contains("unreachable"), "{}", stderr(&run));
        assert!(!stderr(&run).contains("tok-wrong"), "{}", stderr(&run));
    }
}

/// A pipe whose reading end is already closed: the first write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_closed_or_full_stdout_never_panics() {
    // `continuity list | head -1`: quiet, exit 0.
    let run = command(&["list"], &[])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_exit(&run, exit_codes::OK);
    assert_eq!(stderr(&run), "");
    // A full disk is an error worth a message (exit 2), not a panic (101).
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let run = command(&["list"], &[]).stdout(full).output().unwrap();
    assert_exit(&run, exit_codes::INCOMPLETE);
    assert!(
        stderr(&run).contains("cannot write to stdout"),
        "{}",
        stderr(&run)
    );
    assert!(!stderr(&run).contains("panicked"), "{}", stderr(&run));

    // `continuity run … | head`: the run still writes its whole report folder.
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), false, Ready::Http);
    let out = dir.path().join("out");
    let run = command(
        &[
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--scenario",
            "recreate-rehydrate",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    )
    .stdout(closed_pipe())
    .output()
    .unwrap();
    assert_exit(&run, exit_codes::OK);
    assert!(!stderr(&run).contains("panicked"), "{}", stderr(&run));
    for name in ["report.json", "report.txt", "report.md", "junit.xml"] {
        assert!(out.join(name).is_file(), "{name}");
    }
    assert_eq!(report(&out)["cells"].as_array().unwrap().len(), 1);

    // --out on that folder again: refused (64) and the earlier run untouched;
    // with --force, the earlier run's session stores are gone.
    let before = std::fs::read(out.join("report.json")).unwrap();
    let again = |extra: &[&str]| {
        let mut argv = vec![
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--scenario",
            "recreate-rehydrate",
            "--out",
            out.to_str().unwrap(),
        ];
        argv.extend_from_slice(extra);
        continuity(&argv, &[])
    };
    let run = again(&[]);
    assert_exit(&run, exit_codes::USAGE);
    assert!(stderr(&run).contains("--force"), "{}", stderr(&run));
    assert_eq!(std::fs::read(out.join("report.json")).unwrap(), before);
    let old_store: Vec<PathBuf> = std::fs::read_dir(out.join("persist"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(old_store.len(), 1, "{old_store:?}");
    std::fs::write(out.join("persist/999-stale.db"), b"stale").unwrap();
    let run = again(&["--force", "--target", "agent"]);
    assert_exit(&run, exit_codes::OK);
    assert!(
        !out.join("persist/999-stale.db").exists(),
        "the earlier run's stores were removed"
    );
    assert_ne!(std::fs::read(out.join("report.json")).unwrap(), before);

    // compare: a candidate that lacks a cell fails unless --allow-missing;
    // a duplicated cell always fails.
    let mut fewer = report(&out);
    fewer["cells"] = serde_json::json!([]);
    let fewer_path = dir.path().join("fewer.json");
    std::fs::write(&fewer_path, fewer.to_string()).unwrap();
    let base = out.to_str().unwrap();
    let run = continuity(&["compare", base, fewer_path.to_str().unwrap()], &[]);
    assert_exit(&run, exit_codes::FAILED);
    assert!(stderr(&run).contains("lacks 1 cell"), "{}", stderr(&run));
    let run = continuity(
        &[
            "compare",
            base,
            fewer_path.to_str().unwrap(),
            "--allow-missing",
        ],
        &[],
    );
    assert_exit(&run, exit_codes::OK);
    let mut doubled = report(&out);
    let cell = doubled["cells"][0].clone();
    doubled["cells"].as_array_mut().unwrap().push(cell);
    let doubled_path = dir.path().join("doubled.json");
    std::fs::write(&doubled_path, doubled.to_string()).unwrap();
    for allow in [&[][..], &["--allow-missing"][..]] {
        let mut argv = vec!["compare", base, doubled_path.to_str().unwrap()];
        argv.extend_from_slice(allow);
        let run = continuity(&argv, &[]);
        assert_exit(&run, exit_codes::FAILED);
        assert!(stderr(&run).contains("more than once"), "{}", stderr(&run));
    }
    let run = continuity(&["compare", base, base], &[]);
    assert_exit(&run, exit_codes::OK);
}
