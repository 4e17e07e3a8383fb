//! Renderer tests: snapshots of every output format from the hand-made
//! report in `fixture`, the JSON against the published schema, and the
//! run folder writer.
//!
//! Over 400 lines on purpose: every renderer is checked against the one
//! hand-made report of `fixture`, and the format checks (snapshots, the JSON
//! schema and its documentation, round trip, the run folder writer,
//! redaction) share that fixture and the schema validator; renderers with
//! logic of their own keep their tests beside them (`terminal_tests.rs`,
//! `verdict_tests.rs`, `merge_tests.rs`, ...).

use std::time::{Duration, SystemTime};

use super::fixture;
use super::*;

#[test]
fn text_snapshot() {
    insta::assert_snapshot!(render_text(&fixture::report(), false));
}

#[test]
fn summary_snapshot() {
    insta::assert_snapshot!(render_summary(&fixture::report()));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(render_markdown(&fixture::report()));
}

#[test]
fn junit_snapshot() {
    let xml = render_junit(&fixture::report()).expect("junit renders");
    insta::assert_snapshot!(xml);
}

#[test]
fn repeated_text_snapshot() {
    insta::assert_snapshot!(render_text(&fixture::repeated_report(), false));
}

#[test]
fn repeated_summary_shows_pass_rates_and_flaky() {
    let summary = render_summary(&fixture::repeated_report());
    // agent native: attempt 1 failed, attempt 2 passed → flaky, 1 of 2.
    assert!(summary.contains("〰 1/2 passed"), "{summary}");
    assert!(summary.contains("✅ 2/2 passed"), "{summary}");
    assert!(summary.contains("– 0/2 passed"), "{summary}");
}

#[test]
fn a_flaky_cell_keeps_every_attempt_in_each_format() {
    let r = fixture::repeated_report();
    let flaky = &r.cells[0];
    assert_eq!(flaky.verdict, Verdict::Flaky);
    assert_eq!(flaky.attempts.len(), 2);
    assert!(render_text(&r, false).contains("〰 flaky @ promptSameHandleAfterRestart (1/2 passed)"));
    assert!(render_markdown(&r).contains("〰 flaky (1/2 passed)"));
    let xml = render_junit(&r).expect("junit renders");
    // Counted as passed (the default): a success with the failed attempt as <flakyFailure>.
    let case = xml
        .split("<testcase ")
        .skip(1)
        .find(|c| c.contains("name=\"agent\"") && c.contains("native-continuity"))
        .unwrap();
    assert!(case.contains("<flakyFailure"), "{case}");
    assert!(
        case.contains("attempt 1: fail @ promptSameHandleAfterRestart"),
        "{case}"
    );
    assert!(!case.contains("<failure"), "{case}");
    // Counted as failed: a failure; the gateway's second errored attempt is an <rerunError>.
    let mut failing = r.clone();
    failing.run.flaky_result = FlakyResult::Fail;
    let xml = render_junit(&failing).expect("junit renders");
    assert!(xml.contains("<failure"), "{xml}");
    assert!(xml.contains("<rerunError"), "{xml}");
}

#[test]
fn text_without_color_has_no_escapes() {
    for r in [fixture::report(), fixture::repeated_report()] {
        assert!(!render_text(&r, false).contains('\x1b'));
        assert!(!render_summary(&r).contains('\x1b'));
    }
}

#[test]
fn text_with_color_is_colored() {
    assert!(render_text(&fixture::report(), true).contains('\x1b'));
}

#[test]
fn renderers_survive_an_empty_report() {
    let mut r = fixture::report();
    r.cells.clear();
    r.run.targets.clear();
    r.run.scenarios.clear();
    r.run.server_version = None;
    r.totals = Totals::of(&r.cells);
    assert!(render_text(&r, false).contains("0/0 cells passed"));
    render_summary(&r);
    assert!(render_markdown(&r).contains("server version: unknown"));
    render_junit(&r).expect("junit renders");
}

#[test]
fn markdown_escapes_pipes_and_newlines_in_messages() {
    let mut r = fixture::report();
    if let Some(sig) = r.cells[0].phases[3].signature.as_mut() {
        sig.message = "bad | thing\nsecond line".to_string();
    }
    let md = render_markdown(&r);
    assert!(md.contains("bad \\| thing second line"), "{md}");
}

