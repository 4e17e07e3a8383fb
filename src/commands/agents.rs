//! `--agent A --agent B`: the matrix's agent axis. Every agent runs the
//! same targets × scenarios on the same stack, one after the other; every
//! cell carries its agent, and the parts join into one report. An agent the
//! stack could not install gets skipped cells with the reason and the
//! command to retry; the other agents still run.

use crate::report::{Report, Totals};
use crate::runner::{self, RunEvent, RunPlan};
use crate::targets::Unavailable;
use tokio::sync::watch;

/// Whether cells name their agent: several agents, or one that is not the default `mock`.
pub(super) fn is_axis(agents: &[String]) -> bool {
    agents.len() > 1 || agents.iter().any(|a| a != "mock")
}

/// Runs the plan once per agent; `skips` are (agent, reason) pairs the stack gave up on.
pub(super) async fn run_agents(
    plan: &mut RunPlan,
    agents: &[String],
    skips: &[(String, String)],
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let mut parts: Vec<Report> = Vec::new();
    let model_calls = plan.model_calls.take();
    for agent in agents {
        // Only real agents talk to the fake provider: its log judges their cells only.
        plan.model_calls = crate::stack::agents::real(agent).and(model_calls.clone());
        if !parts.is_empty() && (*cancel.borrow() || parts.iter().any(|p| p.run.interrupted)) {
            break;
        }
        plan.agent = agent.clone();
        if is_axis(agents) {
            crate::console::errln(&format!("agent {agent}:"));
        }
        let mut part = match skips.iter().find(|(name, _)| name == agent) {
            Some((_, reason)) => skipped_part(plan, reason, cancel.clone(), on_event).await,
            None => runner::run(plan, cancel.clone(), on_event).await,
        };
        if is_axis(agents) {
            for cell in &mut part.cells {
                cell.agent = Some(agent.clone());
            }
        }
        parts.push(part);
    }
    plan.model_calls = model_calls;
    join(parts, agents)
}

/// Every cell of the plan, skipped with `reason` (no target is touched).
async fn skipped_part(
    plan: &mut RunPlan,
    reason: &str,
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let targets = std::mem::take(&mut plan.targets);
    let skipped = plan.skipped_targets.clone();
    plan.skipped_targets = skipped
        .iter()
        .map(|u| u.name.clone())
        .chain(targets.iter().map(|t| t.name.clone()))
        .map(|name| Unavailable::skipped(&name, reason))
        .collect();
    let part = runner::run(plan, cancel, on_event).await;
    plan.targets = targets;
    plan.skipped_targets = skipped;
    part
}

fn join(parts: Vec<Report>, agents: &[String]) -> Report {
    let mut parts = parts.into_iter();
    let mut report = parts.next().expect("at least one agent ran");
    for part in parts {
        report.run.finished_at = part.run.finished_at;
        report.run.duration_ms += part.run.duration_ms;
        report.run.interrupted |= part.run.interrupted;
        report.cells.extend(part.cells);
    }
    report.run.agent = agents.join(", ");
    report.totals = Totals::of(&report.cells);
    report
}
