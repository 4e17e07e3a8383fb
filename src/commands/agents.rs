//! `--agent A --agent B`: the matrix's agent axis. Every agent runs the
//! same targets × scenarios on the same stack, one after the other; every
//! cell carries its agent, and the parts join into one report. An agent the
//! stack could not install gets skipped cells with the reason and the
//! command to retry; the other agents still run.

use crate::report::{Report, Totals};
use crate::runner::{self, AxisPoint, ClientChoice, RunEvent, RunPlan, RunSettings, RunStacks};
use std::time::Duration;
use tokio::sync::watch;

/// Whether cells name their agent: several agents, or one that is not the default `mock`.
pub(super) fn is_axis(agents: &[String]) -> bool {
    agents.len() > 1 || agents.iter().any(|a| a != "mock")
}

/// Where on the other axes an agent axis runs: its client and version, and
/// the time left for it.
pub(super) struct Outer {
    pub client: ClientChoice,
    pub version: Option<String>,
    pub overall_timeout: Duration,
}

/// Runs the cells once per agent, at the client and version of `at`; `skips` are (agent, reason) pairs the stack gave up on.
pub(super) async fn run_agents(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    at: &Outer,
    agents: &[String],
    skips: &[(String, String)],
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let mut parts: Vec<Report> = Vec::new();
    for agent in agents {
        if !parts.is_empty() && (*cancel.borrow() || parts.iter().any(|p| p.run.interrupted)) {
            break;
        }
        let point = AxisPoint {
            agent: agent.clone(),
            real_agent: crate::stack::agents::real(agent).is_some(),
            client: at.client.clone(),
            version: at.version.clone(),
            overall_timeout: at.overall_timeout,
        };
        let plan = RunPlan {
            settings,
            point: &point,
        };
        if is_axis(agents) {
            crate::console::errln(&format!("agent {agent}:"));
        }
        let mut part = match skips.iter().find(|(name, _)| name == agent) {
            // Every cell skipped with the reason: no target is touched.
            Some((_, reason)) => {
                let mut skipped = stacks.all_skipped(reason);
                runner::run(plan, &mut skipped, cancel.clone(), on_event).await
            }
            None => runner::run(plan, stacks, cancel.clone(), on_event).await,
        };
        if is_axis(agents) {
            for cell in &mut part.cells {
                cell.agent = Some(agent.clone());
            }
        }
        parts.push(part);
    }
    join(parts, agents)
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
    report.run.timing = crate::report::Floor::of_cells(&report.cells);
    report
}