fn schema_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/report.schema.json"
    ))
    .expect("schema file readable");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::draft202012::new(&schema).expect("schema compiles")
}

fn schema_errors(v: &jsonschema::Validator, report: &serde_json::Value) -> Vec<String> {
    v.iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// A cell's key on each axis is in the schema (a cell's, and a recipe's
/// cell's, both closed to other keys) and in report-schema.md's table of
/// a cell's fields: a new axis's reports validate and are documented.
#[test]
fn every_axis_key_is_in_the_schema_and_its_documentation() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/report.schema.json")).unwrap();
    let doc = include_str!("../../../docs/report-schema.md");
    let defs = &schema["$defs"];
    let cells = [
        &defs["cell"]["properties"],
        &defs["recipe"]["properties"]["cells"]["items"]["properties"],
    ];
    for axis in Axis::ALL {
        let key = axis.field();
        for properties in cells {
            assert!(properties.get(key).is_some(), "{key} in {properties}");
        }
        assert!(
            doc.contains(&format!("\n| `{key}` |")),
            "report-schema.md: {key}"
        );
    }
}

#[test]
fn report_json_validates_against_schema() {
    let v = schema_validator();
    let mut judged = fixture::repeated_report();
    expect::Expectations::parse(
        std::path::Path::new("e.toml"),
        "[[expect]]\ntarget = \"agent\"\nverdict = \"pass\"\nreason = \"r\"\n",
    )
    .expect("parses")
    .judge(&mut judged, expect::GateOptions::default());
    // A run with candidates' digests and the recipe a rerun reads.
    let mut recorded = fixture::candidates("sandbox-agent 0.4.2");
    for point in recorded.run.points.iter_mut().filter(|p| p.is_candidate()) {
        point.sha256 = Some("ab".repeat(32));
    }
    recorded.run.recipe = Some(crate::Recipe {
        targets: vec!["agent".into()],
        scenarios: vec![crate::ScenarioIdentity {
            name: "native-continuity".into(),
            sha256: "cd".repeat(32),
        }],
        scenarios_dir: Some("/s".into()),
        config: Some(crate::FileIdentity {
            path: "/c.toml".into(),
            sha256: "ef".repeat(32),
        }),
        base_url: None,
        token_env: Some("SA_TOKEN".into()),
        agents: vec!["mock".into()],
        clients: vec!["rust".into(), "ts-sdk".into()],
        persist: vec!["sqlite".into()],
        axes: Default::default(),
        hang_grace_ms: Some(1500),
        rivet_save: "immediate".into(),
        rivet_stop: "kill".into(),
        trace: "summary".into(),
        expect: Some("/e.toml".into()),
        cells: recorded.cells.iter().map(|c| c.point.clone()).collect(),
        rerun_of: Some("ab12cd34".into()),
    });
    // A cell the always-on checker failed, with its verdict on every invariant.
    let mut checked = fixture::repeated_report();
    let violation = continuity_check::Violation {
        invariant: continuity_check::Invariant::Stream,
        breach: continuity_check::Breach::Gap,
        hop: continuity_check::Hop::Gateway,
        since: Some(continuity_check::Hop::Server),
        stream: Some("sdk-mock-1".into()),
        session: Some("agent-1".into()),
        ids: vec!["3".into()],
        event_index: Some(4),
        t: 12.5,
        phase: Some("promptBeforeRestart".into()),
        detail: "SSE id 4 came right after id 2: id 3 never came".into(),
    };
    let verdict = continuity_check::Verdict {
        checked: continuity_check::Invariant::ALL
            .into_iter()
            .map(|invariant| continuity_check::Checked {
                invariant,
                status: continuity_check::Status::Unknown,
                why: Some("why".into()),
            })
            .collect(),
        violations: vec![violation.clone()],
        allowed: vec![continuity_check::Allowance::LostTail],
        excused: continuity_check::Excused {
            lost_tail: 1,
            unread: 2,
            host_restart: 3,
            refused: 5,
            untold: 4,
        },
    };
    checked.cells[0].checked = Some(verdict.clone());
    for attempt in &mut checked.cells[0].attempts {
        attempt.checked = Some(verdict.clone());
    }
    let failed = checked
        .cells
        .iter_mut()
        .flat_map(|c| c.phases.iter_mut())
        .find_map(|p| p.signature.as_mut())
        .expect("a failed phase");
    failed.integrity = Some(violation);
    for r in [
        fixture::report(),
        fixture::repeated_report(),
        judged,
        recorded,
        checked,
    ] {
        let json = serde_json::to_value(&r).expect("report serializes");
        let errors = schema_errors(&v, &json);
        assert!(errors.is_empty(), "{errors:#?}");
    }
}

