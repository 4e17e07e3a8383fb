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
        .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::Skipped))
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
fn a_changed_or_missing_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("sandbox-agent");
    std::fs::write(&bin, b"build 1").unwrap();
    let mut report = report();
    let point = AxisPoint {
        axis: Axis::Server,
        label: "fix".into(),
        source: PointSource::Binary,
        version: "sandbox-agent 0.4.2".into(),
        paths: vec![bin.display().to_string()],
        sha256: Some(crate::digest::sha256_hex(b"build 1")),
    };
    report.run.points = vec![point.clone()];
    let plan = plan_of(&report, false).unwrap();
    assert!(
        shell_words(&plan.argv).contains(&format!("--server-bin fix={}", bin.display())),
        "{:?}",
        plan.argv
    );
    std::fs::write(&bin, b"build 2").unwrap();
    let e = super::plan(&report, &args(false)).err().unwrap();
    assert!(
        e.to_string().contains("the server point `fix`") && e.to_string().contains("changed"),
        "{e}"
    );
    std::fs::remove_file(&bin).unwrap();
    let e = super::plan(&report, &args(false)).err().unwrap();
    assert!(e.to_string().contains("cannot be read"), "{e}");
    // A point recorded before digests were cannot be told from another build.
    report.run.points = vec![AxisPoint {
        sha256: None,
        ..point
    }];
    let e = super::plan(&report, &args(false)).err().unwrap();
    assert!(e.to_string().contains("no recorded digest"), "{e}");
    // A config file that changed; a scenario that changed.
    let config = dir.path().join("continuity.toml");
    std::fs::write(&config, "[run]\n").unwrap();
    let mut report = self::report();
    let recipe = report.run.recipe.as_mut().unwrap();
    recipe.config = Some(FileIdentity {
        path: config.display().to_string(),
        sha256: "0".repeat(64),
    });
    let e = super::plan(&report, &args(false)).err().unwrap();
    assert!(e.to_string().contains("its config file"), "{e}");
    let mut report = self::report();
    report.run.recipe.as_mut().unwrap().scenarios[0].sha256 = "0".repeat(64);
    let e = super::plan(&report, &args(false)).err().unwrap();
    assert!(e.to_string().contains("has changed since it ran"), "{e}");
}
