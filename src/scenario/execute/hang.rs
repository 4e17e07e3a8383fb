//! The hang detector: while a phase's step waits on the client under test,
//! it reads the cell's one in-flight model (`trace::in_flight`, which every
//! client feeds) and ends the phase as `hung` once a call made in the phase
//! has been pending with nothing in flight that could settle it — no
//! request awaiting its answer, no open stream or socket, no store call,
//! no retry the client scheduled — for the grace (`--hang-grace-ms`). The
//! phase's deadline still bounds everything else: a request awaiting its
//! answer (a long silent turn) is never a hang. The hung phase's signature
//! says what the wire showed last and when; its cause is read from the
//! phase's waits as a timeout's is, so the two name the same cause.

use super::driver::ScenarioClient;
use super::judge::ResultContext;
use super::StepResult;
use crate::diagnose;
use crate::report::detail::{Detail, HangEvidence, HungDetail, WireSeen};
use crate::report::{Outcome, PhaseResult, SignatureKind};
use crate::scenario::{Phase, Step};
use crate::trace::{Quiet, Snapshot, Trace, WireMark};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The grace when the run names none.
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// How often the detector reads the model.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// A hang found less than this before the step would end on its own is
/// left to its deadline: ending it saves little, and racing the deadline
/// would make the same cell end one way or the other from run to run.
const NEAR_DEADLINE: Duration = Duration::from_secs(1);

/// How long a hung step whose client ended its own waits may take to
/// answer with what it saw (and the client to end them).
pub(super) const CUT_BOUND: Duration = Duration::from_secs(2);

/// Whether the step waits on the client under test, so its calls can
/// hang; a restart, a restart timed into a turn and a sleep are the
/// harness's own waits, judged by their deadlines alone.
fn waits_on_client(step: &Step) -> bool {
    !matches!(
        step,
        Step::Restart | Step::RestartDuringTurn { .. } | Step::Sleep { .. }
    )
}

/// A phase whose call hung: what the model saw, and against what.
pub(super) struct Hang {
    quiet: Quiet,
    /// When the phase began (trace time): the evidence's times count from it.
    phase_t: f64,
    grace: Duration,
}

/// Resolves once a call the phase made has hung; never without a grace
/// (`None`: wait the deadline out, as `--hang-grace-ms 0` asks) or when
/// the step waits on no client. `phase_t`: the phase's start (trace time);
/// `deadline`: the phase's. A hang is declared only while the step has at
/// least [`NEAR_DEADLINE`] left before it would end on its own (at the
/// phase's deadline; an `await_turn`, at its turn's).
pub(super) async fn watch(
    trace: &Trace,
    grace: Option<Duration>,
    step: &Step,
    phase_t: f64,
    deadline: Duration,
) -> Hang {
    let Some(grace) = grace.filter(|_| waits_on_client(step)) else {
        return std::future::pending().await;
    };
    let ends = std::time::Instant::now() + own_deadline(step, deadline);
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        if ends.saturating_duration_since(std::time::Instant::now()) < NEAR_DEADLINE {
            return std::future::pending().await;
        }
        if let Some(quiet) = trace.quiet(grace, phase_t) {
            return Hang {
                quiet,
                phase_t,
                grace,
            };
        }
    }
}

/// When the step ends by itself at the latest: an `await_turn` at its
/// turn's deadline, which its phase's outlasts by a margin.
fn own_deadline(step: &Step, deadline: Duration) -> Duration {
    match step {
        Step::AwaitTurn { .. } => deadline.saturating_sub(super::turns::AWAIT_MARGIN),
        _ => deadline,
    }
}

impl Hang {
    /// Milliseconds into the phase (negative: before it).
    fn phase_ms(&self, t: f64) -> f64 {
        ((t - self.phase_t) * 10.0).round() / 10.0
    }

    fn when(&self, mark: &WireMark) -> String {
        let ms = self.phase_ms(mark.t);
        match ms >= 0.0 {
            true => format!("at {ms:.0} ms"),
            false => format!("{:.0} ms before the phase", -ms),
        }
    }

