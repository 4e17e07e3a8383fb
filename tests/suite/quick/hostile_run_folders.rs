//! Issue 43: a run folder from somewhere else (a CI artifact someone
//! downloaded) is data, never instructions. Each test is one of the
//! issue's numbered items, through the built binary: `rerun` sends no
//! credential where a report says and runs nothing an artifact ships;
//! `show`, `merge` and `export` read nothing outside the folder, in any
//! path form; `export` writes only a new regular file; report text forges
//! no line in any output; counts and sizes read from a folder are bounded.

use crate::support::hostile_run::{
    cell, mkfifo, report, run_within, trace, write_report, Listener,
};
use crate::support::{assert_exit, continuity_command};
use continuity::exit_codes;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// `continuity ARGS` in `dir`, within [`LIMIT`].
fn continuity_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = continuity_command(args);
    command.current_dir(dir).envs(env.iter().copied());
    run_within(command, LIMIT)
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every file under `dir`, as text (lossy), for a word that must not be there.
fn files_hold(dir: &Path, word: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains(word)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Item 3: `show report.json`, `export report.json` and `merge … report.json`
/// (a report named without a folder) followed a cell's symlinked trace
/// out of the folder; the merged run then held a copy of the outside file.
#[test]
fn a_bare_report_json_reads_nothing_outside_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("cells/a")).unwrap();
    std::fs::write(tmp.path().join("outside.jsonl"), trace("/OUTSIDE-CANARY")).unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("outside.jsonl"),
        run.join("cells/a/trace.jsonl"),
    )
    .unwrap();
    write_report(
        &run,
        &report("r1", vec![cell("agent", "s", Some("cells/a/trace.jsonl"))]),
    );
    let shown = continuity_in(&run, &["show", "report.json", "--cell", "agent/s"], &[]);
    assert!(!text(&shown).contains("OUTSIDE-CANARY"), "{}", text(&shown));
    let exported = continuity_in(
        &run,
        &["export", "report.json", "--chrome-trace", "../out.json"],
        &[],
    );
    assert_exit(&exported, exit_codes::OK);
    let out = std::fs::read_to_string(tmp.path().join("out.json")).unwrap();
    assert!(
        !out.contains("OUTSIDE-CANARY"),
        "export read the outside file"
    );
    let merged = continuity_in(&run, &["merge", "--out", "../merged", "report.json"], &[]);
    assert!(!text(&merged).contains("panicked"), "{}", text(&merged));
    let copies = files_hold(&tmp.path().join("merged"), "OUTSIDE-CANARY");
    assert!(
        copies.is_empty(),
        "the merged run holds the outside file: {copies:?}"
    );
}

/// Item 7: `merge` of cells naming one trace (through links to one
/// folder) copied it once per cell (100 of them: 351 MB of output), and
/// the page and `export` read it once per cell. Now one copy, read once.
#[test]
fn a_trace_named_by_many_cells_is_copied_once() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("cells/real")).unwrap();
    std::fs::write(run.join("cells/real/trace.jsonl"), trace("/v1/acp/one")).unwrap();
    let mut cells = Vec::new();
    for i in 0..40 {
        let folder = format!("c{i:02}");
        std::os::unix::fs::symlink("real", run.join("cells").join(&folder)).unwrap();
        let path = format!("cells/{folder}/trace.jsonl");
        cells.push(cell(&format!("t{i:02}"), "s", Some(&path)));
    }
    write_report(&run, &report("r1", cells));
    let out = tmp.path().join("merged");
    let merged = continuity_in(
        tmp.path(),
        &[
            "merge",
            "--out",
            out.to_str().unwrap(),
            run.to_str().unwrap(),
        ],
        &[],
    );
    assert_exit(&merged, exit_codes::FAILED);
    let traces = files_hold(&out.join("cells"), "/v1/acp/one");
    assert_eq!(traces.len(), 1, "{traces:?}\n{}", text(&merged));
    assert!(
        text(&merged).contains("39 trace path(s) name a file"),
        "{}",
        text(&merged)
    );
}

