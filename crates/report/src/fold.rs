//! An attempt's verdict folded from its phases, judged only on what ran:
//! a step the cell's client cannot take (`not_applicable`) decides
//! nothing, and a cell whose every verdict phase after its restart (or in
//! its fault's window, or its timeout's: the whole cell) was such a step
//! says nothing about the restart. Its verdict is then `not_applicable`,
//! its reason the phase and the call it lacks, never `pass`. The executor
//! folds each attempt here; the report's readers find the missing call
//! through [`missing_call`].

use super::detail::NotApplicableDetail;
use super::model::{Outcome, PhaseResult, RestartResult, SignatureKind, Verdict};

/// The `step` of a restart phase, as the scenario language names it.
pub const RESTART_STEP: &str = "restart";

/// The restart `action` of a target whose window is the whole cell (a
/// timeout on the path): its `restart` step restarts nothing, and every
/// verdict phase is in its window.
pub const WHOLE_CELL_ACTION: &str = "timeout";

/// An attempt's verdict, the phase it broke at (its failure boundary) and,
/// for `not_applicable`, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folded {
    pub verdict: Verdict,
    pub boundary: Option<String>,
    pub reason: Option<String>,
}

impl Folded {
    fn of(verdict: Verdict, boundary: Option<&PhaseResult>) -> Folded {
        Folded {
            verdict,
            boundary: boundary.map(|p| p.name.clone()),
            reason: None,
        }
    }
}

/// The attempt's verdict from its phases (`restarts`: what its restart
/// phases did, which says whether the window is the whole cell).
///
/// A harness failure makes it an `error`; a verdict phase that ran and
/// failed a `fail`, at the first such phase (or else the first failed
/// phase); every verdict phase that ran passing is a `pass`, unless the
/// verdict phases after the restart all could not run: `not_applicable`.
pub fn fold(phases: &[PhaseResult], restarts: &[RestartResult]) -> Folded {
    let ran: Vec<&PhaseResult> = phases
        .iter()
        .filter(|p| !p.cleanup && p.outcome != Outcome::NotApplicable)
        .collect();
    let harness = |p: &&&PhaseResult| {
        p.signature
            .as_ref()
            .is_some_and(|s| s.kind == SignatureKind::Harness)
    };
    if let Some(harness) = ran.iter().find(harness) {
        return Folded::of(Verdict::Error, Some(harness));
    }
    if ran.iter().filter(|p| p.decides_verdict).all(|p| p.ok) {
        return match unobserved_restart(phases, restarts) {
            Some(reason) => Folded {
                verdict: Verdict::NotApplicable,
                boundary: None,
                reason: Some(reason),
            },
            None => Folded::of(Verdict::Pass, None),
        };
    }
    let failed = |p: &&&PhaseResult| matches!(p.outcome, Outcome::Fail | Outcome::Timeout);
    let boundary = ran
        .iter()
        .filter(|p| p.decides_verdict)
        .find(failed)
        .or_else(|| ran.iter().find(failed))
        .or_else(|| ran.iter().find(|p| p.decides_verdict && !p.ok));
    Folded::of(Verdict::Fail, boundary.copied())
}

/// The verdict phases that decide on the restart: those after the first
/// restart phase, or every one when the window is the whole cell (a
/// timeout target) or the scenario restarts nothing.
pub fn restart_deciding<'a>(
    phases: &'a [PhaseResult],
    restarts: &[RestartResult],
) -> impl Iterator<Item = &'a PhaseResult> {
    let whole_cell = restarts.iter().any(|r| r.action == WHOLE_CELL_ACTION);
    let restart = phases.iter().position(|p| p.step == RESTART_STEP);
    let start = match (whole_cell, restart) {
        (false, Some(at)) => at + 1,
        _ => 0,
    };
    phases[start..]
        .iter()
        .filter(|p| !p.cleanup && p.decides_verdict)
}

/// Why the phases say nothing about the restart, when they do not: every
/// restart-deciding phase (at least one) was not applicable. The first
/// one's name and why; how many more there were.
fn unobserved_restart(phases: &[PhaseResult], restarts: &[RestartResult]) -> Option<String> {
    let deciding: Vec<&PhaseResult> = restart_deciding(phases, restarts).collect();
    let first = deciding.first()?;
    if deciding.iter().any(|p| p.outcome != Outcome::NotApplicable) {
        return None;
    }
    // The call in a few words when the phase names it; its whole why
    // stays in the phase's detail.
    let detail = super::detail::read::<NotApplicableDetail>(&first.detail).unwrap_or_default();
    let why = match (detail.missing_call, detail.not_applicable) {
        (Some(call), _) => format!("no call for {call}"),
        (None, why) if !why.is_empty() => why,
        (None, _) => "its client cannot take the step".into(),
    };
    let more = match deciding.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more verdict phase after it)".into(),
        n => format!(" (and {n} more verdict phases after it)"),
    };
    Some(format!("{}: {why}{more}", first.name))
}