#[test]
fn schema_rejects_what_the_model_cannot_produce() {
    let v = schema_validator();
    let good = serde_json::to_value(fixture::report()).expect("report serializes");

    let mut extra = good.clone();
    extra["run"]["token"] = "secret".into();
    assert!(!schema_errors(&v, &extra).is_empty(), "unknown run field");

    let mut verdict = good.clone();
    verdict["cells"][0]["verdict"] = "bogus".into();
    assert!(!schema_errors(&v, &verdict).is_empty(), "unknown verdict");

    let mut kind = good.clone();
    kind["cells"][0]["phases"][3]["signature"]["kind"] = "oops".into();
    assert!(
        !schema_errors(&v, &kind).is_empty(),
        "unknown signature kind"
    );

    let mut missing = good;
    if let Some(cell) = missing["cells"][0].as_object_mut() {
        cell.remove("reason");
    }
    assert!(
        !schema_errors(&v, &missing).is_empty(),
        "missing nullable field"
    );
}

#[test]
fn schema_doc_example_is_a_valid_report() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/report-schema.md"
    ))
    .expect("schema doc readable");
    let example = doc
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("doc has a json example");
    let json: serde_json::Value = serde_json::from_str(example).expect("example is JSON");
    let errors = schema_errors(&schema_validator(), &json);
    assert!(errors.is_empty(), "{errors:#?}");
    let report: Report = serde_json::from_value(json.clone()).expect("example is a Report");
    assert_eq!(serde_json::to_value(&report).expect("serializes"), json);
}

#[test]
fn report_json_round_trips() {
    let r = fixture::report();
    let text = serde_json::to_string_pretty(&r).expect("serializes");
    let back: Report = serde_json::from_str(&text).expect("deserializes");
    assert_eq!(back, r);
}

#[test]
fn the_run_folder_writes_four_files_and_no_temp() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    let r = fixture::report();
    let files = RunFolder::open(&dir, crate::secret::Redactor::none())
        .write_report(&r)
        .expect("writes");

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "junit.xml",
            "report.html",
            "report.json",
            "report.md",
            "report.txt"
        ]
    );

    let json: Report =
        serde_json::from_str(&std::fs::read_to_string(&files.json).expect("json")).expect("parse");
    assert_eq!(json, r);
    let text = std::fs::read_to_string(&files.text).expect("txt");
    assert_eq!(text, render_text(&r, false));
    assert!(!text.contains('\x1b'));
    assert_eq!(
        std::fs::read_to_string(&files.markdown).expect("md"),
        render_markdown(&r)
    );
    assert!(std::fs::read_to_string(&files.junit)
        .expect("xml")
        .starts_with("<?xml"));

    // A second write replaces the files in place.
    RunFolder::open(&dir, crate::secret::Redactor::none())
        .write_report(&r)
        .expect("rewrites");
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 5);
}

#[test]
fn default_run_dir_is_timestamp_then_id() {
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_953_662);
    let root = std::path::Path::new("reports");
    assert_eq!(
        default_run_dir(root, started, "ab12cd"),
        root.join("20261129T120102Z-ab12cd")
    );
    assert_eq!(
        default_run_dir(root, started, "../x"),
        root.join("20261129T120102Z-_._x")
    );
}