/// Item 8: `export --chrome-trace FILE` followed a link planted in the
/// artifact, overwrote the run's own report.json, hung on a FIFO, and
/// exited 2 for a folder. It writes only a new regular file now (or, with
/// --force, replaces one outside the run folder).
#[test]
fn export_writes_only_a_new_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("cells")).unwrap();
    write_report(&run, &report("r1", vec![cell("agent", "s", None)]));
    let report_before = std::fs::read_to_string(run.join("report.json")).unwrap();
    std::fs::write(tmp.path().join("victim"), "precious").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("victim"), run.join("planted.json")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), run.join("cells/up")).unwrap();
    mkfifo(&tmp.path().join("fifo"));
    std::fs::create_dir_all(tmp.path().join("folder")).unwrap();
    std::fs::write(tmp.path().join("old.json"), "old").unwrap();
    let export = |to: &Path, force: bool| {
        let mut args = vec![
            "export".to_string(),
            run.display().to_string(),
            "--chrome-trace".to_string(),
            to.display().to_string(),
        ];
        if force {
            args.push("--force".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        continuity_in(tmp.path(), &args, &[])
    };
    for (to, force) in [
        (run.join("planted.json"), true),
        (run.join("report.json"), true),
        (run.join("cells/up/escaped.json"), false),
        (tmp.path().join("fifo"), true),
        (tmp.path().join("folder"), false),
        (tmp.path().join("old.json"), false),
    ] {
        let refused = export(&to, force);
        assert_exit(&refused, exit_codes::USAGE);
    }
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("victim")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("report.json")).unwrap(),
        report_before
    );
    assert!(!tmp.path().join("escaped.json").exists());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("old.json")).unwrap(),
        "old"
    );
    // A new file, and an old one replaced with --force.
    assert_exit(&export(&tmp.path().join("new.json"), false), exit_codes::OK);
    assert_exit(&export(&tmp.path().join("old.json"), true), exit_codes::OK);
    let replaced: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("old.json")).unwrap())
            .unwrap();
    assert!(replaced["traceEvents"].is_array());
}

/// A run folder whose recipe names a deployment (a listener here), a token
/// variable, a config, scenario and expectations files, and a candidate
/// build shipped in the artifact (a script leaving a mark when run), its
/// digest correct.
fn hostile_rerun_folder(dir: &Path, listener: &Listener) -> std::path::PathBuf {
    let run = dir.join("artifact");
    std::fs::create_dir_all(&run).unwrap();
    let evil = run.join("sandbox-agent");
    let script = format!(
        "#!/bin/sh\ntouch {}\necho sandbox-agent 0.4.2\n",
        dir.join("RAN").display()
    );
    std::fs::write(&evil, &script).unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = run.join("continuity.toml");
    std::fs::write(&config, format!("[run]\nbase_url = \"{}\"\n", listener.url)).unwrap();
    let mut r = report("r1", vec![cell("agent", "native-continuity", None)]);
    let recipe = &mut r["run"]["recipe"];
    recipe["baseUrl"] = json!(listener.url);
    recipe["tokenEnv"] = json!("HOSTILE_SECRET_KEY");
    recipe["config"] = json!({
        "path": "./continuity.toml",
        "sha256": continuity::digest::sha256_hex(std::fs::read(&config).unwrap().as_slice()),
    });
    r["run"]["points"] = json!([{
        "axis": "server", "label": "fix", "source": "binary",
        "version": "sandbox-agent 0.4.2", "paths": ["./sandbox-agent"],
        "sha256": continuity::digest::sha256_hex(script.as_bytes()),
    }]);
    write_report(&run, &r);
    run
}

/// Items 1 and 2: the report's `recipe.baseUrl` overrode the user's, its
/// `tokenEnv` named any variable, and a listener on 127.0.0.1 received
/// `authorization: Bearer <that variable's value>`; a relative candidate
/// (and config) shipped in the artifact was run from the current folder
/// (the digest proved nothing: the same report supplied it). Now the rerun
/// is refused with the flags to pass; nothing connects, nothing runs.
#[test]
fn rerun_sends_no_credential_and_runs_nothing_a_report_names() {
    let tmp = tempfile::tempdir().unwrap();
    let listener = Listener::start();
    let run = hostile_rerun_folder(tmp.path(), &listener);
    let env = [
        ("HOSTILE_SECRET_KEY", "s3cret-of-another-service"),
        ("SA_TOKEN", "the-users-own-token"),
    ];
    let out = tmp.path().join("rerun");
    // Run from inside the artifact, where its relative paths resolve.
    let reran = continuity_in(&run, &["rerun", ".", "--out", out.to_str().unwrap()], &env);
    assert_exit(&reran, exit_codes::USAGE);
    let said = text(&reran);
    for flag in [
        "--base-url URL",
        "--token-env VAR",
        "--config FILE",
        "--server-bin fix=PATH",
    ] {
        assert!(said.contains(flag), "{flag} not in {said}");
    }
    assert!(
        !said.contains("s3cret") && !said.contains("the-users-own"),
        "{said}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        listener.connections(),
        Vec::<String>::new(),
        "the report's URL was connected to"
    );
    assert!(
        !tmp.path().join("RAN").exists(),
        "a binary of the artifact ran"
    );
    assert!(!out.exists());
}

