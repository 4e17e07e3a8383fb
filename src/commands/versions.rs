//! `--server-version A --server-version B`: the matrix's version axis on the
//! local stack. One stack per version, brought up, run and torn down one
//! after the other (two versions at once would fight over a 2-core
//! machine; `--jobs` runs each version's cells on several stacks of it);
//! every cell carries its version, and the parts join into one report.

use super::CommandError;
use crate::persist::PersistChoice;
use crate::report::{LogFile, Report, Totals};
use crate::runner::{ClientChoice, RunEvent, RunSettings};
use crate::stack::local::StackOptions;
use std::path::Path;
use std::time::Instant;
use tokio::sync::watch;

/// Runs the plan once per version, on `jobs[i]` stacks of version `i`;
/// `options` is the stack template (its folder and version are replaced
/// per version).
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_versions(
    settings: &RunSettings,
    options: &StackOptions,
    versions: &[String],
    persist: Option<&PersistChoice>,
    jobs: &[usize],
    owner_tag: &str,
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
    run_dir: &Path,
    progress: &super::Progress,
) -> Result<Report, CommandError> {
    let started = Instant::now();
    let overall = settings.overall_timeout;
    let mut parts: Vec<Report> = Vec::new();
    let mut logs: Vec<LogFile> = Vec::new();
    let mut stopped_early = false;
    let agents = options.agents.clone();
    for (version, jobs) in versions.iter().zip(jobs) {
        let remaining = overall.saturating_sub(started.elapsed());
        if *cancel.borrow() || remaining.is_zero() {
            stopped_early = true;
            break;
        }
        let options = StackOptions {
            run_dir: run_dir.join(format!("stack-{version}")),
            server_version: version.clone(),
            ..options.clone()
        };
        let label = format!("stack {version}");
        let up =
            super::workers::up_stacks(&options, *jobs, owner_tag, &label, cancel.clone(), progress)
                .await;
        let mut up = match up {
            Ok(up) => up,
            Err(e) if parts.is_empty() => {
                return Err(e.context(format!("sandbox-agent {version}")).into())
            }
            Err(e) => {
                // The versions that ran are kept: the report says the run is incomplete.
                crate::console::errln(&format!(
                    "stack {version}: {e}; the report holds the versions that ran"
                ));
                stopped_early = true;
                break;
            }
        };
        let mut stacks = super::workers::attach(&mut up, persist, run_dir);
        logs.extend(stacks.logs.iter().map(|l| LogFile {
            name: format!("{version} {}", l.name),
            ..l.clone()
        }));
        let at = super::agents::Outer {
            client: ClientChoice::Rust,
            version: Some(version.clone()),
            overall_timeout: remaining,
        };
        let skips = up[0].agent_skips.clone();
        let part = super::agents::run_agents(
            settings,
            &mut stacks,
            &at,
            &agents,
            &skips,
            cancel.clone(),
            on_event,
        )
        .await;
        super::workers::teardown(stacks, &mut up).await;
        crate::stack::state::end_journal();
        let interrupted = part.run.interrupted;
        parts.push(part);
        if interrupted {
            stopped_early = true;
            break;
        }
    }
    Ok(join(parts, logs, stopped_early, started))
}

/// One report from the per-version parts, in version order.
fn join(parts: Vec<Report>, logs: Vec<LogFile>, stopped_early: bool, started: Instant) -> Report {
    let mut parts = parts.into_iter();
    let mut report = parts.next().expect("at least one version ran");
    let mut versions: Vec<String> = report.run.server_version.iter().cloned().collect();
    for part in parts {
        for target in part.run.targets {
            if !report.run.targets.contains(&target) {
                report.run.targets.push(target);
            }
        }
        versions.extend(part.run.server_version);
        report.run.finished_at = part.run.finished_at;
        report.run.interrupted |= part.run.interrupted;
        report.cells.extend(part.cells);
    }
    report.run.interrupted |= stopped_early;
    report.run.duration_ms = started.elapsed().as_millis() as u64;
    report.run.server_version = (!versions.is_empty()).then(|| versions.join(", "));
    report.run.logs = logs;
    report.totals = Totals::of(&report.cells);
    report.run.timing = crate::report::Floor::of_cells(&report.cells);
    report
}
