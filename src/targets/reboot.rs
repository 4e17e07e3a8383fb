//! The `reboot` action: the whole stack down and up again, as a host
//! reboot or a rescheduled pod does it. Every component the stack runs
//! goes down in reverse dependency order (the gateway, the server, the
//! RivetKit runner, the Rivet Engine, then Postgres when it runs), each
//! seen down as its own restart is (its group stopped, its listener
//! refusing), then comes up in dependency order on the same data, each
//! seen ready by its own probe. The components are the stack's restart
//! targets, lent to the cell for the reboot ([`super::Lent`]), each taken
//! down and brought up as its own restart would ([`Target::take_down`],
//! [`Target::bring_up`]).

use super::{Action, ActionError, BuiltinTarget, Readiness, RestartFailure, Target};

/// The stack's components in dependency order: what comes up first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reboot {
    pub order: Vec<BuiltinTarget>,
    /// A component's probe while the stack boots, when its own waits for
    /// a component that comes up after it.
    pub boot_probes: Vec<(BuiltinTarget, Readiness)>,
}

impl Reboot {
    /// `reboot: down gateway, agent, rivet, rivet-engine; up in the reverse order`.
    pub(crate) fn describe(&self) -> String {
        let down: Vec<&str> = self.order.iter().rev().map(|t| t.name()).collect();
        format!(
            "reboot: every component down ({}), then up in the reverse order on the same data",
            down.join(", ")
        )
    }

    /// Takes every part down, last first, and brings them up in order;
    /// says how each went down and came back. When one does not go down,
    /// or does not come back, the others are still brought up (the stack
    /// is left running) and the first failure is the reboot's. One that
    /// started but did not answer is restarted once more for the next
    /// cell, and its failure names it (a part of continuity's own is then
    /// the harness's failure, any other the system's: `not_back`).
    pub(super) async fn run(&self, parts: &mut [&mut Target]) -> Result<String, RestartFailure> {
        for id in &self.order {
            if !parts.iter().any(|p| p.id == *id) {
                return Err(RestartFailure::NeverDown {
                    observed: format!("the stack lent the reboot no `{id}` component"),
                });
            }
        }
        let rank = |t: &Target| self.order.iter().position(|id| t.id == *id);
        parts.sort_by_key(|t| rank(t));
        let mut seen = Vec::new();
        let mut failed: Option<RestartFailure> = None;
        for part in parts.iter_mut().rev().filter(|p| rank(p).is_some()) {
            match part.take_down().await {
                Ok(down) => seen.push(format!("{} down: {down}", part.name())),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        for part in parts.iter_mut().filter(|p| rank(p).is_some()) {
            let boot = self
                .boot_probes
                .iter()
                .find(|(id, _)| part.id == *id)
                .map(|(_, probe)| probe);
            match part.bring_up(boot).await {
                Ok(ready_ms) => seen.push(format!("{} back in {ready_ms} ms", part.name())),
                Err(e @ RestartFailure::NotBack { .. }) => {
                    // Started, not answering: restarted once more, so the
                    // next cell finds the stack whole; the reboot still failed.
                    let component = part.id.builtin();
                    let repaired = Box::pin(part.restart_lent("repairAfterReboot", &mut []))
                        .await
                        .record;
                    let note = component
                        .map(|c| super::repair_note(c, &repaired))
                        .unwrap_or_default();
                    failed.get_or_insert(e.of_component(component, &note));
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(failure) => Err(failure),
            None => Ok(seen.join("; ")),
        }
    }
}

/// What a reboot does to each part it is lent: its managed process taken
/// down, then brought up.
impl Target {
    /// For a reboot: the managed process stopped (its stop signal, grace,
    /// SIGKILL) and seen down, as its own restart sees it; not started again.
    pub(crate) async fn take_down(&mut self) -> Result<String, RestartFailure> {
        let (action, ctx) = self.split();
        match action {
            Action::Restart(restart) => restart.take_down(&ctx).await,
            _ => Err(ActionError::runs_no_process(ctx.name()).into()),
        }
    }

    /// For a reboot: the managed process started again and seen ready (by
    /// `boot`'s probe when given, else its own); how long that took.
    pub(crate) async fn bring_up(
        &mut self,
        boot: Option<&Readiness>,
    ) -> Result<u64, RestartFailure> {
        let (action, ctx) = self.split();
        match action {
            Action::Restart(restart) => restart.bring_up(&ctx, boot).await,
            _ => Err(ActionError::runs_no_process(ctx.name()).into()),
        }
    }
}
