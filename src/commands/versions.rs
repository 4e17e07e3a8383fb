//! `--server-version A --server-version B`: the matrix's version axis on the
//! local stack. One stack per version, brought up, run and torn down one
//! after the other (two stacks at once would fight over a 2-core machine);
//! every cell carries its version, and the parts join into one report.

use super::run_persist;
use super::CommandError;
use crate::report::{LogFile, Report, Totals};
use crate::runner::{PersistChoice, RunEvent, RunPlan};
use crate::stack::local::{LocalStack, StackOptions};
use std::path::Path;
use std::time::Instant;
use tokio::sync::watch;

/// Runs the plan once per version; `options` is the stack template
/// (its folder and version are replaced per version).
pub(super) async fn run_versions(
    plan: &mut RunPlan,
    options: &StackOptions,
    versions: &[String],
    persist: Option<&PersistChoice>,
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
    run_dir: &Path,
) -> Result<Report, CommandError> {
    let started = Instant::now();
    let overall = plan.overall_timeout;
    let mut parts: Vec<Report> = Vec::new();
    let mut logs: Vec<LogFile> = Vec::new();
    let mut stopped_early = false;
    let agents = options.agents.clone();
    for version in versions {
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
        let mut progress = |line: &str| crate::console::errln(&format!("stack {version}: {line}"));
        let mut cancelled = cancel.clone();
        let up = tokio::select! {
            up = LocalStack::up(options, &mut progress) => up,
            _ = cancelled.wait_for(|c| *c) => Err(crate::stack::StackError::Interrupted),
        };
        let mut up = match up {
            Ok(up) => up,
            Err(e) if parts.is_empty() => {
                return Err(CommandError::incomplete(format!(
                    "sandbox-agent {version}: {e}"
                )))
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
        plan.overall_timeout = remaining;
        plan.base_url = up.base_url.clone();
        plan.agent_sent_log = up.agent_sent_log.clone();
        plan.targets = std::mem::take(&mut up.targets);
        plan.skipped_targets = std::mem::take(&mut up.skipped);
        plan.server_version = up.server_version.clone();
        plan.axis_version = Some(version.clone());
        plan.persist = run_persist(persist, up.persist_factory.clone());
        logs.extend(up.logs(run_dir).into_iter().map(|l| LogFile {
            name: format!("{version} {}", l.name),
            ..l
        }));
        plan.model_calls = up.model_calls.clone();
        let part =
            super::agents::run_agents(plan, &agents, &up.agent_skips, cancel.clone(), on_event)
                .await;
        for target in &mut plan.targets {
            target.shutdown().await;
        }
        up.down().await;
        let interrupted = part.run.interrupted;
        parts.push(part);
        if interrupted {
            stopped_early = true;
            break;
        }
    }
    plan.overall_timeout = overall;
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
    report
}
