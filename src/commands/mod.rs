//! What each command does: resolve settings (flags > seed-script environment
//! > config file > defaults), run, render, and pick the exit code.

use crate::cli::{MessageFormat, RivetSaveArg, RivetStopArg, RunArgs, Sources};
use crate::config::{from_seed_env, Config};
use crate::persist::Store;
use crate::report::{self, Report};
use crate::runner::{self, Matrix, RunEvent, RunSettings, ServerPoint};
use crate::scenario::{builtin_scenarios, load_dir, Scenario};
use crate::stack::local::{StackOptions, StackServer};
use crate::targets::{OwnTarget, Selection, Target, TargetId};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

mod axes;
mod bisect;
mod candidates;
mod cell_line;
mod check;
mod compare;
mod deployment;
mod deployment_faults;
mod error;
mod events;
mod export;
mod gate;
pub mod interrupts;
mod merge;
mod partial;
mod progress;
mod recipe;
mod rerun;
mod settings;
mod show;
mod stack;
mod workers;

use crate::stop_flag::wait_true;
pub use bisect::bisect;
pub use check::check;
pub use compare::{compare, compare_within};
pub use error::{exit_code, parse_error_exit_code, report, CommandError, Outcome};
pub use export::export_chrome_trace;
pub use merge::{baseline, merge};
use progress::{spawn_signal_handler, Progress};
pub use rerun::rerun;
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
        if targets.iter().any(|t| t.id == seed.id) {
            return Err(CommandError::usage(format!(
                "SA_RESTART_CMD defines target `{}`, which the config file defines too",
                seed.id
            )));
        }
        targets.push(seed);
    }
    Ok(targets)
}

/// Keeps the named items, in their order; an unknown name is a usage error naming the known ones.
fn select_scenarios<T>(
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
    // The expectations file the config names is read as `run` would read it.
    if let Some(path) = config.as_ref().and_then(|c| c.run.expect.as_deref()) {
        let expectations = crate::report::expect::Expectations::load(path)?;
        let names: Vec<String> = if targets.is_empty() {
            let faults = config
                .as_ref()
                .map(Config::fault_targets)
                .unwrap_or_default();
            crate::stack::local::known_targets(&faults)
                .into_iter()
                .map(|k| k.id.to_string())
                .collect()
        } else {
            targets.iter().map(|t| t.id.to_string()).collect()
        };
        expectations.check_names(&names, &scenario_names(&scenarios))?;
        out.push_str(&format!("{}: ok\n", path.display()));
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
        let known = crate::stack::local::known_targets(&[]);
        // As wide as the longest name, so every description starts in one column.
        let width = known.iter().map(|k| k.id.name().len()).max().unwrap_or(0);
        for known in known {
            out.push_str(&format!(
                "  {:<width$} local stack: {}\n",
                known.id.name(),
                known.what
            ));
        }
    }
    for t in &targets {
        out.push_str(&format!("  {:<14} {}\n", t.id, t.describe()));
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

/// A run folder opened for reading, as every command that reads a run
/// opens it ([`report::RunDir`]): `path` is the folder or a report file in
/// it, in any form; every file read from it stays inside it.
pub(crate) fn open_run(path: &Path) -> Result<report::RunDir, CommandError> {
    report::RunDir::open(path).map_err(|e| CommandError::usage(e.to_string()))
}

/// Reads a run's report: a run folder or the report.json itself.
pub(crate) fn load_report(path: &Path) -> Result<Report, CommandError> {
    open_run(path)?
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))
}

pub(crate) fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// What a run is given beyond its command line, by `rerun` and `bisect`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Given {
    /// Only the cells of the matrix these select (see
    /// [`report::Point::selects`]); empty: every cell.
    pub only: Vec<report::Point>,
    /// The id of the run this one runs again.
    pub rerun_of: Option<String>,
    /// The schedules of faults the run this one runs again recorded, by
    /// cell: each is drawn again here and must be the same (`rerun`).
    pub schedules: Vec<(report::Point, report::Schedule)>,
}

/// `continuity run`. A usage error leaves no `--out` behind: the folders
/// it created for the run are removed again (while still empty).
pub async fn run(args: RunArgs) -> Result<Outcome, CommandError> {
    run_given(args, Given::default()).await
}

