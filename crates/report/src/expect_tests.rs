//! Tests of the expectations file and its judgement (`expect.rs`): what
//! a file may say and how each cell of a report is judged against it.
//!
//! Over 400 lines on purpose: every test here judges a hand-made report
//! against an expectations file through the same helpers (`parse`, `judged`,
//! `outcome`), one or two per key and outcome (scopes by axis, flaky,
//! quarantine `until`, a long turn's fate, the invariant), so a key's rules
//! are found under its name; what they cover is one judgement, `expect.rs`.
use super::*;
use crate::fixture;
use crate::{Fate, TurnFate};

const KNOWN_BUG: &str = r#"
# the pinned server's known bug
[[expect]]
target = "agent"
scenario = "native-continuity"
verdict = "fail"                       # pass | fail | error | skipped
boundary = "promptSameHandleAfterRestart"
signature = "http 400 invalid_request" # optional; compared with the masked signature
reason = "sandbox-agent #189: the server forgets ACP server ids on restart"
"#;

fn parse(text: &str) -> Result<Expectations, ExpectError> {
    Expectations::parse(Path::new("expect.toml"), text)
}

fn judged(text: &str, options: GateOptions) -> Report {
    let mut r = fixture::report();
    parse(text).unwrap().judge(&mut r, options);
    r
}

fn outcome(r: &Report, target: &str, scenario: &str) -> (ExpectOutcome, bool) {
    let j = r
        .cells
        .iter()
        .find(|c| c.point.target == target && c.point.scenario == scenario)
        .and_then(|c| c.expectation.clone())
        .unwrap();
    (j.outcome, j.fails_run)
}

#[test]
fn the_issue_shape_is_accepted_and_the_known_failure_is_expected() {
    let r = judged(KNOWN_BUG, GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Expected, false)
    );
    let j = r.cells[0].expectation.as_ref().unwrap();
    assert_eq!(j.entry.as_deref(), Some("expect.toml:3"));
    assert!(j.reason.as_deref().unwrap().contains("#189"));
    // The passing cell has no entry: new, judged by its own verdict.
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::New, false)
    );
    // The errored and skipped cells are new failures.
    assert_eq!(
        outcome(&r, "gateway", "native-continuity"),
        (ExpectOutcome::New, true)
    );
    assert!(gate_fails(&r));
    assert_eq!(r.run.expect_file.as_deref(), Some("expect.toml"));
}

#[test]
fn every_outcome_and_the_exit_rules() {
    let text = r#"
[[expect]]
target = "agent"
scenario = "native-continuity"
verdict = "pass"
[[expect]]
target = "agent"
scenario = "recreate-rehydrate"
verdict = "fail"
[[expect]]
target = "gateway"
scenario = "native-*"
verdict = "error"
[[expect]]
target = "gate*"
scenario = "recreate-rehydrate"
verdict = "fail"
"#;
    let r = judged(text, GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Regressed, true)
    );
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::Fixed, true)
    );
    assert_eq!(
        outcome(&r, "gateway", "native-continuity"),
        (ExpectOutcome::Expected, false)
    );
    assert_eq!(
        outcome(&r, "gateway", "recreate-rehydrate"),
        (ExpectOutcome::Changed, true)
    );
    let allowed = judged(
        text,
        GateOptions {
            allow_fixed: true,
            ..Default::default()
        },
    );
    assert_eq!(
        outcome(&allowed, "agent", "recreate-rehydrate"),
        (ExpectOutcome::Fixed, false)
    );
}

#[test]
fn a_failure_elsewhere_or_with_another_signature_is_changed() {
    for (key, value) in [
        ("boundary", "promptAfterResume"),
        ("signature", "http 500 server_error"),
    ] {
        let text = format!(
            "[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nverdict = \"fail\"\n{key} = \"{value}\"\n"
        );
        let r = judged(&text, GateOptions::default());
        assert_eq!(
            outcome(&r, "agent", "native-continuity"),
            (ExpectOutcome::Changed, true),
            "{key}"
        );
    }
}

