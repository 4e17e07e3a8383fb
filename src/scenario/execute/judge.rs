//! How a cell and its phases are judged: a phase's result from what its
//! step returned (or that it ran out of time, and what it was waiting on),
//! and the cell's verdict and failure boundary from its phases.
//!
//! Over 400 lines on purpose: a phase's result and the cell's verdict are
//! one judgement (`phase_result`, `timed_out`, `harness_failure`,
//! `settle_failed`, `not_applicable`, `judge`) that decides which party a
//! failure blames, and its tests below pin each of those rulings beside the
//! code that makes it.

use super::{diagnose, millis, Phase, PhaseResult, Secret, StepResult, StoreWait};
use crate::report::{Outcome, SignatureKind};
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

/// The attempt's verdict, failure boundary and (for `not_applicable`)
/// reason, from its phases: judged only on those that ran, so a cell that
/// could take no verdict step after its restart has no verdict on it
/// ([`crate::report::fold`], the one fold the report shares).
pub(super) fn judge(
    results: &[PhaseResult],
    restarts: &[crate::report::RestartResult],
) -> crate::report::fold::Folded {
    crate::report::fold::fold(results, restarts)
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

/// The rows of a cell whose faults could not be settled (`name`/`step`:
/// where: its `healFault` once its phases were over, its `faultSchedule`
/// before its last phase). A fault proxy that stopped is the harness's
/// error (the fault could not be healed); a fault that did not take, or a
/// paused process that did not wake, the test's setup's; something a fault
/// acted on that did not answer again did not come back: the system's
/// failure (`not_back`, the probe's last cause), unless it is a part of
/// continuity's own (`own` of its component: the store's Postgres, the
/// Rivet app hosting the SDK) or such a part was seen gone on the way,
/// which it then names.
pub(super) fn settle_failed(
    (name, step): (&str, &str),
    error: &crate::targets::SettleError,
    own: &dyn Fn(Option<crate::targets::BuiltinTarget>) -> Option<crate::errors::HarnessPart>,
    context: &ResultContext,
) -> Vec<PhaseResult> {
    use crate::targets::SettleError;
    match error {
        SettleError::Several(each) => each
            .iter()
            .flat_map(|e| settle_failed((name, step), e, own, context))
            .collect(),
        SettleError::Setup(said) => vec![setup_failure(name, step, said.clone())],
        SettleError::Proxy(_) => vec![harness_failure(
            name,
            step,
            crate::errors::HarnessPart::FaultProxy,
            error.to_string(),
        )],
        SettleError::NotBack(not_back) => vec![not_back_row((name, step), not_back, own, context)],
    }
}

/// One thing a fault acted on that did not come back: see [`settle_failed`].
fn not_back_row(
    (name, step): (&str, &str),
    not_back: &crate::targets::NotBack,
    own: &dyn Fn(Option<crate::targets::BuiltinTarget>) -> Option<crate::errors::HarnessPart>,
    context: &ResultContext,
) -> PhaseResult {
    let said = &not_back.said;
    if let Some(part) = not_back.component.and_then(|c| own(Some(c))) {
        return harness_failure(name, step, part, format!("{}: {said}", part.describe()));
    }
    let gone = context
        .watched
        .iter()
        .find(|p| p.gone() && !context.owned.contains(&p.part));
    if let Some(part) = gone {
        return harness_failure(name, step, part.part, said.clone());
    }
    let mut signature = diagnose::other(SignatureKind::NotBack, said.clone());
    signature.cause = not_back.probe.last_cause.as_deref().cloned();
    PhaseResult {
        name: name.into(),
        step: step.into(),
        // The cell fails on it: its phases passed, the stack did not come back.
        decides_verdict: true,
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
/// pause that did not take or wake, a schedule's fault that did not
/// take): the cell's error.
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
    not_applicable_as(phase, default, cleanup, why, unsupported.call)
}

/// A phase on a client that no applicable step made: not applicable,
/// `why`, lacking `call`.
pub(super) fn not_applicable_as(
    phase: &Phase,
    default: Duration,
    cleanup: bool,
    why: String,
    call: &str,
) -> PhaseResult {
    let mut result = not_run(phase, default, cleanup);
    result.outcome = Outcome::NotApplicable;
    result.decides_verdict = phase.decides_verdict && !cleanup;
    let detail = crate::report::detail::NotApplicableDetail {
        not_applicable: why,
        missing_call: Some(call.to_string()),
    };
    crate::report::detail::Detail::write_to(&detail, &mut result.detail);
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

/// How long a failed phase waits before it is judged, so that a part of
/// continuity's own that broke the connection is seen gone and blamed
/// (`diagnose::find_gone_part`): only while waiting can change whom the
/// failure is blamed on. `None` when it cannot: the failure is no broken
/// connection, or already names its part; continuity's own fault proxy
/// reset or closed it (the report says so); every watched part that could
/// be found gone is one the cell's target restarts on purpose (its failure
/// is the test's point either way); or the phase only reports a break seen
/// before it began (a terminal the cell's restart cut), longer ago than
/// the grace: a part that caused it would be gone by now. A break seen
/// less long ago leaves the rest of the grace.
pub(super) fn settle_grace(
    sig: &crate::report::Signature,
    seen: &crate::trace::Snapshot,
    context: &ResultContext,
) -> Option<Duration> {
    if !diagnose::broke_on_the_way(sig) || sig.component.is_some() {
        return None;
    }
    let mut attributed = sig.clone();
    diagnose::add_seen(&mut attributed, seen, None);
    if attributed
        .fault
        .as_ref()
        .is_some_and(|f| f.by_proxy.is_some())
    {
        return None;
    }
    let blamable = context
        .watched
        .iter()
        .any(|part| !context.owned.contains(&part.part));
    if !blamable {
        return None;
    }
    let age = Duration::from_millis(seen.breaks.reported_age_ms().unwrap_or(0));
    PART_GONE_GRACE
        .checked_sub(age)
        .filter(|rest| !rest.is_zero())
}

/// Before a connect-level failure is judged: while a watched part still
/// runs, give it the [`settle_grace`] (when there is one) to be seen gone.
/// Parts that stay up cost the grace once, and only on such a failure.
pub(super) async fn let_parts_settle(
    sig: &crate::report::Signature,
    seen: &crate::trace::Snapshot,
    context: &ResultContext,
) {
    let Some(grace) = settle_grace(sig, seen, context) else {
        return;
    };
    let until = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < until && !context.watched.iter().any(|p| p.gone()) {
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
    use crate::report::Verdict;

    fn judged(results: &[PhaseResult]) -> (Verdict, Option<String>) {
        let folded = judge(results, &[]);
        (folded.verdict, folded.boundary)
    }

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
        assert_eq!(judged(&r), (Verdict::Fail, Some("b".into())));
    }

    #[test]
    fn a_setup_failure_is_the_boundary_when_verdict_phases_never_ran() {
        let r = [
            result("create", false, Outcome::Fail, Some(SignatureKind::Connect)),
            result("v", true, Outcome::NotRun, None),
        ];
        assert_eq!(judged(&r), (Verdict::Fail, Some("create".into())));
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
        assert_eq!(judged(&r).0, Verdict::Error);
        let r = [
            result("v", true, Outcome::Ok, None),
            result("x", false, Outcome::Fail, Some(SignatureKind::Http)),
        ];
        assert_eq!(judged(&r), (Verdict::Pass, None));
    }

    /// The report's fold finds the restart by the step's name and a
    /// timeout target's whole-cell window by its restart's action: the
    /// names the scenario language and the targets give them.
    #[test]
    fn the_fold_knows_the_restart_step_and_the_timeout_action_by_their_names() {
        use crate::report::fold::{RESTART_STEP, WHOLE_CELL_ACTION};
        assert_eq!(crate::scenario::StepKind::Restart.name(), RESTART_STEP);
        assert_eq!(
            crate::targets::RestartKind::Timeout.as_str(),
            WHOLE_CELL_ACTION
        );
    }

    /// native-load on the real SDK: the prompt before the restart passed,
    /// the load after it could not run. No verdict on the restart, never
    /// a pass; the reason names the phase and the call.
    #[test]
    fn a_cell_whose_steps_after_the_restart_could_not_run_is_not_a_pass() {
        let mut restart = result("restart", false, Outcome::Ok, None);
        restart.step = "restart".into();
        let mut load = result(
            "loadSessionAfterRestart",
            true,
            Outcome::NotApplicable,
            None,
        );
        load.detail
            .insert("notApplicable".into(), "the ts-sdk client: no load".into());
        load.detail
            .insert("missingCall".into(), "session/load".into());
        let r = [
            result("promptBeforeRestart", true, Outcome::Ok, None),
            restart,
            load,
        ];
        let folded = judge(&r, &[]);
        assert_eq!(folded.verdict, Verdict::NotApplicable);
        assert_eq!(
            folded.reason.as_deref(),
            Some("loadSessionAfterRestart: no call for session/load")
        );
    }

    /// A stack with nginx watched (running: this process's pid), a cell
    /// whose target restarts `owned` on purpose.
    fn context(dir: &std::path::Path, owned: Vec<crate::errors::HarnessPart>) -> ResultContext {
        let pid_file = dir.join("nginx.pid");
        std::fs::write(&pid_file, std::process::id().to_string()).unwrap();
        ResultContext {
            persist: None,
            token: None,
            default_timeout: Duration::from_secs(3),
            owned,
            watched: vec![crate::supervise::part::PartProcess::new(
                crate::errors::HarnessPart::Nginx,
                pid_file,
            )],
        }
    }

    /// The gateway hop's reset window, and what its proxy did.
    fn reset_window(resets: u32) -> crate::trace::Snapshot {
        crate::trace::Snapshot {
            faults: vec![crate::trace::FaultSeen {
                hop: "gateway".into(),
                toxic: "reset_peer".into(),
                active: true,
                resets,
                closes: 0,
            }],
            ..Default::default()
        }
    }

    fn reset() -> crate::report::Signature {
        diagnose::other(
            SignatureKind::Connect,
            "error sending request: connection reset by peer",
        )
    }

    /// How long (on tokio's paused clock) the phase waits before its judge.
    async fn waited(
        sig: &crate::report::Signature,
        seen: &crate::trace::Snapshot,
        context: &ResultContext,
    ) -> Duration {
        let start = tokio::time::Instant::now();
        let_parts_settle(sig, seen, context).await;
        start.elapsed()
    }

    /// A reset continuity's own fault proxy made, or a break through a part
    /// the cell's target restarts on purpose, is attributed already: the
    /// phase is judged at once. A break nothing explains yet waits for
    /// nginx to be seen gone, as before.
    #[tokio::test(start_paused = true)]
    async fn an_attributed_cause_enters_no_settle_grace() {
        let dir = tempfile::tempdir().unwrap();
        let cell = context(dir.path(), Vec::new());
        let by_proxy = reset_window(1);
        assert_eq!(settle_grace(&reset(), &by_proxy, &cell), None);
        assert_eq!(waited(&reset(), &by_proxy, &cell).await, Duration::ZERO);
        // The proxy reset nothing: the server's (or a dying nginx's) reset.
        let unexplained = reset_window(0);
        assert_eq!(
            settle_grace(&reset(), &unexplained, &cell),
            Some(PART_GONE_GRACE)
        );
        assert_eq!(waited(&reset(), &unexplained, &cell).await, PART_GONE_GRACE);
        // The gateway target restarts nginx on purpose: found gone or not,
        // the failure is the cell's verdict.
        let gateway = context(dir.path(), vec![crate::errors::HarnessPart::Nginx]);
        assert_eq!(settle_grace(&reset(), &unexplained, &gateway), None);
        assert_eq!(
            waited(&reset(), &unexplained, &gateway).await,
            Duration::ZERO
        );
        // A status is no broken connection.
        let http = diagnose::other(SignatureKind::Http, "HTTP 404");
        assert_eq!(settle_grace(&http, &unexplained, &cell), None);
    }

    /// A terminal the cell's restart cut (its socket closed during the
    /// restart, 790 ms before the phase that sends on it): the phase only
    /// reports that break, and nginx, had it caused it, would be gone by
    /// now. A break 100 ms before the phase leaves the rest of the grace;
    /// one in the phase itself, all of it.
    #[tokio::test(start_paused = true)]
    async fn a_break_the_phase_only_reports_waits_no_longer_than_the_grace_since_it() {
        let dir = tempfile::tempdir().unwrap();
        let cell = context(dir.path(), Vec::new());
        let closed = diagnose::other(
            SignatureKind::StreamClosed,
            "ws close 1006 (WebSocket protocol error: Connection reset without closing handshake)",
        );
        let seen = |last: u64, phase: u64, now: u64| crate::trace::Snapshot {
            breaks: crate::trace::Breaks {
                last_ms: Some(last),
                phase_started_ms: phase,
                taken_ms: now,
            },
            ..Default::default()
        };
        let old = seen(60, 850, 850);
        assert_eq!(settle_grace(&closed, &old, &cell), None);
        assert_eq!(waited(&closed, &old, &cell).await, Duration::ZERO);
        let recent = seen(750, 850, 850);
        assert_eq!(
            settle_grace(&closed, &recent, &cell),
            Some(Duration::from_millis(400))
        );
        let live = seen(900, 850, 900);
        assert_eq!(settle_grace(&closed, &live, &cell), Some(PART_GONE_GRACE));
    }
}