/// Item 6: a report naming `/dev/zero` as its config (or a FIFO) made
/// `rerun` spin at 100 % CPU, or block, reading it for a digest. A path
/// in a report is never read; one the user gives must be a regular file.
#[test]
fn rerun_reads_no_device_or_fifo() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = report("r1", vec![cell("agent", "native-continuity", None)]);
    r["run"]["recipe"]["config"] = json!({"path": "/dev/zero", "sha256": "0".repeat(64)});
    write_report(tmp.path(), &r);
    let reran = continuity_in(tmp.path(), &["rerun", "."], &[]);
    assert_exit(&reran, exit_codes::USAGE);
    assert!(text(&reran).contains("--config FILE"), "{}", text(&reran));
    mkfifo(&tmp.path().join("fifo"));
    let reran = continuity_in(tmp.path(), &["rerun", ".", "--config", "fifo"], &[]);
    assert_exit(&reran, exit_codes::USAGE);
    assert!(text(&reran).contains("FIFO"), "{}", text(&reran));
}

/// Item 8: a digest of non-ASCII text panicked `rerun` (exit 101).
#[test]
fn a_digest_that_is_not_hex_is_refused_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = report("r1", vec![cell("agent", "native-continuity", None)]);
    r["run"]["points"] = json!([{
        "axis": "server", "label": "fix", "source": "binary",
        "version": "sandbox-agent 0.4.2", "paths": ["/x"],
        "sha256": "é".repeat(40),
    }]);
    write_report(tmp.path(), &r);
    std::fs::write(tmp.path().join("bin"), "x").unwrap();
    let reran = continuity_in(tmp.path(), &["rerun", ".", "--server-bin", "fix=bin"], &[]);
    assert_exit(&reran, exit_codes::USAGE);
    assert!(text(&reran).contains("not a SHA-256"), "{}", text(&reran));
}

/// Forges a line (and a workflow command) and acts on a terminal.
const FORGING: &str = "x\n::error::FORGED\rFORGED\u{1b}[31m\u{1b}[2J\u{202e}";

fn assert_inert(what: &str, text: &str) {
    for bad in ['\r', '\u{1b}', '\u{202e}'] {
        assert!(!text.contains(bad), "{bad:?} raw in {what}:\n{text}");
    }
    for line in text.lines() {
        let line = line.trim_start();
        assert!(
            !line.starts_with("::") && !line.starts_with("FORGED"),
            "{what}: a forged line {line:?}\n{text}"
        );
    }
}

