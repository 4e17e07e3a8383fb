//! A fix gated before it ships, end to end on the local stack: a candidate
//! server binary and a candidate SDK are points of the matrix beside the
//! registry's release, judged against the release's committed
//! expectations. The worked example is `tests/fixtures/candidate-sdk/
//! fix-189.patch` applied to the registry's SDK 0.4.2. These tests need
//! nginx, node/npm, `patch` and the npm registry's sandbox-agent 0.4.2
//! (`.ci/setup` installs them); without them they fail, loudly.

use crate::support::{
    assert_exit, cell_where, cells, continuity_with, report, run_in, EXPECTATIONS,
};
use continuity::exit_codes;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The worked example's patch.
const FIX_PATCH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/candidate-sdk/fix-189.patch"
);

/// The targets and scenarios every entry of the committed expectations
/// matches, and no more: the smallest run judged against the whole file.
const GATED: [&str; 8] = [
    "--target",
    "agent",
    "--target",
    "gateway",
    "--scenario",
    "native-continuity",
    "--scenario",
    "sandbox-reconnect",
];

/// A cell's result in a few words: verdict, boundary, signature kind and status.
fn result(cell: &Value) -> (Value, Value, Value) {
    let boundary = cell["failureBoundary"].clone();
    let signature = boundary
        .as_str()
        .and_then(|b| {
            cell["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == b)
        })
        .map(|p| serde_json::json!([p["signature"]["kind"], p["signature"]["httpStatus"]]))
        .unwrap_or(Value::Null);
    (cell["verdict"].clone(), boundary, signature)
}

fn outcome(cell: &Value) -> &str {
    cell["expectation"]["outcome"]
        .as_str()
        .unwrap_or_else(|| panic!("no judgement in {cell}"))
}

/// The registry's sandbox-agent 0.4.2 with the worked example's patch
/// applied, unpacked in `dir/fix` (the package folder `--sdk` takes).
pub(crate) fn patched_sdk(dir: &Path) -> PathBuf {
    let packed = std::process::Command::new("npm")
        .args([
            "pack",
            "sandbox-agent@0.4.2",
            "--loglevel=error",
            "--pack-destination",
        ])
        .arg(dir)
        .output()
        .expect("npm is needed (run .ci/setup, which installs it)");
    assert!(packed.status.success(), "npm pack: {packed:?}");
    let fix = dir.join("fix");
    std::fs::create_dir_all(&fix).unwrap();
    let untar = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(dir.join("sandbox-agent-0.4.2.tgz"))
        .arg("-C")
        .arg(&fix)
        .arg("--strip-components=1")
        .status()
        .unwrap();
    assert!(untar.success());
    let patch = std::process::Command::new("patch")
        .arg("-d")
        .arg(&fix)
        .args(["-p1", "--forward", "-i", FIX_PATCH])
        .output()
        .expect("patch is needed (apt-get install -y patch)");
    assert!(
        patch.status.success(),
        "the fixture does not apply: {patch:?}"
    );
    fix
}

/// A copy of the registry's 0.4.2 binary in `dir`: a "candidate" that is
/// the release under another name.
pub(crate) fn copy_of_the_release(dir: &Path) -> PathBuf {
    let release = continuity::stack::sandbox_agent::install(
        continuity::stack::sandbox_agent::DEFAULT_VERSION,
        &mut |l| eprintln!("{l}"),
    )
    .unwrap_or_else(|e| panic!("cannot install sandbox-agent: {e}"));
    let copy = dir.join("build").join("sandbox-agent");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&release, &copy).unwrap();
    copy
}