#[test]
fn server_version_scopes_an_entry() {
    let text = |req: &str| {
        format!("[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nverdict = \"fail\"\nserver_version = \"{req}\"\n")
    };
    let r = judged(&text(">=0.4.2, <0.5"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::Expected
    );
    let r = judged(&text("=0.4.0"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::New
    );
    assert_eq!(
        parse_version("sandbox-agent v0.4.2"),
        Some(Version::new(0, 4, 2))
    );
}

#[test]
fn client_scopes_an_entry_and_a_cell_without_one_ran_rust() {
    let text = |client: &str| {
        format!("[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nclient = \"{client}\"\nverdict = \"fail\"\n")
    };
    // The fixture's cells carry no client: they ran continuity's own.
    let r = judged(&text("rust"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::Expected
    );
    let r = judged(&text("ts-sdk"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::New
    );
    // On a client axis the entry decides the ts-sdk cell only.
    let mut r = fixture::report();
    let mut hosted = r.cells[0].clone();
    hosted.point.set(crate::ClientKind::TsSdk.into());
    r.cells[0].point.set(crate::ClientKind::Rust.into());
    r.cells.push(hosted);
    parse(&text("ts-*"))
        .unwrap()
        .judge(&mut r, GateOptions::default());
    let of = |client: &str| {
        r.cells
            .iter()
            .find(|c| c.point.name_on(Axis::Client) == Some(client))
            .and_then(|c| c.expectation.as_ref())
            .map(|j| j.outcome)
            .unwrap()
    };
    assert_eq!(of("ts-sdk"), ExpectOutcome::Expected);
    assert_eq!(of("rust"), ExpectOutcome::New);
    let typo = parse(&text("ts_sdk")).unwrap_err().to_string();
    assert!(typo.contains("matches no client"), "{typo}");
    assert!(typo.contains("rust, ts-sdk, browser"), "{typo}");
    // Every client can be named (the browser's cells once could not).
    assert!(parse(&text("browser")).is_ok());
}

#[test]
fn a_flaky_cell_follows_flaky_result() {
    let mut r = fixture::repeated_report();
    let text =
        "[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nverdict = \"pass\"\n";
    parse(text).unwrap().judge(&mut r, GateOptions::default());
    assert_eq!(r.cells[0].verdict, Verdict::Flaky);
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Expected, false)
    );
    let options = GateOptions {
        flaky_result: FlakyResult::Fail,
        ..Default::default()
    };
    parse(text).unwrap().judge(&mut r, options);
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Regressed, true)
    );
}

#[test]
fn bad_files_name_the_line_and_what_is_wrong() {
    let e = parse("[[expect]]\ntarget = \"agent\"\nscenario = \"x\"\nverdict = \"broken\"\n")
        .unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(
        e.to_string().contains("expect.toml:4") && e.to_string().contains("broken"),
        "{e}"
    );
    let e = parse("[[expect]]\ntarget = \"agent[\"\nverdict = \"pass\"\n").unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    assert!(e.message.contains("glob"), "{e}");
    let e = parse("[[expect]]\nverdict = \"pass\"\nserver_version = \"latest\"\n").unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    let e = parse("[[expect]]\nverdict = \"pass\"\ntargte = \"agent\"\n").unwrap_err();
    assert!(e.message.contains("targte"), "{e}");
    let e = parse("[[expect]]\ntarget = \"agent\"\n").unwrap_err();
    assert!(e.message.contains("verdict"), "{e}");
}