/// Items 4 and 5 at the command line: a report's phase and boundary
/// names, agent, server version and run id reached report.md, report.txt
/// and junit.xml raw (`::error::` lines under GitHub); compare, baseline
/// and rerun printed its ESC sequences and line breaks in their messages;
/// baseline's header and comments carried TOML entries of their own.
#[test]
fn report_text_forges_no_line_in_any_output() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let mut c = cell(&format!("agent{FORGING}"), &format!("s{FORGING}"), None);
    c["phases"][0]["name"] = json!(format!("p{FORGING}"));
    c["failureBoundary"] = json!(format!("p{FORGING}"));
    c["verdict"] = json!("interrupted");
    let twin = c.clone();
    let mut r = report(&format!("id{FORGING}"), vec![c, twin]);
    r["run"]["agent"] = json!(format!("mock{FORGING}"));
    r["run"]["serverVersion"] = json!(format!("sandbox-agent 0.4.2{FORGING}"));
    r["run"]["harnessVersion"] = json!(format!("0.0.1{FORGING}"));
    write_report(&run, &r);
    let r = run.to_str().unwrap();
    for args in [
        vec!["show", r],
        vec!["baseline", r],
        vec!["compare", r, r],
        // Refused (a deployment for a local run): its message names the run.
        vec!["rerun", r, "--base-url", "http://127.0.0.1:9"],
    ] {
        let output = continuity_in(tmp.path(), &args, &[]);
        assert_inert(args[0], &text(&output));
    }
    // One cell, so baseline reaches its comments rather than refusing.
    let mut one: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    one["cells"].as_array_mut().unwrap().truncate(1);
    write_report(&run, &one);
    let baseline = continuity_in(tmp.path(), &["baseline", r], &[]);
    let toml_text = String::from_utf8_lossy(&baseline.stdout).to_string();
    assert_inert("baseline", &text(&baseline));
    let parsed: toml::Value = toml::from_str(&toml_text).unwrap();
    assert!(
        parsed.get("expect").is_none(),
        "an interrupted cell has no entry: {toml_text}"
    );
    let out = tmp.path().join("merged");
    let merged = continuity_in(
        tmp.path(),
        &["merge", "--out", out.to_str().unwrap(), r],
        &[],
    );
    assert_inert("merge", &text(&merged));
    for file in ["report.md", "report.txt", "junit.xml"] {
        let written = std::fs::read_to_string(out.join(file)).unwrap();
        assert_inert(file, &written);
    }
}

/// Item 4: `validate` accepted a scenario whose phase name held a line
/// break and a workflow command.
#[test]
fn validate_refuses_a_name_that_forges_a_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("s.toml"),
        "name = \"s\"\n[[phase]]\nname = \"a\\n::error::x\"\nstep = \"connect\"\nclient = \"a\"\n",
    )
    .unwrap();
    let dir = tmp.path().to_str().unwrap();
    let validated = continuity_in(tmp.path(), &["validate", "--scenarios-dir", dir], &[]);
    assert_exit(&validated, exit_codes::USAGE);
    assert!(
        text(&validated).contains("one line of visible text"),
        "{}",
        text(&validated)
    );
    assert_inert("validate", &text(&validated));
}

/// Item 7: `merge` trusted a shard's partition count (`count:1/4294967295`
/// asked for 68 GB and aborted).
#[test]
fn merge_sizes_nothing_by_a_count_a_report_states() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let mut first = report("a1", vec![cell("agent", "s", None)]);
    first["run"]["partition"] = json!("count:1/4294967295");
    let mut second = report("b1", vec![cell("gateway", "s", None)]);
    second["run"]["partition"] = json!("count:2/4294967295");
    write_report(&a, &first);
    write_report(&b, &second);
    let out = tmp.path().join("m");
    let merged = continuity_in(
        tmp.path(),
        &[
            "merge",
            "--out",
            out.to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
        &[],
    );
    let code = merged.status.code();
    assert!(
        matches!(code, Some(1) | Some(64)),
        "{code:?}: {}",
        text(&merged)
    );
}

/// A copy of the run made before the checker (tests/fixtures/pre-checker,
/// shard 1: one cell through a gateway that repeated an SSE event), with
/// `with` in place of its phase name `loadSessionAfterRestart` in the
/// report and the trace, and of its target `gateway` in the report.
fn pre_checker_run(to: &Path, with: &str) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pre-checker/shard-1");
    let cell = "cells/001-gateway-native-load-1";
    std::fs::create_dir_all(to.join(cell)).unwrap();
    let json = serde_json::to_string(with).unwrap();
    let json = &json[1..json.len() - 1];
    for file in ["report.json", &format!("{cell}/trace.jsonl")] {
        let text = std::fs::read_to_string(from.join(file)).unwrap();
        let mut text = text.replace("loadSessionAfterRestart", &format!("load{json}"));
        if file == "report.json" {
            text = text.replace(
                "\"target\": \"gateway\"",
                &format!("\"target\": \"gw{json}\""),
            );
        }
        std::fs::write(to.join(file), text).unwrap();
    }
}

