//! What each command does: resolve settings (flags > seed-script environment
//! > config file > defaults), run, render, and pick the exit code.

use crate::cli::{MessageFormat, RivetSaveArg, RivetStopArg, RunArgs, Sources};
use crate::config::{from_seed_env, Config};
use crate::persist::StackStores;
use crate::report::{self, Report};
use crate::runner::{self, PersistChoice, RunEvent, RunSettings};
use crate::scenario::{builtin_scenarios, load_dir, Scenario};
use crate::stack::local::StackOptions;
use crate::targets::Target;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

mod agents;
mod clients;
mod deployment;
mod error;
mod events;
mod gate;
mod merge;
mod persists;
mod progress;
mod settings;
mod show;
mod stack;
mod versions;
mod workers;

use crate::stop_flag::wait_true;
pub use error::{exit_code, parse_error_exit_code, report, CommandError, Outcome};
pub use merge::{baseline, merge};
use progress::{print_progress, spawn_signal_handler};
pub use show::show;
pub use stack::{stack_down, stack_status, stack_up};

const DEFAULT_OVERALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Scenarios from `--scenarios-dir`, or the built-in ones.
pub fn load_scenarios(sources: &Sources) -> Result<Vec<Scenario>, CommandError> {
    match &sources.scenarios_dir {
        Some(dir) => Ok(load_dir(dir)?),
        None => Ok(builtin_scenarios()),
    }
}

fn load_config(sources: &Sources) -> Result<Option<Config>, CommandError> {
    sources
        .config
        .as_deref()
        .map(Config::load)
        .transpose()
        .map_err(CommandError::from)
}

/// Targets from the config file plus `SA_RESTART_CMD`, in that order.
fn configured_targets(config: Option<&Config>) -> Result<Vec<Target>, CommandError> {
    let mut targets = config.map(Config::targets).unwrap_or_default();
    if let Some(seed) = from_seed_env(std::env::vars())? {
        if targets.iter().any(|t| t.name == seed.name) {
            return Err(CommandError::usage(format!(
                "SA_RESTART_CMD defines target `{}`, which the config file defines too",
                seed.name
            )));
        }
        targets.push(seed);
    }
    Ok(targets)
}