#[test]
fn an_entry_that_matches_nothing_in_the_run_is_refused() {
    let x = parse(
        "[[expect]]\nverdict = \"pass\"\n\n[[expect]]\ntarget = \"agnet\"\nverdict = \"pass\"\n",
    )
    .unwrap();
    let targets = ["agent".to_string(), "gateway".to_string()];
    let scenarios = ["native-continuity".to_string()];
    let e = x.check_names(&targets, &scenarios).unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(
        e.message.contains("agnet") && e.message.contains("agent, gateway"),
        "{e}"
    );
    parse(KNOWN_BUG)
        .unwrap()
        .check_names(&targets, &scenarios)
        .unwrap();
}

#[test]
fn an_entry_behind_a_catch_all_is_reported_as_shadowed() {
    let text = "[[expect]]\nverdict = \"pass\"\n\n[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nverdict = \"fail\"\n";
    let x = parse(text).unwrap();
    let warnings = x.shadowed(&fixture::report());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("expect.toml:4:"), "{warnings:?}");
    // In the right order nothing is shadowed; an entry for cells this run lacks is not either.
    let fine = format!("{KNOWN_BUG}\n[[expect]]\nverdict = \"pass\"\n[[expect]]\ntarget = \"agent\"\nverdict = \"pass\"\nserver_version = \"=0.3.0\"\n");
    assert_eq!(
        parse(&fine).unwrap().shadowed(&fixture::report()),
        Vec::<String>::new()
    );
}

fn outcome_at(r: &Report, server: &str, sdk: &str) -> ExpectOutcome {
    r.cells
        .iter()
        .find(|c| {
            c.point.name_on(Axis::Server) == Some(server) && c.point.name_on(Axis::Sdk) == Some(sdk)
        })
        .and_then(|c| c.expectation.as_ref())
        .map(|j| j.outcome)
        .unwrap()
}

/// An entry that names no server binary or SDK applies to every point:
/// the candidate is judged against what the release does, so the SDK
/// that passes is `fixed`; `server_version` matches what a binary reports.
#[test]
fn an_entry_without_server_or_sdk_judges_every_point_and_the_fix_is_fixed() {
    let entry = "[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nclient = \"ts-sdk\"\nverdict = \"fail\"\nboundary = \"promptSameHandleAfterRestart\"\nserver_version = \"=0.4.2\"\n";
    let mut r = fixture::candidates("sandbox-agent 0.4.2");
    parse(entry).unwrap().judge(&mut r, GateOptions::default());
    for server in ["0.4.2", "fix"] {
        assert_eq!(outcome_at(&r, server, "0.4.2"), ExpectOutcome::Expected);
        assert_eq!(outcome_at(&r, server, "fix"), ExpectOutcome::Fixed);
    }
    // A binary that reports another version is outside `=0.4.2`.
    let mut r = fixture::candidates("sandbox-agent 0.5.0-dev");
    parse(entry).unwrap().judge(&mut r, GateOptions::default());
    assert_eq!(outcome_at(&r, "0.4.2", "0.4.2"), ExpectOutcome::Expected);
    assert_eq!(outcome_at(&r, "fix", "0.4.2"), ExpectOutcome::New);
    // `server` and `sdk` name points by label.
    let named = format!("[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nsdk = \"fix\"\nserver = \"f*\"\nverdict = \"pass\"\n\n{entry}");
    let mut r = fixture::candidates("sandbox-agent 0.4.2");
    let x = parse(&named).unwrap();
    x.judge(&mut r, GateOptions::default());
    assert_eq!(outcome_at(&r, "fix", "fix"), ExpectOutcome::Expected);
    assert_eq!(outcome_at(&r, "0.4.2", "fix"), ExpectOutcome::Fixed);
    assert!(x
        .check_points(&["0.4.2".into(), "fix".into()], &["fix".into()])
        .is_ok());
    let typo = x
        .check_points(&["0.4.2".into()], &["fix".into()])
        .unwrap_err()
        .to_string();
    assert!(
        typo.contains(
            "`server` = \"f*\" matches no server point of this run (its server points: 0.4.2)"
        ),
        "{typo}"
    );
    // A run without a hosted client has no SDK to check against.
    assert!(x.check_points(&["fix".into()], &[]).is_ok());
}