/// `--server-version 0.4.2` beside `--server-bin copy=` (the same binary):
/// two identical columns, both judged against the release's expectations
/// (the copy reports 0.4.2), side by side with nothing changed.
#[test]
fn the_release_beside_a_copy_of_its_binary_gives_two_identical_columns() {
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_of_the_release(dir.path());
    let spec = format!("copy={}", copy.display());
    let mut args = vec!["--server-version", "0.4.2", "--server-bin", &spec];
    args.extend_from_slice(&GATED);
    args.extend_from_slice(&[
        "--expect",
        EXPECTATIONS,
        "--jobs",
        "1",
        "--timeout-ms",
        "10000",
    ]);
    let (out, run) = run_in(dir.path(), &args);
    // Every cell of both columns is as the release is known to be.
    assert_exit(&run, exit_codes::OK);
    let report = report(&out);
    assert_eq!(cells(&report).len(), 8, "{report}");
    for target in ["agent", "gateway"] {
        for scenario in ["native-continuity", "sandbox-reconnect"] {
            let release = cell_where(
                &report,
                &[
                    ("serverVersion", "0.4.2"),
                    ("target", target),
                    ("scenario", scenario),
                ],
            );
            let candidate = cell_where(
                &report,
                &[
                    ("serverVersion", "copy"),
                    ("target", target),
                    ("scenario", scenario),
                ],
            );
            assert_eq!(result(release), result(candidate), "{target} × {scenario}");
            assert_eq!(outcome(candidate), "expected", "{candidate}");
        }
    }
    // The known failure is there in both columns.
    let known = cell_where(
        &report,
        &[
            ("serverVersion", "copy"),
            ("target", "agent"),
            ("scenario", "native-continuity"),
        ],
    );
    assert_eq!(known["verdict"], "fail", "{known}");
    let point = report["run"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["label"] == "copy")
        .unwrap_or_else(|| panic!("no point `copy` in {}", report["run"]));
    assert_eq!(point["source"], "binary");
    assert_eq!(point["version"], "sandbox-agent 0.4.2");
    assert_eq!(point["paths"][0], copy.display().to_string());
    // Side by side inside the run: nothing differs.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("### server 0.4.2 → server copy\n\n0 regressed, 0 fixed, 0 changed, 4 same"),
        "{md}"
    );
    let compared = continuity_with(&["compare", out.to_str().unwrap(), "--axis", "server"], &[]);
    assert_exit(&compared, exit_codes::OK);
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(
        text.contains("0 regressed, 0 fixed, 0 changed, 4 same"),
        "{text}"
    );
    // The same binary, not executable: refused before any stack.
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = continuity_with(
        &[
            "run",
            "--server-bin",
            &spec,
            "--out",
            dir.path().join("refused").to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&refused, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--server-bin copy=") && stderr.contains("not executable"),
        "{stderr}"
    );
}

/// The worked example: against the patched SDK, agent × native-continuity
/// for the ts-sdk client is `fixed` (the committed expectation is the
/// release's failure), exit 1 without --allow-fixed and 0 with it; the
/// unpatched SDK in the same run, and every other cell, stay expected, and
/// the report says the candidate fixed it.
#[test]
fn the_patched_sdk_fixes_the_known_failure_and_the_release_stays_expected() {
    let dir = tempfile::tempdir().unwrap();
    let fix = patched_sdk(dir.path());
    let spec = format!("fix={}", fix.display());
    let mut args = vec![
        "--client",
        "ts-sdk",
        "--sdk-version",
        "0.4.2",
        "--sdk",
        &spec,
    ];
    args.extend_from_slice(&GATED);
    args.extend_from_slice(&[
        "--expect",
        EXPECTATIONS,
        "--jobs",
        "1",
        "--timeout-ms",
        "10000",
    ]);
    let (out, run) = run_in(dir.path(), &args);
    // A fixed cell fails the gate until --allow-fixed says it may.
    assert_exit(&run, exit_codes::FAILED);
    let report = report(&out);
    assert_eq!(cells(&report).len(), 8, "{report}");
    let fixed = cell_where(
        &report,
        &[
            ("sdkVersion", "fix"),
            ("target", "agent"),
            ("scenario", "native-continuity"),
        ],
    );
    assert_eq!(fixed["verdict"], "pass", "{fixed}");
    assert_eq!(outcome(fixed), "fixed", "{fixed}");
    let release = cell_where(
        &report,
        &[
            ("sdkVersion", "0.4.2"),
            ("target", "agent"),
            ("scenario", "native-continuity"),
        ],
    );
    assert_eq!(result(release).0, "fail", "{release}");
    assert_eq!(outcome(release), "expected", "{release}");
    for cell in cells(&report) {
        if cell == fixed {
            continue;
        }
        assert_eq!(outcome(cell), "expected", "{cell}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("- **agent · ts-sdk · sdk fix** × native-continuity: fails @ promptSameHandleAfterRestart (hung: http 400 invalid_request) on SDK 0.4.2, passes with the candidate SDK `fix` → the candidate fixes it"),
        "{md}"
    );
    assert!(
        md.contains("### SDK 0.4.2 → SDK fix\n\n0 regressed, 1 fixed"),
        "{md}"
    );
    let compared = continuity_with(
        &[
            "compare",
            out.to_str().unwrap(),
            "--axis",
            "sdk",
            "--from",
            "0.4.2",
            "--to",
            "fix",
        ],
        &[],
    );
    assert_exit(&compared, exit_codes::OK);
    // Gated again with --allow-fixed, the same cells pass the gate.
    let regated = continuity_with(
        &[
            "merge",
            "--out",
            dir.path().join("allowed").to_str().unwrap(),
            "--expect",
            EXPECTATIONS,
            "--allow-fixed",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&regated, exit_codes::OK);
}

/// A package folder `sandbox-agent` whose module exports no `SandboxAgent`
/// (`marker` makes its content, and so its install folder, its own).
fn not_an_sdk(dir: &Path, marker: &str) -> PathBuf {
    let folder = dir.join("not-an-sdk");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("package.json"),
        r#"{"name": "sandbox-agent", "version": "0.4.2", "type": "module", "exports": {".": "./index.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        folder.join("index.js"),
        format!("export const notIt = {marker:?};\n"),
    )
    .unwrap();
    folder
}

/// An SDK without the `SandboxAgent` export is refused before any stack
/// starts; its install is kept by content: the same candidate is not
/// installed again, a changed one is.
#[test]
fn an_sdk_without_the_sandbox_agent_export_is_refused_and_installs_follow_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sdk = not_an_sdk(dir.path(), "first");
    let spec = format!("broken={}", sdk.display());
    let attempt = |n: usize| {
        let out = dir.path().join(format!("run-{n}"));
        let run = continuity_with(
            &[
                "run",
                "--client",
                "ts-sdk",
                "--sdk",
                &spec,
                "--out",
                out.to_str().unwrap(),
            ],
            &[("CONTINUITY_CACHE_DIR", cache.to_str().unwrap())],
        );
        assert_exit(&run, exit_codes::USAGE);
        assert!(
            !out.join("stack").exists(),
            "a stack was started for a refused SDK"
        );
        String::from_utf8_lossy(&run.stderr).into_owned()
    };
    let first = attempt(1);
    assert!(first.contains("installing the candidate SDK"), "{first}");
    assert!(
        first.contains(&format!("--sdk broken={}", sdk.display()))
            && first.contains("no `SandboxAgent` export (it exports: notIt)"),
        "{first}"
    );
    let again = attempt(2);
    assert!(
        !again.contains("installing"),
        "an unchanged candidate was installed again: {again}"
    );
    assert!(again.contains("no `SandboxAgent` export"), "{again}");
    not_an_sdk(dir.path(), "second");
    let changed = attempt(3);
    assert!(
        changed.contains("installing the candidate SDK"),
        "{changed}"
    );
}

