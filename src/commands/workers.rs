//! `run --jobs N` on the local stack: N stacks side by side, one per worker
//! (`RUN/stack`, `RUN/stack-2`, …, each with its own ports, folders and
//! `stack.json`), brought up together and torn down together, every server
//! point's binary installed before (each stack switches between them). A
//! stack that fails to start takes every other one down with it: no
//! half-started set of stacks is left behind.

use crate::runner::{
    PersistChoice, RunStacks, ServedBinary, ServerPoint, ServerSlot, ServerSource, Worker,
};
use crate::stack::local::{LocalStack, StackOptions};
use crate::stack::StackError;
use crate::supervise::Supervisor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::watch;

/// `--jobs` when not given on the local stack: the number of CPUs, at least 2.
pub(super) fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(2)
}

/// Every server point's binary, installed (from the npm registry, into
/// the shared cache) before any stack starts, so a stack's switch between
/// points is only a stop and a start.
pub(super) async fn install_servers(
    servers: &[ServerPoint],
    progress: &super::Progress,
) -> Result<Vec<ServedBinary>, StackError> {
    let mut binaries = Vec::new();
    let mut notes = |note| progress.note("stack", note);
    for server in servers {
        let binary = match &server.source {
            ServerSource::Registry(version) => {
                let version = version.clone();
                crate::stack::progress::blocking_with_notes(&mut notes, move |note| {
                    crate::stack::sandbox_agent::install(&version, note)
                })
                .await?
                .map_err(|e| e.context(format!("sandbox-agent {}", server.label)))?
            }
            ServerSource::Binary { path, .. } => path.clone(),
            ServerSource::Deployment => {
                return Err(StackError::Failed(
                    "the deployment's server is not one a local stack can run".into(),
                ))
            }
        };
        binaries.push(ServedBinary {
            label: server.label.clone(),
            binary,
        });
    }
    Ok(binaries)
}

/// What the run header says the servers are: what each binary reports
/// about itself, comma-separated.
fn reported_versions(binaries: &[ServedBinary]) -> Option<String> {
    let reported: Vec<String> = binaries
        .iter()
        .filter_map(|b| crate::stack::sandbox_agent::binary_version(&b.binary))
        .collect();
    (!reported.is_empty()).then(|| reported.join(", "))
}

/// A shard of the local stack's matrix that holds no cell: its report
/// lists the targets and scenarios and no cell, and no stack is started
/// for it (it would run nothing).
pub(super) fn no_stacks(targets: &[crate::targets::TargetId]) -> RunStacks {
    RunStacks {
        own: Worker {
            base_url: String::new(),
            targets: Vec::new(),
            persist: PersistChoice::Own(crate::persist::Store::Sqlite),
            stores: Default::default(),
            sdk_process: None,
            agent_sent_log: None,
            model_calls: None,
            sdk_host: Err(crate::client::hosted::Unhosted(
                "no stack: this shard holds no cell".into(),
            )),
            sdks: Vec::new().into(),
            browser_host: Err(crate::client::hosted::Unhosted(
                "no stack: this shard holds no cell".into(),
            )),
            fence: Default::default(),
            server: None,
            sandboxes: None,
            components: Vec::new(),
        },
        skipped_targets: targets
            .iter()
            .map(|id| crate::targets::Unavailable::skipped(id.clone(), "not in this shard"))
            .collect(),
        agent_skips: Vec::new(),
        server_version: None,
        logs: Vec::new(),
        workers: Vec::new(),
        jobs: 1,
    }
}

/// The folder of worker `k`'s stack (0-based) under `first` (worker 0's).
pub(super) fn stack_dir(first: &Path, k: usize) -> PathBuf {
    if k == 0 {
        return first.to_path_buf();
    }
    let name = first
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stack".into());
    first.with_file_name(format!("{name}-{}", k + 1))
}

