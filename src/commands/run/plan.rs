//! The second step of `continuity run`: what its cells run on (a
//! deployment, or `--jobs` local stacks each serving every server point),
//! the targets each offers and the options the local stack is made with,
//! and the matrix of cells built from them, narrowed to the cells a rerun
//! or a bisect selects.

use super::{until_stopped, Plan, Resolved, Stacks, Watch};
use crate::cli::{RivetSaveArg, RivetStopArg, RunArgs};
use crate::commands::{axes, candidates, configured_targets, deployment, deployment_faults};
use crate::commands::{rerun, workers, CommandError};
use crate::config::Config;
use crate::persist::Store;
use crate::runner::{self, Matrix, ServerPoint};
use crate::stack::local::{StackOptions, StackServer};
use crate::targets::{OwnTarget, Selection, TargetId};
use std::path::Path;

/// The second step of [`run_in`](super::run_in): starts what the cells run on and builds
/// the matrix of cells; `None` when the run is stopped first. Stack
/// start-up as a whole (installs, a deployment's preflight, the stacks
/// coming up) stops on the first Ctrl-C and ends in a report. A
/// deployment's fault proxies go to `deployment_hops`, which outlives the
/// start-up however it ends.
pub(super) async fn plan(
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
