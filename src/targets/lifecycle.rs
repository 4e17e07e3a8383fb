//! What every target goes through, whatever its kind: prepared before
//! any cell, restarted in a cell (its kind's action and proof, recorded),
//! settled when the cell's phases end, switched to another program, shut
//! down. The work of each kind is its type's ([`super::kinds`]); here it
//! is only dispatched, and the record kept.

use super::fault::FaultWindow;
use super::{
    fmt_duration, Action, ActionError, Ctx, NotBack, Readiness, RestartFailure, RestartResult,
    Restarted, Seen, SettleError, Target, TargetError,
};
use crate::clock::millis;
use std::path::PathBuf;
use std::time::Instant;

impl Target {
    /// Starts what the target owns and waits until it is ready. A delay
    /// probe is only waited for after starting a managed process: for the
    /// other kinds the component is already up.
    pub(crate) async fn prepare(&mut self) -> Result<(), TargetError> {
        let (action, ctx) = self.split();
        let prepared = match action {
            Action::Restart(restart) => restart.prepare(&ctx),
            Action::Fault(window) => window.check(),
            Action::Clients
            | Action::LeftDown(_)
            | Action::Timeout(_)
            | Action::Pause(_)
            | Action::KillAgent(_)
            | Action::Reboot(_)
            | Action::Schedule(_) => Ok(()),
        };
        prepared.map_err(|error| self.action_error(error))?;
        let is_delay = matches!(self.readiness, Readiness::Delay { .. });
        if is_delay && self.managed_spec().is_none() {
            return Ok(());
        }
        let waited = {
            let (action, ctx) = self.split();
            let ready = ctx
                .readiness
                .wait_with(ctx.ready_timeout, ctx.probe_auth, ctx.trace);
            tokio::select! {
                ready = ready => ready.map_err(Some),
                () = failed_process(action) => Err(None),
            }
        };
        if let Err(error) = waited {
            let mut hint = String::new();
            if let Action::Restart(restart) = &mut self.action {
                hint = restart.hint();
                restart.stop_unready().await;
            }
            let target = self.name().to_string();
            return Err(match error {
                Some(error) => TargetError::NotReady {
                    target,
                    error,
                    hint,
                },
                None => TargetError::Failed { target, hint },
            });
        }
        Ok(())
    }

    /// Runs the restart action, checks that the target went down and waits
    /// until it is back ([`super::verify`]); `phase` names the scenario
    /// phase the result belongs to.
    #[cfg(test)]
    pub(crate) async fn restart(&mut self, phase: &str) -> RestartResult {
        self.restart_lent(phase, &mut []).await.record
    }

    /// [`Target::restart`] with the stack's components lent to the cell
    /// (a reboot's, a schedule's: [`Target::lends`]), and what failed typed
    /// beside the record: a cell blames a target that did not come back on
    /// the system under test, one that never went down on its setup. A
    /// schedule keeps the components until [`Target::before_last_phase`] or
    /// [`Target::settle_lent`] gives them back, leaving placeholders
    /// meanwhile.
    pub(crate) async fn restart_lent(
        &mut self,
        phase: &str,
        lent: &mut [&mut Target],
    ) -> Restarted {
        let started = Instant::now();
        let (restart_ms, checked) = self.act(started, lent).await;
        let (ok, down, ready_ms, detail, failure) = match checked {
            Ok(seen) => (true, seen.down, seen.ready_ms, None, None),
            Err(failure) => (false, None, None, Some(failure.to_string()), Some(failure)),
        };
        let mut outcome = RestartResult {
            phase: phase.to_string(),
            action: self.kind().to_string(),
            ok,
            restart_ms,
            ready_ms,
            down,
            detail,
        };
        if let Action::Restart(restart) = &mut self.action {
            restart.note(ok, outcome.detail.as_deref());
            if let Some(note) = restart.take_after_stop_note() {
                outcome.detail = Some(match outcome.detail {
                    Some(detail) => format!("{detail}; {note}"),
                    None => note,
                });
            }
        }
        Restarted {
            record: outcome,
            failure,
        }
    }

    /// The kind's action and its proof; how long the action took. Kinds
    /// that restart no process: a fault's probe waits for its heal
    /// ([`Target::settle`]), the cell renews its own clients, a timeout
    /// is in force for the whole cell already.
    async fn act(
        &mut self,
        started: Instant,
        lent: &mut [&mut Target],
    ) -> (u64, Result<Seen, RestartFailure>) {
        let (action, ctx) = self.split();
        let acted = match action {
            Action::Restart(restart) => return restart.restart(&ctx, started).await,
            Action::LeftDown(control) => {
                // Down, and left so: no probe is waited for; whoever brings
                // the servers back (a client's `ensureServer`) says that
                // they came back.
                let down = control.0.take_down().await.map(|down| Seen {
                    down: Some(down),
                    ready_ms: None,
                });
                return (millis(started.elapsed()), down.map_err(Into::into));
            }
            Action::Fault(window) => window.open(ctx.trace),
            Action::Clients | Action::Timeout(_) => Ok(()),
            Action::Pause(_) | Action::KillAgent(_) | Action::Reboot(_) | Action::Schedule(_) => {
                return self.restart_nemesis(started, lent).await
            }
        };
        let restart_ms = millis(started.elapsed());
        (
            restart_ms,
            acted.map(|()| Seen::default()).map_err(Into::into),
        )
    }

