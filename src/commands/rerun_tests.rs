//! The rerun's plan from a report: which cells, which command line, and
//! what is refused.

use super::*;
use crate::report::{FileIdentity, ScenarioIdentity};

fn args(failed: bool) -> RerunArgs {
    RerunArgs {
        run: "r".into(),
        failed,
        out: Some("/tmp/rerun-out".into()),
        force: false,
        jobs: None,
        message_format: MessageFormat::Human,
        sources: Default::default(),
        base_url: None,
        token_env: None,
        expect: None,
        server_bins: Vec::new(),
        sdks: Vec::new(),
    }
}

/// The fixture's run (agent and gateway × native-continuity and more),
/// with a recipe of built-in scenarios as they are now.
fn report() -> Report {
    let mut report = crate::report::fixture::report();
    let builtin = crate::scenario::builtin_scenarios();
    report.run.seed = Some(42);
    report.run.recipe = Some(Recipe {
        targets: Vec::new(),
        scenarios: report
            .run
            .scenarios
            .iter()
            .map(|name| ScenarioIdentity {
                name: name.clone(),
                sha256: builtin
                    .iter()
                    .find(|s| &s.name == name)
                    .map(|s| s.digest.clone())
                    .unwrap_or_else(|| panic!("no built-in scenario {name}")),
            })
            .collect(),
        scenarios_dir: None,
        config: None,
        base_url: None,
        token_env: None,
        agents: vec!["mock".into()],
        clients: vec!["rust".into()],
        persist: Vec::new(),
        axes: Default::default(),
        hang_grace_ms: Some(2000),
        rivet_save: "immediate".into(),
        rivet_stop: "kill".into(),
        trace: "summary".into(),
        expect: None,
        cells: Vec::new(),
        rerun_of: None,
    });
    report
}

#[test]
fn failed_picks_the_cells_that_did_not_pass_and_narrows_the_command_line() {
    let report = report();
    let failed = plan(&report, &args(true)).unwrap().unwrap();
    let failing: Vec<&Point> = report
        .cells
        .iter()
        .filter(|c| {
            !matches!(
                c.verdict,
                Verdict::Pass | Verdict::Skipped | Verdict::NotApplicable
            )
        })
        .map(|c| &c.point)
        .collect();
    assert!(!failing.is_empty() && failing.len() < report.cells.len());
    assert_eq!(failed.given.only.iter().collect::<Vec<_>>(), failing);
    assert_eq!(
        failed.given.rerun_of.as_deref(),
        Some(report.run.id.as_str())
    );
    let line = shell_words(&failed.argv);
    assert!(line.starts_with("continuity run --seed 42 "), "{line}");
    for target in failing.iter().map(|p| &p.target) {
        assert!(line.contains(&format!("--target {target}")), "{line}");
    }
    assert_eq!(failed.args.seed, Some(42));
    assert_eq!(failed.args.repeat, Some(report.run.repeat));
    assert_eq!(failed.args.hang_grace_ms, Some(2000));
    assert_eq!(
        failed.args.out.as_deref(),
        Some(Path::new("/tmp/rerun-out"))
    );
    // Nothing failed: nothing to rerun.
    let mut green = report.clone();
    for cell in &mut green.cells {
        cell.verdict = Verdict::Pass;
    }
    assert!(plan_of(&green, true).is_none());
    // Without --failed: every cell, the run's own targets selection.
    let all = plan(&report, &args(false)).unwrap().unwrap();
    assert!(all.given.only.is_empty());
    assert!(!shell_words(&all.argv).contains("--target"));
}

fn plan_of(report: &Report, failed: bool) -> Option<Plan> {
    plan(report, &args(failed)).unwrap()
}

#[test]
fn a_report_without_a_recipe_or_a_seed_is_refused_saying_why() {
    let mut v2: Report =
        serde_json::from_str(include_str!("../../tests/fixtures/report-v2/report.json")).unwrap();
    let e = plan(&v2, &args(true)).err().unwrap();
    assert_eq!(e.exit_code(), crate::exit_codes::USAGE);
    assert!(e.to_string().contains("run.recipe"), "{e}");
    v2.run.recipe = report().run.recipe;
    v2.run.seed = None;
    let e = plan(&v2, &args(true)).err().unwrap();
    assert!(e.to_string().contains("no single seed"), "{e}");
}

