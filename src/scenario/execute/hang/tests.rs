//! The hang detector in the executor: a stuck client's phase hung with the
//! evidence, a request or stream in flight waited out, a near deadline left
//! alone, a wait of the client's own cut short with its answer kept.

use super::super::driver::{PromptAnswer, ScenarioClient, Unsupported};
use super::super::{run_cell_on, CellRun, CellSettings, RunningCell, StepFailure};
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
    async fn health(&self, _: &mut RunningCell<'_>, _: &str) -> Result<HealthDetail, StepFailure> {
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
    async fn restart(&mut self, phase: &str) -> crate::targets::Restarted {
        crate::targets::Restarted::from_record(RestartResult {
            phase: phase.into(),
            ok: true,
            action: "fake".into(),
            restart_ms: 1,
            ready_ms: Some(1),
            down: None,
            detail: None,
        })
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
        hang_grace: grace.map(Duration::from_millis),
        ..CellSettings::for_tests()
    };
    let (run, _) = run_cell_on(&scenario, &settings, &mut NoRestart, Arc::new(client), None).await;
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