#[test]
fn every_report_file_is_redacted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let secret = "tok-<&\"leak\"&>-4711";
    let mut r = fixture::report();
    r.cells[0].reason = Some(format!("stderr: Bearer {secret}"));
    if let Some(p) = r.cells[0].phases.first_mut() {
        p.detail
            .insert("command".into(), format!("echo {secret}").into());
    }
    r.run.agent = format!("mock {secret}");
    let folder = RunFolder::open(tmp.path(), crate::secret::Redactor::new([secret]));
    let files = folder.write_report(&r).expect("writes");
    let extra = folder
        .write_text("cells/1/trace.jsonl", &format!("{{\"x\":\"{secret}\"}}\n"))
        .expect("writes");
    folder
        .append_line("cells/2/trace.jsonl", "first")
        .expect("appends");
    let appended = folder
        .append_line("cells/2/trace.jsonl", &format!("second {secret}"))
        .expect("appends");
    assert_eq!(
        std::fs::read_to_string(&appended).unwrap(),
        "first\nsecond [redacted]\n"
    );
    for path in [
        &files.json,
        &files.text,
        &files.markdown,
        &files.junit,
        &extra,
        &appended,
    ] {
        let text = std::fs::read_to_string(path).expect("reads");
        assert!(text.contains("[redacted]"), "{}: {text}", path.display());
        for part in ["tok-", "4711", "leak"] {
            assert!(!text.contains(part), "{}: {text}", path.display());
        }
    }
    let shown = render_terminal(
        &folder.redacted_report(&r),
        &Layout {
            width: 40,
            color: false,
            folder: "run".into(),
        },
    );
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(
        !shown.contains("4711") && !shown.contains("tok-"),
        "{shown}"
    );
}

/// Secrets that equal the report's own words (a field name, a verdict)
/// once renamed fields and broke every reader of report.json.
#[test]
fn secrets_equal_to_the_reports_words_leave_it_readable() {
    for secret in [
        "durationMs",
        "verdict",
        "pass",
        "phases",
        "attempts",
        "outcome",
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut r = fixture::report();
        r.cells[0].reason = Some(format!("saw {secret} in the log"));
        let folder = RunFolder::open(tmp.path(), crate::secret::Redactor::new([secret]));
        // A component's JSON log and a trace line of the same words.
        std::fs::create_dir_all(tmp.path().join("cells/1")).unwrap();
        let trace = tmp.path().join("cells/1/trace.jsonl");
        std::fs::write(
            &trace,
            format!("{{\"{secret}\":\"{secret} here\"}}\nnot json {secret}\n"),
        )
        .unwrap();
        let files = folder.write_report(&r).expect("writes");
        folder.scrub().expect("scrubs");
        folder
            .check_report(&files)
            .unwrap_or_else(|e| panic!("{secret}: {e}"));
        let text = std::fs::read_to_string(&files.json).unwrap();
        let back = crate::compare::read_report(&text).unwrap();
        assert_eq!(back.cells.len(), r.cells.len(), "{secret}");
        assert_eq!(back.cells[0].verdict, r.cells[0].verdict, "{secret}");
        assert_eq!(
            back.cells[0].reason.as_deref(),
            Some("saw [redacted] in the log"),
            "{secret}"
        );
        assert_eq!(
            std::fs::read_to_string(&trace).unwrap(),
            format!("{{\"{secret}\":\"[redacted] here\"}}\nnot json [redacted]\n"),
            "{secret}"
        );
        let junit = std::fs::read_to_string(&files.junit).unwrap();
        assert!(junit.contains("<testsuites"), "{secret}: {junit}");
    }
}

/// A report.json that does not parse back into the model fails the check.
#[test]
fn a_report_that_does_not_read_back_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let folder = RunFolder::open(tmp.path(), crate::secret::Redactor::none());
    let files = folder.write_report(&fixture::report()).unwrap();
    folder
        .check_report(&files)
        .expect("a fresh report reads back");
    let text = std::fs::read_to_string(&files.json).unwrap();
    std::fs::write(
        &files.json,
        text.replacen("\"durationMs\"", "\"[redacted]\"", 1),
    )
    .unwrap();
    let e = folder.check_report(&files).unwrap_err();
    assert!(e.to_string().contains("report.json"), "{e}");
}

#[test]
fn a_non_empty_folder_is_refused_unless_forced() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    let none = crate::secret::Redactor::none;
    let folder = RunFolder::create(&dir, false, none(), "continuity run").expect("a new folder");
    folder.write_report(&fixture::report()).expect("writes");
    drop(folder);
    std::fs::create_dir_all(dir.join("persist")).unwrap();
    std::fs::write(dir.join("persist/001-agent.db"), b"old").unwrap();
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    // A --jobs worker's stack, a version's stack: earlier runs' too.
    for stack in ["stack-2/rivet", "stack-0.4.2"] {
        std::fs::create_dir_all(dir.join(stack)).unwrap();
    }
    let refused = RunFolder::create(&dir, false, none(), "continuity run").unwrap_err();
    assert!(matches!(refused, FolderError::NotEmpty(_)), "{refused}");
    assert!(refused.to_string().contains("--force"), "{refused}");
    RunFolder::create(&dir, true, none(), "continuity run").expect("forced");
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["notes.txt", "run.lock"],
        "only the earlier run's files are removed"
    );
    std::fs::write(tmp.path().join("file"), b"x").unwrap();
    assert!(matches!(
        RunFolder::create(&tmp.path().join("file"), true, none(), "continuity run"),
        Err(FolderError::NotAFolder(_))
    ));
    // An empty folder is fine.
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    RunFolder::create(&tmp.path().join("empty"), false, none(), "continuity run").expect("empty");
    // A folder holding only someone's files is refused without a lock file left in it.
    std::fs::create_dir(tmp.path().join("theirs")).unwrap();
    std::fs::write(tmp.path().join("theirs/a"), b"x").unwrap();
    RunFolder::create(&tmp.path().join("theirs"), false, none(), "continuity run").unwrap_err();
    assert!(!tmp.path().join("theirs/run.lock").exists());
}