/// The call a not-applicable phase lacked, in a few words (`session/load
/// of an agent session on a new server id`): its `missingCall`, else the
/// whole `notApplicable` text (reports written before `missingCall`).
pub fn missing_call(phase: &PhaseResult) -> Option<String> {
    if phase.outcome != Outcome::NotApplicable {
        return None;
    }
    let detail = super::detail::read::<NotApplicableDetail>(&phase.detail)?;
    Some(detail.missing_call.unwrap_or(detail.not_applicable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn phase(name: &str, step: &str, verdict: bool, outcome: Outcome) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            step: step.into(),
            decides_verdict: verdict,
            cleanup: false,
            outcome,
            ok: outcome == Outcome::Ok,
            duration_ms: 0,
            deadline_ms: 0,
            detail: Map::new(),
            signature: (!matches!(
                outcome,
                Outcome::Ok | Outcome::NotRun | Outcome::NotApplicable
            ))
            .then(|| sig(SignatureKind::Http)),
        }
    }

    fn sig(kind: SignatureKind) -> crate::Signature {
        crate::Signature {
            kind,
            http_status: None,
            problem_type: None,
            rpc_code: None,
            message: "x".into(),
            pending: None,
            cause: None,
            observed: None,
            fault: None,
            component: None,
            integrity: None,
        }
    }

    fn not_applicable(name: &str, step: &str, call: &str) -> PhaseResult {
        let mut p = phase(name, step, true, Outcome::NotApplicable);
        p.detail = json!({
            "notApplicable": format!("the ts-sdk client: the SDK has no call for {call}"),
            "missingCall": call,
        })
        .as_object()
        .cloned()
        .unwrap();
        p
    }

    fn restarted(action: &str) -> Vec<RestartResult> {
        vec![RestartResult {
            phase: "restart".into(),
            action: action.into(),
            ok: true,
            restart_ms: 1,
            ready_ms: Some(1),
            down: None,
            detail: None,
        }]
    }

    /// native-load on the SDK: its prompt before the restart passed, its
    /// one step after it could not run. Not a pass: no verdict on the restart.
    fn native_load_on_the_sdk() -> Vec<PhaseResult> {
        vec![
            phase("connectPrimary", "connect", false, Outcome::Ok),
            phase("promptBeforeRestart", "prompt", true, Outcome::Ok),
            phase("restart", RESTART_STEP, false, Outcome::Ok),
            not_applicable("loadSessionAfterRestart", "recover_session", "session/load"),
        ]
    }

    #[test]
    fn a_cell_whose_steps_after_the_restart_could_not_run_is_not_applicable() {
        let folded = fold(&native_load_on_the_sdk(), &restarted("managed"));
        assert_eq!(folded.verdict, Verdict::NotApplicable);
        assert_eq!(folded.boundary, None);
        let reason = folded.reason.unwrap();
        assert_eq!(reason, "loadSessionAfterRestart: no call for session/load");
        assert_eq!(
            missing_call(&native_load_on_the_sdk()[3]).as_deref(),
            Some("session/load")
        );
    }

    /// What ran before the restart still decides: a failure there is one.
    #[test]
    fn a_failure_before_the_restart_is_still_a_failure() {
        let mut phases = native_load_on_the_sdk();
        phases[1] = phase("promptBeforeRestart", "prompt", true, Outcome::Fail);
        let folded = fold(&phases, &[]);
        assert_eq!(folded.verdict, Verdict::Fail);
        assert_eq!(folded.boundary.as_deref(), Some("promptBeforeRestart"));
    }

    /// One verdict step after the restart that ran is enough to judge it.
    #[test]
    fn a_verdict_phase_after_the_restart_that_ran_judges_the_cell() {
        let mut phases = native_load_on_the_sdk();
        phases.push(phase("promptAfter", "prompt", true, Outcome::Ok));
        assert_eq!(fold(&phases, &[]).verdict, Verdict::Pass);
        let last = phases.len() - 1;
        phases[last] = phase("promptAfter", "prompt", true, Outcome::Timeout);
        let folded = fold(&phases, &[]);
        assert_eq!(
            (folded.verdict, folded.boundary.as_deref()),
            (Verdict::Fail, Some("promptAfter"))
        );
    }

    /// A timeout target's window is the whole cell: the prompt before the
    /// `restart` step (which restarts nothing) ran inside it and decides.
    /// A scenario with no restart step (long-turn) is judged whole too.
    #[test]
    fn a_timeout_window_is_the_whole_cell() {
        let phases = native_load_on_the_sdk();
        assert_eq!(
            fold(&phases, &restarted(WHOLE_CELL_ACTION)).verdict,
            Verdict::Pass
        );
        let no_restart = vec![
            phase("connect", "connect", false, Outcome::Ok),
            not_applicable("awaitTurn", "await_turn", "a turn"),
            not_applicable("promptAfterTurn", "prompt", "a turn"),
        ];
        let folded = fold(&no_restart, &[]);
        assert_eq!(folded.verdict, Verdict::NotApplicable);
        assert_eq!(
            folded.reason.as_deref(),
            Some("awaitTurn: no call for a turn (and 1 more verdict phase after it)")
        );
    }

    /// The harness's own failure is an error whatever could not run.
    #[test]
    fn a_harness_failure_is_an_error_before_anything_else() {
        let mut phases = native_load_on_the_sdk();
        phases[0].outcome = Outcome::Fail;
        phases[0].ok = false;
        phases[0].signature = Some(sig(SignatureKind::Harness));
        let folded = fold(&phases, &[]);
        assert_eq!(
            (folded.verdict, folded.boundary.as_deref()),
            (Verdict::Error, Some("connectPrimary"))
        );
    }

    /// Cleanup phases never decide, and a scenario with no verdict phase
    /// after its restart (one that judges only what came before) passes.
    #[test]
    fn cleanup_never_decides_and_no_verdict_phase_after_the_restart_is_a_pass() {
        let mut phases = native_load_on_the_sdk();
        phases.pop();
        let mut dispose = not_applicable("dispose", "dispose", "x");
        dispose.cleanup = true;
        phases.push(dispose);
        assert_eq!(fold(&phases, &[]).verdict, Verdict::Pass);
    }
}