/// A cell that names no point ran on the run's only one.
#[test]
fn a_cell_without_labels_is_on_the_runs_only_point() {
    let mut r = fixture::candidates("sandbox-agent 0.4.2");
    r.cells.retain(|c| {
        c.point.name_on(Axis::Server) == Some("fix") && c.point.name_on(Axis::Sdk) == Some("fix")
    });
    r.run.points.retain(|p| p.label == "fix");
    for cell in &mut r.cells {
        cell.point.clear(Axis::Server);
        cell.point.clear(Axis::Sdk);
    }
    let x = parse("[[expect]]\nserver = \"fix\"\nsdk = \"fix\"\nverdict = \"pass\"\n").unwrap();
    x.judge(&mut r, GateOptions::default());
    assert_eq!(
        r.cells[0].expectation.as_ref().unwrap().outcome,
        ExpectOutcome::Expected
    );
}

/// A cell that can go either way by a known race (a reload's close of an
/// idle connection crossing the next POST) is `flaky` with that failure:
/// a pass, a fail or a flaky cell with it are expected; another failure,
/// an error, or an entry that names no failure are not.
#[test]
fn a_flaky_entry_accepts_a_pass_or_its_own_failure_only() {
    let entry = |signature: &str| {
        format!("[[expect]]\ntarget = \"agent\"\nscenario = \"*\"\nverdict = \"flaky\"\nboundary = \"promptSameHandleAfterRestart\"\nsignature = \"{signature}\"\nreason = \"a race\"\n")
    };
    let r = judged(&entry("http 400 invalid_request"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Expected, false),
        "a fail with its failure"
    );
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::Expected, false),
        "a pass"
    );
    let r = judged(&entry("stream closed"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Changed, true),
        "another failure"
    );
    for flaky_result in [FlakyResult::Pass, FlakyResult::Fail] {
        let mut r = fixture::repeated_report();
        let options = GateOptions {
            flaky_result,
            ..Default::default()
        };
        assert_eq!(r.cells[0].verdict, Verdict::Flaky);
        parse(&entry("http 400 invalid_request"))
            .unwrap()
            .judge(&mut r, options);
        assert_eq!(
            outcome(&r, "agent", "native-continuity"),
            (ExpectOutcome::Expected, false),
            "a flaky cell whatever --flaky-result says"
        );
        assert_eq!(
            r.cells[0].expectation.as_ref().unwrap().verdict,
            Some(Verdict::Flaky)
        );
    }
    let bare = parse("[[expect]]\ntarget = \"agent\"\nverdict = \"flaky\"\n").unwrap_err();
    assert_eq!(bare.line, Some(3), "{bare}");
    assert!(bare.message.contains("signature"), "{bare}");
    let e = parse("[[expect]]\nverdict = \"broken\"\n").unwrap_err();
    assert!(
        e.message.contains("skipped, not_applicable or flaky"),
        "{e}"
    );
}

/// The known bug, quarantined until `until` and tracked in an issue.
fn quarantined(until: &str) -> String {
    format!("{KNOWN_BUG}until = \"{until}\"\nissue = \"https://github.com/rivet-dev/sandbox-agent/issues/189\"\n")
}

fn on(day: &str) -> GateOptions {
    GateOptions {
        today: Some(day.parse().unwrap()),
        ..GateOptions::default()
    }
}

#[test]
fn a_quarantine_excuses_through_its_until_day_and_then_fails_the_gate() {
    let text = quarantined("2026-03-01");
    // Its last day: still excused, and listed as expiring today.
    let r = judged(&text, on("2026-03-01"));
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Expected, false)
    );
    // The day after: the same failure is `expired` and fails the gate.
    let r = judged(&text, on("2026-03-02"));
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Expired, true)
    );
    let j = r.cells[0].expectation.as_ref().unwrap();
    assert_eq!(j.until.as_deref(), Some("2026-03-01"));
    assert_eq!(j.days_left, Some(-1));
    assert!(gate_fails(&r));
    assert_eq!(
        crate::gate::judgement_text(j),
        "expired (until 2026-03-01; expected fail @ promptSameHandleAfterRestart (http 400 invalid_request))"
    );
    assert!(expiring_soon(&r).is_empty(), "expired is not expiring");
}

