//! Whether a scenario gives a target anything to act on: a target that
//! acts on what a step of the scenario makes (an agent kill on the agent
//! processes of its sessions, a server kill on the sandboxes its SDK made
//! through the stack's provider) has nothing to take down in a scenario
//! without that step, so its cell would say nothing about a restart: not
//! applicable, never an error of the setup ("never went down").

use crate::scenario::{Scenario, StepKind};
use crate::targets::{BuiltinTarget, RestartKind, TargetId};

/// Why `scenario` gives the target nothing to act on, if it does not.
/// `kind` is the target's restart kind when the stack has the target.
pub(super) fn nothing_to_act_on(
    target_id: &TargetId,
    kind: Option<RestartKind>,
    scenario: &Scenario,
) -> Option<String> {
    let has = |step: StepKind| scenario.phases.iter().any(|p| p.step.kind() == step);
    if kind == Some(RestartKind::KillAgent) && !has(StepKind::CreateSession) {
        return Some(format!(
            "{target_id} kills the ACP agent processes of the cell's sessions, and scenario {} opens none",
            scenario.name
        ));
    }
    if *target_id == BuiltinTarget::ServerKill && !has(StepKind::StartSandbox) {
        return Some(format!(
            "{target_id} takes down the sandboxes an SDK made through the stack's SandboxProvider (step start_sandbox), and scenario {} makes none",
            scenario.name
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str) -> Scenario {
        crate::scenario::builtin_scenarios()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no built-in scenario {name}"))
    }

    #[test]
    fn a_server_kill_acts_only_on_a_scenario_that_makes_a_sandbox() {
        let kill = TargetId::from(BuiltinTarget::ServerKill);
        let why = nothing_to_act_on(
            &kill,
            Some(RestartKind::Command),
            &scenario("client-restart"),
        )
        .expect("client-restart makes no sandbox");
        assert!(why.contains("makes none"), "{why}");
        assert_eq!(
            nothing_to_act_on(
                &kill,
                Some(RestartKind::Command),
                &scenario("sandbox-provider")
            ),
            None
        );
    }

    #[test]
    fn an_agent_kill_acts_only_on_a_scenario_that_opens_a_session() {
        let kill = TargetId::from(BuiltinTarget::AgentProcess);
        let kind = Some(RestartKind::KillAgent);
        assert!(nothing_to_act_on(&kill, kind, &scenario("sandbox-reconnect")).is_some());
        assert_eq!(
            nothing_to_act_on(&kill, kind, &scenario("native-continuity")),
            None
        );
        // A target that acts on neither is never held back here.
        let agent = TargetId::from(BuiltinTarget::Agent);
        assert_eq!(
            nothing_to_act_on(
                &agent,
                Some(RestartKind::Signal),
                &scenario("sandbox-reconnect")
            ),
            None
        );
    }
}