/// Keeps the named items, in their order; an unknown name is a usage error naming the known ones.
fn select<T>(
    items: Vec<T>,
    wanted: &[String],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> Result<Vec<T>, CommandError> {
    if wanted.is_empty() {
        return Ok(items);
    }
    for w in wanted {
        if !items.iter().any(|i| name(i) == w) {
            let known: Vec<&str> = items.iter().map(&name).collect();
            return Err(CommandError::usage(format!(
                "unknown {what} `{w}` (known: {})",
                known.join(", ")
            )));
        }
    }
    Ok(items
        .into_iter()
        .filter(|i| wanted.iter().any(|w| w == name(i)))
        .collect())
}

/// Installs, for everything printed from now on, a redactor of the
/// secrets the config file and the environment hold.
fn redact_output_with(config: Option<&Config>) {
    let mut redactor = crate::secret::Redactor::none();
    if let Some(config) = config {
        config.add_secrets(&mut redactor);
    }
    redactor.add_secret_variables(std::env::vars());
    crate::secret::install(redactor);
}

/// `continuity validate`: parses everything, touches nothing.
pub fn validate(sources: &Sources) -> Result<String, CommandError> {
    redact_output_with(None);
    let config = load_config(sources)?;
    redact_output_with(config.as_ref());
    let scenarios = load_scenarios(sources)?;
    let targets = configured_targets(config.as_ref())?;
    let mut out = String::new();
    if let Some(c) = &config {
        out.push_str(&format!(
            "{}: ok ({} targets)\n",
            c.path().display(),
            targets.len()
        ));
    }
    for s in &scenarios {
        out.push_str(&format!(
            "{}: ok ({}, {} phases)\n",
            s.file.display(),
            s.name,
            s.phases.len()
        ));
    }
    Ok(out)
}

/// `continuity list`: targets and scenarios.
pub fn list(sources: &Sources) -> Result<String, CommandError> {
    redact_output_with(None);
    let config = load_config(sources)?;
    redact_output_with(config.as_ref());
    let scenarios = load_scenarios(sources)?;
    let targets = configured_targets(config.as_ref())?;
    let mut out = String::from("targets:\n");
    if targets.is_empty() {
        for (name, what) in crate::stack::local::TARGETS {
            out.push_str(&format!("  {name:<14} local stack: {what}\n"));
        }
    }
    for t in &targets {
        out.push_str(&format!("  {:<14} {}\n", t.name, t.describe()));
    }
    out.push_str("scenarios:\n");
    for s in &scenarios {
        let phases: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
        out.push_str(&format!(
            "  {:<20} {}{}\n  {:<20} phases: {}\n",
            s.name,
            s.description,
            if s.opt_in {
                " (only with --scenario)"
            } else {
                ""
            },
            "",
            phases.join(" → ")
        ));
    }
    Ok(out)
}

/// A run's `report.json` and its text: `path` is a run folder or the file itself.
pub(crate) fn read_report_text(path: &Path) -> Result<(PathBuf, String), CommandError> {
    let file = if path.is_dir() {
        path.join("report.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| CommandError::usage(format!("cannot read {}: {e}", file.display())))?;
    Ok((file, text))
}

/// Reads a run's report: a run folder or the report.json itself.
pub(crate) fn load_report(path: &Path) -> Result<Report, CommandError> {
    let (file, text) = read_report_text(path)?;
    report::compare::read_report(&text)
        .map_err(|e| CommandError::usage(format!("{}: {e}", file.display())))
}

/// `continuity compare`: cell by cell. A regression exits 1, and so does a
/// cell of the baseline the candidate lacks (unless `allow_missing`) or a
/// cell either report holds twice (always: which of the two would count?).
pub fn compare(
    baseline: &Path,
    candidate: &Path,
    allow_missing: bool,
) -> Result<Outcome, CommandError> {
    let (baseline, candidate) = (load_report(baseline)?, load_report(candidate)?);
    let rows = report::compare::compare(&baseline, &candidate);
    let color = crate::console::color(crate::console::Stream::Stdout);
    crate::console::out(&report::compare::render_comparison(
        &baseline, &candidate, &rows, color,
    ));
    let mut failed = report::compare::has_regressions(&rows);
    for (which, r) in [("baseline", &baseline), ("candidate", &candidate)] {
        let duplicated = report::compare::duplicated_cells(r);
        if !duplicated.is_empty() {
            crate::console::errln(&format!(
                "continuity: the {which} holds these cells more than once: {}",
                duplicated.join(", ")
            ));
            failed = true;
        }
    }
    let missing = report::compare::missing_cells(&rows);
    if !missing.is_empty() && !allow_missing {
        crate::console::errln(&format!(
            "continuity: the candidate lacks {} cell(s) of the baseline: {} (add --allow-missing to accept that)",
            missing.len(),
            missing.join(", ")
        ));
        failed = true;
    }
    Ok(Outcome::failed_if(failed))
}

pub(crate) fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// `continuity run`.
pub async fn run(args: RunArgs) -> Result<Outcome, CommandError> {
    // The environment's secrets first, so that even a config error cannot show one.
    redact_output_with(None);
    let config = load_config(&args.sources)?;
    // Then everything the run knows, before any other message.
    let redactor = settings::redactor(&args, config.as_ref());
    crate::secret::install(redactor.clone());
    let mut scenarios = select(
        load_scenarios(&args.sources)?,
        &args.scenarios,
        |s| s.name.as_str(),
        "scenario",
    )?;
    // `opt_in` scenarios run only when named.
    if args.scenarios.is_empty() {
        scenarios.retain(|s| !s.opt_in);
    }
    let run_defaults = config.as_ref().map(|c| c.run.clone()).unwrap_or_default();
    let token = settings::token(&args, config.as_ref())?;
    let base_url = settings::base_url(&args, config.as_ref())?;
    let agents = settings::agents(&args, config.as_ref())?;
    let timeout = settings::timeout(&args, config.as_ref())?;
    let id = short_id();
    let run_dir = args
        .out
        .clone()
        .unwrap_or_else(|| report::default_run_dir(Path::new("reports"), SystemTime::now(), &id));
    // Components run in folders of their own: a relative path would point elsewhere.
    let run_dir = std::path::absolute(&run_dir)
        .map_err(|e| CommandError::usage(format!("{}: {e}", run_dir.display())))?;
    let folder = report::RunFolder::create(&run_dir, args.force, redactor)?;
    // What the user chose (flags, then config; several make a persistence
    // axis); the local stack's store otherwise.
    let persist_axis = persists::distinct(&args.persist, &run_defaults.persist);
    let persist = persist_axis.first();
    let settings = RunSettings {
        id: id.clone(),
        token,
        headers: run_defaults.headers.clone(),
        timeout,
        overall_timeout: args
            .overall_timeout_ms
            .map(Duration::from_millis)
            .or(run_defaults.overall_timeout)
            .unwrap_or(DEFAULT_OVERALL_TIMEOUT),
        repeat: args.repeat.or(run_defaults.repeat).unwrap_or(1),
        retries: args.retries.or(run_defaults.retries).unwrap_or(0),
        flaky_result: args.gate.flaky_result.into(),
        partition: args.partition,
        scenarios,
        run_dir: run_dir.clone(),
        trace_level: args.trace.into(),
    };
    let expectations = gate::load_expectations(&args.gate, run_defaults.expect.as_deref())?;
    let (cancel_tx, cancel_rx) = watch::channel(false);
    spawn_signal_handler(cancel_tx);
    // Everything this run starts carries its owner tag, and a keeper kills
    // it all should the harness die without cleaning up (SIGKILL, a crash).
    let owner_tag = crate::supervise::owner::new_tag(&run_dir);
    crate::supervise::owner::adopt(&owner_tag);
    crate::supervise::keeper::start(&owner_tag).map_err(crate::stack::StackError::from)?;

    let color = crate::console::color(crate::console::Stream::Stderr);
    let format = args.message_format;
    let mut on_event = move |event: RunEvent| match format {
        MessageFormat::Human => print_progress(&event, color),
        MessageFormat::Json => events::emit(&events::event_json(&event)),
    };
    let versions = distinct_versions(&args.server_version)?;
    let client_axis = clients::distinct(&args.clients);
    // What the cells run on, built whole: a deployment, or one local stack
    // (`--jobs`: several). A version axis runs its own stacks and report.
    let (mut run_stacks, mut local_stacks, agent_skips) = match base_url {
        Some(_) if versions.len() > 1 => {
            return Err(CommandError::usage("several --server-version values make a version axis on the local stack; with --base-url or a config base_url the server's version is whatever runs there"));
        }
        Some(url) => {
            clients::refuse_without_rivet(&client_axis)?;
            let targets = configured_targets(config.as_ref())?;
            if targets.is_empty() {
                return Err(CommandError::usage("no restart targets: give --config with [targets.NAME] tables, or set SA_RESTART_CMD (without --base-url, continuity runs its own local stack)"));
            }
            let targets = select(targets, &args.targets, |t| t.name.as_str(), "target")?;
            let jobs = deployment::jobs(&args, &run_defaults, &targets);
            if let Some(x) = &expectations {
                let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
                x.check_names(&names, &scenario_names(&settings.scenarios))?;
            }
            let stacks = deployment::stacks(&settings, url, targets, persist, jobs).await?;
            (stacks, Vec::new(), Vec::new())
        }
        None => {
            if config
                .as_ref()
                .is_some_and(|c| !c.target_names().is_empty())
            {
                return Err(CommandError::usage("the config file defines targets but no base_url: set [run] base_url or --base-url"));
            }
            let options = StackOptions {
                run_dir: run_dir.join("stack"),
                server_version: versions[0].clone(),
                agent_program: std::env::current_exe().map_err(|e| {
                    CommandError::incomplete(format!("cannot find the continuity binary: {e}"))
                })?,
                only: args.targets.clone(),
                rivet_save: match args.rivet_save {
                    RivetSaveArg::Immediate => crate::stack::rivet::SaveMode::Immediate,
                    RivetSaveArg::Deferred => crate::stack::rivet::SaveMode::Deferred,
                },
                rivet_stop: match args.rivet_stop {
                    RivetStopArg::Kill => crate::stack::rivet::RunnerStop::Kill,
                    RivetStopArg::Graceful => crate::stack::rivet::RunnerStop::Graceful,
                },
                agents: agents.clone(),
                sdk_version: args.sdk_version.clone(),
                postgres: persist_axis.contains(&PersistChoice::Postgres),
                hosted_sqlite: persist_axis.contains(&PersistChoice::Sqlite)
                    && client_axis.contains(&crate::cli::ClientArg::TsSdk),
            };
            for name in &agents {
                crate::stack::agents::check_known(name)?;
            }
            let local_targets: Vec<&str> = select(
                crate::stack::local::TARGETS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect(),
                &args.targets,
                |n| n,
                "target",
            )?
            .into_iter()
            .filter(|n| crate::stack::local::selected(n, &args.targets))
            .collect();
            if let Some(x) = &expectations {
                let names: Vec<String> = local_targets.iter().map(|n| n.to_string()).collect();
                x.check_names(&names, &scenario_names(&settings.scenarios))?;
            }
            if versions.len() > 1 && client_axis.contains(&crate::cli::ClientArg::TsSdk) {
                return Err(CommandError::usage("--client ts-sdk with several --server-version values is not supported: run one version at a time"));
            }
            if versions.len() > 1 && persist_axis.len() > 1 {
                return Err(CommandError::usage("several --persist values with several --server-version values is not supported: run one axis at a time"));
            }
            if versions.len() > 1 {
                let jobs: Vec<usize> = versions
                    .iter()
                    .map(|v| local_jobs(&args, run_defaults.jobs, &settings, v))
                    .collect();
                let report = versions::run_versions(
                    &settings,
                    &options,
                    &versions,
                    persist,
                    &jobs,
                    &owner_tag,
                    cancel_rx.clone(),
                    &mut on_event,
                    &run_dir,
                )
                .await?;
                return finish(report, &args, expectations.as_ref(), &folder, &run_dir);
            }
            let jobs = local_jobs(&args, run_defaults.jobs, &settings, versions[0].as_str());
            let mut up =
                workers::up_stacks(&options, jobs, &owner_tag, "stack", cancel_rx.clone()).await?;
            let stacks = workers::attach(&mut up, persist, &run_dir);
            let skips = up[0].agent_skips.clone();
            (stacks, up, skips)
        }
    };
    let report = persists::run_persists(
        &persist_axis,
        &settings,
        &mut run_stacks,
        &client_axis,
        &agents,
        &agent_skips,
        cancel_rx.clone(),
        &mut on_event,
    )
    .await;
    workers::teardown(run_stacks, &mut local_stacks).await;
    crate::stack::state::end_journal();
    finish(report, &args, expectations.as_ref(), &folder, &run_dir)
}

/// Judges the report against the expectations, writes it and picks the exit code.
fn finish(
    mut report: Report,
    args: &RunArgs,
    expectations: Option<&crate::report::expect::Expectations>,
    folder: &report::RunFolder,
    run_dir: &Path,
) -> Result<Outcome, CommandError> {
    let format = args.message_format;
    if let Some(x) = expectations {
        gate::judge(x, &mut report, &args.gate);
    }
    let outcome = gate::finish(&report, folder, format, args.partition.is_some())?;
    if format == MessageFormat::Json {
        events::emit(&events::run_finished_json(
            &report,
            run_dir,
            outcome.exit_code(),
        ));
    }
    Ok(outcome)
}

/// Each cell's store: the user's choice (`--persist`, then the config's)
/// as this stack provides it, else the stack's Rivet actor when it runs
/// one, else SQLite.
fn run_persist(chosen: Option<&PersistChoice>, stack: &StackStores) -> PersistChoice {
    match (chosen, &stack.rivet) {
        (Some(choice), _) => stack.resolve(choice),
        (None, Ok(factory)) => PersistChoice::Custom {
            name: "rivet".into(),
            factory: factory.clone(),
        },
        (None, Err(_)) => PersistChoice::Sqlite,
    }
}

/// How many stacks the local stack runs side by side: `--jobs` (or the
/// number of CPUs), never more than one stack's share of cells needs, with
/// a message when that is fewer than asked.
fn local_jobs(
    args: &RunArgs,
    config_jobs: Option<u32>,
    settings: &RunSettings,
    version: &str,
) -> usize {
    let given = args.jobs.or(config_jobs);
    let asked = given
        .map(|j| j as usize)
        .unwrap_or_else(workers::default_jobs);
    let targets: Vec<String> = crate::stack::local::TARGETS
        .iter()
        .map(|(n, _)| n.to_string())
        .filter(|n| crate::stack::local::selected(n, &args.targets))
        .collect();
    let axis_version = (args.server_version.len() > 1).then_some(version);
    let cells = workers::cells_per_stack(
        &targets,
        &scenario_names(&settings.scenarios),
        args.partition.as_ref(),
        axis_version,
    );
    let (jobs, message) = runner::workers_for(asked, cells);
    if let (Some(message), Some(_)) = (message, given) {
        crate::console::errln(&format!("continuity: {message}"));
    }
    jobs
}

/// The `--server-version` values, each once; several make a version axis.
fn distinct_versions(given: &[String]) -> Result<Vec<String>, CommandError> {
    let mut versions: Vec<String> = Vec::new();
    for v in given {
        let v = v.trim();
        if v.is_empty() {
            return Err(CommandError::usage("--server-version: empty version"));
        }
        if versions.iter().any(|known| known == v) {
            return Err(CommandError::usage(format!(
                "--server-version {v} is given twice"
            )));
        }
        versions.push(v.to_string());
    }
    Ok(versions)
}

fn scenario_names(scenarios: &[Scenario]) -> Vec<String> {
    scenarios.iter().map(|s| s.name.clone()).collect()
}
