//! What a target whose action is a nemesis ([`super::Nemesis`]) does
//! beyond a restart: the schedule its cell draws, the components it is
//! lent, what it leaves open in the cell and how that closes (a pause's
//! wake and, when the component does not answer after it, its repair; a
//! kill's after-look; a schedule giving its components back).

use super::nemesis::{Nemesis, Open};
use super::{
    verify, ActionError, BuiltinTarget, Chaos, Readiness, RestartAction, RestartFailure, Seen,
    SettleError, Target, TargetId,
};
use crate::clock::millis;
use std::time::Instant;

/// What a target with a nemesis does beyond a restart's action: the
/// schedule a cell draws, the components it is lent, what it leaves open.
impl Target {
    /// A stand-in for a target lent away for a cell ([`Target::restart_lent`]):
    /// it holds nothing and runs nothing.
    pub fn placeholder(id: TargetId) -> Target {
        Target::new(id, RestartAction::Clients, Readiness::None)
    }

    /// The stack's components a cell must lend this target's restart (a
    /// reboot's, a schedule's), by their restart targets.
    pub fn lends(&self) -> Vec<BuiltinTarget> {
        match &self.action {
            RestartAction::Nemesis(nemesis) => nemesis.lends(),
            _ => Vec::new(),
        }
    }

    /// The schedule the cell about to run will run (a `chaos` target's).
    pub fn plan_schedule(&mut self, schedule: crate::report::Schedule) {
        self.nemesis = Some(Open::Planned(schedule));
    }

    /// Before the scenario's last phase: a schedule still running is
    /// waited for (every fault over), so that phase finds the stack whole.
    pub async fn before_last_phase(&mut self, lent: &mut [&mut Target]) -> Result<(), SettleError> {
        match self.nemesis {
            Some(Open::Running(_)) => self.close_nemesis(lent).await,
            _ => Ok(()),
        }
    }

    /// Closes what a nemesis left open in the cell. A pause that did not
    /// wake is the test's setup's error; its component woken yet not
    /// answering its probe did not come back ([`super::NotBack`]); either
    /// way the component is restarted for the next cell, and that is said.
    /// A schedule's failures are judged fault by fault.
    pub(super) async fn close_nemesis(
        &mut self,
        lent: &mut [&mut Target],
    ) -> Result<(), SettleError> {
        match self.nemesis.take() {
            None | Some(Open::Planned(_)) => Ok(()),
            Some(Open::Paused(open)) => {
                let component = open.component();
                let failure = match open.close().await {
                    Err(e) => SettleError::Setup(e.to_string()),
                    Ok(_) => match self.ready_after_heal().await {
                        Ok(()) => return Ok(()),
                        Err(probe) => SettleError::NotBack(super::NotBack {
                            component: Some(component),
                            said: format!(
                                "`{component}` was seen running again but did not answer within {} of its wake: {probe}",
                                super::fmt_duration(self.ready_timeout)
                            ),
                            probe,
                        }),
                    },
                };
                let note = self.repair(component, lent).await;
                Err(failure.noted(&note))
            }
            Some(Open::Killed(killed)) => {
                killed.after(&self.trace);
                Ok(())
            }
            Some(Open::Running(running)) => {
                let finished = running.finish().await;
                give_back(lent, finished.parts);
                let mut failures: Vec<SettleError> =
                    finished.failures.into_iter().map(Into::into).collect();
                match failures.len() {
                    0 => Ok(()),
                    1 => Err(failures.remove(0)),
                    _ => Err(SettleError::Several(failures)),
                }
            }
        }
    }

    /// `component`, paused and not well after its wake, restarted through
    /// its own restart target (lent to the cell) so the next cell finds
    /// the stack whole, and, when that does not bring it back, what its
    /// probe is answered through ([`BuiltinTarget::repaired_with`]): what
    /// that did, as clauses of the failure.
    async fn repair(&mut self, component: BuiltinTarget, lent: &mut [&mut Target]) -> String {
        let mut said = String::new();
        for id in component.repaired_with() {
            let Some(part) = lent.iter_mut().find(|p| p.id == id) else {
                said.push_str(&format!(
                    "; `{id}` was not lent to the cell and was left as it is"
                ));
                break;
            };
            part.set_trace(self.trace.clone());
            // Boxed: a restart may itself close a nemesis (never a managed
            // component's, which is all a pause lends), a cycle of futures.
            let repaired = Box::pin(part.restart_lent("repairAfterPause", &mut []))
                .await
                .record;
            said.push_str(&super::repair_note(id, &repaired));
            if repaired.ok {
                break;
            }
        }
        said
    }

