//! Scenario parsing: the built-in files, and every kind of mistake a user can make.
use super::*;
use std::collections::BTreeSet;

fn parse(source: &str) -> Result<Scenario, ScenarioError> {
    parse_scenario(Path::new("s.toml"), source)
}

const HEAD: &str = "name = \"t\"\n[[phase]]\nname = \"c\"\nstep = \"connect\"\nclient = \"a\"\n";

#[test]
fn the_builtin_scenarios_parse_with_the_seed_phase_names() {
    let all = builtin_scenarios();
    let names: Vec<Vec<&str>> = all
        .iter()
        .map(|s| s.phases.iter().map(|p| p.name.as_str()).collect())
        .collect();
    assert!(
        names[0].starts_with(&[
            "connectPrimary",
            "createSession",
            "promptBeforeRestart",
            "restart",
            "promptSameHandleAfterRestart"
        ]),
        "{names:?}"
    );
    for phase in ["getEvents", "resumeSession", "promptAfterResume"] {
        assert!(names[0].contains(&phase));
    }
    let verdict: Vec<&str> = all[0]
        .phases
        .iter()
        .filter(|p| p.decides_verdict)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        verdict,
        ["promptSameHandleAfterRestart", "promptAfterResume"]
    );
    for phase in ["seedPrompts", "createAfter", "promptRehydrate"] {
        assert!(names[1].contains(&phase), "{names:?}");
    }
    let seed = all[1]
        .phases
        .iter()
        .find(|p| p.name == "seedPrompts")
        .unwrap();
    assert!(matches!(&seed.step, Step::Prompt { texts, .. } if texts.len() == 2));
}

#[test]
fn sandbox_steps_check_fields_labels_and_paths() {
    let ok = format!(
        "{HEAD}[[phase]]\nname = \"w\"\nstep = \"write_file\"\nclient = \"a\"\npath = \"d/f.txt\"\ncontent = \"\"\n\
         [[phase]]\nname = \"s\"\nstep = \"spawn_process\"\nclient = \"a\"\nprocess = \"p\"\ncommand = \"cat\"\ntty = true\n\
         [[phase]]\nname = \"t\"\nstep = \"terminal_attach\"\nclient = \"a\"\nprocess = \"p\"\nterminal = \"t\"\n\
         [[phase]]\nname = \"e\"\nstep = \"terminal_expect\"\nterminal = \"t\"\n"
    );
    let s = parse(&ok).unwrap();
    assert!(
        matches!(&s.phases[2].step, Step::SpawnProcess { command, tty: true, .. } if command == &["cat"])
    );
    let cases = [
        ("step = \"read_file\"\nclient = \"a\"\npath = \"x\"", "file `x` is used before a `write_file` step makes it"),
        ("step = \"process_status\"\nclient = \"a\"\nprocess = \"q\"", "process `q` is used before a `spawn_process`"),
        ("step = \"terminal_send\"\nterminal = \"u\"\ntext = \"x\"", "terminal `u` is used before a `terminal_attach`"),
        ("step = \"write_file\"\nclient = \"a\"\npath = \"/etc/x\"\ncontent = \"x\"", "must be relative"),
        ("step = \"write_file\"\nclient = \"a\"\npath = \"../x\"\ncontent = \"x\"", "must be relative"),
        ("step = \"write_file\"\nclient = \"a\"\npath = \"x\"", "needs `content`"),
        ("step = \"spawn_process\"\nclient = \"a\"\nprocess = \"p\"\ncommand = []", "needs `command`"),
        ("step = \"spawn_process\"\nclient = \"a\"\nprocess = \"p\"\ncommand = \"x\"\nterminal = \"t\"", "`terminal` is not a field of step `spawn_process`"),
        ("step = \"process_status\"\nclient = \"b\"\nprocess = \"p\"", "client `b` is used before"),
        ("step = \"terminal_send\"\nterminal = \"t\"\ntext = [\"a\", \"b\"]", "one non-empty line"),
    ];
    for (phase, expected) in cases {
        let source = format!("{ok}[[phase]]\nname = \"bad\"\n{phase}\n");
        let error = parse(&source).unwrap_err().to_string();
        assert!(error.contains(expected), "{phase}: {error}");
        assert!(error.starts_with("s.toml:"), "{error}");
    }
    let builtin = builtin_scenarios();
    let reconnect = builtin
        .iter()
        .find(|s| s.name == "sandbox-reconnect")
        .unwrap();
    let verdict: Vec<&str> = reconnect
        .phases
        .iter()
        .filter(|p| p.decides_verdict)
        .map(|p| p.name.as_str())
        .collect();
    assert!(
        verdict.iter().all(|v| !v.ends_with("BeforeRestart")),
        "{verdict:?}"
    );
    assert!(
        verdict.contains(&"processAfterRestart") && verdict.contains(&"terminalEchoAfterReattach")
    );
}