/// `continuity check`, a reader of run folders added after the others,
/// reads one as data too: a phase name from a trace, a target, a recorded
/// check's words reach its output inert; a bare report.json whose trace is
/// a link out of the folder, or a FIFO, is not read (nor waited on); a
/// check recorded in the report is never shown as one made now; and a
/// trace it could not read makes it exit 2 (the run could not be checked),
/// never 0 as if it had passed.
#[test]
fn check_reads_a_run_folder_as_data() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    pre_checker_run(&run, FORGING);
    let checked = continuity_in(tmp.path(), &["check", run.to_str().unwrap()], &[]);
    assert_exit(&checked, exit_codes::FAILED);
    assert_inert("check", &text(&checked));
    assert!(
        text(&checked).contains("stream duplicate at client")
            && text(&checked).contains("1 of 1 cells checked, 1 violations"),
        "{}",
        text(&checked)
    );
    // The trace moved out of the folder, a link to it left in its place;
    // the report records a check of its own (a violation, an invariant it
    // could not tell), in words that forge lines.
    let trace = run.join("cells/001-gateway-native-load-1/trace.jsonl");
    std::fs::rename(&trace, tmp.path().join("outside.jsonl")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.jsonl"), &trace).unwrap();
    let mut r: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    r["cells"][0]["checked"] = json!({
        "checked": [
            {"invariant": "stream", "status": "broken"},
            {"invariant": "store", "status": "unknown", "why": format!("why{FORGING}")},
        ],
        "violations": [{
            "invariant": "stream", "breach": "gap", "hop": "client", "t": 1.0,
            "phase": format!("RECORDED{FORGING}"), "detail": format!("RECORDED{FORGING}"),
        }],
    });
    write_report(&run, &r);
    let bare = continuity_in(&run, &["check", "report.json"], &[]);
    assert_exit(&bare, exit_codes::INCOMPLETE);
    let said = text(&bare);
    assert_inert("check report.json", &said);
    assert!(!said.contains("stream duplicate"), "read outside: {said}");
    assert!(
        !said.contains("RECORDED"),
        "a recorded check shown as made: {said}"
    );
    assert!(said.contains("0 of 1 cells checked"), "{said}");
    assert!(said.contains("outside its run folder"), "{said}");
    // A FIFO where the trace should be: refused at once, never waited on.
    std::fs::remove_file(&trace).unwrap();
    mkfifo(&trace);
    let fifo = continuity_in(&run, &["check", "."], &[]);
    assert_exit(&fifo, exit_codes::INCOMPLETE);
    assert!(
        text(&fifo).contains("not a regular file"),
        "{}",
        text(&fifo)
    );
}

/// Item 5: `baseline`'s header and its comments on the cells it leaves
/// out took report fields raw, so a run id, agent, server version or a
/// cell's name holding a line break wrote TOML entries of their own
/// (`[[expect]] target = "*" verdict = "fail"`, which then excused every
/// cell of a later run). The baseline holds the entries of the run's
/// cells and nothing else.
#[test]
fn baseline_holds_no_entry_a_report_field_wrote() {
    // An entry, and a `#` that makes the rest of the line it lands in a comment.
    const ENTRY: &str = "x\n[[expect]]\ntarget = \"*\"\nscenario = \"*\"\nverdict = \"fail\"\nreason = \"injected\"\n#";
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let mut left_out = cell(&format!("gateway{ENTRY}"), &format!("s{ENTRY}"), None);
    left_out["verdict"] = json!("interrupted");
    let mut r = report(
        &format!("id{ENTRY}"),
        vec![cell("agent", "s", None), left_out],
    );
    r["run"]["agent"] = json!(format!("mock{ENTRY}"));
    r["run"]["serverVersion"] = json!(format!("sandbox-agent 0.4.2{ENTRY}"));
    r["run"]["harnessVersion"] = json!(format!("0.1.0{ENTRY}"));
    write_report(&run, &r);
    let baseline = continuity_in(tmp.path(), &["baseline", run.to_str().unwrap()], &[]);
    assert_exit(&baseline, exit_codes::OK);
    let written = String::from_utf8_lossy(&baseline.stdout).to_string();
    let parsed: toml::Value = toml::from_str(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
    let entries = parsed["expect"].as_array().unwrap();
    let targets: Vec<&str> = entries
        .iter()
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["agent"], "{written}");
    assert!(
        entries
            .iter()
            .all(|e| e.get("reason").and_then(|r| r.as_str()) != Some("injected")),
        "{written}"
    );
}
