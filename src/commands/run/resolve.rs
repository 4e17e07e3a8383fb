//! The first step of `continuity run`: everything the run is given, read
//! and checked before anything starts (the config file, the scenarios, the
//! settings, each from its flag, else the config's `[run]`, else its
//! default, the axes chosen, the expectations, the recipe a rerun reads),
//! and the run folder created.

use super::{Found, Resolved};
use crate::cli::RunArgs;
use crate::commands::{axes, gate, recipe, settings, CommandError, Given};
use crate::commands::{load_config, load_scenarios, redact_output_with, scenario_names};
use crate::commands::{select_scenarios, short_id};
use crate::report;
use crate::runner::RunSettings;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const DEFAULT_OVERALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The outermost folder of `dir` that does not exist yet, if any.
fn first_missing(dir: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.exists()) {
        missing = Some(d.to_path_buf());
        at = d.parent();
    }
    missing
}

/// The first step of [`run_in`](super::run_in): reads and checks everything the run is
/// given, and creates its folder (noted in `created`).
pub(super) async fn resolve(
    args: &RunArgs,
    given: Given,
    created: &mut Option<(PathBuf, PathBuf)>,
) -> Result<Resolved, CommandError> {
    // The environment's secrets first, so that even a config error cannot show one.
    redact_output_with(None);
    let config = load_config(&args.sources)?;
    // Then everything the run knows, before any other message.
    let redactor = settings::redactor(args, config.as_ref());
    crate::secret::install(redactor.clone());
    let loaded = load_scenarios(&args.sources)?;
    // What an expectations file may name: every scenario and target the
    // run knows, not only those it runs, so one file gates a subset too
    // (a typo, which names nothing known, is still refused).
    let known_scenarios = scenario_names(&loaded);
    let mut scenarios = select_scenarios(loaded, &args.scenarios, |s| s.name.as_str(), "scenario")?;
    // `opt_in` scenarios run only when named.
    if args.scenarios.is_empty() {
        scenarios.retain(|s| !s.opt_in);
    }
    let run_defaults = config.as_ref().map(|c| c.run.clone()).unwrap_or_default();
    let token = settings::token(args, config.as_ref())?;
    let base_url = settings::base_url(args, config.as_ref())?;
    let agents = settings::agents(args, config.as_ref())?;
    let timeout = settings::timeout(args, config.as_ref())?;
    let timings = settings::timings(args)?;
    // What the user chose (flags, then config; several make a persistence
    // axis); the local stack's store otherwise.
    let chosen =
        axes::Chosen::of(args, config.as_ref(), agents.clone(), &run_defaults.persist).await?;
    if base_url.is_some() {
        chosen.refuse_on_a_deployment()?;
    }
    let (id, run_dir, folder) = create_run_folder(args, redactor, created)?;
    let settings = run_settings(
        args,
        &run_defaults,
        Found {
            id: id.clone(),
            token,
            timeout,
            timings,
            scenarios,
            run_dir: run_dir.clone(),
        },
    );
    crate::console::errln(&format!(
        "continuity: seed {0} (the same faults again: --seed {0})",
        settings.seed
    ));
    let expect_path = args
        .gate
        .expect
        .as_deref()
        .or(run_defaults.expect.as_deref());
    let expectations = gate::load_expectations(&args.gate, run_defaults.expect.as_deref())?;
    let recipe = recipe::record(&recipe::Sources {
        args,
        config: config.as_ref(),
        settings: &settings,
        chosen: &chosen,
        base_url: base_url.as_deref(),
        expect: expect_path,
        given: &given,
    })?;
    Ok(Resolved {
        config,
        run_defaults,
        known_scenarios,
        base_url,
        agents,
        chosen,
        id,
        run_dir,
        folder,
        settings,
        expectations,
        recipe,
        only: given.only,
        schedules: given.schedules,
    })
}

/// The run's settings: each from its flag, else the config file's `[run]`,
/// else its default.
fn run_settings(
    args: &RunArgs,
    run_defaults: &crate::config::RunDefaults,
    found: Found,
) -> RunSettings {
    RunSettings {
        id: found.id,
        token: found.token,
        headers: run_defaults.headers.clone(),
        timeout: found.timeout,
        overall_timeout: args
            .overall_timeout_ms
            .map(Duration::from_millis)
            .or(run_defaults.overall_timeout)
            .unwrap_or(DEFAULT_OVERALL_TIMEOUT),
        hang_grace: Some(
            args.hang_grace_ms
                .map(Duration::from_millis)
                .or(run_defaults.hang_grace)
                .unwrap_or(crate::scenario::DEFAULT_HANG_GRACE),
        )
        .filter(|grace| !grace.is_zero()),
        repeat: args.repeat.or(run_defaults.repeat).unwrap_or(1),
        retries: args.retries.or(run_defaults.retries).unwrap_or(0),
        flaky_result: args.gate.flaky_result.into(),
        partition: args.partition,
        timings: found.timings,
        scenarios: found.scenarios,
        run_dir: found.run_dir,
        trace_level: args.trace.into(),
        seed: args
            .seed
            .or(run_defaults.seed)
            .unwrap_or_else(crate::seed::fresh),
    }
}

/// The run's id and folder (created: `--force` or empty), its path made
/// absolute; `created` notes the outermost folder it had to create.
fn create_run_folder(
    args: &RunArgs,
    redactor: crate::secret::Redactor,
    created: &mut Option<(PathBuf, PathBuf)>,
) -> Result<(String, PathBuf, report::RunFolder), CommandError> {
    let id = short_id();
    let run_dir = args
        .out
        .clone()
        .unwrap_or_else(|| report::default_run_dir(Path::new("reports"), SystemTime::now(), &id));
    // Components run in folders of their own: a relative path would point elsewhere.
    let run_dir = std::path::absolute(&run_dir)
        .map_err(|e| CommandError::usage(format!("{}: {e}", run_dir.display())))?;
    let missing = first_missing(&run_dir);
    let folder = report::RunFolder::create(&run_dir, args.force, redactor, "continuity run")?;
    *created = missing.map(|first| (run_dir.clone(), first));
    Ok((id, run_dir, folder))
}