#[test]
fn the_users_build_and_config_are_checked_against_the_recorded_digests() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("sandbox-agent");
    std::fs::write(&bin, b"build 1").unwrap();
    let mut report = report();
    let point = AxisPoint {
        axis: Axis::Server,
        label: "fix".into(),
        source: PointSource::Binary,
        version: "sandbox-agent 0.4.2".into(),
        paths: vec!["/somewhere/the/report/says".into()],
        sha256: Some(crate::digest::sha256_hex(b"build 1")),
    };
    report.run.points = vec![point.clone()];
    let mut given = args(false);
    given.server_bins = vec![format!("fix={}", bin.display())];
    let plan = plan(&report, &given).unwrap().unwrap();
    let line = shell_words(&plan.argv);
    assert!(
        line.contains(&format!("--server-bin fix={}", bin.display())),
        "{line}"
    );
    assert!(
        !line.contains("/somewhere"),
        "the report's path is never used: {line}"
    );
    std::fs::write(&bin, b"build 2").unwrap();
    let e = super::plan(&report, &given).err().unwrap();
    assert!(
        e.to_string().contains("the server build `fix`")
            && e.to_string().contains("not what the run ran"),
        "{e}"
    );
    std::fs::remove_file(&bin).unwrap();
    let e = super::plan(&report, &given).err().unwrap();
    assert!(e.to_string().contains("cannot be read"), "{e}");
    // A point recorded before digests were cannot be told from another build.
    report.run.points = vec![AxisPoint {
        sha256: None,
        ..point
    }];
    let e = super::plan(&report, &given).err().unwrap();
    assert!(e.to_string().contains("no recorded digest"), "{e}");
    // A label the run did not have.
    let mut other = args(false);
    other.server_bins = vec![format!("other={}", bin.display())];
    let e = super::plan(&self::report(), &other).err().unwrap();
    assert!(e.to_string().contains("no server build labelled"), "{e}");
    // The user's config file must be the one the run read.
    let config = dir.path().join("continuity.toml");
    std::fs::write(&config, "[run]\n").unwrap();
    let mut report = self::report();
    report.run.recipe.as_mut().unwrap().config = Some(FileIdentity {
        path: "/the/report/s/continuity.toml".into(),
        sha256: "0".repeat(64),
    });
    let mut given = args(false);
    given.sources.config = Some(config.clone());
    let e = super::plan(&report, &given).err().unwrap();
    assert!(
        e.to_string().contains("the config file") && e.to_string().contains("not what the run ran"),
        "{e}"
    );
    // A config when the run had none is not the run's.
    let e = super::plan(&self::report(), &given).err().unwrap();
    assert!(e.to_string().contains("ran without a config file"), "{e}");
    let mut report = self::report();
    report.run.recipe.as_mut().unwrap().scenarios[0].sha256 = "0".repeat(64);
    let e = super::plan(&report, &args(false)).err().unwrap();
    assert!(e.to_string().contains("is not the one it ran"), "{e}");
}

/// Issue 43, items 1 and 2: a report naming a deployment, a token
/// variable, files and a candidate build gave them all to the rerun (the
/// URL over the user's own, any variable's value sent to it, a relative
/// binary of the artifact run). Now none is taken: the rerun is refused
/// with the flags the user must give, and the argv holds none of them.
#[test]
fn a_report_chooses_no_url_credential_file_or_build() {
    let mut report = report();
    let recipe = report.run.recipe.as_mut().unwrap();
    recipe.base_url = Some("http://127.0.0.1:9/\x1b[2Jevil".into());
    recipe.token_env = Some("AWS_SECRET_ACCESS_KEY".into());
    recipe.config = Some(FileIdentity {
        path: "./artifact/continuity.toml".into(),
        sha256: "a".repeat(64),
    });
    recipe.scenarios_dir = Some("./artifact/scenarios".into());
    recipe.expect = Some("./artifact/expect.toml".into());
    report.run.points = vec![AxisPoint {
        axis: Axis::Server,
        label: "fix".into(),
        source: PointSource::Binary,
        version: "sandbox-agent 0.4.2".into(),
        paths: vec!["./artifact/sandbox-agent".into()],
        sha256: Some("b".repeat(64)),
    }];
    let e = plan(&report, &args(false)).err().unwrap().to_string();
    for flag in [
        "--base-url URL",
        "--token-env VAR",
        "--config FILE",
        "--scenarios-dir DIR",
        "--expect FILE",
        "--server-bin fix=PATH",
    ] {
        assert!(e.contains(flag), "{flag} in: {e}");
    }
    assert!(!e.contains('\x1b'), "{e:?}");
    // The user's URL must be the run's.
    let mut given = args(false);
    given.base_url = Some("http://127.0.0.1:8/".into());
    given.token_env = Some("MY_TOKEN".into());
    let line = command_line(
        &report,
        report.run.recipe.as_ref().unwrap(),
        1,
        &[],
        &given,
        &Candidates { given: Vec::new() },
    );
    let line = shell_words(&line);
    for word in ["artifact", "AWS_SECRET", "127.0.0.1:9"] {
        assert!(!line.contains(word), "{word} in {line}");
    }
    assert!(
        line.contains("--base-url http://127.0.0.1:8/ --token-env MY_TOKEN"),
        "{line}"
    );
}

