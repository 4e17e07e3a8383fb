//! Bad candidates are refused before any stack starts: `--server-bin` and
//! `--sdk` paths that are missing, not executable, not a sandbox-agent,
//! not an npm package, or two points with one label exit 64 naming the
//! flag and the path, and leave nothing behind. Stand-in "binaries" here
//! are shell scripts: they answer `--version` only, nothing is served.

use crate::support::{assert_exit, continuity_with};
use continuity::exit_codes;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A shell script at `dir/name` with `body`, executable.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `continuity run ARGS --out DIR/run`: its output, and whether it left a run folder.
fn run(dir: &Path, args: &[&str]) -> (std::process::Output, bool) {
    let out = dir.join("run");
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let output = continuity_with(&all, &[]);
    (output, out.exists())
}

/// A usage error whose message holds every one of `words`, with no run folder left.
fn refused(dir: &Path, args: &[&str], words: &[&str]) {
    let (output, folder) = run(dir, args);
    assert_exit(&output, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for word in words {
        assert!(stderr.contains(word), "{word:?} not in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!folder, "a refused run wrote its folder: {args:?}");
}

#[test]
fn a_server_bin_that_is_not_a_sandbox_agent_exits_64_naming_flag_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = d.join("no-such-sandbox-agent");
    refused(
        d,
        &["--server-bin", missing.to_str().unwrap()],
        &["--server-bin", missing.to_str().unwrap(), "no such file"],
    );
    let plain = d.join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\necho sandbox-agent 0.4.2\n").unwrap();
    let spec = format!("fix={}", plain.display());
    refused(
        d,
        &["--server-bin", &spec],
        &[
            "--server-bin fix=",
            plain.to_str().unwrap(),
            "not executable",
        ],
    );
    let other = script(d, "other", "echo 'othertool 1.2.3'");
    refused(
        d,
        &["--server-bin", other.to_str().unwrap()],
        &[
            "--server-bin",
            other.to_str().unwrap(),
            "not a sandbox-agent",
            "othertool 1.2.3",
        ],
    );
    let failing = script(d, "failing", "echo 'sandbox-agent 0.4.2'; exit 3");
    refused(
        d,
        &["--server-bin", failing.to_str().unwrap()],
        &["not a sandbox-agent", "`--version` exited with code 3"],
    );
    refused(
        d,
        &["--server-bin", d.to_str().unwrap()],
        &["--server-bin", "a folder"],
    );
}

#[test]
fn two_points_of_one_axis_with_one_label_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Labelled by the version it reports: the registry point's label.
    let copy = script(d, "sandbox-agent", "echo 'sandbox-agent 0.4.2'");
    let copy = copy.to_str().unwrap();
    refused(
        d,
        &["--server-version", "0.4.2", "--server-bin", copy],
        &["--server-bin", copy, "labelled `0.4.2` already", "NAME="],
    );
    let fix = format!("fix={copy}");
    refused(
        d,
        &["--server-bin", &fix, "--server-bin", &fix],
        &["labelled `fix` already"],
    );
    // A version without a label to go by needs one.
    let dev = script(d, "dev", "echo 'sandbox-agent dev'");
    refused(
        d,
        &["--server-bin", dev.to_str().unwrap()],
        &["holds no version", "--server-bin NAME="],
    );
}

/// A package folder named `name` holding `package.json` with `version`.
fn package(dir: &Path, name: &str, version: &str, dependencies: &[&str]) -> PathBuf {
    let folder = dir.join(format!("{name}-{version}"));
    std::fs::create_dir_all(&folder).unwrap();
    let deps: serde_json::Map<String, serde_json::Value> = dependencies
        .iter()
        .map(|d| (d.to_string(), "0.4.2".into()))
        .collect();
    let manifest = serde_json::json!({"name": name, "version": version, "type": "module", "dependencies": deps});
    std::fs::write(folder.join("package.json"), manifest.to_string()).unwrap();
    folder
}

#[test]
fn an_sdk_that_is_not_a_package_exits_64_naming_flag_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ts = ["--client", "ts-sdk"];
    let missing = d.join("no-such-sdk");
    let missing = missing.to_str().unwrap();
    refused(
        d,
        &[&ts[..], &["--sdk", missing]].concat(),
        &["--sdk", missing, "no such file or folder"],
    );
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let spec = format!("fix={}", empty.display());
    refused(
        d,
        &[&ts[..], &["--sdk", &spec]].concat(),
        &["--sdk fix=", "no package.json"],
    );
    let junk = d.join("sdk.tgz");
    std::fs::write(&junk, "not a tarball").unwrap();
    refused(
        d,
        &[&ts[..], &["--sdk", junk.to_str().unwrap()]].concat(),
        &["--sdk", junk.to_str().unwrap(), "not an npm package"],
    );
    // A further path must replace a dependency of the SDK.
    let sdk = package(d, "sandbox-agent", "0.4.2", &["acp-http-client"]);
    let stray = package(d, "left-pad", "1.0.0", &[]);
    let spec = format!("fix={},{}", sdk.display(), stray.display());
    refused(
        d,
        &[&ts[..], &["--sdk", &spec]].concat(),
        &["--sdk fix=", stray.to_str().unwrap(), "not a dependency"],
    );
    // Two SDK points with one label: the registry's and a package's version.
    refused(
        d,
        &[
            &ts[..],
            &["--sdk-version", "0.4.2", "--sdk", sdk.to_str().unwrap()],
        ]
        .concat(),
        &["--sdk", "labelled `0.4.2` already"],
    );
    // The SDK axis is the hosted client's.
    refused(
        d,
        &["--sdk", sdk.to_str().unwrap()],
        &["--sdk", "--client ts-sdk"],
    );
}

