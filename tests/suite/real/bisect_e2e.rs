//! `continuity bisect` on the real local stack. Six SDK points, the first
//! three copies of the registry's SDK 0.4.2 and the last three copies of
//! it with the worked example's fix (tests/fixtures/candidate-sdk), on
//! the cell the fix changes (agent × native-continuity, ts-sdk: fail on
//! the release, pass with the fix): the change is found at point 4 in 3
//! points tried (1, 4, 3), each run 3 times. Then server points that are
//! all the 0.4.2 binary (one of them not executable, so not run): no
//! change, exit 1. And `run --bisect-exit`, the judge of one build for
//! `git bisect run`: 1 for a failing cell, 125 for a build that is not
//! there or a command line that does not parse.

use crate::real::candidate_e2e::{copy_of_the_release, patched_sdk};
use crate::support;

use continuity::exit_codes;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::{assert_exit, continuity_with};

/// `n` copies of the folder `from`, as `dir/NAME-1`…
fn copies(from: &Path, dir: &Path, name: &str, n: usize) -> Vec<PathBuf> {
    (1..=n)
        .map(|i| {
            let to = dir.join(format!("{name}-{i}"));
            let copied = std::process::Command::new("cp")
                .arg("-R")
                .arg(from)
                .arg(&to)
                .status()
                .unwrap();
            assert!(copied.success());
            to
        })
        .collect()
}

/// The registry's SDK 0.4.2 unpacked into `dir/stock` (beside the
/// tarball `patched_sdk` packed).
fn stock_sdk(dir: &Path) -> PathBuf {
    let stock = dir.join("stock");
    std::fs::create_dir_all(&stock).unwrap();
    let untar = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(dir.join("sandbox-agent-0.4.2.tgz"))
        .arg("-C")
        .arg(&stock)
        .arg("--strip-components=1")
        .status()
        .unwrap();
    assert!(untar.success());
    stock
}

fn bisect_json(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("bisect.json")).unwrap()).unwrap()
}

