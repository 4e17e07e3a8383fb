//! How a cell and its phases are judged: a phase's result from what its
//! step returned (or that it ran out of time, and what it was waiting on),
//! and the cell's verdict and failure boundary from its phases.

use super::{diagnose, millis, Phase, PhaseResult, Secret, StepResult, StoreWait};
use crate::report::{Outcome, SignatureKind, Verdict};
use crate::scenario::Step;
use serde_json::Map;
use std::time::{Duration, Instant};

/// What judging a phase needs besides the phase: owned, so a deferred
/// phase can be judged after the cell has moved on.
#[derive(Clone)]
pub(super) struct ResultContext {
    pub(super) persist: Option<crate::persist::observe::CallLog>,
    pub(super) token: Option<Secret>,
    pub(super) default_timeout: Duration,
    /// The parts of continuity's own the cell's target restarts on
    /// purpose: their failures are the test's point, not the harness's.
    pub(super) owned: Vec<crate::errors::HarnessPart>,
    /// The stack's parts that run as processes, checked when a phase
    /// cannot reach the server.
    pub(super) watched: Vec<crate::supervise::part::PartProcess>,
}

/// Pass when every verdict phase passed; a harness failure makes it an error.
/// The boundary is the first failed verdict phase, or else the first failed phase.
pub(super) fn judge(results: &[PhaseResult]) -> (Verdict, Option<String>) {
    // A step the client cannot take decides nothing; a cell that could
    // take none of its verdict steps has no verdict of its own: skipped.
    let applicable = |r: &&PhaseResult| r.outcome != Outcome::NotApplicable;
    let phases: Vec<&PhaseResult> = results
        .iter()
        .filter(|r| !r.cleanup)
        .filter(applicable)
        .collect();
    let none_applicable = results
        .iter()
        .filter(|r| !r.cleanup && r.decides_verdict)
        .all(|r| r.outcome == Outcome::NotApplicable);
    if none_applicable {
        if let Some(first) = results.iter().find(|r| r.outcome == Outcome::NotApplicable) {
            return (Verdict::Skipped, Some(first.name.clone()));
        }
    }
    let failed = |r: &&PhaseResult| matches!(r.outcome, Outcome::Fail | Outcome::Timeout);
    if let Some(harness) = phases.iter().find(|r| {
        r.signature
            .as_ref()
            .is_some_and(|s| s.kind == SignatureKind::Harness)
    }) {
        return (Verdict::Error, Some(harness.name.clone()));
    }
    if phases.iter().filter(|r| r.decides_verdict).all(|r| r.ok) {
        return (Verdict::Pass, None);
    }
    let boundary = phases
        .iter()
        .find(|r| r.decides_verdict && failed(r))
        .or_else(|| phases.iter().find(|r| failed(r)))
        .or_else(|| phases.iter().find(|r| r.decides_verdict && !r.ok))
        .map(|r| r.name.clone());
    (Verdict::Fail, boundary)
}

/// Whether the phase failed because a part of continuity's own did (its
/// Chromium gone, its Postgres refusing): nothing after it can tell
/// anything about sandbox-agent, so the cell ends there.
pub(super) fn lost_a_part(result: &PhaseResult) -> bool {
    result
        .signature
        .as_ref()
        .is_some_and(|s| s.kind == SignatureKind::Harness && s.component.is_some())
}

/// A row for something a part of the harness could not do (its fault
/// proxy heal a network fault): it makes the cell an error naming the
/// part, never a failure of the server.
pub(super) fn harness_failure(
    name: &str,
    step: &str,
    part: crate::errors::HarnessPart,
    reason: String,
) -> PhaseResult {
    let mut signature = diagnose::other(SignatureKind::Harness, reason);
    signature.component = Some(part);
    diagnose::blame_part(&mut signature, &[]);
    PhaseResult {
        name: name.into(),
        step: step.into(),
        decides_verdict: false,
        cleanup: false,
        outcome: Outcome::Fail,
        ok: false,
        duration_ms: 0,
        deadline_ms: 0,
        detail: Map::new(),
        signature: Some(signature),
    }
}

