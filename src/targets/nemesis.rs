//! The faults that are neither one restart nor one toxic on a hop:
//! Jepsen's nemesis package, each one type with its action, its proof
//! that it took, and its heal. A component paused ([`PauseAction`]), the
//! agent process killed under a server that stays up ([`AgentKill`]), the
//! whole stack rebooted ([`Reboot`]), a seeded schedule of several faults
//! in one cell ([`Chaos`]). A restart target's action holds one of them
//! ([`super::RestartAction::Nemesis`]); what one leaves open for the rest
//! of the cell (a pause until its wake, a kill until its after-look, a
//! schedule until its last fault) is an [`Open`], healed when the cell's
//! phases end at the latest.

use super::agent_kill::{AgentKill, Killed};
use super::chaos::{Chaos, RunningSchedule};
use super::pause::{OpenPause, PauseAction};
use super::reboot::Reboot;
use super::BuiltinTarget;
use crate::report::Schedule;

/// One fault of the nemesis package.
#[derive(Debug, Clone, PartialEq)]
pub enum Nemesis {
    Pause(PauseAction),
    KillAgent(AgentKill),
    Reboot(Reboot),
    Chaos(Chaos),
}

impl Nemesis {
    pub fn describe(&self) -> String {
        match self {
            Nemesis::Pause(pause) => pause.describe(),
            Nemesis::KillAgent(kill) => kill.describe(),
            Nemesis::Reboot(reboot) => reboot.describe(),
            Nemesis::Chaos(chaos) => chaos.describe(),
        }
    }

    /// The stack's components a cell must lend it (their restart targets),
    /// in dependency order.
    pub fn lends(&self) -> Vec<BuiltinTarget> {
        match self {
            Nemesis::Reboot(reboot) => reboot.order.clone(),
            Nemesis::Chaos(_) => super::chaos::LENT.to_vec(),
            // Restarted when it does not wake or answer, so the next cell
            // finds it whole (and what its probe is answered through).
            Nemesis::Pause(pause) => pause.component.repaired_with(),
            Nemesis::KillAgent(_) => Vec::new(),
        }
    }
}

/// What a nemesis leaves open in a cell.
#[derive(Debug)]
pub(super) enum Open {
    /// The schedule the cell will run, drawn before it starts.
    Planned(Schedule),
    Paused(OpenPause),
    Killed(Killed),
    Running(RunningSchedule),
}
