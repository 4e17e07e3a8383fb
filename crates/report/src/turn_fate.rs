//! A long turn's fate: the verdict vocabulary of the `long-turn`
//! scenarios. Read from a cell's phases (its `await_turn`, its
//! `recover_turn`, the first `prompt` after the await), it tells a turn
//! whose result reached the client (and by which channel) from a **lost**
//! turn (the agent finished it, the client never got the result) and from
//! a turn the agent never **finished**, and says whether the session was
//! left **unusable** for the next prompt. `report.json` carries it on the
//! cell (`turn`, the types are the model's); report.md's "Where the fix
//! belongs" reads it.

use super::detail::{self, AwaitTurnDetail, RecoverTurnDetail};
use super::model::{Fate, Outcome, PhaseResult, TurnFate};

/// The fate of the cell's awaited turn; `None` when it awaited none,
/// or the await did not run (not reached, not applicable).
pub fn fate_of_turn(phases: &[PhaseResult]) -> Option<TurnFate> {
    let at = phases
        .iter()
        .position(|p| p.step == "await_turn" && !p.cleanup)?;
    let awaited = &phases[at];
    if !matches!(
        awaited.outcome,
        Outcome::Ok | Outcome::Fail | Outcome::Timeout
    ) {
        return None;
    }
    let turn = detail::read::<AwaitTurnDetail>(&awaited.detail).unwrap_or_default();
    let recovered = phases
        .iter()
        .find(|p| p.step == "recover_turn" && p.outcome != Outcome::NotRun)
        .and_then(|p| detail::read::<RecoverTurnDetail>(&p.detail))
        .unwrap_or_default();
    let delivered = awaited.outcome == Outcome::Ok && turn.turn_outcome == "completed";
    let fate = match (delivered, recovered.agent_finished) {
        (true, _) => Fate::Delivered,
        (false, Some(true)) => Fate::Lost,
        (false, Some(false)) => Fate::Unfinished,
        // A result someone still holds was finished by the agent.
        (false, None) if !recovered.recoverable_via.is_empty() => Fate::Lost,
        (false, None) => Fate::Unknown,
    };
    Some(TurnFate {
        fate,
        channel: delivered.then(|| turn.answered_via.unwrap_or_else(|| "unknown".into())),
        agent_finished: recovered.agent_finished,
        recoverable_via: recovered.recoverable_via,
        session_usable: next_prompt(&phases[at + 1..]),
    })
}

/// Whether the first prompt after the await passed; `None` when none ran.
fn next_prompt(after: &[PhaseResult]) -> Option<bool> {
    let prompt = after.iter().find(|p| p.step == "prompt" && !p.cleanup)?;
    match prompt.outcome {
        Outcome::Ok => Some(true),
        Outcome::Fail | Outcome::Timeout => Some(false),
        Outcome::NotRun | Outcome::Interrupted | Outcome::NotApplicable => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn phase(name: &str, step: &str, outcome: &str, detail: Value) -> PhaseResult {
        serde_json::from_value(json!({
            "name": name, "step": step, "verdict": true, "cleanup": false, "outcome": outcome,
            "ok": outcome == "ok", "durationMs": 1, "deadlineMs": 1000,
            "detail": detail, "signature": null
        }))
        .unwrap()
    }

    fn cell(await_ok: bool, finished: Option<bool>, via: &[&str], next: &str) -> Vec<PhaseResult> {
        let awaited = match await_ok {
            true => phase(
                "awaitTurn",
                "await_turn",
                "ok",
                json!({"turnOutcome": "completed", "answeredVia": "stream"}),
            ),
            false => phase(
                "awaitTurn",
                "await_turn",
                "fail",
                json!({"turnOutcome": "failed"}),
            ),
        };
        vec![
            phase("createSession", "create_session", "ok", json!({})),
            phase("startLongTurn", "prompt", "ok", json!({})),
            awaited,
            phase(
                "recoverTurn",
                "recover_turn",
                "ok",
                json!({"agentFinished": finished, "recoverableVia": via}),
            ),
            phase("promptAfterTurn", "prompt", next, json!({})),
        ]
    }

    #[test]
    fn the_vocabulary_tells_a_lost_turn_from_an_unfinished_one_and_an_unusable_session() {
        let delivered =
            fate_of_turn(&cell(true, Some(true), &["history", "stream"], "ok")).unwrap();
        assert_eq!(
            (delivered.fate, delivered.channel.as_deref()),
            (Fate::Delivered, Some("stream"))
        );
        assert_eq!(delivered.words(), "delivered by stream; session usable");
        assert_eq!(delivered.fix(), "nothing to fix");

        let lost = fate_of_turn(&cell(false, Some(true), &["stream"], "fail")).unwrap();
        assert_eq!((lost.fate, lost.channel.as_deref()), (Fate::Lost, None));
        assert_eq!(lost.session_usable, Some(false));
        assert_eq!(
            lost.words(),
            "lost (the agent finished; recoverable from the stream); session unusable"
        );
        assert!(lost.fix().contains("sandbox-agent#308"));

        let unfinished = fate_of_turn(&cell(false, Some(false), &[], "timeout")).unwrap();
        assert_eq!(unfinished.fate, Fate::Unfinished);
        assert!(unfinished.fix().starts_with("server- or agent-side"));
        assert!(unfinished.fix().ends_with("sandbox-agent#306/#307)"));
        // Without the agent's record, a result someone holds was still finished.
        assert_eq!(
            fate_of_turn(&cell(false, None, &["history"], "ok"))
                .unwrap()
                .fate,
            Fate::Lost
        );
        assert_eq!(
            fate_of_turn(&cell(false, None, &[], "ok")).unwrap().fate,
            Fate::Unknown
        );
    }

    #[test]
    fn a_cell_without_an_awaited_turn_has_no_fate() {
        let mut phases = cell(false, Some(true), &[], "ok");
        assert!(fate_of_turn(&phases[..2]).is_none());
        phases[2].outcome = Outcome::NotApplicable;
        assert!(fate_of_turn(&phases).is_none());
    }
}