/// A failure of the test's setup that is no part of continuity's (a
/// pause that did not take or wake, a schedule's fault): the cell's error.
pub(super) fn setup_failure(name: &str, step: &str, reason: String) -> PhaseResult {
    PhaseResult {
        name: name.into(),
        step: step.into(),
        decides_verdict: false,
        cleanup: false,
        outcome: Outcome::Fail,
        ok: false,
        duration_ms: 0,
        deadline_ms: 0,
        detail: Map::new(),
        signature: Some(diagnose::other(SignatureKind::Harness, reason)),
    }
}

/// A phase whose step the cell's client cannot take: not run, and why
/// (`notApplicable`: the client and the API it lacks). It decides nothing.
pub(super) fn not_applicable(
    phase: &Phase,
    default: Duration,
    cleanup: bool,
    client: &str,
    unsupported: super::Unsupported,
) -> PhaseResult {
    let why = format!("the {client} client: {}", unsupported.api);
    not_applicable_as(phase, default, cleanup, why)
}

/// A phase on a client that no applicable step made: not applicable, `why`.
pub(super) fn not_applicable_as(
    phase: &Phase,
    default: Duration,
    cleanup: bool,
    why: String,
) -> PhaseResult {
    let mut result = not_run(phase, default, cleanup);
    result.outcome = Outcome::NotApplicable;
    result.decides_verdict = phase.decides_verdict && !cleanup;
    result.detail.insert("notApplicable".into(), why.into());
    result
}

/// The phase that was running when the run was interrupted.
pub(super) fn interrupted_phase(phase: &Phase, default: Duration, started: Instant) -> PhaseResult {
    PhaseResult {
        outcome: Outcome::Interrupted,
        duration_ms: millis(started.elapsed()),
        ..not_run(phase, default, false)
    }
}

pub(super) fn not_run(phase: &Phase, default: Duration, cleanup: bool) -> PhaseResult {
    PhaseResult {
        name: phase.name.clone(),
        step: phase.step.kind().name().into(),
        decides_verdict: phase.decides_verdict,
        cleanup,
        outcome: Outcome::NotRun,
        ok: false,
        duration_ms: 0,
        deadline_ms: millis(phase.timeout.unwrap_or(default)),
        detail: Map::new(),
        signature: None,
    }
}

/// How long a part of continuity's own may take to be seen gone after a
/// connection through it broke: a SIGKILL to nginx's group closes the
/// workers' connections a moment before the master is gone, and a busy
/// machine stretches that moment.
const PART_GONE_GRACE: Duration = Duration::from_millis(500);

