//! `continuity run`, from its command line to its exit code: everything
//! settled before anything starts ([`Resolved`]: `run/resolve.rs`), the
//! stacks started and the matrix built ([`Plan`]: `run/plan.rs`), the
//! cells run under a [`Watch`] (the partial report a Ctrl-C writes, the
//! supervisor, the live progress), then the report judged and written
//! ([`finish`]). A usage error leaves no folder behind.

mod plan;
mod resolve;

use super::progress::{spawn_signal_handler, Progress};
use super::{axes, deployment_faults, events, gate, partial, workers};
use super::{CommandError, Given, Outcome};
use crate::cli::{MessageFormat, RunArgs};
use crate::config::Config;
use crate::persist::Store;
use crate::report::{self, Report};
use crate::runner::{self, Matrix, RunEvent, RunSettings, ServerPoint};
use crate::scenario::Scenario;
use crate::stop_flag::wait_true;
use crate::targets::TargetId;
use plan::plan;
use resolve::resolve;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;

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

/// What [`resolve`] has found out before the run's settings are made.
struct Found {
    id: String,
    token: Option<crate::secret::Secret>,
    timeout: Duration,
    timings: runner::cost::Timings,
    scenarios: Vec<Scenario>,
    run_dir: PathBuf,
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