    /// `the server answered HTTP 400 invalid_request to POST /v1/acp/… at
    /// 350 ms; then the client gave up on GET /v1/acp/… at 354 ms; then the
    /// ts-sdk client made no request, held no stream and scheduled no retry
    /// for 2.0 s: its prompt never settled`: the server's last answer, the
    /// last failure and the last thing on the wire, each once, in order.
    fn words(&self, client: &str) -> String {
        let quiet = &self.quiet;
        let mut marks: Vec<&WireMark> = Vec::new();
        for mark in [&quiet.last_answer, &quiet.last_failure, &quiet.last_wire]
            .into_iter()
            .flatten()
        {
            if !marks.contains(&mark) {
                marks.push(mark);
            }
        }
        marks.sort_by(|a, b| a.t.total_cmp(&b.t));
        let mut parts: Vec<String> = marks
            .iter()
            .enumerate()
            .map(|(i, mark)| {
                let then = if i == 0 { "" } else { "then " };
                format!("{then}{} {}", mark.what, self.when(mark))
            })
            .collect();
        if parts.is_empty() {
            parts.push("nothing on the wire".into());
        }
        parts.push(format!(
            "then the {client} client made no request, held no stream and scheduled no retry for {:.1} s: its {} never settled",
            self.grace.as_secs_f64(),
            quiet.call
        ));
        parts.join("; ")
    }

    fn detail(&self) -> HungDetail {
        let seen = |mark: &Option<WireMark>| {
            mark.as_ref().map(|m| WireSeen {
                at_ms: self.phase_ms(m.t),
                what: crate::report::mask_ids(&m.what),
            })
        };
        HungDetail {
            hang: HangEvidence {
                call: self.quiet.call.clone(),
                grace_ms: crate::clock::millis(self.grace),
                quiet_from_ms: self.phase_ms(self.quiet.since),
                quiet_ms: ((self.quiet.until - self.quiet.since) * 10.0).round() / 10.0,
                last_wire: seen(&self.quiet.last_wire),
                last_answer: seen(&self.quiet.last_answer),
                last_failure: seen(&self.quiet.last_failure),
            },
        }
    }
}

/// A hung step that waits deliberately (an await of a turn, up to its
/// deadline) is asked to stop waiting and answer with what it saw (its
/// detail), within [`CUT_BOUND`]; `None` when its client had no such wait
/// or it did not answer in time (then it is given up, as at a deadline).
pub(super) async fn cut_short<F: Future<Output = StepResult>>(
    client: &dyn ScenarioClient,
    phase: &str,
    step: Pin<&mut F>,
) -> Option<StepResult> {
    if !client.cut_short(phase).await {
        return None;
    }
    tokio::time::timeout(CUT_BOUND, step).await.ok()
}

/// The phase `result` of a hung call becomes a hung one: failed, with the
/// evidence as its signature's message and in its detail (`hang`). Judged
/// as timed out (its waits read as a timeout's), or as the step's own
/// timeout when its wait was cut short (its detail and cause kept); a
/// step that answered otherwise when cut short settled after all, and
/// stays as it answered. A part of continuity's own seen gone on the way
/// makes it the harness's error, as it would a timeout.
pub(super) fn judge(
    result: &mut PhaseResult,
    context: &ResultContext,
    phase: &Phase,
    seen: &Snapshot,
    hang: &Hang,
    client: &str,
) {
    let signature = match (result.outcome, result.signature.take()) {
        (Outcome::Fail, Some(mut own)) if own.kind == SignatureKind::Timeout => {
            let evidence = hang.words(client);
            let evidence = match &own.fault {
                Some(fault) => format!("{}: {evidence}", diagnose::fault_clause(fault)),
                None => evidence,
            };
            own.kind = SignatureKind::Hung;
            own.message =
                crate::report::mask_ids(&crate::secret::redact(&evidence, context.token.as_ref()));
            own
        }
        (Outcome::Timeout, _) => {
            let mut timed_out = diagnose::hung_seen(
                hang.words(client),
                phase.step.pending(),
                seen,
                context.token.as_ref(),
            );
            diagnose::find_gone_part(&mut timed_out, &context.watched);
            diagnose::blame_part(&mut timed_out, &context.owned);
            timed_out
        }
        (_, own) => {
            result.signature = own;
            return;
        }
    };
    result.outcome = Outcome::Fail;
    result.ok = false;
    result.signature = Some(signature);
    hang.detail().write_to(&mut result.detail);
}

#[cfg(test)]
mod tests;