#[test]
fn an_unknown_key_names_file_line_and_key() {
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"p\"\nstep = \"restart\"\ncolour = \"red\"\n"
    ))
    .unwrap_err();
    assert_eq!(e.file, Path::new("s.toml"));
    assert_eq!(e.line, Some(9), "{e}");
    assert!(e.message.contains("colour"), "{e}");
    assert!(e.to_string().starts_with("s.toml:9: "), "{e}");
}

#[test]
fn a_field_of_another_step_is_rejected_with_what_the_step_takes() {
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"p\"\nstep = \"connect\"\nclient = \"b\"\nlimit = 3\n"
    ))
    .unwrap_err();
    assert!(
        e.message
            .contains("`limit` is not a field of step `connect` (it takes: client)"),
        "{e}"
    );
    assert_eq!(e.line, Some(6));
}

#[test]
fn bad_values_say_what_was_expected() {
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"p\"\nstep = \"teleport\"\n"
    ))
    .unwrap_err();
    assert!(
        e.message
            .contains("unknown step \"teleport\"; expected one of: connect"),
        "{e}"
    );
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"p\"\nstep = \"restart\"\non_failure = \"maybe\"\n"
    ))
    .unwrap_err();
    assert!(e.message.contains("\"stop\" or \"continue\""), "{e}");
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"p\"\nstep = \"restart\"\ntimeout_ms = \"soon\"\n"
    ))
    .unwrap_err();
    assert!(
        e.message.contains("timeout_ms") || e.message.contains("integer"),
        "{e}"
    );
    assert_eq!(e.line, Some(9));
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"p\"\nstep = \"restart\"\ntimeout_ms = 0\n"
    ))
    .unwrap_err();
    assert!(e.message.contains("greater than 0"), "{e}");
}

#[test]
fn references_must_come_after_what_they_name() {
    let e = parse(&format!("{HEAD}[[phase]]\nname = \"p\"\nstep = \"prompt\"\nclient = \"a\"\nsession = \"s\"\ntext = \"x\"\n")).unwrap_err();
    assert!(
        e.message
            .contains("session `s` is used before a `create_session`"),
        "{e}"
    );
    let e =
        parse("name = \"t\"\n[[phase]]\nname = \"p\"\nstep = \"dispose\"\nclient = \"ghost\"\n")
            .unwrap_err();
    assert!(e.message.contains("client `ghost`"), "{e}");
    let e = parse(&format!("{HEAD}verdict_typo = 1\n")).unwrap_err();
    assert!(e.message.contains("verdict_typo"), "{e}");
}

#[test]
fn verdict_and_duplicates_are_checked() {
    let e = parse(&format!("verdict = [\"nope\"]\n{HEAD}")).unwrap_err();
    assert!(e.message.contains("verdict names phase `nope`"), "{e}");
    let e = parse(&format!(
        "{HEAD}[[phase]]\nname = \"c\"\nstep = \"sleep\"\nms = 1\n"
    ))
    .unwrap_err();
    assert!(e.message.contains("used twice"), "{e}");
}

#[test]
fn cleanup_steps_continue_and_default_their_name() {
    let s = parse(&format!(
        "{HEAD}[[cleanup]]\nstep = \"dispose\"\nclient = \"a\"\n"
    ))
    .unwrap();
    assert_eq!(s.cleanup[0].name, "dispose");
    assert!(s.cleanup[0].continue_on_failure);
    assert!(!s.cleanup[0].decides_verdict);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const HEADERS: &[&str] = &["[[phase]]", "[[cleanup]]", "[phase]", "[[phase.x]]"];
    const KEYS: &[&str] = &[
        "name",
        "description",
        "verdict",
        "step",
        "client",
        "session",
        "text",
        "from",
        "cwd",
        "limit",
        "integrity",
        "expect",
        "expect_stop_reason",
        "ms",
        "timeout_ms",
        "on_failure",
        "path",
        "content",
        "process",
        "command",
        "tty",
        "terminal",
        "logs_contain",
    ];
    const STEPS: &[&str] = &[
        "connect",
        "create_session",
        "prompt",
        "rehydrate_prompt",
        "restart",
        "get_events",
        "resume_session",
        "destroy_session",
        "dispose",
        "sleep",
        "health",
        "probe",
        "write_file",
        "read_file",
        "spawn_process",
        "process_status",
        "terminal_attach",
        "terminal_send",
        "terminal_expect",
        "terminal_reattach",
        "nope",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_scenario_parser_never_panics(
            text in crate::toml_props::document(HEADERS, KEYS),
            steps in proptest::collection::vec(proptest::sample::select(STEPS), 0..4),
        ) {
            // Real step names, so that cases reach the per-step checks.
            let mut source = String::from("name = \"p\"\n");
            for step in steps {
                source.push_str(&format!("[[phase]]\nname = \"{step}\"\nstep = \"{step}\"\nclient = \"c\"\nsession = \"s\"\n"));
            }
            source.push_str(&text);
            for candidate in [&text, &source] {
                if let Err(e) = parse(candidate) {
                    prop_assert!(e.to_string().starts_with("s.toml"), "{e}");
                }
            }
        }
    }
}