/// A candidate that answers `--version` but never `/v1/health`: exit 2
/// naming the binary and the end of its log, nothing left running.
#[test]
fn a_candidate_server_that_never_gets_healthy_exits_2_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("stuck-sandbox-agent");
    std::fs::write(
        &bin,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sandbox-agent 0.4.2'; exit 0; fi\necho 'stuck: loading forever'\nexec sleep 600\n",
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = format!("stuck={}", bin.display());
    let out = dir.path().join("run");
    let run = continuity_with(
        &["run", "--server-bin", &spec, "--out", out.to_str().unwrap()],
        &[],
    );
    assert_exit(&run, exit_codes::INCOMPLETE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(&format!("--server-bin {spec}")), "{stderr}");
    assert!(stderr.contains("not healthy"), "{stderr}");
    assert!(stderr.contains("stuck: loading forever"), "{stderr}");
    assert!(!out.join("stack").exists(), "a stack was started for it");
    let left = crate::support::processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// The run's only server point a candidate: the stack once came up on the
/// registry's 0.4.2 (installed, and announced as "starting sandbox-agent
/// 0.4.2") before its first cell switched to the candidate. It comes up on
/// the candidate itself now: nothing of 0.4.2 is named. The candidate is
/// the real release's binary behind a script that reports another version.
#[test]
fn a_run_whose_only_server_is_a_candidate_never_names_the_release() {
    let dir = tempfile::tempdir().unwrap();
    let release = continuity::stack::sandbox_agent::install(
        continuity::stack::sandbox_agent::DEFAULT_VERSION,
        &mut |l| eprintln!("{l}"),
    )
    .unwrap_or_else(|e| panic!("cannot install sandbox-agent: {e}"));
    let bin = dir.path().join("build").join("sandbox-agent");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::write(
        &bin,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sandbox-agent 9.1.0-cand'; exit 0; fi\nexec {:?} \"$@\"\n",
            release.display().to_string()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = format!("cand={}", bin.display());
    let (out, run) = run_in(
        dir.path(),
        &[
            "--server-bin",
            &spec,
            "--target",
            "agent",
            "--scenario",
            "sandbox-reconnect",
            "--jobs",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("starting sandbox-agent 9.1.0-cand"),
        "{stderr}"
    );
    assert!(!stderr.contains("0.4.2"), "{stderr}");
    let report = report(&out);
    assert_eq!(report["run"]["serverVersion"], "sandbox-agent 9.1.0-cand");
    let cell = &cells(&report)[0];
    assert_ne!(cell["verdict"], "error", "{cell}");
}