#[test]
fn entries_expiring_within_14_days_are_listed_once_soonest_first() {
    let r = judged(&quarantined("2026-03-11"), on("2026-03-01"));
    assert_eq!(
        outcome(&r, "agent", "native-continuity"),
        (ExpectOutcome::Expected, false)
    );
    let soon = expiring_soon(&r);
    assert_eq!(soon.len(), 1, "{soon:?}");
    assert_eq!(
        (
            soon[0].entry.as_str(),
            soon[0].until.as_str(),
            soon[0].days_left
        ),
        ("expect.toml:3", "2026-03-11", 10)
    );
    let lines = crate::gate::expiring_lines(&r, str::to_string);
    assert_eq!(lines[0], "expectations expiring within 14 days:");
    assert!(
        lines[1].starts_with("expect.toml:3 until 2026-03-11 (in 10 days): https://github.com/rivet-dev/sandbox-agent/issues/189: sandbox-agent #189"),
        "{lines:?}"
    );
    let text = crate::render_terminal(
        &r,
        &crate::Layout {
            width: 200,
            color: false,
            folder: "run".into(),
        },
    );
    assert!(
        text.contains("expect.toml:3 until 2026-03-11 (in 10 days)"),
        "{text}"
    );
    let summary = crate::github::render_step_summary(&r, "run");
    assert!(
        summary.contains("- expect.toml:3 until 2026-03-11 (in 10 days)"),
        "{summary}"
    );
    // Fifteen days ahead is not soon.
    let r = judged(&quarantined("2026-03-16"), on("2026-03-01"));
    assert!(expiring_soon(&r).is_empty());
}

#[test]
fn a_bad_until_or_issue_is_refused_with_its_line() {
    for (until, why) in [
        ("2026-02-30", "is not a day of the calendar"),
        ("2026-3-1", "is not a date as YYYY-MM-DD"),
        ("soon", "is not a date as YYYY-MM-DD"),
    ] {
        let e = parse(&quarantined(until)).unwrap_err();
        assert_eq!(e.line, Some(10), "{e}");
        assert!(
            e.to_string().starts_with("expect.toml:10: `until` = "),
            "{e}"
        );
        assert!(e.message.contains(why), "{until}: {e}");
    }
    let text = KNOWN_BUG.to_string() + "issue = \"#189\"\n";
    let e = parse(&text).unwrap_err();
    assert_eq!(e.line, Some(10), "{e}");
    assert!(e.message.contains("is not an http(s) URL"), "{e}");
}