/// [`run`], of only the cells `given` selects.
pub(crate) async fn run_given(args: RunArgs, given: Given) -> Result<Outcome, CommandError> {
    let mut created = None;
    let result = run_in(args, given, &mut created).await;
    if let (Err(e), Some((run_dir, first))) = (&result, created) {
        if e.exit_code() == crate::exit_codes::USAGE {
            // The lock file this run made is all a folder it made holds.
            let _ = std::fs::remove_file(run_dir.join(report::RUN_LOCK_FILE));
            let mut dir = Some(run_dir.as_path());
            while let Some(d) = dir.filter(|d| d.starts_with(&first)) {
                if std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }
    result
}

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

/// [`run`], noting in `created` the run folder and the outermost folder it
/// had to create for it.
async fn run_in(
    args: RunArgs,
    given: Given,
    created: &mut Option<(PathBuf, PathBuf)>,
) -> Result<Outcome, CommandError> {
    let resolved = resolve(&args, given, created).await?;
    let watch = Watch::start(&resolved, args.message_format)?;
    // A deployment's fault proxies ([faults]) live as long as the run.
    let mut deployment_hops = None;
    let Some(plan) = plan(&args, &resolved, &watch, &mut deployment_hops).await? else {
        return watch.stopped_at_start(&resolved.id).await;
    };
    let report = execute(&resolved, plan, deployment_hops, &watch).await;
    finish(report, &args, &resolved)
}

/// Everything `run` settles before it starts anything: the config file,
/// the scenarios, the settings and axes chosen, the run folder (created
/// here) and the expectations.
struct Resolved {
    config: Option<Config>,
    run_defaults: crate::config::RunDefaults,
    /// What an expectations file may name among the scenarios.
    known_scenarios: Vec<String>,
    /// The deployment's URL; `None` means the local stack.
    base_url: Option<String>,
    agents: Vec<String>,
    chosen: axes::Chosen,
    id: String,
    run_dir: PathBuf,
    folder: report::RunFolder,
    settings: RunSettings,
    expectations: Option<crate::report::expect::Expectations>,
    /// What `rerun` needs (`run.recipe`).
    recipe: report::Recipe,
    /// Only the cells these select (`rerun`, `bisect`); empty: every cell.
    only: Vec<report::Point>,
    /// What a rerun's cells' schedules must be drawn as again.
    schedules: Vec<(report::Point, report::Schedule)>,
}

/// The first step of [`run_in`]: reads and checks everything the run is
/// given, and creates its folder (noted in `created`).
async fn resolve(
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

/// What [`resolve`] has found out before the run's settings are made.
struct Found {
    id: String,
    token: Option<crate::secret::Secret>,
    timeout: Duration,
    timings: runner::cost::Timings,
    scenarios: Vec<Scenario>,
    run_dir: PathBuf,
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

/// What watches a run from before its first process starts until it ends:
/// the partial report a Ctrl-C writes, the claim on its sandbox folders,
/// the cancel flag, the supervisor of everything it starts and the live
/// progress area. Fields drop in this order (the progress area is cleared
/// before the supervisor goes, the claim last).
struct Watch {
    partial: partial::PartialRun,
    format: MessageFormat,
    _cleared: ClearOnDrop,
    progress: Progress,
    supervisor: crate::supervise::Supervisor,
    cancel_rx: watch::Receiver<bool>,
    _sandbox_claim: Option<crate::scenario::sandbox_root::RunClaim>,
}

impl Watch {
    fn start(resolved: &Resolved, format: MessageFormat) -> Result<Watch, CommandError> {
        let Resolved {
            settings,
            base_url,
            agents,
            chosen,
            ..
        } = resolved;
        let partial = partial::PartialRun::new(
            resolved.folder.clone(),
            partial::run_info(
                settings,
                base_url.as_deref(),
                agents,
                &chosen.persists,
                match base_url {
                    Some(_) => Vec::new(),
                    None => chosen.axes(chosen.servers.clone(), Store::Sqlite).points(),
                },
                resolved.recipe.clone(),
            ),
        );
        // Sandbox folders of runs that died without removing them (SIGKILL, a
        // crash) go now; this run's are claimed until it ends.
        crate::scenario::sandbox_root::sweep_dead();
        let sandbox_claim = crate::scenario::sandbox_root::claim(&resolved.id);
        let (cancel_tx, cancel_rx) = watch::channel(false);
        spawn_signal_handler(cancel_tx, partial.clone());
        // Everything this run starts carries its owner tag, and a keeper kills
        // it all should the harness die without cleaning up (SIGKILL, a crash).
        let owner_tag = crate::supervise::owner::new_tag(&resolved.run_dir);
        let supervisor = crate::supervise::Supervisor::owned(owner_tag.clone())
            .map_err(crate::stack::StackError::from)?;

        let color = crate::console::color(crate::console::Stream::Stderr);
        // Live on a terminal in the human format; `json` keeps its lines as they are.
        let progress = Progress::start(format == MessageFormat::Human, color);
        Ok(Watch {
            partial,
            format,
            _cleared: ClearOnDrop(progress.clone()),
            progress,
            supervisor,
            cancel_rx,
            _sandbox_claim: sandbox_claim,
        })
    }

    /// Where the runner's events go: the partial report, and the terminal
    /// or the JSON lines.
    fn on_event(&self) -> impl FnMut(RunEvent) + Send {
        let partial = self.partial.clone();
        let shown = self.progress.clone();
        let format = self.format;
        move |event: RunEvent| {
            if let RunEvent::CellFinished { cell, .. } = &event {
                partial.finished(cell);
            }
            match format {
                MessageFormat::Human => shown.event(&event),
                MessageFormat::Json => {
                    if let Some(message) = events::message(&event) {
                        events::emit(&message);
                    }
                    // A person reads stderr in either format.
                    if matches!(event, RunEvent::OverallTimeout { .. }) {
                        shown.event(&event);
                    }
                }
            }
        }
    }

    /// A run stopped while its stacks were starting: what they started is
    /// swept, and the report holds no cell.
    async fn stopped_at_start(&self, id: &str) -> Result<Outcome, CommandError> {
        self.supervisor.sweep().await;
        self.progress.clear();
        crate::scenario::sandbox_root::remove_run(id);
        self.supervisor.finish_keeper();
        interrupted_at_start(&self.partial)
    }
}

/// What the cells run on, built whole, and the matrix of cells.
struct Plan {
    stacks: Stacks,
    matrix: Matrix,
}

/// A deployment, or the local stacks (`--jobs`: several), each of which
/// serves every server point; with the target names and server points
/// the matrix is built from.
struct Stacks {
    run: runner::RunStacks,
    local: Vec<crate::stack::local::LocalStack>,
    targets: Vec<TargetId>,
    servers: Vec<ServerPoint>,
}

/// The second step of [`run_in`]: starts what the cells run on and builds
/// the matrix of cells; `None` when the run is stopped first. Stack
/// start-up as a whole (installs, a deployment's preflight, the stacks
/// coming up) stops on the first Ctrl-C and ends in a report. A
/// deployment's fault proxies go to `deployment_hops`, which outlives the
/// start-up however it ends.
async fn plan(
    args: &RunArgs,
    resolved: &Resolved,
    watch: &Watch,
    deployment_hops: &mut Option<deployment_faults::DeploymentHops>,
) -> Result<Option<Plan>, CommandError> {
    let starting = async {
        match &resolved.base_url {
            Some(url) => {
                deployment_stacks(args, resolved, watch, url.clone(), deployment_hops).await
            }
            None => local_stacks(args, resolved, watch).await,
        }
    };
    let Some(stacks) = until_stopped(starting, watch.cancel_rx.clone()).await? else {
        return Ok(None);
    };
    // The store the user chose, else the stack's Rivet actor when it runs one.
    let store = match stacks.run.own.stores.rivet {
        Ok(_) => Store::Rivet,
        Err(_) => Store::Sqlite,
    };
    let matrix = build_matrix(
        resolved,
        stacks.targets.clone(),
        resolved.chosen.axes(stacks.servers.clone(), store),
    )?;
    rerun::check_schedules(&resolved.schedules, &matrix, resolved.settings.seed)?;
    Ok(Some(Plan { stacks, matrix }))
}

/// A deployment's stacks: the config file's targets (and `SA_RESTART_CMD`),
/// with the fault proxies of its `[faults]` in front.
async fn deployment_stacks(
    args: &RunArgs,
    resolved: &Resolved,
    watch: &Watch,
    url: String,
    deployment_hops: &mut Option<deployment_faults::DeploymentHops>,
) -> Result<Stacks, CommandError> {
    let config = resolved.config.as_ref();
    let targets = configured_targets(config)?;
    if targets.is_empty() {
        return Err(CommandError::usage("no restart targets: give --config with [targets.NAME] tables, or set SA_RESTART_CMD (without --base-url, continuity runs its own local stack)"));
    }
    let known_targets: Vec<String> = targets.iter().map(|t| t.id.to_string()).collect();
    let mut targets = Selection::named(&args.targets).pick(targets, |t| &t.id)?;
    for target in &mut targets {
        target.set_supervisor(watch.supervisor.clone());
        target.log_into(&resolved.run_dir.join("logs"));
    }
    let hops = deployment_faults::wire(config.and_then(|c| c.faults.as_ref()), &url, &mut targets)?;
    let url = hops.as_ref().map_or(url, |h| h.base_url.clone());
    *deployment_hops = hops;
    let jobs = deployment::jobs(args, &resolved.run_defaults, &targets);
    let ids: Vec<TargetId> = targets.iter().map(|t| t.id.clone()).collect();
    if let Some(x) = &resolved.expectations {
        x.check_names(&known_targets, &resolved.known_scenarios)?;
        x.check_points(&[], &[])?;
    }
    let stacks = deployment::stacks(&resolved.settings, url, targets, jobs).await?;
    Ok(Stacks {
        run: stacks,
        local: Vec::new(),
        targets: ids,
        servers: vec![ServerPoint::deployment()],
    })
}

/// The local stacks: the candidate servers and SDKs installed and checked,
/// then `--jobs` stacks up (none when this shard holds no cell).
async fn local_stacks(
    args: &RunArgs,
    resolved: &Resolved,
    watch: &Watch,
) -> Result<Stacks, CommandError> {
    let (config, chosen, run_dir) = (
        resolved.config.as_ref(),
        &resolved.chosen,
        &resolved.run_dir,
    );
    // Fault targets of the file join the local stack's, on its hops.
    let local_faults = config.map(Config::fault_targets).unwrap_or_default();
    let picked = local_targets(args, resolved, &local_faults)?;
    // One store whichever it is: the count of cells is the same.
    let cells = build_matrix(
        resolved,
        picked.clone(),
        chosen.axes(chosen.servers.clone(), Store::Sqlite),
    )?
    .cells
    .len();
    if args.partition.is_some() && cells == 0 {
        crate::console::errln(
            "continuity: this shard holds no cell of the matrix: no stack is started",
        );
        let stacks = workers::no_stacks(&picked);
        return Ok(Stacks {
            run: stacks,
            local: Vec::new(),
            targets: picked,
            servers: chosen.servers.clone(),
        });
    }
    let jobs = local_jobs(args, resolved.run_defaults.jobs, cells);
    let progress = &watch.progress;
    let binaries = workers::install_servers(&chosen.servers, progress).await?;
    let (options, serving) = local_stack_options(
        args,
        run_dir,
        chosen,
        &watch.supervisor,
        local_faults,
        binaries.first(),
        resolved.settings.timeout,
    )?;
    candidates::check_servers_start(
        &chosen.servers,
        &run_dir.join("servers"),
        &options.agent_program,
        crate::stack::local::SERVER_READY_TIMEOUT,
        &watch.supervisor,
    )
    .await?;
    let sdks = match chosen.clients.iter().any(|c| c.hosts_sdk()) {
        true => candidates::install_sdks(&chosen.sdks, progress).await?,
        false => Vec::new(),
    };
    let mut up =
        workers::up_stacks(&options, jobs, "stack", watch.cancel_rx.clone(), progress).await?;
    let mut stacks = workers::attach(&mut up, run_dir, binaries, serving.as_deref());
    stacks.serve_sdks(sdks);
    Ok(Stacks {
        run: stacks,
        local: up,
        targets: picked,
        servers: chosen.servers.clone(),
    })
}

/// The local stack's targets this run has, once the config file, the
/// agents, `--target` and the expectations are checked against it.
fn local_targets(
    args: &RunArgs,
    resolved: &Resolved,
    local_faults: &[(OwnTarget, crate::targets::FaultAction)],
) -> Result<Vec<TargetId>, CommandError> {
    let (config, chosen) = (resolved.config.as_ref(), &resolved.chosen);
    if config.is_some_and(|c| c.target_names().len() > local_faults.len()) {
        return Err(CommandError::usage("the config file defines restart targets but no base_url: set [run] base_url or --base-url (only fault targets run on the local stack)"));
    }
    if config.is_some_and(|c| c.faults.is_some()) {
        return Err(CommandError::usage("[faults] puts proxies in front of a deployment: set [run] base_url or --base-url (the local stack has its own hops)"));
    }
    for name in &chosen.agents {
        crate::stack::agents::check_known(name)?;
    }
    // Unknown names are refused; opt-in targets run only when named.
    let known = crate::stack::local::known_targets(local_faults);
    let known_targets: Vec<String> = known.iter().map(|k| k.id.to_string()).collect();
    let picked: Vec<TargetId> = Selection::named(&args.targets)
        .pick(known, |k| &k.id)?
        .into_iter()
        .map(|k| k.id)
        .collect();
    if let Some(x) = &resolved.expectations {
        x.check_names(&known_targets, &resolved.known_scenarios)?;
        x.check_points(&chosen.server_labels(), &chosen.sdk_labels())?;
    }
    Ok(picked)
}

/// The third step of [`run_in`]: runs the matrix's cells, then stops
/// every stack and what the run started.
async fn execute(
    resolved: &Resolved,
    plan: Plan,
    deployment_hops: Option<deployment_faults::DeploymentHops>,
    watch: &Watch,
) -> Report {
    let Plan { stacks, matrix } = plan;
    let Stacks {
        run: mut run_stacks,
        local: mut local_stacks,
        ..
    } = stacks;
    crate::console::errln(&axes::stores_line(&matrix.axes));
    let mut on_event = watch.on_event();
    let report = runner::run(
        &resolved.settings,
        &matrix,
        &mut run_stacks,
        watch.cancel_rx.clone(),
        &mut on_event,
    )
    .await;
    workers::teardown(run_stacks, &mut local_stacks, &watch.supervisor).await;
    drop(local_stacks);
    drop(deployment_hops);
    watch.progress.clear();
    // What a cell's teardown could not remove (it was cut short).
    crate::scenario::sandbox_root::remove_run(&resolved.id);
    watch.supervisor.finish_keeper();
    report
}

/// The run's start-up (`starting`) to its end, or `None` when the run is
/// stopped first (Ctrl-C, SIGTERM…): what it started is dropped (killing
/// its processes). A start-up that fails because it was stopped (its
/// stacks gave up, an install was cut) is the stop too.
async fn until_stopped<T>(
    starting: impl std::future::Future<Output = Result<T, CommandError>>,
    cancel: watch::Receiver<bool>,
) -> Result<Option<T>, CommandError> {
    tokio::select! {
        biased;
        () = wait_true(cancel.clone()) => Ok(None),
        started = starting => match started {
            Err(_) if *cancel.borrow() => Ok(None),
            started => started.map(Some),
        },
    }
}

/// A run stopped before its first cell: its report holds no cell, marked
/// interrupted, as any interrupted run's does.
fn interrupted_at_start(partial: &partial::PartialRun) -> Result<Outcome, CommandError> {
    match partial.write() {
        Ok(_) => crate::console::errln(
            "continuity: interrupted while the stack was starting: the report holds no cell",
        ),
        Err(e) => crate::console::errln(&format!(
            "continuity: interrupted while the stack was starting: cannot write the report: {e}"
        )),
    }
    Ok(Outcome::Interrupted)
}

/// Takes the live area off the terminal however `run` ends (an error
/// is printed after it), so nothing is left drawn under the last line.
struct ClearOnDrop(Progress);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.clear();
    }
}

/// The local stack every worker's stack is made from, and the label of
/// the server point it comes up running: the run's first (`first`,
/// installed already), so no other server is installed or announced.
fn local_stack_options(
    args: &RunArgs,
    run_dir: &Path,
    chosen: &axes::Chosen,
    supervisor: &crate::supervise::Supervisor,
    custom_faults: Vec<(OwnTarget, crate::targets::FaultAction)>,
    first: Option<&runner::ServedBinary>,
    phase_deadline: std::time::Duration,
) -> Result<(StackOptions, Option<String>), CommandError> {
    let (server, serving) = match first {
        Some(first) => (
            StackServer::Binary(first.binary.clone()),
            Some(first.label.clone()),
        ),
        None => (
            StackServer::Version(crate::stack::sandbox_agent::DEFAULT_VERSION.to_string()),
            None,
        ),
    };
    let options = StackOptions {
        run_dir: run_dir.join("stack"),
        server,
        agent_program: std::env::current_exe().map_err(|e| {
            CommandError::incomplete(format!("cannot find the continuity binary: {e}"))
        })?,
        selection: Selection::named(&args.targets),
        rivet_save: match args.rivet_save {
            RivetSaveArg::Immediate => crate::stack::rivet::SaveMode::Immediate,
            RivetSaveArg::Deferred => crate::stack::rivet::SaveMode::Deferred,
        },
        rivet_stop: match args.rivet_stop {
            RivetStopArg::Kill => crate::stack::rivet::RunnerStop::Kill,
            RivetStopArg::Graceful => crate::stack::rivet::RunnerStop::Graceful,
        },
        agents: chosen.agents.clone(),
        postgres: chosen.persists.contains(&Store::Postgres),
        hosted_sqlite: chosen.persists.contains(&Store::Sqlite)
            && chosen.clients.iter().any(|c| c.hosts_sdk()),
        browser: chosen.clients.iter().any(|c| c.runs_in_a_page()),
        supervisor: supervisor.clone(),
        fault_proxies: true,
        custom_faults,
        phase_deadline,
    };
    Ok((options, serving))
}

/// The matrix of the run's (or its shard's) cells on `targets` and
/// `axes`, only those the run was given when it was (`rerun`, `bisect`):
/// a cell given that the matrix lacks is a usage error.
fn build_matrix(
    resolved: &Resolved,
    targets: Vec<TargetId>,
    axes: runner::Axes,
) -> Result<Matrix, CommandError> {
    let mut matrix = Matrix::build(
        targets,
        &resolved.settings.scenarios,
        axes,
        resolved.settings.shard(),
    );
    if resolved.only.is_empty() {
        return Ok(matrix);
    }
    if let Some(missing) = resolved
        .only
        .iter()
        .find(|wanted| !matrix.cells.iter().any(|c| wanted.selects(&c.named)))
    {
        return Err(CommandError::usage(format!(
            "the cell {missing} is not in the matrix these settings make (its target, scenario or a point of an axis is not there)"
        )));
    }
    matrix.keep(|named| resolved.only.iter().any(|wanted| wanted.selects(named)));
    Ok(matrix)
}

/// Judges the report against the expectations, writes it and picks the exit code.
fn finish(
    mut report: Report,
    args: &RunArgs,
    resolved: &Resolved,
) -> Result<Outcome, CommandError> {
    let format = args.message_format;
    report.run.recipe = Some(resolved.recipe.clone());
    if let Some(x) = &resolved.expectations {
        gate::judge(x, &mut report, &args.gate);
    }
    let outcome = gate::finish(&report, &resolved.folder, format, args.partition.is_some())?;
    if format == MessageFormat::Json {
        events::emit(&events::run_finished(
            &report,
            &resolved.run_dir,
            outcome.exit_code(),
        ));
    }
    Ok(outcome)
}

/// How many stacks the local stack runs side by side: `--jobs` (or the
/// number of CPUs), never more than the run's `cells` need, with a message
/// when that is fewer than asked.
fn local_jobs(args: &RunArgs, config_jobs: Option<u32>, cells: usize) -> usize {
    let given = args.jobs.or(config_jobs);
    let asked = given
        .map(|j| j as usize)
        .unwrap_or_else(workers::default_jobs);
    let (jobs, message) = runner::workers_for(asked, cells);
    if let (Some(message), Some(_)) = (message, given) {
        crate::console::errln(&format!("continuity: {message}"));
    }
    jobs
}

fn scenario_names(scenarios: &[Scenario]) -> Vec<String> {
    scenarios.iter().map(|s| s.name.clone()).collect()
}