/// Brings up `count` stacks from the `options` template, side by side, each
/// recorded in its folder's `stack.json` (see [`LocalStack::up`]).
/// All or nothing: when one fails (or the run is cancelled), the ones that
/// came up are stopped before the error returns.
pub(super) async fn up_stacks(
    options: &StackOptions,
    count: usize,
    label: &str,
    cancel: watch::Receiver<bool>,
    progress: &super::Progress,
) -> Result<Vec<LocalStack>, StackError> {
    let mut starting = Vec::new();
    for k in 0..count {
        let dir = stack_dir(&options.run_dir, k);
        std::fs::create_dir_all(&dir)
            .map_err(StackError::io(format!("cannot create {}", dir.display())))?;
        let name = match (count, k) {
            (1, _) => label.to_string(),
            (_, k) => format!("{label} {}", k + 1),
        };
        let options = StackOptions {
            run_dir: dir,
            ..options.clone()
        };
        let progress = progress.clone();
        starting.push(async move {
            let mut notes = |note| progress.note(&name, note);
            let up = LocalStack::up(options, &mut notes).await;
            up.map_err(|e| match count {
                1 => e,
                _ => e.context(name),
            })
        });
    }
    let results = tokio::select! {
        results = futures_util::future::join_all(starting) => results,
        // Dropping the stacks being started kills what they started.
        _ = super::wait_true(cancel) => {
            options.supervisor.sweep().await;
            return Err(StackError::Interrupted);
        }
    };
    let mut stacks = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(stack) => stacks.push(stack),
            Err(e) => errors.push(e),
        }
    }
    if let Some(different) = stacks
        .iter()
        .skip(1)
        .find(|s| shape(s) != shape(&stacks[0]))
    {
        errors.push(StackError::Uneven {
            first: shape(&stacks[0]).join(" "),
            other: shape(different).join(" "),
        });
    }
    if errors.is_empty() {
        return Ok(stacks);
    }
    down_stacks(&mut stacks, &options.supervisor).await;
    Err(match errors.len() {
        1 => errors.remove(0),
        _ => StackError::Several(errors),
    })
}

/// Every stack's component logs for the report; a worker's stack names
/// itself (`stack-2 sandbox-agent`), the first keeps the plain names.
pub(super) fn logs(stacks: &[LocalStack], run_dir: &Path) -> Vec<crate::report::LogFile> {
    stacks
        .iter()
        .enumerate()
        .flat_map(|(k, stack)| {
            stack.logs(run_dir).into_iter().map(move |log| match k {
                0 => log,
                _ => crate::report::LogFile {
                    name: format!("stack-{} {}", k + 1, log.name),
                    ..log
                },
            })
        })
        .collect()
}

/// A stack's runnable and skipped targets, by name.
fn shape(stack: &LocalStack) -> Vec<String> {
    stack
        .targets
        .iter()
        .map(|t| t.id.to_string())
        .chain(stack.skipped.iter().map(|u| format!("{}(skipped)", u.id)))
        .collect()
}

/// The stacks as the runner sees them, built whole: the first as the own
/// stack (its targets, URL, persist driver), each further one as a worker of
/// its own. Each stack's cells keep their sessions where their point
/// says, a Rivet or Postgres store in that stack's own. Every stack came up running the
/// point labelled `serving` and switches between `binaries`.
pub(super) fn attach(
    stacks: &mut [LocalStack],
    run_dir: &Path,
    binaries: Vec<ServedBinary>,
    serving: Option<&str>,
) -> RunStacks {
    let logs = logs(stacks, run_dir);
    let server_version = reported_versions(&binaries);
    let binaries: Arc<[ServedBinary]> = binaries.into();
    let server = crate::targets::BuiltinTarget::Agent;
    let mut workers = stacks.iter_mut().map(|stack| Worker {
        base_url: stack.base_url.clone(),
        targets: std::mem::take(&mut stack.targets),
        // Set from each cell's point.
        persist: PersistChoice::Own(crate::persist::Store::Sqlite),
        stores: stack.stores.clone(),
        sdk_process: stack.sdk_process.take(),
        agent_sent_log: stack.agent_sent_log.clone(),
        model_calls: stack.model_calls.clone(),
        sdk_host: stack.sdk_host.clone().map(|host| host.endpoint),
        sdks: Vec::new().into(),
        browser_host: stack.browser_host.clone(),
        fence: Default::default(),
        server: Some(ServerSlot::new(
            binaries.clone(),
            serving,
            server,
            stack.take_background(server),
        )),
        sandboxes: stack.sandboxes.clone(),
        // After the server's slot and the hosted client's runner took theirs.
        components: stack.take_components(),
    });
    let own = workers
        .next()
        .expect("up_stacks brings up at least one stack");
    let workers: Vec<Worker> = workers.collect();
    let first = &mut stacks[0];
    RunStacks {
        own,
        skipped_targets: std::mem::take(&mut first.skipped),
        agent_skips: first.agent_skips.clone(),
        server_version: server_version.or_else(|| first.server_version.clone()),
        logs,
        workers,
        jobs: 1,
    }
}

