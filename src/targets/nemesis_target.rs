//! The kinds of target whose action is a nemesis ([`super::Nemesis`]),
//! each one type with what it leaves open in a cell and how that closes:
//! a pause until its wake ([`PauseWindow`]: when the component does not
//! answer after it, its repair), an agent kill until its after-look
//! ([`AgentKillWindow`]), a schedule from its draw to its last fault
//! ([`ScheduleWindow`], giving back the components it was lent). A reboot
//! leaves nothing open ([`super::Reboot`]). Also what a cell does with
//! such a target beyond a restart: the schedule it draws, the components
//! it lends.

use super::agent_kill::{AgentKill, Killed};
use super::chaos_run::RunningSchedule;
use super::pause::{OpenPause, PauseAction};
use super::{
    fmt_duration, Action, ActionError, BuiltinTarget, Chaos, Ctx, NotBack, Readiness,
    RestartAction, RestartFailure, Seen, SettleError, Target, TargetId,
};
use crate::clock::millis;
use crate::report::Schedule;
use std::time::Instant;

/// A component's process group paused, and the pause in force in the cell.
#[derive(Debug)]
pub(crate) struct PauseWindow {
    pub(super) pause: PauseAction,
    open: Option<OpenPause>,
}

/// The agent processes under a server killed, and the kill the cell has
/// yet to look after.
#[derive(Debug)]
pub(crate) struct AgentKillWindow {
    kill: AgentKill,
    killed: Option<Killed>,
}

/// A seeded schedule of faults: drawn for the cell, then running on the
/// components it was lent until its last fault is over.
#[derive(Debug)]
pub(crate) struct ScheduleWindow {
    pub(super) chaos: Chaos,
    state: Scheduled,
}

/// Where a cell's schedule is.
#[derive(Debug)]
enum Scheduled {
    Idle,
    /// The schedule the cell will run, drawn before it starts.
    Planned(Schedule),
    Running(RunningSchedule),
}

impl PauseWindow {
    pub(super) fn new(pause: PauseAction) -> PauseWindow {
        PauseWindow { pause, open: None }
    }

    /// The pause and its proof that it took: the group seen stopped.
    async fn act(&mut self, ctx: &Ctx<'_>) -> Result<String, RestartFailure> {
        match self.pause.open(ctx.trace).await {
            Ok(open) => {
                let taken = open.taken();
                self.open = Some(open);
                Ok(taken)
            }
            Err(e) => Err(RestartFailure::NeverDown {
                observed: e.to_string(),
            }),
        }
    }

    /// The wake. A pause that did not wake is the test's setup's error;
    /// its component woken yet not answering its probe did not come back
    /// ([`NotBack`]); either way the component is restarted for the next
    /// cell, and that is said.
    async fn close(&mut self, ctx: &Ctx<'_>, lent: &mut [&mut Target]) -> Result<(), SettleError> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let component = open.component();
        let failure = match open.close().await {
            Err(e) => SettleError::Setup(e.to_string()),
            Ok(_) => match ctx.ready_after_heal().await {
                Ok(()) => return Ok(()),
                Err(probe) => SettleError::NotBack(NotBack {
                    component: Some(component),
                    said: format!(
                        "`{component}` was seen running again but did not answer within {} of its wake: {probe}",
                        fmt_duration(ctx.ready_timeout)
                    ),
                    probe,
                }),
            },
        };
        let note = repair(ctx, component, lent).await;
        Err(failure.noted(&note))
    }
}

impl AgentKillWindow {
    pub(super) fn new(kill: AgentKill) -> AgentKillWindow {
        AgentKillWindow { kill, killed: None }
    }

    pub(super) fn describe(&self) -> String {
        self.kill.describe()
    }

    /// The kill and its proof that it took: the agents seen gone under a
    /// server still up.
    async fn act(&mut self, ctx: &Ctx<'_>) -> Result<String, RestartFailure> {
        match self.kill.act(ctx.trace).await {
            Ok(killed) => {
                let taken = killed.taken();
                self.killed = Some(killed);
                Ok(taken)
            }
            Err(e) => Err(RestartFailure::NeverDown {
                observed: e.to_string(),
            }),
        }
    }

    /// The server looked at again.
    fn close(&mut self, ctx: &Ctx<'_>) {
        if let Some(killed) = self.killed.take() {
            killed.after(ctx.trace);
        }
    }
}

impl ScheduleWindow {
    pub(super) fn new(chaos: Chaos) -> ScheduleWindow {
        ScheduleWindow {
            chaos,
            state: Scheduled::Idle,
        }
    }

