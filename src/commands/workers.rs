//! `run --jobs N` on the local stack: N stacks side by side, one per worker
//! (`RUN/stack`, `RUN/stack-2`, …, each with its own ports, folders and
//! `stack.json`), brought up together and torn down together. A stack that
//! fails to start takes every other one down with it: no half-started set
//! of stacks is left behind.

use crate::runner::{PersistChoice, RunStacks, Worker};
use crate::stack::local::{LocalStack, StackOptions};
use crate::stack::StackError;
use std::path::{Path, PathBuf};
use tokio::sync::watch;

/// `--jobs` when not given on the local stack: the number of CPUs, at least 2.
pub(super) fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(2)
}

/// How many target × scenario cells one stack runs (per agent and version):
/// no more workers than that are worth a stack.
pub(super) fn cells_per_stack(
    targets: &[String],
    scenarios: &[String],
    partition: Option<&crate::partition::Partition>,
    version: Option<&str>,
) -> usize {
    let names: Vec<String> = targets
        .iter()
        .flat_map(|t| {
            scenarios
                .iter()
                .map(move |s| crate::partition::cell_name(t, s, version))
        })
        .collect();
    match partition {
        Some(p) => p.selects(&names).into_iter().filter(|k| *k).count(),
        None => names.len(),
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
/// recorded in its folder's `stack.json` before its first component starts.
/// All or nothing: when one fails (or the run is cancelled), the ones that
/// came up are stopped before the error returns.
pub(super) async fn up_stacks(
    options: &StackOptions,
    count: usize,
    owner_tag: &str,
    label: &str,
    cancel: watch::Receiver<bool>,
) -> Result<Vec<LocalStack>, StackError> {
    let mut starting = Vec::new();
    for k in 0..count {
        let dir = stack_dir(&options.run_dir, k);
        std::fs::create_dir_all(&dir)
            .map_err(StackError::io(format!("cannot create {}", dir.display())))?;
        crate::stack::state::begin_journal(&dir, owner_tag)?;
        let name = match (count, k) {
            (1, _) => label.to_string(),
            (_, k) => format!("{label} {}", k + 1),
        };
        let options = StackOptions {
            run_dir: dir,
            ..options.clone()
        };
        starting.push(async move {
            let mut progress = |line: &str| crate::console::errln(&format!("{name}: {line}"));
            let up = LocalStack::up(options, &mut progress).await;
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
            crate::stack::local::sweep_owner_tag().await;
            crate::stack::state::end_journal();
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
    down_stacks(&mut stacks).await;
    crate::stack::state::end_journal();
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
        .map(|t| t.name.clone())
        .chain(stack.skipped.iter().map(|u| format!("{}(skipped)", u.name)))
        .collect()
}

/// The stacks as the runner sees them, built whole: the first as the own
/// stack (its targets, URL, persist driver), each further one as a worker of
/// its own. Each stack's cells keep their sessions where `chosen` says,
/// else in that stack's own Rivet actor.
pub(super) fn attach(
    stacks: &mut [LocalStack],
    chosen: Option<&PersistChoice>,
    run_dir: &Path,
) -> RunStacks {
    let logs = logs(stacks, run_dir);
    let mut workers = stacks.iter_mut().map(|stack| Worker {
        base_url: stack.base_url.clone(),
        targets: std::mem::take(&mut stack.targets),
        persist: super::run_persist(chosen, &stack.stores),
        stores: stack.stores.clone(),
        sdk_process: stack.sdk_process.take(),
        persist_tag: String::new(),
        agent_sent_log: stack.agent_sent_log.clone(),
        model_calls: stack.model_calls.clone(),
        sdk_host: stack.sdk_host.clone().map(|host| host.endpoint),
        fence: Default::default(),
    });
    let own = workers
        .next()
        .expect("up_stacks brings up at least one stack");
    let workers: Vec<Worker> = workers.collect();
    let first = &mut stacks[0];
    RunStacks {
        own,
        skipped_targets: std::mem::take(&mut first.skipped),
        server_version: first.server_version.clone(),
        logs,
        workers,
        jobs: 1,
    }
}

/// After the run: every worker's targets, then every stack, side by side,
/// then one sweep of the run's owner tag (a sweep per stack would reach
/// the stacks still stopping).
pub(super) async fn teardown(run: RunStacks, stacks: &mut [LocalStack]) {
    let mut targets: Vec<crate::targets::Target> = std::iter::once(run.own)
        .chain(run.workers)
        .flat_map(|w| w.targets.into_iter().chain(w.sdk_process))
        .collect();
    futures_util::future::join_all(targets.iter_mut().map(|t| t.shutdown())).await;
    down_stacks(stacks).await;
}

async fn down_stacks(stacks: &mut [LocalStack]) {
    futures_util::future::join_all(stacks.iter_mut().map(|s| s.stop_own())).await;
    crate::stack::local::sweep_owner_tag().await;
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
            server_version: crate::stack::sandbox_agent::DEFAULT_VERSION.into(),
            agent_program: std::env::current_exe().unwrap(),
            only: Vec::new(),
            rivet_save: crate::stack::rivet::SaveMode::Immediate,
            rivet_stop: crate::stack::rivet::RunnerStop::Kill,
            agents: Vec::new(),
            sdk_version: None,
            postgres: false,
            hosted_sqlite: false,
        };
        let (_cancel, cancel) = watch::channel(false);
        let e = match up_stacks(&options, 2, "test-tag", "stack", cancel).await {
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

    #[test]
    fn a_shard_counts_only_its_cells() {
        let targets: Vec<String> = ["agent", "gateway", "rivet"].map(String::from).into();
        let scenarios: Vec<String> = ["a", "b"].map(String::from).into();
        assert_eq!(cells_per_stack(&targets, &scenarios, None, None), 6);
        let half: crate::partition::Partition = "count:1/2".parse().unwrap();
        assert_eq!(cells_per_stack(&targets, &scenarios, Some(&half), None), 3);
    }
}
