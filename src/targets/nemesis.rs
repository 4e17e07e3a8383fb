//! The faults that are neither one restart nor one toxic on a hop:
//! Jepsen's nemesis package, each one type with its action, its proof
//! that it took, and its heal. A component paused ([`PauseAction`]), the
//! agent process killed under a server that stays up ([`AgentKill`]), the
//! whole stack rebooted ([`Reboot`]), a seeded schedule of several faults
//! in one cell ([`Chaos`]). A restart target's action holds one of them
//! ([`super::RestartAction::Nemesis`]), and the target holds it as its
//! own kind of [`super::Action`], with what it leaves open for the rest of
//! the cell (a pause until its wake, a kill until its after-look, a
//! schedule until its last fault), healed when the cell's phases end at
//! the latest ([`super::nemesis_target`]).

use super::agent_kill::AgentKill;
use super::chaos::Chaos;
use super::pause::PauseAction;
use super::reboot::Reboot;

/// One fault of the nemesis package.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Nemesis {
    Pause(PauseAction),
    KillAgent(AgentKill),
    Reboot(Reboot),
    Chaos(Chaos),
}