#[test]
fn recover_session_needs_one_text_and_a_created_session() {
    let head = "name = \"x\"\n[[phase]]\nname = \"c\"\nstep = \"connect\"\nclient = \"p\"\n[[phase]]\nname = \"s\"\nstep = \"create_session\"\nclient = \"p\"\nsession = \"n\"\n";
    let ok = format!("{head}[[phase]]\nname = \"load\"\nstep = \"recover_session\"\nclient = \"p\"\nsession = \"n\"\ntext = \"again\"\n");
    let scenario = parse_scenario(Path::new("x.toml"), &ok).unwrap();
    assert_eq!(
        scenario.phases[2].step,
        Step::RecoverSession {
            client: "p".into(),
            session: "n".into(),
            text: "again".into()
        }
    );
    let no_text = format!("{head}[[phase]]\nname = \"load\"\nstep = \"recover_session\"\nclient = \"p\"\nsession = \"n\"\n");
    let e = parse_scenario(Path::new("x.toml"), &no_text).unwrap_err();
    assert!(
        e.message.contains("step `recover_session` needs `text`"),
        "{e}"
    );
    let unknown_session = format!("{head}[[phase]]\nname = \"load\"\nstep = \"recover_session\"\nclient = \"p\"\nsession = \"other\"\ntext = \"t\"\n");
    let e = parse_scenario(Path::new("x.toml"), &unknown_session).unwrap_err();
    assert!(e.message.contains("session `other` is used before"), "{e}");
}

#[test]
fn native_load_is_built_in_and_judged_on_its_recovery() {
    let scenarios = builtin_scenarios();
    let load = scenarios.iter().find(|s| s.name == "native-load").unwrap();
    let verdict: Vec<&str> = load
        .phases
        .iter()
        .filter(|p| p.decides_verdict)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(verdict, ["promptBeforeRestart", "loadSessionAfterRestart"]);
}

/// Issue 43, item 4: `validate` accepted a phase named with a line break
/// and a workflow command (`a\n::error::x`), which every report then wrote.
#[test]
fn a_name_with_a_line_break_or_a_control_character_is_refused() {
    let scenario = |name: &str, phase: &str| {
        format!(
            "name = {}\n[[phase]]\nname = {}\nstep = \"connect\"\nclient = \"a\"\n",
            toml::Value::String(name.into()),
            toml::Value::String(phase.into())
        )
    };
    assert!(parse(&scenario("t", "connect")).is_ok());
    for (name, phase) in [
        ("t", "a\n::error::x"),
        ("t", "a\rb"),
        ("t", "\u{1b}[2Jx"),
        ("t", "x\u{202e}y"),
        ("t\n::error::x", "connect"),
        ("t\u{2028}", "connect"),
    ] {
        let e = parse(&scenario(name, phase)).unwrap_err().to_string();
        assert!(
            e.contains("one line of visible text"),
            "{name:?}/{phase:?}: {e}"
        );
        assert!(!e.contains(['\n', '\r', '\u{1b}', '\u{202e}']), "{e:?}");
    }
}

/// The step table of `scenarios/README.md` lists every kind once, with
/// exactly the fields the parser accepts for it.
#[test]
fn the_scenario_readme_documents_every_kind_with_its_fields() {
    let readme = include_str!("../../../scenarios/README.md");
    let all_fields: BTreeSet<&str> = StepKind::all()
        .iter()
        .flat_map(|&k| kinds::row_of(k).fields.iter().copied())
        .collect();
    let rows: Vec<(String, BTreeSet<String>)> = readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let step = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            step.parse::<StepKind>().ok()?;
            let fields = cells
                .get(2)?
                .split('`')
                .skip(1)
                .step_by(2)
                .filter_map(|quoted| quoted.split([' ', '=']).next())
                .filter(|word| all_fields.contains(word))
                .map(str::to_string)
                .collect();
            Some((step.to_string(), fields))
        })
        .collect();
    let mut documented: Vec<&str> = rows.iter().map(|(s, _)| s.as_str()).collect();
    documented.sort();
    let mut expected: Vec<&str> = StepKind::all().iter().map(|k| k.name()).collect();
    expected.sort();
    assert_eq!(documented, expected, "every step kind has one row");
    for (step, fields) in &rows {
        let kind: StepKind = step.parse().unwrap();
        let takes: BTreeSet<String> = kinds::row_of(kind)
            .fields
            .iter()
            .map(|f| f.to_string())
            .collect();
        assert_eq!(fields, &takes, "the fields documented for `{step}`");
    }
}