    /// The cell's planned schedule, started on the lent components
    /// (placeholders stand in for them until it gives them back).
    fn start(&mut self, ctx: &Ctx<'_>, lent: &mut [&mut Target]) -> Result<String, RestartFailure> {
        let Scheduled::Planned(schedule) = std::mem::replace(&mut self.state, Scheduled::Idle)
        else {
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
        let running = self
            .chaos
            .start(&schedule, parts, ctx.trace, ctx.probe_auth);
        self.state = Scheduled::Running(running);
        Ok(format!("schedule started: {}", schedule.describe()))
    }

    /// A schedule still running is waited for, and gives back what it
    /// was lent; its failures are judged fault by fault.
    async fn close(&mut self, lent: &mut [&mut Target]) -> Result<(), SettleError> {
        let running = match std::mem::replace(&mut self.state, Scheduled::Idle) {
            Scheduled::Running(running) => running,
            planned_or_idle => {
                self.state = planned_or_idle;
                return Ok(());
            }
        };
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

impl Action {
    /// A nemesis's state left open in the cell by an earlier restart (a
    /// schedule drawn for the cell is not: it is the next restart's).
    fn left_open(&self) -> bool {
        match self {
            Action::Pause(pause) => pause.open.is_some(),
            Action::KillAgent(kill) => kill.killed.is_some(),
            Action::Schedule(schedule) => matches!(schedule.state, Scheduled::Running(_)),
            Action::Restart(_)
            | Action::Clients
            | Action::LeftDown(_)
            | Action::Fault(_)
            | Action::Timeout(_)
            | Action::Reboot(_) => false,
        }
    }

    /// What a nemesis leaves open dropped: a pause wakes as it is
    /// dropped; a schedule's lent parts go with it.
    pub(super) fn drop_open(&mut self) {
        match self {
            Action::Pause(pause) => pause.open = None,
            Action::KillAgent(kill) => kill.killed = None,
            Action::Schedule(schedule) => schedule.state = Scheduled::Idle,
            Action::Restart(_)
            | Action::Clients
            | Action::LeftDown(_)
            | Action::Fault(_)
            | Action::Timeout(_)
            | Action::Reboot(_) => {}
        }
    }
}

/// What a target with a nemesis does beyond a restart's action: the
/// schedule a cell draws, the components it is lent, what it leaves open.
impl Target {
    /// A stand-in for a target lent away for a cell ([`Target::restart_lent`]):
    /// it holds nothing and runs nothing.
    pub(crate) fn placeholder(id: TargetId) -> Target {
        Target::new(id, RestartAction::Clients, Readiness::None)
    }

    /// The stack's components a cell must lend this target's restart (a
    /// reboot's, a schedule's), by their restart targets, in dependency
    /// order.
    pub(crate) fn lends(&self) -> Vec<BuiltinTarget> {
        match &self.action {
            Action::Reboot(reboot) => reboot.order.clone(),
            Action::Schedule(_) => super::chaos::LENT.to_vec(),
            // Restarted when it does not wake or answer, so the next cell
            // finds it whole (and what its probe is answered through).
            Action::Pause(pause) => pause.pause.component.repaired_with(),
            Action::Restart(_)
            | Action::Clients
            | Action::LeftDown(_)
            | Action::Fault(_)
            | Action::Timeout(_)
            | Action::KillAgent(_) => Vec::new(),
        }
    }

    /// The schedule the cell about to run will run (a `chaos` target's).
    pub(crate) fn plan_schedule(&mut self, schedule: Schedule) {
        if let Action::Schedule(window) = &mut self.action {
            window.state = Scheduled::Planned(schedule);
        }
    }

    /// Before the scenario's last phase: a schedule still running is
    /// waited for (every fault over), so that phase finds the stack whole.
    pub(crate) async fn before_last_phase(
        &mut self,
        lent: &mut [&mut Target],
    ) -> Result<(), SettleError> {
        match &mut self.action {
            Action::Schedule(schedule) => schedule.close(lent).await,
            _ => Ok(()),
        }
    }

    /// Closes what a nemesis left open in the cell.
    pub(super) async fn close_nemesis(
        &mut self,
        lent: &mut [&mut Target],
    ) -> Result<(), SettleError> {
        let (action, ctx) = self.split();
        match action {
            Action::Pause(pause) => pause.close(&ctx, lent).await,
            Action::KillAgent(kill) => {
                kill.close(&ctx);
                Ok(())
            }
            Action::Schedule(schedule) => {
                let closed = schedule.close(lent).await;
                // A plan no restart ran goes too.
                schedule.state = Scheduled::Idle;
                closed
            }
            Action::Restart(_)
            | Action::Clients
            | Action::LeftDown(_)
            | Action::Fault(_)
            | Action::Timeout(_)
            | Action::Reboot(_) => Ok(()),
        }
    }

    /// A nemesis's action and its proof that it took: a pause seen stopped,
    /// agents seen gone under a server still up, every component seen down
    /// and back, a schedule started (its faults are proven as they run).
    pub(super) async fn restart_nemesis(
        &mut self,
        started: Instant,
        lent: &mut [&mut Target],
    ) -> (u64, Result<Seen, RestartFailure>) {
        // A second restart in the cell closes what the first left open
        // (a schedule drawn for the cell stays: it is this restart's).
        if self.action.left_open() {
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
        let (action, ctx) = self.split();
        let taken = match action {
            Action::Pause(pause) => pause.act(&ctx).await,
            Action::KillAgent(kill) => kill.act(&ctx).await,
            Action::Reboot(reboot) => {
                for part in lent.iter_mut() {
                    part.set_trace(ctx.trace.clone());
                }
                reboot.run(lent).await
            }
            Action::Schedule(schedule) => schedule.start(&ctx, lent),
            Action::Restart(_)
            | Action::Clients
            | Action::LeftDown(_)
            | Action::Fault(_)
            | Action::Timeout(_) => return (0, Err(RestartFailure::Unverifiable)),
        };
        let seen = taken.map(|down| Seen {
            down: Some(down),
            ready_ms: None,
        });
        (millis(started.elapsed()), seen)
    }
}

/// `component`, paused and not well after its wake, repaired through
/// the parts lent to the cell (its own restart target first,
/// [`BuiltinTarget::repair_steps`]) so the next cell finds the stack
/// whole: what that did, as clauses of the failure.
async fn repair(ctx: &Ctx<'_>, component: BuiltinTarget, lent: &mut [&mut Target]) -> String {
    let mut parts = super::repair::LentSlice {
        holder: super::repair::Holder::Cell,
        trace: ctx.trace,
        parts: lent,
        phase: "repairAfterPause",
    };
    super::repair_lent(component, &mut parts).await.said
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