/// Each try as (point, judged, each cell's runs).
fn tries(record: &Value) -> Vec<(u64, String, Vec<Value>)> {
    record["tries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["point"].as_u64().unwrap(),
                t["judged"].as_str().unwrap().to_string(),
                t["cells"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["runs"].clone())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn six_sdk_points_with_the_fix_from_the_fourth_find_it_in_three_tries_of_three_runs() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let fix = patched_sdk(dir.path());
    let stock = stock_sdk(dir.path());
    let mut specs: Vec<String> = Vec::new();
    for (i, path) in copies(&stock, dir.path(), "stock", 3)
        .into_iter()
        .chain(copies(&fix, dir.path(), "fix", 3))
        .enumerate()
    {
        specs.push(format!("p{}={}", i + 1, path.display()));
    }
    let out = dir.path().join("bisect");
    let mut args = vec![
        "bisect",
        "--axis",
        "sdk",
        "--cell",
        "agent/native-continuity",
        "--timeout-ms",
        "10000",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(specs.iter().map(String::as_str));
    let ran = continuity_with(&args, &[]);
    assert_exit(&ran, exit_codes::OK);
    let record = bisect_json(&out);
    let fail = serde_json::json!(["fail", "fail", "fail"]);
    let pass = serde_json::json!(["pass", "pass", "pass"]);
    assert_eq!(
        tries(&record),
        [
            (1, "reference".to_string(), vec![fail.clone()]),
            (4, "changed".to_string(), vec![pass]),
            (3, "same".to_string(), vec![fail]),
        ],
        "{record}"
    );
    assert_eq!(
        record["found"],
        serde_json::json!({"outcome": "first", "point": 4})
    );
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        stdout.contains("the first point whose verdict differs from point 1's is point 4/6 `p4=")
            && stdout.contains("3 of 6 points tried, 3 run(s) each"),
        "{stdout}"
    );
    // Each point tried is a run folder of its own, with its SDK point.
    for point in [1, 3, 4] {
        let report = support::report(&out.join(format!("point-{point}")));
        assert_eq!(report["run"]["repeat"], 3);
        assert_eq!(report["run"]["seed"], record["seed"]);
        let sdk = &report["run"]["points"].as_array().unwrap()[1];
        assert_eq!(sdk["label"], format!("p{point}"), "{}", report["run"]);
        assert_eq!(report["cells"].as_array().unwrap().len(), 1);
    }
    assert!(!out.join("point-2").exists() && !out.join("point-5").exists());
}

#[test]
fn server_points_that_are_all_the_release_show_no_change_and_a_missing_build_is_skipped() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let release = copy_of_the_release(dir.path());
    let copy = |name: &str| {
        let to = dir.path().join(name);
        std::fs::copy(&release, &to).unwrap();
        to
    };
    let (a, broken, c) = (copy("a"), copy("broken"), copy("c"));
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = dir.path().join("bisect");
    let specs = [
        "0.4.2".to_string(),
        format!("a={}", a.display()),
        format!("broken={}", broken.display()),
        format!("c={}", c.display()),
    ];
    let mut args = vec![
        "bisect",
        "--axis",
        "server",
        "--cell",
        "agent/native-continuity",
        "--cell",
        "gateway/native-continuity",
        "--runs",
        "1",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(specs.iter().map(String::as_str));
    let ran = continuity_with(&args, &[]);
    assert_exit(&ran, exit_codes::FAILED);
    let record = bisect_json(&out);
    let judged: Vec<(u64, String)> = tries(&record)
        .into_iter()
        .map(|(point, judged, _)| (point, judged))
        .collect();
    assert_eq!(
        judged,
        [
            (1, "reference".to_string()),
            (3, "not_run".to_string()),
            (2, "same".to_string()),
            (4, "same".to_string()),
        ],
        "{record}"
    );
    // The reference holds both cells: agent fails, gateway passes.
    let first = &record["tries"][0]["cells"];
    assert_eq!(first.as_array().unwrap().len(), 2, "{first}");
    let not_run = &record["tries"][1]["reason"];
    assert!(
        not_run.as_str().unwrap().contains("not executable"),
        "{not_run}"
    );
    assert_eq!(record["found"], serde_json::json!({"outcome": "no_change"}));
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(stdout.contains("no point differs from point 1"), "{stdout}");
}

#[test]
fn run_bisect_exit_answers_git_bisect_run() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).display().to_string();
    // A build whose cell fails: bad.
    let bad = continuity_with(
        &[
            "run",
            "--bisect-exit",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--out",
            &out("bad"),
        ],
        &[],
    );
    assert_exit(&bad, exit_codes::FAILED);
    // A build that is not there (it did not build): skip, not bad.
    let missing = continuity_with(
        &[
            "run",
            "--bisect-exit",
            "--server-bin",
            &out("no-such-build"),
            "--out",
            &out("missing"),
        ],
        &[],
    );
    assert_exit(&missing, exit_codes::SKIP);
    // Without --bisect-exit the same is a usage error.
    let usage = continuity_with(&["run", "--server-bin", &out("no-such-build")], &[]);
    assert_exit(&usage, exit_codes::USAGE);
    // A command line that does not parse cannot judge a build either.
    let typo = continuity_with(&["run", "--bisect-exit", "--no-such-flag"], &[]);
    assert_exit(&typo, exit_codes::SKIP);
}

/// Issue 43, item 8: `bisect` ignored Ctrl-C and SIGTERM between its
/// points (the signal handlers were the runs', and no run was going). A
/// signal after the first point, while the second point's build answers
/// `--version` (slowly, here), stops the bisect there: exit 2, the first
/// point alone in `bisect.json`.
#[test]
fn a_signal_between_points_stops_the_bisect() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow-sandbox-agent");
    std::fs::write(&slow, "#!/bin/sh\nsleep 8\necho 'sandbox-agent 0.4.2'\n").unwrap();
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("bisect");
    let spec = format!("slow={}", slow.display());
    let mut command = support::continuity_command([
        "bisect",
        "--axis",
        "server",
        "--cell",
        "agent/native-continuity",
        "--runs",
        "1",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
        "0.4.2",
        &spec,
    ]);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .unwrap_or_else(|_| panic!("no first point: {said:?}"));
        let reference = line.contains("point 1/2") && line.contains("compared with");
        said.push(line);
        if reference {
            break;
        }
    }
    // The second point's `--version` is answering now (8 s).
    std::thread::sleep(std::time::Duration::from_secs(1));
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let ended_by = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > ended_by {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            panic!("bisect went on after the signal: {said:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    said.extend(rx.try_iter());
    assert_eq!(
        status.code(),
        Some(i32::from(exit_codes::INCOMPLETE)),
        "{said:#?}"
    );
    let record = bisect_json(&out);
    let points: Vec<u64> = tries(&record).into_iter().map(|(p, _, _)| p).collect();
    assert_eq!(points, [1], "{record}");
}
