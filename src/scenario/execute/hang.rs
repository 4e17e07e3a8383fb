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
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

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
mod tests {
    use super::super::driver::{PromptAnswer, ScenarioClient, Unsupported};
    use super::super::{run_cell_on, CellRun, CellSettings, CellStore, RunningCell, StepFailure};
    use super::super::{Restarter, StepResult};
    use crate::report::detail::{self, CreateSessionDetail, HealthDetail, ResumeDetail};
    use crate::report::{Outcome, SignatureKind};
    use crate::scenario::{Step, StepKind};
    use crate::targets::RestartResult;
    use crate::trace::{Exchange, Flight, Purpose, Seen};
    use async_trait::async_trait;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A client whose prompt gets a 400, then never settles; `holding`:
    /// with that still in flight (a request, an open stream) all along;
    /// `waits`: as a wait of its own (a turn's await), which `cut_short`
    /// ends with what it saw.
    #[derive(Default)]
    struct Stuck {
        holding: Option<Flight>,
        waits: bool,
        cut: tokio::sync::Notify,
    }

    #[async_trait(?Send)]
    impl ScenarioClient for Stuck {
        fn name(&self) -> &'static str {
            "test"
        }
        fn supports(&self, _: &Step) -> Result<(), Unsupported> {
            Ok(())
        }
        fn connected(&self, _: &RunningCell<'_>, _: &str) -> bool {
            true
        }
        async fn cut_short(&self, _: &str) -> bool {
            self.cut.notify_one();
            self.waits
        }
        async fn connect(&self, _: &mut RunningCell<'_>, _: &str) -> Result<(), StepFailure> {
            Ok(())
        }
        async fn prompt(
            &self,
            cell: &mut RunningCell<'_>,
            _: &str,
            _: &str,
            _: String,
        ) -> Result<PromptAnswer, StepFailure> {
            let trace = cell.settings.trace.clone();
            let _call = trace.call("prompt");
            let _held = self.holding.map(|kind| trace.in_flight(kind, "held"));
            let mut post = Exchange::new("POST", "http://127.0.0.1:9/v1/acp/s", Purpose::AcpPost);
            post.status = Some(400);
            post.failure = Some(Seen::Status {
                status: 400,
                problem_type: Some("invalid_request".into()),
                detail: None,
            });
            trace.http(post);
            if !self.waits {
                return std::future::pending().await;
            }
            self.cut.notified().await;
            let lost = crate::diagnose::timeout(2500, "the outcome of turn t");
            Err(StepFailure::new(lost).with("turnOutcome", "lost"))
        }
        async fn create_session(
            &self,
            _: &mut RunningCell<'_>,
            _: &str,
            _: &str,
            _: &str,
        ) -> Result<CreateSessionDetail, StepFailure> {
            Ok(CreateSessionDetail::default())
        }
        async fn get_events(
            &self,
            _: &mut RunningCell<'_>,
            _: &str,
            _: &str,
            _: usize,
            _: bool,
        ) -> StepResult {
            Err(self.cannot(StepKind::GetEvents))
        }
        async fn resume_session(
            &self,
            _: &mut RunningCell<'_>,
            _: &str,
            _: &str,
        ) -> Result<ResumeDetail, StepFailure> {
            Err(self.cannot(StepKind::ResumeSession))
        }
        async fn destroy_session(
            &self,
            _: &mut RunningCell<'_>,
            _: &str,
            _: &str,
        ) -> Result<(), StepFailure> {
            Err(self.cannot(StepKind::DestroySession))
        }
        async fn dispose(&self, _: &mut RunningCell<'_>, _: &str) -> Result<(), StepFailure> {
            Ok(())
        }
        async fn health(
            &self,
            _: &mut RunningCell<'_>,
            _: &str,
        ) -> Result<HealthDetail, StepFailure> {
            Err(self.cannot(StepKind::Health))
        }
        async fn replay_history(
            &self,
            _: &mut RunningCell<'_>,
            _: &str,
            _: &str,
        ) -> Result<Vec<crate::persist::SessionEvent>, StepFailure> {
            Err(self.cannot(StepKind::ReplayCheck))
        }
    }

    struct NoRestart;

    #[async_trait]
    impl Restarter for NoRestart {
        async fn restart(&mut self, phase: &str) -> RestartResult {
            RestartResult {
                phase: phase.into(),
                ok: true,
                action: "fake".into(),
                restart_ms: 1,
                ready_ms: Some(1),
                down: None,
                detail: None,
            }
        }
    }

    const SCENARIO: &str = "name = \"t\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"a\"\n[[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"a\"\nsession = \"s\"\n[[phase]]\nname = \"prompt\"\nstep = \"prompt\"\nclient = \"a\"\nsession = \"s\"\ntext = \"hi\"\ntimeout_ms = DEADLINE\non_failure = \"continue\"\n[[phase]]\nname = \"quiet\"\nstep = \"sleep\"\nms = 900\n";

    /// The scenario on `client` with `grace` (`None`: none), its prompt
    /// under a 2.5 s deadline.
    async fn run(client: Stuck, grace: Option<u64>) -> CellRun {
        run_until(client, grace, 2500).await
    }

    async fn run_until(client: Stuck, grace: Option<u64>, deadline_ms: u64) -> CellRun {
        let source = SCENARIO.replace("DEADLINE", &deadline_ms.to_string());
        let scenario =
            crate::scenario::parse_scenario(std::path::Path::new("t.toml"), &source).unwrap();
        let settings = CellSettings {
            base_url: "http://127.0.0.1:9".into(),
            token: None,
            headers: vec![],
            agent: "mock".into(),
            default_timeout: Duration::from_secs(5),
            session_suffix: "t".into(),
            store: CellStore::PerClientMemory,
            trace: crate::trace::Trace::detached(),
            agent_sent_log: None,
            headers_timeout: None,
            hang_grace: grace.map(Duration::from_millis),
            model_calls: None,
            sandboxes: None,
            interrupt: tokio::sync::watch::channel(false).1,
        };
        let (run, _) =
            run_cell_on(&scenario, &settings, &mut NoRestart, Arc::new(client), None).await;
        run
    }

    #[tokio::test]
    async fn a_pending_call_with_nothing_in_flight_ends_its_phase_hung_with_the_evidence() {
        let started = Instant::now();
        let run = run(Stuck::default(), Some(300)).await;
        let prompt = &run.phases[2];
        assert_eq!(prompt.outcome, Outcome::Fail, "{prompt:?}");
        let sig = prompt.signature.as_ref().unwrap();
        assert_eq!(sig.kind, SignatureKind::Hung);
        assert_eq!(sig.short(), "hung: http 400 invalid_request");
        assert!(
            sig.message.starts_with(
                "the server answered HTTP 400 invalid_request to POST /v1/acp/s at "
            ) && sig.message.ends_with(
                "then the test client made no request, held no stream and scheduled no retry for 0.3 s: its prompt never settled"
            ),
            "{}",
            sig.message
        );
        let hang = detail::read::<detail::HungDetail>(&prompt.detail)
            .unwrap()
            .hang;
        assert_eq!((hang.call.as_str(), hang.grace_ms), ("prompt", 300));
        assert!(hang.quiet_ms >= 300.0, "{hang:?}");
        // Well before the deadline; the sleep after it is never hung.
        assert!(prompt.duration_ms < 2000, "{}", prompt.duration_ms);
        assert_eq!(run.phases[3].outcome, Outcome::Ok);
        assert!(started.elapsed() < Duration::from_millis(2500));
        assert_eq!(run.failure_boundary.as_deref(), Some("prompt"));
    }

    #[tokio::test]
    async fn a_request_in_flight_or_an_open_stream_waits_the_deadline_out() {
        for held in [Flight::Request, Flight::Stream] {
            let run = run(
                Stuck {
                    holding: Some(held),
                    ..Stuck::default()
                },
                Some(300),
            )
            .await;
            let prompt = &run.phases[2];
            assert_eq!(prompt.outcome, Outcome::Timeout, "{held:?}: {prompt:?}");
            let sig = prompt.signature.as_ref().unwrap();
            assert_eq!(sig.short(), "timeout: http 400 invalid_request");
            assert!(prompt.duration_ms >= 2500, "{}", prompt.duration_ms);
        }
    }

    #[tokio::test]
    async fn a_hung_step_that_waits_of_its_own_accord_answers_what_it_saw_and_keeps_it() {
        let stuck = Stuck {
            waits: true,
            ..Stuck::default()
        };
        let run = run(stuck, Some(300)).await;
        let prompt = &run.phases[2];
        assert_eq!(prompt.outcome, Outcome::Fail, "{prompt:?}");
        let sig = prompt.signature.as_ref().unwrap();
        assert_eq!(sig.short(), "hung: http 400 invalid_request");
        assert_eq!(sig.pending.as_deref(), Some("the outcome of turn t"));
        assert!(
            sig.message.ends_with("its prompt never settled"),
            "{}",
            sig.message
        );
        // Its own detail, and the evidence beside it.
        assert_eq!(prompt.detail["turnOutcome"], "lost");
        assert!(prompt.detail["hang"].is_object(), "{:?}", prompt.detail);
        assert!(prompt.duration_ms < 2000, "{}", prompt.duration_ms);
    }

    #[tokio::test]
    async fn a_hang_found_within_a_second_of_the_deadline_is_left_to_the_deadline() {
        // Quiet from the start, the grace 300 ms, the deadline 500 ms:
        // never a hang one run and a timeout the next.
        let run = run_until(Stuck::default(), Some(300), 500).await;
        let prompt = &run.phases[2];
        assert_eq!(prompt.outcome, Outcome::Timeout, "{prompt:?}");
    }

    #[tokio::test]
    async fn without_a_grace_every_phase_waits_its_deadline_out() {
        let run = run(Stuck::default(), None).await;
        let prompt = &run.phases[2];
        assert_eq!(prompt.outcome, Outcome::Timeout);
        // The same cause as the hang above names.
        assert_eq!(
            prompt.signature.as_ref().unwrap().short(),
            "timeout: http 400 invalid_request"
        );
    }
}