/// `agent` and `persist` scope an entry to a cell's agent and store: its
/// own on that axis, else the run's one; a `persist` that names no store
/// is a typo, refused with its line.
#[test]
fn agent_and_persist_scope_an_entry() {
    let on_store = |store: &str| {
        format!(
            "[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\npersist = \"{store}\"\nverdict = \"fail\"\nreason = \"r\"\n"
        )
    };
    // The fixture's run has one store, `memory`, and one agent, `mock`.
    let r = judged(&on_store("memory"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::Expected
    );
    let r = judged(&on_store("sqlite"), GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::New
    );
    let e = parse(&on_store("sqlit")).unwrap_err();
    assert!(
        e.to_string().contains("expect.toml:4") && e.to_string().contains("matches no store"),
        "{e}"
    );
    // A cell that names its store is matched by it.
    let mut r = fixture::report();
    for cell in &mut r.cells {
        cell.point.set(crate::Store::Sqlite.into());
    }
    r.run.persist = "sqlite, memory".into();
    parse(&on_store("sqlite"))
        .unwrap()
        .judge(&mut r, GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::Expected
    );
    let agent = "[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nagent = \"codex\"\nverdict = \"fail\"\nreason = \"r\"\n";
    let r = judged(agent, GateOptions::default());
    assert_eq!(
        outcome(&r, "agent", "native-continuity").0,
        ExpectOutcome::New
    );
}

/// `turn` and `session_usable` pin a long turn's fate beside its failure.
#[test]
fn a_long_turns_fate_is_part_of_the_failure_an_entry_names() {
    let entry = |turn: &str, usable: bool| {
        format!("[[expect]]\ntarget = \"agent\"\nscenario = \"native-continuity\"\nverdict = \"fail\"\nturn = \"{turn}\"\nsession_usable = {usable}\n")
    };
    let fate = |fate: Fate, usable: bool| TurnFate {
        fate,
        channel: None,
        agent_finished: Some(true),
        recoverable_via: vec!["stream".into()],
        session_usable: Some(usable),
    };
    let judge = |text: &str, turn: Option<TurnFate>| {
        let mut r = fixture::report();
        r.cells[0].turn = turn;
        parse(text).unwrap().judge(&mut r, GateOptions::default());
        outcome(&r, "agent", "native-continuity")
    };
    let expected = (ExpectOutcome::Expected, false);
    let changed = (ExpectOutcome::Changed, true);
    assert_eq!(
        judge(&entry("lost", false), Some(fate(Fate::Lost, false))),
        expected
    );
    assert_eq!(
        judge(&entry("lost", false), Some(fate(Fate::Unfinished, false))),
        changed
    );
    assert_eq!(
        judge(&entry("lost", false), Some(fate(Fate::Lost, true))),
        changed
    );
    assert_eq!(judge(&entry("lost", false), None), changed);
    let e = parse(&entry("gone", false)).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    assert!(e.message.contains("\"gone\" is not a turn's fate"), "{e}");
}

/// A cell with no verdict on its restart is no pass: a `pass` (or
/// `flaky`) entry says nothing of it, so it falls to the next entry, or
/// is `new` and fails nothing; an entry may pin it; against a failure
/// expected it is a change, and a pass where it was pinned is `fixed`.
#[test]
fn a_not_applicable_cell_is_kept_out_of_pass_entries_and_may_be_pinned() {
    let not_applicable = |mut r: Report| {
        let cell = r
            .cells
            .iter_mut()
            .find(|c| c.point.target == "agent" && c.point.scenario == "recreate-rehydrate")
            .unwrap();
        cell.verdict = Verdict::NotApplicable;
        cell.reason = Some("promptRehydrate: no call for x".into());
        r
    };
    let judge = |r: &mut Report, text: &str| parse(text).unwrap().judge(r, Default::default());
    let catch_all = "[[expect]]\nverdict = \"pass\"\n";
    let mut r = not_applicable(fixture::report());
    judge(&mut r, catch_all);
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::New, false),
        "the catch-all pass does not decide it, and new fails nothing"
    );
    let flaky = "[[expect]]\ntarget = \"agent\"\nverdict = \"flaky\"\nsignature = \"x\"\n";
    judge(&mut r, &format!("{flaky}{catch_all}"));
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::New, false)
    );
    let pinned = "[[expect]]\nscenario = \"recreate-rehydrate\"\nverdict = \"not_applicable\"\n";
    judge(&mut r, &format!("{catch_all}{pinned}"));
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::Expected, false),
        "the entry below the pass decides it"
    );
    let mut passed = fixture::report();
    judge(&mut passed, pinned);
    assert_eq!(
        outcome(&passed, "agent", "recreate-rehydrate"),
        (ExpectOutcome::Fixed, true)
    );
    let expected_failure = "[[expect]]\nscenario = \"recreate-rehydrate\"\nverdict = \"fail\"\n";
    judge(&mut r, expected_failure);
    assert_eq!(
        outcome(&r, "agent", "recreate-rehydrate"),
        (ExpectOutcome::Changed, true)
    );
    // Without expectations it fails nothing by itself either.
    let mut alone = not_applicable(fixture::report());
    alone.cells.retain(|c| c.verdict == Verdict::NotApplicable);
    assert!(!gate_fails(&alone));
}