#[test]
fn a_url_other_than_the_runs_is_refused() {
    let mut report = report();
    report.run.recipe.as_mut().unwrap().base_url = Some("http://127.0.0.1:9".into());
    let mut given = args(false);
    given.base_url = Some("http://127.0.0.1:8".into());
    let e = plan(&report, &given).err().unwrap().to_string();
    assert!(
        e.contains("it connected to http://127.0.0.1:9, you gave http://127.0.0.1:8"),
        "{e}"
    );
    given.base_url = Some("http://127.0.0.1:9/".into());
    if let Err(e) = plan(&report, &given) {
        panic!("the same deployment: {e}");
    }
    // A local run given a deployment.
    let e = plan(&self::report(), &given).err().unwrap().to_string();
    assert!(e.contains("ran on the local stack"), "{e}");
}

/// Issue 43, item 8: a digest of non-ASCII text panicked (exit 101) when
/// cut to its first 12 bytes for the message.
#[test]
fn a_digest_that_is_not_hex_is_refused_without_a_panic() {
    let mut report = report();
    report.run.points = vec![AxisPoint {
        axis: Axis::Server,
        label: "fix".into(),
        source: PointSource::Binary,
        version: "sandbox-agent 0.4.2".into(),
        paths: Vec::new(),
        sha256: Some("ééééééééééééééééééééééééééééééééé".into()),
    }];
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("sandbox-agent");
    std::fs::write(&bin, b"x").unwrap();
    let mut given = args(false);
    given.server_bins = vec![format!("fix={}", bin.display())];
    let e = plan(&report, &given).err().unwrap().to_string();
    assert!(e.contains("not a SHA-256"), "{e}");
    assert_eq!(short("éééééééééééééé"), "éééééééééééé");
}

/// Every axis's values the run chose reach the rerun's command line, and
/// the rerun chooses them again: from `Axis::ALL`, so an axis added since
/// is carried as the agents, clients and stores are (a throwaway `region`
/// axis was left out, and its rerun ran its default values).
#[tokio::test]
async fn every_axis_the_run_chose_is_chosen_again_by_its_rerun() {
    use crate::commands::axes::Chosen;
    async fn chosen(args: &RunArgs) -> Chosen {
        let agents = crate::commands::settings::agents(args, None).unwrap();
        Chosen::of(args, None, agents, &[]).await.unwrap()
    }
    let run_args = |argv: &[String]| match Cli::try_parse_from(argv).unwrap().command {
        Command::Run(args) => *args,
        other => panic!("{other:?}"),
    };
    let mut argv: Vec<String> = vec!["continuity".into(), "run".into()];
    let defaults = chosen(&run_args(&argv)).await;
    // A value other than the default on each axis chosen by a flag of its
    // name: the last of a fixed set of names, else a label.
    for axis in Axis::ALL
        .into_iter()
        .filter(|a| defaults.values(*a).is_some())
    {
        let value = axis
            .known_names()
            .map_or("x", |names| names[names.len() - 1]);
        argv.extend([format!("--{}", axis.name()), value.to_string()]);
    }
    let then = chosen(&run_args(&argv)).await;
    let mut report = report();
    let recipe = report.run.recipe.as_mut().unwrap();
    super::super::recipe::record_axes(recipe, &then);
    let plan = plan_of(&report, false).unwrap();
    let again = chosen(&plan.args).await;
    for axis in Axis::ALL {
        if defaults.values(axis).is_some() {
            assert_ne!(
                then.values(axis),
                defaults.values(axis),
                "{axis:?}: {argv:?}"
            );
        }
        assert_eq!(
            again.values(axis),
            then.values(axis),
            "{axis:?}: {:?}",
            plan.argv
        );
    }
}

/// A recipe naming an axis this continuity does not know (a report from a
/// later one, or a hostile one) is refused, not run without it, and its
/// name reaches no flag of the command line.
#[test]
fn a_recipe_on_an_unknown_axis_is_refused() {
    let mut report = report();
    let recipe = report.run.recipe.as_mut().unwrap();
    recipe.axes.insert(
        "base-url\u{1b}[2J".into(),
        vec!["http://example.com".into()],
    );
    let Err(e) = plan(&report, &args(false)) else {
        panic!("a rerun on an unknown axis");
    };
    assert!(
        e.to_string()
            .contains("it ran on an axis this continuity does not know: `base-url\\x1b[2J`"),
        "{e}"
    );
}