/// After the run: every worker's targets, then every stack, side by side,
/// then one sweep of the run's owner tag (a sweep per stack would reach
/// the stacks still stopping).
pub(super) async fn teardown(run: RunStacks, stacks: &mut [LocalStack], supervisor: &Supervisor) {
    let mut targets: Vec<crate::targets::Target> = std::iter::once(run.own)
        .chain(run.workers)
        .flat_map(|mut w| {
            let background = w.server.as_mut().and_then(ServerSlot::take_background);
            w.targets.into_iter().chain(background).chain(w.components)
        })
        .collect();
    futures_util::future::join_all(targets.iter_mut().map(|t| t.shutdown())).await;
    down_stacks(stacks, supervisor).await;
}

async fn down_stacks(stacks: &mut [LocalStack], supervisor: &Supervisor) {
    futures_util::future::join_all(stacks.iter_mut().map(|s| s.stop_own())).await;
    supervisor.sweep().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_stacks_live_beside_the_first() {
        let first = Path::new("/r/run/stack");
        assert_eq!(stack_dir(first, 0), first);
        assert_eq!(stack_dir(first, 1), Path::new("/r/run/stack-2"));
        assert_eq!(
            stack_dir(Path::new("/r/run/stack-0.4.2"), 2),
            Path::new("/r/run/stack-0.4.2-3")
        );
    }

    /// Processes whose command line or working folder names `dir`.
    fn processes_in(dir: &Path) -> Vec<String> {
        let dir = dir.display().to_string();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let proc_dir = entry.path();
            let cmdline = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let cwd = std::fs::read_link(proc_dir.join("cwd")).unwrap_or_default();
            if cmdline.contains(&dir) || cwd.starts_with(&dir) {
                found.push(format!("{}: {cmdline}", proc_dir.display()));
            }
        }
        found
    }

    /// Worker 2's stack cannot create its sandbox-agent folder (a file is in
    /// the way) after its Rivet layer started, while worker 1's stack comes
    /// up whole: the error names worker 2, and nothing of either is left.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_stack_that_fails_takes_the_started_ones_down() {
        let tmp = tempfile::tempdir().unwrap();
        let first = tmp.path().join("stack");
        std::fs::create_dir_all(stack_dir(&first, 1)).unwrap();
        std::fs::write(stack_dir(&first, 1).join("sandbox-agent"), "in the way").unwrap();
        let options = StackOptions {
            run_dir: first.clone(),
            server: crate::stack::local::StackServer::Version(
                crate::stack::sandbox_agent::DEFAULT_VERSION.into(),
            ),
            agent_program: std::env::current_exe().unwrap(),
            selection: crate::targets::Selection::default(),
            rivet_save: crate::stack::rivet::SaveMode::Immediate,
            rivet_stop: crate::stack::rivet::RunnerStop::Kill,
            agents: Vec::new(),
            postgres: false,
            hosted_sqlite: false,
            browser: false,
            supervisor: crate::supervise::Supervisor::default(),
            fault_proxies: true,
            custom_faults: Vec::new(),
            phase_deadline: std::time::Duration::from_secs(30),
        };
        let (_cancel, cancel) = watch::channel(false);
        let e = match up_stacks(
            &options,
            2,
            "stack",
            cancel,
            &crate::commands::Progress::start(false, false),
        )
        .await
        {
            Ok(_) => panic!("stack 2 cannot start"),
            Err(e) => e,
        };
        assert!(e.to_string().starts_with("stack 2: "), "{e}");
        let first_state = crate::stack::state::StackState::read(&first);
        assert!(
            first_state.is_err() || first_state.unwrap().components.is_empty(),
            "stack 1 came up and went down"
        );
        assert!(
            std::fs::read_to_string(first.join("sandbox-agent/sandbox-agent.log")).is_ok(),
            "stack 1 had started its sandbox-agent"
        );
        let left = processes_in(tmp.path());
        assert!(left.is_empty(), "left running: {left:?}");
    }
}