#[test]
fn a_folder_a_live_run_holds_is_refused_at_once_naming_it_even_with_force() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    let none = crate::secret::Redactor::none;
    let first = RunFolder::create(&dir, false, none(), "continuity run").expect("a new folder");
    // The race the issue saw: both runs claim the folder while it is empty.
    for force in [false, true] {
        let refused = RunFolder::create(&dir, force, none(), "continuity merge").unwrap_err();
        assert!(matches!(refused, FolderError::Lock(_)), "{refused}");
        let holder = format!("pid {} (continuity run)", std::process::id());
        assert!(refused.to_string().contains(&holder), "{refused}");
        assert!(refused.to_string().contains("run.lock"), "{refused}");
    }
    first
        .write_report(&fixture::report())
        .expect("the first run still writes");
    assert!(dir.join("report.json").exists(), "--force removed nothing");
    drop(first);
    // Released with the folder (and, by the kernel, with the process).
    RunFolder::create(&dir, true, none(), "continuity run").expect("free again");
}

#[test]
fn scrub_redacts_what_other_programs_wrote() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let secret = "tok-scrub-123456";
    std::fs::create_dir_all(tmp.path().join("stack/agent")).unwrap();
    let log = tmp.path().join("stack/agent/server.log");
    std::fs::write(&log, format!("started with --token {secret}\n")).unwrap();
    let db = tmp.path().join("store.db");
    let mut bytes = b"SQLite format 3\0\xff\xfe".to_vec();
    bytes.extend_from_slice(secret.as_bytes());
    std::fs::write(&db, &bytes).unwrap();
    std::fs::write(tmp.path().join("clean.txt"), "nothing").unwrap();
    let folder = RunFolder::open(tmp.path(), crate::secret::Redactor::new([secret]));
    let changed = folder.scrub().expect("scrubs");
    assert_eq!(changed, [log.clone(), db.clone()]);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "started with --token [redacted]\n"
    );
    let scrubbed = std::fs::read(&db).unwrap();
    assert_eq!(scrubbed.len(), bytes.len());
    assert!(!String::from_utf8_lossy(&scrubbed).contains("scrub"));
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// The fixture's JSON with values replaced along random paths: the
    /// reports a hand-edited or truncated file gives.
    fn mutated_report() -> impl Strategy<Value = String> {
        let replacement = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            Just(Value::from("pass")),
            Just(Value::from("fail")),
            Just(serde_json::json!([])),
            Just(serde_json::json!({})),
        ];
        let edits = proptest::collection::vec(
            (proptest::collection::vec(any::<usize>(), 1..5), replacement),
            0..6,
        );
        (edits, any::<usize>(), any::<bool>()).prop_map(|(edits, cut, truncate)| {
            let mut value = serde_json::to_value(fixture::report()).unwrap();
            for (path, new) in edits {
                // A JSON pointer along the path, then one mutable lookup.
                let mut pointer = String::new();
                let mut at = &value;
                for step in path {
                    let next = match at {
                        Value::Object(map) if !map.is_empty() => {
                            let key = map.keys().nth(step % map.len()).unwrap();
                            pointer.push('/');
                            pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                            &map[key]
                        }
                        Value::Array(items) if !items.is_empty() => {
                            let index = step % items.len();
                            pointer.push_str(&format!("/{index}"));
                            &items[index]
                        }
                        _ => break,
                    };
                    at = next;
                }
                if let Some(slot) = value.pointer_mut(&pointer) {
                    *slot = new;
                }
            }
            let text = value.to_string();
            if truncate {
                let mut end = cut % (text.len() + 1);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text[..end].to_string()
            } else {
                text
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_report_reader_never_panics(text in mutated_report(), raw in any::<String>()) {
            let _ = compare::read_report(&raw);
            if let Ok(candidate) = compare::read_report(&text) {
                let baseline = fixture::report();
                let rows = compare::compare(&baseline, &candidate);
                let _ = compare::render_comparison(&baseline, &candidate, &rows, false);
                let _ = compare::duplicated_cells(&candidate);
                let _ = compare::missing_cells(&rows);
                let _ = compare::has_regressions(&rows);
            }
        }
    }
}

/// The fixture judged against the known bug (expected) and an entry that
/// the errored gateway cell contradicts (changed).
fn judged_report() -> Report {
    let mut r = fixture::report();
    let text = r#"
[[expect]]
target = "agent"
scenario = "native-continuity"
verdict = "fail"
boundary = "promptSameHandleAfterRestart"
signature = "http 400 invalid_request"
reason = "sandbox-agent #189: the server forgets ACP server ids on restart"

[[expect]]
target = "gateway"
verdict = "pass"
reason = "nginx restarts are transparent"
"#;
    expect::Expectations::parse(std::path::Path::new("ci/expect.toml"), text)
        .expect("parses")
        .judge(&mut r, expect::GateOptions::default());
    r
}

#[test]
fn judged_text_snapshot() {
    insta::assert_snapshot!(render_text(&judged_report(), false));
}

#[test]
fn judged_markdown_snapshot() {
    insta::assert_snapshot!(render_markdown(&judged_report()));
}

#[test]
fn step_summary_snapshot() {
    insta::assert_snapshot!(github::render_step_summary(&judged_report(), "run-1"));
}

#[test]
fn an_interrupted_cell_and_a_store_timeout_show_in_every_renderer() {
    let mut r = fixture::report();
    let cell = &mut r.cells[0];
    cell.verdict = Verdict::Interrupted;
    cell.reason = Some("the run was interrupted during restart".into());
    let boundary = cell.failure_boundary.clone().unwrap();
    let phase = cell.phases.iter_mut().find(|p| p.name == boundary).unwrap();
    phase.outcome = Outcome::Timeout;
    phase.ok = false;
    // What diagnose::persist_timeout makes of a store that kept the phase waiting.
    phase.signature = Some(Signature {
        integrity: None,
        kind: SignatureKind::Persist,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: "persist (rivet): updateSession no answer after 29.9 s (the phase timed out after 30000 ms)".into(),
        pending: Some("session/new".into()),
        cause: None,
        observed: None,
        fault: None,
        component: None,
    });
    r.totals = Totals::of(&r.cells);
    assert_eq!(r.totals.interrupted, 1);
    let text = render_text(&r, false);
    assert!(text.contains("⏸ interrupted"), "{text}");
    assert!(text.contains("persist timeout"), "{text}");
    assert!(render_markdown(&r).contains("interrupted"));
    assert!(render_junit(&r).unwrap().contains("interrupted"));
    let v = schema_validator();
    let json = serde_json::to_value(&r).unwrap();
    assert!(
        schema_errors(&v, &json).is_empty(),
        "{:?}",
        schema_errors(&v, &json)
    );
}

#[test]
fn ids_are_masked_so_signatures_compare_across_runs() {
    assert_eq!(
        mask_ids("first POST to /v1/acp/sdk-mock-3743b79f-59e5-4713-a915-af9a2188ebbc é"),
        "first POST to /v1/acp/sdk-mock-<id> é"
    );
    assert_eq!(mask_ids("abc 12345678-1234 x"), "abc 12345678-1234 x");
}

#[test]
fn the_report_enums_that_print_their_wire_name_print_what_serde_writes() {
    fn same<T: serde::Serialize>(value: T, name: &str) {
        assert_eq!(serde_json::to_value(&value).unwrap(), name);
        assert_eq!(crate::wire_name::of(&value), name);
    }
    same(Verdict::Interrupted, Verdict::Interrupted.as_str());
    same(SignatureKind::AgentExit, "agent_exit");
    same(
        SignatureKind::StreamClosed,
        SignatureKind::StreamClosed.as_str(),
    );
    same(Outcome::NotRun, "not_run");
}
