//! A quarantine that expires, end to end on the committed v2 report:
//! `baseline --until --issue` writes the entries, `merge --expect` lists
//! the ones expiring within 14 days (terminal and GitHub step summary) and
//! fails the gate on one whose day has passed, and `validate` refuses a
//! bad date with the file and line.

use crate::support::{assert_exit, continuity_command};
use continuity::exit_codes;
use jiff::ToSpan;
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2/report.json")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `continuity baseline` of the fixture quarantined until `until`.
fn baseline(dir: &Path, until: &str) -> PathBuf {
    let fixture = fixture();
    let out = continuity_command([
        "baseline",
        fixture.to_str().unwrap(),
        "--until",
        until,
        "--issue",
        "https://github.com/rivet-dev/sandbox-agent/issues/189",
    ])
    .output()
    .unwrap();
    assert_exit(&out, exit_codes::OK);
    let (expectations, _) = text(&out);
    let path = dir.join(format!("expect-{until}.toml"));
    std::fs::write(&path, &expectations).unwrap();
    path
}

/// `merge --expect` of the fixture; the outcomes, stdout, the step summary.
fn gate(dir: &Path, expect: &Path) -> (Output, Vec<String>, String, String) {
    let out_dir = dir.join(format!(
        "gated-{}",
        expect.file_stem().unwrap().to_str().unwrap()
    ));
    let summary = dir.join("summary.md");
    let _ = std::fs::remove_file(&summary);
    let fixture = fixture();
    let out = continuity_command([
        "merge",
        "--out",
        out_dir.to_str().unwrap(),
        "--expect",
        expect.to_str().unwrap(),
        // `baseline` names no store: the passing sqlite cells meet the failing entries.
        fixture.to_str().unwrap(),
    ])
    .env("GITHUB_STEP_SUMMARY", &summary)
    .output()
    .unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let outcomes = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["expectation"]["outcome"].as_str().unwrap().to_string())
        .collect();
    let (stdout, _) = text(&out);
    (
        out,
        outcomes,
        stdout,
        std::fs::read_to_string(&summary).unwrap_or_default(),
    )
}

fn today() -> jiff::civil::Date {
    jiff::tz::TimeZone::UTC
        .to_datetime(jiff::Timestamp::now())
        .date()
}

#[test]
fn baseline_writes_a_quarantine_listed_while_it_lasts_and_failing_once_expired() {
    let dir = tempfile::tempdir().unwrap();
    let in_ten_days = today().checked_add(10.days()).unwrap().to_string();
    let expect = baseline(dir.path(), &in_ten_days);
    let written = std::fs::read_to_string(&expect).unwrap();
    // The failing cells' entries carry the date and the issue; the passing ones do not.
    assert_eq!(
        written
            .matches(&format!("until = \"{in_ten_days}\""))
            .count(),
        2,
        "{written}"
    );
    assert_eq!(
        written
            .matches("issue = \"https://github.com/rivet-dev/sandbox-agent/issues/189\"")
            .count(),
        2
    );
    // Each entry names its cell's store (memory fails, sqlite passes), so
    // every cell is as its own entry says.
    assert_eq!(
        written.matches("persist = \"memory\"").count(),
        2,
        "{written}"
    );
    let (out, outcomes, stdout, summary) = gate(dir.path(), &expect);
    assert_exit(&out, exit_codes::OK);
    assert_eq!(outcomes, ["expected", "expected", "expected", "expected"]);
    for shown in [&stdout, &summary] {
        assert!(
            shown.contains("expectations expiring within 14 days:"),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("until {in_ten_days} (in 10 days)")),
            "{shown}"
        );
    }
    // Long past: the failures are no longer excused.
    let expired = baseline(dir.path(), "2020-01-01");
    let (out, outcomes, stdout, summary) = gate(dir.path(), &expired);
    assert_exit(&out, exit_codes::FAILED);
    assert_eq!(outcomes, ["expired", "expected", "expired", "expected"]);
    assert!(
        stdout.contains("2 expected, 2 expired → fails the gate"),
        "{stdout}"
    );
    assert!(stdout.contains("expired (until 2020-01-01;"), "{stdout}");
    assert!(summary.contains("expired (until 2020-01-01;"), "{summary}");
    assert!(!summary.contains("expiring within"), "{summary}");
}

#[test]
fn validate_and_baseline_refuse_a_bad_date_with_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let expect = dir.path().join("expect.toml");
    std::fs::write(
        &expect,
        "[[expect]]\ntarget = \"agent\"\nverdict = \"fail\"\nuntil = \"2026-02-30\"\n",
    )
    .unwrap();
    let config = dir.path().join("continuity.toml");
    std::fs::write(
        &config,
        format!("[run]\nexpect = {:?}\n", expect.to_str().unwrap()),
    )
    .unwrap();
    let out = continuity_command(["validate", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&out, exit_codes::USAGE);
    let (_, err) = text(&out);
    assert!(
        err.contains(&format!(
            "{}:4: `until` = \"2026-02-30\" is not a day of the calendar",
            expect.display()
        )),
        "{err}"
    );
    let fixture = fixture();
    let out = continuity_command([
        "baseline",
        fixture.to_str().unwrap(),
        "--until",
        "next week",
    ])
    .output()
    .unwrap();
    assert_exit(&out, exit_codes::USAGE);
    let (_, err) = text(&out);
    assert!(err.contains("is not a date as YYYY-MM-DD"), "{err}");
}
