//! What a target does when a cell restarts it, one type per kind: a
//! component restarted ([`Restart`]), the cell's clients made anew,
//! servers taken down and left down, a toxic on a hop for a window
//! ([`FaultWindow`]), a timeout on the path for the whole cell
//! ([`TimeoutWindow`]), and the nemesis faults: a pause
//! ([`PauseWindow`]), an agent kill ([`AgentKillWindow`]), a reboot of
//! the whole stack ([`Reboot`]), a seeded schedule ([`ScheduleWindow`]).
//! Each holds what it keeps between restarts and what it leaves open in
//! a cell; code that asks which kind a target is matches [`Action`]
//! (the enum is the module's, [`super`], which every file names). A
//! target is declared with a [`RestartAction`] (the config file, the
//! stack), which becomes its `Action` once, here.

use super::fault::FaultWindow;
use super::managed::Managed;
use super::nemesis_target::{AgentKillWindow, PauseWindow, ScheduleWindow};
use super::restart::{Restart, Way};
use super::timeout::TimeoutWindow;
use super::{Action, Nemesis, RestartAction, RestartKind};
use crate::faults::FaultControl;
use std::time::Duration;

impl From<RestartAction> for Action {
    fn from(declared: RestartAction) -> Action {
        let restart = |way| Action::Restart(Box::new(Restart::new(way)));
        match declared {
            RestartAction::Managed(spec) => restart(Way::Managed(Box::new(Managed::new(spec)))),
            RestartAction::Command { command, timeout } => {
                restart(Way::Command { command, timeout })
            }
            RestartAction::Signal { pid_file, signal } => restart(Way::Signal { pid_file, signal }),
            RestartAction::Http {
                url,
                method,
                expect_status,
                timeout,
            } => restart(Way::Http {
                url,
                method,
                expect_status,
                timeout,
            }),
            RestartAction::Clients => Action::Clients,
            RestartAction::Fault(fault) => Action::Fault(FaultWindow::new(fault, None)),
            RestartAction::LeftDown(control) => Action::LeftDown(control),
            RestartAction::Timeout(timeout) => Action::Timeout(TimeoutWindow::new(timeout)),
            RestartAction::Nemesis(Nemesis::Pause(pause)) => Action::Pause(PauseWindow::new(pause)),
            RestartAction::Nemesis(Nemesis::KillAgent(kill)) => {
                Action::KillAgent(AgentKillWindow::new(kill))
            }
            RestartAction::Nemesis(Nemesis::Reboot(reboot)) => Action::Reboot(reboot),
            RestartAction::Nemesis(Nemesis::Chaos(chaos)) => {
                Action::Schedule(ScheduleWindow::new(chaos))
            }
        }
    }
}

impl Action {
    /// Its kind, as a target's `restart` table and a restart's record name it.
    pub(crate) fn kind(&self) -> RestartKind {
        match self {
            Action::Restart(restart) => restart.kind(),
            Action::Clients => RestartKind::Clients,
            Action::LeftDown(_) => RestartKind::LeftDown,
            Action::Fault(_) => RestartKind::Fault,
            Action::Timeout(_) => RestartKind::Timeout,
            Action::Pause(_) => RestartKind::Pause,
            Action::KillAgent(_) => RestartKind::KillAgent,
            Action::Reboot(_) => RestartKind::Reboot,
            Action::Schedule(_) => RestartKind::Chaos,
        }
    }

    /// Whether it leaves every process of the stack running: a pause
    /// freezes and wakes, a network fault or a timeout acts on the wire, an
    /// agent kill takes the agent alone under a server that stays up. What
    /// a process of the stack holds in memory (the SDK host's wire records)
    /// outlives it. A restart, a reboot, a schedule (it may hold restarts),
    /// servers left down and a restart of the clients do not.
    pub(crate) fn leaves_processes_running(&self) -> bool {
        match self {
            Action::Fault(_) | Action::Timeout(_) | Action::Pause(_) | Action::KillAgent(_) => true,
            Action::Restart(_)
            | Action::Clients
            | Action::LeftDown(_)
            | Action::Reboot(_)
            | Action::Schedule(_) => false,
        }
    }

    /// One line for listings.
    pub(crate) fn describe(&self) -> String {
        match self {
            Action::Restart(restart) => restart.describe(),
            Action::Clients => {
                "clients: the cell's clients are made anew over the same store".into()
            }
            Action::LeftDown(control) => format!("left down: {}", control.0.describe()),
            Action::Fault(window) => window.describe(),
            Action::Timeout(window) => window.describe(),
            Action::Pause(pause) => pause.pause.describe(),
            Action::KillAgent(kill) => kill.describe(),
            Action::Reboot(reboot) => reboot.describe(),
            Action::Schedule(schedule) => schedule.chaos.describe(),
        }
    }

    /// The least wait after its action before its probe (a command's or
    /// hook's; none for the other kinds).
    pub(super) fn min_wait(&self) -> Duration {
        match self {
            Action::Restart(restart) => restart.min_wait,
            _ => Duration::ZERO,
        }
    }

    /// The proxy of the hop it acts on: a fault's, the window's along a
    /// restart, an idle cut's.
    pub(super) fn fault_proxy(&self) -> Option<&FaultControl> {
        match self {
            Action::Fault(window) => window.proxy(),
            Action::Restart(restart) => restart.along.as_ref().and_then(FaultWindow::proxy),
            Action::Timeout(window) => window.proxy(),
            Action::Clients
            | Action::LeftDown(_)
            | Action::Pause(_)
            | Action::KillAgent(_)
            | Action::Reboot(_)
            | Action::Schedule(_) => None,
        }
    }

    /// See [`Action::fault_proxy`]; a kind that acts on no hop takes none.
    pub(super) fn set_fault_proxy(&mut self, control: FaultControl) {
        match self {
            Action::Fault(window) => window.set_proxy(control),
            Action::Restart(restart) => {
                if let Some(along) = &mut restart.along {
                    along.set_proxy(control);
                }
            }
            Action::Timeout(window) => window.set_proxy(control),
            Action::Clients
            | Action::LeftDown(_)
            | Action::Pause(_)
            | Action::KillAgent(_)
            | Action::Reboot(_)
            | Action::Schedule(_) => {}
        }
    }
}