#[test]
fn a_deployment_runs_no_candidate_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let copy = script(d, "sandbox-agent", "echo 'sandbox-agent 0.4.2'");
    let spec = format!("fix={}", copy.display());
    refused(
        d,
        &["--base-url", "http://127.0.0.1:9", "--server-bin", &spec],
        &["--server-bin", "local stack"],
    );
}

/// The config's `server_bin` and `sdk` are checked as the flags are, and
/// the message names the key they came from.
#[test]
fn the_configs_candidates_are_checked_as_the_flags_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = d.join("no-such-sandbox-agent");
    let cfg = d.join("continuity.toml");
    std::fs::write(
        &cfg,
        format!("[run]\nserver_bin = [\"fix={}\"]\n", missing.display()),
    )
    .unwrap();
    refused(
        d,
        &["--config", cfg.to_str().unwrap()],
        &["run.server_bin fix=", "no such file"],
    );
    // A flag replaces the config's list.
    let copy = script(d, "sandbox-agent", "echo 'sandbox-agent 0.4.2'");
    let spec = format!("fix={}", copy.display());
    refused(
        d,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--server-bin",
            &spec,
            "--server-bin",
            &spec,
        ],
        &["--server-bin fix=", "labelled `fix` already"],
    );
    std::fs::write(&cfg, "[run]\nsdk = [\"\"]\n").unwrap();
    refused(
        d,
        &["--config", cfg.to_str().unwrap()],
        &["run.sdk", "[LABEL=]PATH"],
    );
}

/// `continuity run ARGS --out DIR/run`, killed (and the test failed) if it
/// has not exited within 20 s: for an input that once hung it.
fn run_bounded(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = dir.join("run");
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let mut child = crate::support::continuity_command(&all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("continuity {all:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_fifo_given_as_a_candidate_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = format!("x={}", fifo.display());
    for flag in [&["--client", "ts-sdk", "--sdk"][..], &["--server-bin"][..]] {
        let output = run_bounded(d, &[flag, &[spec.as_str()]].concat());
        assert_exit(&output, exit_codes::USAGE);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("FIFO"), "{flag:?}: {stderr}");
        assert!(!d.join("run").exists(), "{flag:?}: left a run folder");
    }
}

/// Issue 43, item 6: a FIFO inside a candidate SDK's package folder
/// blocked `run` (the package's digest read it, waiting for a writer).
#[test]
fn a_fifo_inside_an_sdk_package_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sdk = package(d, "sandbox-agent", "0.4.2", &[]);
    std::fs::create_dir_all(sdk.join("dist")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(sdk.join("dist/index.js"))
        .status()
        .unwrap();
    assert!(made.success());
    let spec = format!("fix={}", sdk.display());
    let output = run_bounded(d, &["--client", "ts-sdk", "--sdk", &spec]);
    assert_exit(&output, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--sdk") && stderr.contains("FIFO"),
        "{stderr}"
    );
    assert!(!d.join("run").exists(), "left a run folder");
}

#[test]
fn a_bad_label_is_refused_as_a_bad_label_not_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = script(d, "sandbox-agent", "echo 'sandbox-agent 0.4.2'");
    let spec = format!("my fix={}", good.display());
    refused(
        d,
        &["--server-bin", &spec],
        &["--server-bin", "bad label \"my fix\""],
    );
    let spec = format!("../x={}", good.display());
    refused(
        d,
        &["--client", "ts-sdk", "--sdk", &spec],
        &["--sdk", "bad label \"../x\""],
    );
}