/// Before a connect-level failure is judged: while a watched part still
/// runs, give it [`PART_GONE_GRACE`] to be seen gone, so
/// `diagnose::find_gone_part` names it. Parts that stay up cost the grace
/// once, and only on such a failure.
pub(super) async fn let_parts_settle(
    sig: &crate::report::Signature,
    watched: &[crate::supervise::part::PartProcess],
) {
    if !diagnose::broke_on_the_way(sig) || sig.component.is_some() || watched.is_empty() {
        return;
    }
    let until = Instant::now() + PART_GONE_GRACE;
    while Instant::now() < until && !watched.iter().any(|p| p.gone()) {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The signature of a phase that ran out of time: the store call it
/// waited on, or what its waits saw last; a part of continuity's own seen
/// gone on the way (the SDK's health wait kept meeting a killed nginx)
/// makes it the harness's failure, as a failed step would be.
fn timed_out(
    context: &ResultContext,
    phase: &Phase,
    deadline: Duration,
    store: Option<&StoreWait>,
    seen: &crate::trace::Snapshot,
) -> crate::report::Signature {
    if let Some((driver, call, waited)) = store.and_then(|w| w.blocking(deadline)) {
        return diagnose::persist_timeout(
            driver,
            call,
            millis(waited),
            millis(deadline),
            phase.step.pending(),
        );
    }
    let mut signature = diagnose::timeout_seen(
        millis(deadline),
        phase.step.pending(),
        seen,
        context.token.as_ref(),
    );
    diagnose::find_gone_part(&mut signature, &context.watched);
    diagnose::blame_part(&mut signature, &context.owned);
    signature
}

/// What a phase that ran became: its outcome, detail (with the store
/// calls made since `started`) and, on failure, its signature; a
/// timeout names what the phase was waiting on (`seen`).
#[allow(clippy::too_many_arguments)]
pub(super) fn phase_result(
    context: &ResultContext,
    phase: &Phase,
    cleanup: bool,
    started: Instant,
    duration_ms: u64,
    deadline: Duration,
    outcome: Option<StepResult>,
    seen: &crate::trace::Snapshot,
) -> PhaseResult {
    let store = context
        .persist
        .as_ref()
        .map(|log| StoreWait::since(log, started));
    let (outcome, ok, mut detail, signature) = match outcome {
        Some(Ok(detail)) => (Outcome::Ok, true, detail, None),
        Some(Err(failure)) => {
            let mut signature = *failure.signature;
            diagnose::find_gone_part(&mut signature, &context.watched);
            diagnose::blame_part(&mut signature, &context.owned);
            diagnose::add_seen(&mut signature, seen, context.token.as_ref());
            (Outcome::Fail, false, failure.detail, Some(signature))
        }
        None => (
            Outcome::Timeout,
            false,
            Map::new(),
            // A phase that spent most of its time waiting on one store
            // call timed out because of the store: say so.
            Some(timed_out(context, phase, deadline, store.as_ref(), seen)),
        ),
    };
    if let Some(summary) = store.and_then(|w| w.summary()) {
        detail.insert("persist".into(), summary);
    }
    PhaseResult {
        name: phase.name.clone(),
        step: phase.step.kind().name().into(),
        decides_verdict: phase.decides_verdict && !cleanup,
        cleanup,
        outcome,
        ok,
        duration_ms,
        deadline_ms: match &phase.step {
            // The turn's deadline, not the margin the phase timer adds to it.
            Step::AwaitTurn { deadline: turn, .. } => {
                millis(turn.unwrap_or(context.default_timeout))
            }
            _ => millis(deadline),
        },
        detail,
        signature,
    }
}

/// A `dispose` phase that ended (`done`) or ran out of its deadline: its
/// end in the trace and its result.
pub(super) fn dispose_ended(
    context: &ResultContext,
    trace: &crate::trace::Trace,
    phase: &Phase,
    started: Instant,
    deadline: Duration,
    done: bool,
) -> PhaseResult {
    let duration_ms = millis(started.elapsed());
    let seen = trace.snapshot();
    let outcome = if done { Outcome::Ok } else { Outcome::Timeout };
    trace.phase_end(&phase.name, outcome_word(outcome), duration_ms);
    let outcome = done.then(|| Ok(Map::new()));
    phase_result(
        context,
        phase,
        true,
        started,
        duration_ms,
        deadline,
        outcome,
        &seen,
    )
}

/// An outcome as the trace writes it (`ok`, `timeout`, …).
pub(super) fn outcome_word(outcome: Outcome) -> &'static str {
    crate::wire_name::of(&outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        name: &str,
        verdict: bool,
        outcome: Outcome,
        kind: Option<SignatureKind>,
    ) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            step: "prompt".into(),
            decides_verdict: verdict,
            cleanup: false,
            outcome,
            ok: outcome == Outcome::Ok,
            duration_ms: 0,
            deadline_ms: 0,
            detail: Map::new(),
            signature: kind.map(|k| diagnose::other(k, "x")),
        }
    }

    #[test]
    fn the_boundary_is_the_first_failed_verdict_phase() {
        let r = [
            result("a", false, Outcome::Ok, None),
            result("b", true, Outcome::Fail, Some(SignatureKind::Http)),
            result("c", false, Outcome::Fail, Some(SignatureKind::Client)),
            result("d", true, Outcome::Timeout, Some(SignatureKind::Timeout)),
        ];
        assert_eq!(judge(&r), (Verdict::Fail, Some("b".into())));
    }

    #[test]
    fn a_setup_failure_is_the_boundary_when_verdict_phases_never_ran() {
        let r = [
            result("create", false, Outcome::Fail, Some(SignatureKind::Connect)),
            result("v", true, Outcome::NotRun, None),
        ];
        assert_eq!(judge(&r), (Verdict::Fail, Some("create".into())));
    }

    #[test]
    fn a_harness_failure_is_an_error_and_all_ok_is_a_pass() {
        let r = [
            result(
                "restart",
                false,
                Outcome::Fail,
                Some(SignatureKind::Harness),
            ),
            result("v", true, Outcome::NotRun, None),
        ];
        assert_eq!(judge(&r).0, Verdict::Error);
        let r = [
            result("v", true, Outcome::Ok, None),
            result("x", false, Outcome::Fail, Some(SignatureKind::Http)),
        ];
        assert_eq!(judge(&r), (Verdict::Pass, None));
    }
}