    /// A nemesis's action and its proof that it took: a pause seen stopped,
    /// agents seen gone under a server still up, every component seen down
    /// and back, a schedule started (its faults are proven as they run).
    pub(super) async fn restart_nemesis(
        &mut self,
        started: Instant,
        lent: &mut [&mut Target],
    ) -> (u64, Result<Seen, RestartFailure>) {
        let RestartAction::Nemesis(nemesis) = self.action.clone() else {
            return (0, Err(RestartFailure::Unverifiable));
        };
        // A second restart in the cell closes what the first left open
        // (a schedule drawn for the cell stays: it is this restart's).
        if !matches!(self.nemesis, None | Some(Open::Planned(_))) {
            if let Err(e) = self.close_nemesis(lent).await {
                return (
                    0,
                    Err(ActionError::NothingDown {
                        reason: e.to_string(),
                    }
                    .into()),
                );
            }
        }
        let taken: Result<String, RestartFailure> = match &nemesis {
            Nemesis::Pause(pause) => match pause.open(&self.trace).await {
                Ok(open) => {
                    let taken = open.taken();
                    self.nemesis = Some(Open::Paused(open));
                    Ok(taken)
                }
                Err(e) => Err(RestartFailure::NeverDown {
                    observed: e.to_string(),
                }),
            },
            Nemesis::KillAgent(kill) => match kill.act(&self.trace).await {
                Ok(killed) => {
                    let taken = killed.taken();
                    self.nemesis = Some(Open::Killed(killed));
                    Ok(taken)
                }
                Err(e) => Err(RestartFailure::NeverDown {
                    observed: e.to_string(),
                }),
            },
            Nemesis::Reboot(reboot) => {
                for part in lent.iter_mut() {
                    part.set_trace(self.trace.clone());
                }
                reboot.run(lent).await
            }
            Nemesis::Chaos(chaos) => self.start_schedule(chaos, lent),
        };
        let seen = taken.map(|down| Seen {
            down: Some(down),
            ready_ms: None,
        });
        (millis(started.elapsed()), seen)
    }

    /// The cell's planned schedule, started on the lent components
    /// (placeholders stand in for them until it gives them back).
    fn start_schedule(
        &mut self,
        chaos: &Chaos,
        lent: &mut [&mut Target],
    ) -> Result<String, RestartFailure> {
        let Some(Open::Planned(schedule)) = self.nemesis.take() else {
            return Err(ActionError::NothingDown {
                reason: "no schedule was drawn for this cell".into(),
            }
            .into());
        };
        let parts: Vec<Target> = lent
            .iter_mut()
            .map(|slot| {
                let id = slot.id.clone();
                std::mem::replace(&mut **slot, Target::placeholder(id))
            })
            .collect();
        let running = chaos.start(&schedule, parts, &self.trace, &self.probe_auth);
        self.nemesis = Some(Open::Running(running));
        Ok(format!("schedule started: {}", schedule.describe()))
    }

    /// For a reboot: the managed process stopped (its stop signal, grace,
    /// SIGKILL) and seen down, as its own restart sees it; not started again.
    pub(crate) async fn take_down(&mut self) -> Result<String, RestartFailure> {
        let RestartAction::Managed(spec) = &self.action else {
            return Err(ActionError::NothingDown {
                reason: format!("`{}` runs no process of the harness's", self.name()),
            }
            .into());
        };
        let spec = spec.clone();
        self.stop_managed(&spec).await;
        self.stopped
            .take()
            .unwrap_or_else(|| Err(verify::NotDown("no process was running".into())))
            .map_err(Into::into)
    }

    /// For a reboot: the managed process started again and seen ready (by
    /// `boot`'s probe when given, else its own); how long that took.
    pub(crate) async fn bring_up(
        &mut self,
        boot: Option<&Readiness>,
    ) -> Result<u64, RestartFailure> {
        let RestartAction::Managed(spec) = &self.action else {
            return Err(ActionError::NothingDown {
                reason: format!("`{}` runs no process of the harness's", self.name()),
            }
            .into());
        };
        let spec = spec.clone();
        self.start_and_record(&spec)?;
        let waited = Instant::now();
        match boot {
            None => {
                self.wait_back().await?;
            }
            Some(probe) => {
                probe
                    .wait_observing(self.ready_timeout, &self.probe_auth, &self.trace)
                    .await
                    .map_err(|error| RestartFailure::NotBack {
                        timeout: self.ready_timeout,
                        error,
                        hint: self.process_hint(),
                        of: None,
                    })?;
            }
        }
        Ok(millis(waited.elapsed()))
    }
}

/// Puts the components a schedule was lent back in their slots (where
/// placeholders stood meanwhile).
fn give_back(lent: &mut [&mut Target], parts: Vec<Target>) {
    for part in parts {
        if let Some(slot) = lent.iter_mut().find(|slot| slot.id == part.id) {
            **slot = part;
        }
    }
}