    /// From now on this managed target runs `program` (another build of
    /// the same component, same arguments, same port): the running process
    /// stops as at [`Target::shutdown`], then the new one starts and must
    /// become ready as at [`Target::prepare`].
    pub(crate) async fn switch_program(&mut self, program: PathBuf) -> Result<(), TargetError> {
        if self.managed_spec().is_none() {
            return Err(self.action_error(ActionError::Start {
                command: self.action.describe(),
                reason: "only a managed process can run another program".into(),
                log_tail: String::new(),
            }));
        }
        self.shutdown().await;
        if let Action::Restart(restart) = &mut self.action {
            if let Some(spec) = restart.managed_spec_mut() {
                spec.program = program;
            }
        }
        self.prepare().await
    }

    /// [`Target::settle_lent`] of a target lent nothing.
    #[cfg(test)]
    pub(crate) async fn settle(&mut self) -> Result<(), SettleError> {
        self.settle_lent(&mut []).await
    }

    /// When the cell's phases are over: a fault target's window heals now
    /// (the cleanup runs on a healed network), and every hop's proxy must
    /// still be serving (an error is the harness's: the proxy itself
    /// failed). A nemesis closes what it left open: a schedule still
    /// running is waited for and gives back the components it was `lent`,
    /// a pause wakes (and is seen so: else the test's setup's error), an
    /// agent kill's server is looked at again. A stack or a component that
    /// does not answer after a heal or a wake did not come back from the
    /// fault ([`super::NotBack`]).
    pub(crate) async fn settle_lent(
        &mut self,
        lent: &mut [&mut Target],
    ) -> Result<(), SettleError> {
        let nemesis = self.close_nemesis(lent).await;
        let (action, ctx) = self.split();
        match action {
            Action::Timeout(window) => window.close()?,
            Action::Fault(window) => heal(window, &ctx).await?,
            Action::Restart(restart) => {
                if let Some(along) = &mut restart.along {
                    heal(along, &ctx).await?;
                }
            }
            Action::Clients
            | Action::LeftDown(_)
            | Action::Pause(_)
            | Action::KillAgent(_)
            | Action::Reboot(_)
            | Action::Schedule(_) => {}
        }
        for hop in self.hops.iter().chain(self.action.fault_proxy()) {
            hop.check()?;
        }
        nemesis
    }

    /// Stops a managed process (its stop signal, grace, then SIGKILL); a
    /// fault target's window heals, a timeout's closes, what a nemesis
    /// left open goes.
    pub(crate) async fn shutdown(&mut self) {
        match &mut self.action {
            Action::Restart(restart) => restart.shutdown().await,
            Action::Fault(window) => window.shutdown(),
            Action::Timeout(window) => window.shutdown(),
            nemesis @ (Action::Pause(_) | Action::KillAgent(_) | Action::Schedule(_)) => {
                nemesis.drop_open()
            }
            Action::Clients | Action::LeftDown(_) | Action::Reboot(_) => {}
        }
    }

    fn action_error(&self, error: ActionError) -> TargetError {
        TargetError::Action {
            target: self.name().to_string(),
            error,
        }
    }
}

/// When the cell's phases are over, a fault window heals now (the cleanup
/// runs on a healed network), and the stack must answer again
/// ([`Ctx::ready_after_heal`]); one that does not did not come back from
/// the fault.
async fn heal(window: &mut FaultWindow, ctx: &Ctx<'_>) -> Result<(), SettleError> {
    let Some(open) = window.take_open() else {
        return Ok(());
    };
    open.close()?;
    ctx.ready_after_heal().await.map_err(|probe| NotBack {
        component: None,
        said: format!(
            "the stack was not ready again within {} of the fault's heal: {probe}",
            fmt_duration(ctx.ready_timeout)
        ),
        probe,
    })?;
    Ok(())
}

/// Resolves once a managed target's process has failed during its first
/// start (exited other than 0, or by a signal: an exit 0 may be a process
/// that put itself in the background, whose probe still decides; looked at
/// every 50 ms); never for the other actions, whose probe alone decides.
async fn failed_process(action: &mut Action) {
    let Action::Restart(restart) = action else {
        return std::future::pending().await;
    };
    let super::restart::Way::Managed(managed) = &mut restart.way else {
        return std::future::pending().await;
    };
    while !managed.failed() {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