/// The fixture's passing `agent × recreate-rehydrate` cell, failed by the
/// always-on checker at `promptRehydrate` with `invariant` broken.
fn checker_failed(invariant: continuity_check::Invariant) -> Report {
    let mut r = fixture::report();
    let cell = r
        .cells
        .iter_mut()
        .find(|c| c.point.target == "agent" && c.point.scenario == "recreate-rehydrate")
        .unwrap();
    let violation = continuity_check::Violation {
        invariant,
        breach: continuity_check::Breach::Duplicate,
        hop: continuity_check::Hop::Gateway,
        since: Some(continuity_check::Hop::Server),
        stream: Some("sdk-mock-1".into()),
        session: None,
        ids: vec!["3".into()],
        event_index: None,
        t: 1.0,
        phase: Some("promptRehydrate".into()),
        detail: "SSE id 3 came twice on one GET of the stream".into(),
    };
    let phase = cell
        .phases
        .iter_mut()
        .find(|p| p.name == "promptRehydrate")
        .unwrap();
    phase.outcome = crate::Outcome::Fail;
    phase.ok = false;
    phase.signature = Some(crate::Signature {
        kind: crate::SignatureKind::Integrity,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: violation.message(),
        pending: None,
        cause: None,
        observed: None,
        fault: None,
        component: None,
        integrity: Some(violation),
    });
    cell.verdict = Verdict::Fail;
    cell.failure_boundary = Some("promptRehydrate".into());
    r
}

#[test]
fn an_entry_can_name_the_invariant_an_integrity_failure_broke() {
    let entry = |invariant: &str| {
        format!("[[expect]]\ntarget = \"agent\"\nscenario = \"recreate-rehydrate\"\nverdict = \"fail\"\ninvariant = \"{invariant}\"\nreason = \"a gateway that repeats an event\"\n")
    };
    for (named, expected) in [
        ("stream", ExpectOutcome::Expected),
        ("store", ExpectOutcome::Changed),
    ] {
        let mut r = checker_failed(continuity_check::Invariant::Stream);
        parse(&entry(named))
            .unwrap()
            .judge(&mut r, GateOptions::default());
        assert_eq!(
            outcome(&r, "agent", "recreate-rehydrate").0,
            expected,
            "{named}"
        );
    }
    // The short signature names it too.
    let r = checker_failed(continuity_check::Invariant::Stream);
    let cell = r
        .cells
        .iter()
        .find(|c| c.point.scenario == "recreate-rehydrate")
        .unwrap();
    assert_eq!(
        cell.boundary_signature().unwrap().short(),
        "integrity: stream"
    );
    let e = parse(&entry("streams")).unwrap_err().to_string();
    assert!(
        e.contains("expect.toml:5") && e.contains("unknown invariant \"streams\""),
        "{e}"
    );
    // A flaky entry may name its failure by the invariant alone.
    let flaky = "[[expect]]\ntarget = \"agent\"\nscenario = \"recreate-rehydrate\"\nverdict = \"flaky\"\ninvariant = \"stream\"\nreason = \"a race\"\n";
    assert!(parse(flaky).is_ok());
}

