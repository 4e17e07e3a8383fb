//! Renderer tests: snapshots of every output format from the hand-made
//! report in `fixture`, the JSON against the published schema, and the
//! run folder writer.

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
fn repeated_summary_counts_passes() {
    let summary = render_summary(&fixture::repeated_report());
    // agent native: attempt 1 failed, attempt 2 passed → a failure, 1 of 2.
    assert!(summary.contains("❌ 1/2"), "{summary}");
    assert!(summary.contains("✅ 2/2"), "{summary}");
    assert!(summary.contains("– 0/2"), "{summary}");
}

#[test]
fn repeated_labels_carry_the_attempt() {
    let r = fixture::repeated_report();
    assert!(render_text(&r, false).contains("agent #2"));
    let xml = render_junit(&r).expect("junit renders");
    assert!(xml.contains("name=\"agent #2\""), "{xml}");
    assert!(render_markdown(&r).contains("  - gateway #2: "));
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
        "/docs/report.schema.json"
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

#[test]
fn report_json_validates_against_schema() {
    let v = schema_validator();
    for r in [fixture::report(), fixture::repeated_report()] {
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
    verdict["cells"][0]["verdict"] = "flaky".into();
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
        "/docs/report-schema.md"
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
fn write_report_dir_writes_four_files_and_no_temp() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    let r = fixture::report();
    let files = write_report_dir(&dir, &r, true).expect("writes");

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["junit.xml", "report.json", "report.md", "report.txt"]
    );

    let json: Report =
        serde_json::from_str(&std::fs::read_to_string(&files.json).expect("json")).expect("parse");
    assert_eq!(json, r);
    let text = std::fs::read_to_string(&files.text).expect("txt");
    assert_eq!(text, render_text(&r, false));
    assert!(!text.contains('\x1b'));
    assert!(
        files.stdout.contains('\x1b'),
        "stdout rendering honours color"
    );
    assert_eq!(
        std::fs::read_to_string(&files.markdown).expect("md"),
        render_markdown(&r)
    );
    assert!(std::fs::read_to_string(&files.junit)
        .expect("xml")
        .starts_with("<?xml"));

    // A second write replaces the files in place.
    write_report_dir(&dir, &r, false).expect("rewrites");
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 4);
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
        root.join("20261129T120102Z-___x")
    );
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
    phase.signature = Some(crate::diagnose::persist_timeout(
        "rivet",
        "updateSession",
        29_900,
        30_000,
        "session/new",
    ));
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