proptest::proptest! {
    /// A pattern matches what its glob would, whether it is compared as
    /// text (no metacharacter), is `*`, or is compiled.
    #[test]
    fn a_pattern_matches_as_its_glob_does(
        text in "[a-c.@/*?\\[\\]{},!\\\\-]{0,6}",
        value in "[a-c.@/*?\\[\\]{},!\\\\-]{0,6}",
    ) {
        if let Ok(glob) = globset::Glob::new(&text) {
            let pattern = Pattern::new(&text).unwrap();
            proptest::prop_assert_eq!(pattern.is_match(&value), glob.compile_matcher().is_match(&value));
            proptest::prop_assert_eq!(pattern.is_match(&text), glob.compile_matcher().is_match(&text));
        }
    }
}

/// Every axis is a key of an entry, under its name (a new axis too), and
/// a key that is neither an axis's nor a field's is refused on its line,
/// naming every key an entry takes.
#[test]
fn every_axis_is_a_key_under_its_name_and_another_key_is_refused() {
    for axis in crate::Axis::ALL {
        let value = axis.known_names().map_or("x", |names| names[0]);
        let text = format!(
            "[[expect]]\nverdict = \"pass\"\n{} = \"{value}\"\n",
            axis.name()
        );
        let x = Expectations::parse(Path::new("x.toml"), &text).unwrap();
        let pattern = x.entries[0].axes[axis.index()].as_ref();
        assert_eq!(pattern.map(|p| p.text.as_str()), Some(value), "{text}");
    }
    let e = Expectations::parse(
        Path::new("x.toml"),
        "[[expect]]\nverdict = \"pass\"\nverdicts = \"a\"\n",
    )
    .unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.message.contains("unknown field `verdicts`"), "{e}");
    for key in [
        "target",
        "server",
        "persist",
        "verdict",
        "server_version",
        "invariant",
    ] {
        assert!(e.message.contains(&format!("`{key}`")), "{key}: {e}");
    }
    let e = Expectations::parse(Path::new("x.toml"), "[[expect]]\ntarget = \"a\"\n").unwrap_err();
    assert!(e.message.contains("missing field `verdict`"), "{e}");
}

/// An entry naming the one value a run had on an axis matches its cells,
/// which name none (a cell names a value only on an axis of several):
/// the value as the run records it, in its own field (the agent, the
/// store), as its only point (the server, the SDK), or for any other
/// axis in its recipe (`Recipe::values`).
#[test]
fn an_entry_naming_the_runs_only_value_on_an_axis_matches_its_cells() {
    for axis in crate::Axis::ALL {
        let mut report = fixture::report();
        let value = axis.known_names().map_or("only", |names| names[0]);
        let mut recipe: crate::Recipe = serde_json::from_value(serde_json::json!({
            "scenarios": [], "agents": [], "clients": [],
            "rivetSave": "immediate", "rivetStop": "kill", "trace": "summary"
        }))
        .unwrap();
        recipe.set_values(axis, vec![value.to_string()]);
        report.run.recipe = Some(recipe);
        let point = |axis| crate::AxisPoint {
            axis,
            label: value.into(),
            source: crate::PointSource::Registry,
            version: "0.4.2".into(),
            paths: Vec::new(),
            sha256: None,
        };
        match axis {
            crate::Axis::Agent => report.run.agent = value.into(),
            crate::Axis::Persist => report.run.persist = value.into(),
            crate::Axis::Server | crate::Axis::Sdk => report.run.points = vec![point(axis)],
            _ => {}
        }
        for cell in &mut report.cells {
            cell.point.clear(axis);
            if axis == crate::Axis::Sdk {
                // A value on the SDK axis is a hosted client's.
                cell.point.set(crate::ClientKind::TsSdk.into());
            }
        }
        let text = format!(
            "[[expect]]\nverdict = \"pass\"\n{} = \"{value}\"\n",
            axis.name()
        );
        let x = parse(&text).unwrap();
        let matched = report
            .cells
            .iter()
            .filter(|c| x.entries[0].matches(c, CellPlace::of(c, &report.run)))
            .count();
        assert_eq!(matched, report.cells.len(), "{axis:?}: {text}");
    }
}
