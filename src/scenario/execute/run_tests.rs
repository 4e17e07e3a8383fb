//! The cell loop's tests (`execute.rs`): phases that overrun their deadline,
//! restarts and faults that fail or never come back, interrupts, and the
//! steps a client cannot take, each run through `run_cell` with a fake
//! restarter or client.
//!
//! Over 400 lines on purpose: every test drives the one `run_cell` loop
//! through the same fakes (`NoRestart`, `ProxyDied`, `SettlesWith`,
//! `NeverBackAfterHeal`, `NoFiles`) and helpers (`settings`, `scenario`,
//! `outcomes`), so a ruling of the loop (deadline, harness error, not back,
//! not applicable) is checked beside the others it must not contradict.

use super::*;
use crate::report::Outcome;

/// Each phase's name and outcome, in order.
fn outcomes(run: &CellRun) -> Vec<(&str, Outcome)> {
    run.phases
        .iter()
        .map(|p| (p.name.as_str(), p.outcome))
        .collect()
}

struct NoRestart(u32);

#[async_trait]
impl Restarter for NoRestart {
    async fn restart(&mut self, phase: &str) -> Restarted {
        self.0 += 1;
        Restarted::from_record(RestartResult {
            phase: phase.into(),
            ok: self.0 == 1,
            action: "fake".into(),
            restart_ms: 1,
            ready_ms: Some(2),
            down: None,
            detail: (self.0 > 1).then(|| "exit status 3".into()),
        })
    }
}

fn settings() -> CellSettings {
    CellSettings::for_tests()
}

fn scenario(source: &str) -> Scenario {
    crate::scenario::parse_scenario(std::path::Path::new("t.toml"), source).unwrap()
}

#[tokio::test]
async fn an_overrunning_phase_ends_at_its_deadline_and_cleanup_still_runs() {
    let s = scenario("name = \"t\"\n[[phase]]\nname = \"slow\"\nstep = \"sleep\"\nms = 10000\ntimeout_ms = 200\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n[[cleanup]]\nname = \"tidy\"\nstep = \"sleep\"\nms = 1\n");
    let run = run_cell(&s, &settings(), &mut NoRestart(0)).await;
    let slow = &run.phases[0];
    assert_eq!(slow.outcome, Outcome::Timeout);
    assert_eq!(slow.deadline_ms, 200);
    // Within 100 ms of the deadline (measured, not slept: tokio's timer is the bound).
    assert!(
        (200..300).contains(&slow.duration_ms),
        "{}",
        slow.duration_ms
    );
    assert_eq!(
        slow.signature.as_ref().unwrap().pending.as_deref(),
        Some("sleeping")
    );
    assert_eq!(run.phases[1].outcome, Outcome::NotRun);
    let tidy = &run.phases[2];
    assert!(tidy.cleanup && tidy.ok, "cleanup ran: {tidy:?}");
    assert_eq!(
        (run.verdict, run.failure_boundary.as_deref()),
        (Verdict::Fail, Some("slow"))
    );
}

#[tokio::test]
async fn a_failed_restart_is_a_harness_error_with_the_targets_words() {
    let s = scenario("name = \"t\"\n[[phase]]\nname = \"first\"\nstep = \"restart\"\n[[phase]]\nname = \"second\"\nstep = \"restart\"\n");
    let run = run_cell(&s, &settings(), &mut NoRestart(0)).await;
    assert_eq!(run.verdict, Verdict::Error);
    assert_eq!(run.failure_boundary.as_deref(), Some("second"));
    let sig = run.phases[1].signature.as_ref().unwrap();
    assert_eq!(
        (sig.kind, sig.message.as_str()),
        (SignatureKind::Harness, "exit status 3")
    );
    let phases: Vec<&str> = run.restarts.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(phases, ["first", "second"]);
}

/// Restarts fine, but cannot heal its network fault (its proxy died).
struct ProxyDied {
    settled_before_cleanup: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait]
impl Restarter for ProxyDied {
    async fn restart(&mut self, phase: &str) -> Restarted {
        NoRestart(0).restart(phase).await
    }

    async fn settle(&mut self) -> Result<(), crate::targets::SettleError> {
        self.settled_before_cleanup
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Err(crate::faults::ProxyError::Stopped {
            hop: "gateway".into(),
            reason: "its accept loop ended".into(),
        }
        .into())
    }
}

#[tokio::test]
async fn a_fault_the_harness_cannot_heal_makes_the_cell_an_error_not_a_failure() {
    let s = scenario("name = \"t\"\n[[phase]]\nname = \"fault\"\nstep = \"restart\"\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n[[cleanup]]\nname = \"tidy\"\nstep = \"sleep\"\nms = 1\n");
    let settled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut restarter = ProxyDied {
        settled_before_cleanup: Arc::clone(&settled),
    };
    let run = run_cell(&s, &settings(), &mut restarter).await;
    assert!(settled.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(
        (run.verdict, run.failure_boundary.as_deref()),
        (Verdict::Error, Some("healFault"))
    );
    let names: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
    // The heal comes after the phases and before the cleanup.
    assert_eq!(names, ["fault", "after", "healFault", "tidy"]);
    let sig = run.phases[2].signature.as_ref().unwrap();
    assert_eq!(sig.kind, SignatureKind::Harness);
    assert_eq!(sig.component, Some(crate::errors::HarnessPart::FaultProxy));
    assert!(
        sig.message.starts_with("the fault proxy") && sig.message.contains("has stopped"),
        "{}",
        sig.message
    );
}

/// A probe that kept meeting a 502 for 30 s.
fn probe_502() -> crate::targets::ProbeError {
    crate::targets::ProbeError {
        probe: "http GET http://127.0.0.1:9/v1/health = 200".into(),
        timeout: Duration::from_secs(30),
        last_error: "status 502".into(),
        last_cause: Some(Box::new(crate::report::Cause {
            kind: SignatureKind::Http,
            http_status: Some(502),
            problem_type: None,
            error: None,
        })),
        gave_up: false,
        attempts: 600,
    }
}

/// `of` (none: the stack behind a hop) seen running again, not answering.
fn not_back(of: Option<crate::targets::BuiltinTarget>, said: &str) -> SettleError {
    SettleError::NotBack(crate::targets::NotBack {
        component: of,
        probe: probe_502(),
        said: said.into(),
    })
}

use crate::targets::SettleError;

/// Restarts fine; settling its faults fails with `0`. A part of
/// continuity's own stands for the component `1` names.
struct SettlesWith(
    SettleError,
    Option<(crate::targets::BuiltinTarget, crate::errors::HarnessPart)>,
);

#[async_trait]
impl Restarter for SettlesWith {
    async fn restart(&mut self, phase: &str) -> Restarted {
        NoRestart(0).restart(phase).await
    }

    async fn settle(&mut self) -> Result<(), SettleError> {
        Err(self.0.clone())
    }

    fn own_part_brought_back(
        &self,
        component: Option<crate::targets::BuiltinTarget>,
    ) -> Option<crate::errors::HarnessPart> {
        self.1
            .filter(|(of, _)| component == Some(*of))
            .map(|(_, part)| part)
    }
}

const FAULT_THEN_SLEEP: &str = "name = \"t\"\n[[phase]]\nname = \"fault\"\nstep = \"restart\"\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n";

/// A paused component seen running again that does not answer its
/// probe did not come back: the system's failure (`not_back`, the
/// probe's cause), its repair said; it was the setup's error.
#[tokio::test]
async fn a_paused_component_woken_and_not_answering_fails_the_cell_not_back() {
    use crate::targets::BuiltinTarget::RivetEngine;
    let said = "`rivet-engine` was seen running again but did not answer within 30 s of its wake: …; `rivet-engine` was restarted for the next cell";
    let mut restarter = SettlesWith(not_back(Some(RivetEngine), said), None);
    let run = run_cell(&scenario(FAULT_THEN_SLEEP), &settings(), &mut restarter).await;
    assert_eq!(
        (run.verdict, run.failure_boundary.as_deref()),
        (Verdict::Fail, Some("healFault"))
    );
    let sig = run.phases[2].signature.as_ref().unwrap();
    assert_eq!(sig.kind, SignatureKind::NotBack);
    assert_eq!(sig.short(), "not back: http 502");
    assert_eq!(sig.message, said);
}

/// The same of a component that is continuity's own for this cell (the
/// Rivet app hosting its SDK, the store's Postgres): the harness's error.
#[tokio::test]
async fn a_part_of_continuitys_own_not_back_after_its_fault_is_the_harness_error() {
    use crate::errors::HarnessPart::RivetApp;
    use crate::targets::BuiltinTarget::Rivet;
    let mut restarter = SettlesWith(
        not_back(Some(Rivet), "did not answer"),
        Some((Rivet, RivetApp)),
    );
    let run = run_cell(&scenario(FAULT_THEN_SLEEP), &settings(), &mut restarter).await;
    assert_eq!(run.verdict, Verdict::Error);
    let sig = run.phases[2].signature.as_ref().unwrap();
    assert_eq!(
        (sig.kind, sig.component),
        (SignatureKind::Harness, Some(RivetApp))
    );
}

/// A pause that did not wake, a schedule's fault that did not take:
/// the setup's error, even beside a component not back (one row each).
#[tokio::test]
async fn a_fault_that_did_not_take_is_the_setups_error_beside_one_not_back() {
    let not_woken = SettleError::Setup("after SIGCONT, 1 of its 1 processes were not".into());
    let run = run_cell(
        &scenario(FAULT_THEN_SLEEP),
        &settings(),
        &mut SettlesWith(not_woken.clone(), None),
    )
    .await;
    assert_eq!(run.verdict, Verdict::Error);
    let several = SettleError::Several(vec![not_back(None, "hop"), not_woken]);
    let run = run_cell(
        &scenario(FAULT_THEN_SLEEP),
        &settings(),
        &mut SettlesWith(several, None),
    )
    .await;
    assert_eq!(run.verdict, Verdict::Error);
    let kinds: Vec<_> = run.phases[2..]
        .iter()
        .map(|p| p.signature.as_ref().unwrap().kind)
        .collect();
    assert_eq!(kinds, [SignatureKind::NotBack, SignatureKind::Harness]);
}

/// Restarts fine; after its fault heals, the stack never answers again.
struct NeverBackAfterHeal;

#[async_trait]
impl Restarter for NeverBackAfterHeal {
    async fn restart(&mut self, phase: &str) -> Restarted {
        NoRestart(0).restart(phase).await
    }

    async fn settle(&mut self) -> Result<(), SettleError> {
        Err(not_back(
            None,
            &format!(
                "the stack was not ready again within 30 s of the fault's heal: {}",
                probe_502()
            ),
        ))
    }
}

/// The stack not answering after a fault healed, its proxies serving,
/// did not come back from the fault: the system's failure, not the
/// harness's (it was `error`, blamed on the fault proxy).
#[tokio::test]
async fn a_stack_that_does_not_answer_after_the_heal_fails_the_cell_not_back() {
    let s = scenario("name = \"t\"\n[[phase]]\nname = \"fault\"\nstep = \"restart\"\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n");
    let run = run_cell(&s, &settings(), &mut NeverBackAfterHeal).await;
    assert_eq!(
        (run.verdict, run.failure_boundary.as_deref()),
        (Verdict::Fail, Some("healFault"))
    );
    let sig = run.phases[2].signature.as_ref().unwrap();
    assert_eq!(sig.kind, SignatureKind::NotBack);
    assert_eq!(sig.component, None);
    assert_eq!(sig.short(), "not back: http 502");
    assert!(sig.message.contains("not ready again"), "{}", sig.message);
}

/// Slow the first time (past its phase's deadline), quick after.
struct SlowFirst(u32);

#[async_trait]
impl Restarter for SlowFirst {
    async fn restart(&mut self, phase: &str) -> Restarted {
        self.0 += 1;
        if self.0 == 1 {
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        Restarted::from_record(RestartResult {
            phase: phase.into(),
            action: "fake".into(),
            ok: true,
            restart_ms: 1,
            ready_ms: None,
            down: None,
            detail: None,
        })
    }
}

#[tokio::test]
async fn a_restart_is_recorded_under_the_phase_that_ran_it() {
    // The first restart phase times out before its restart returns: the
    // one recorded belongs to the second phase, not to the first.
    let s = scenario("name = \"t\"\n[[phase]]\nname = \"cut\"\nstep = \"restart\"\ntimeout_ms = 100\non_failure = \"continue\"\n[[phase]]\nname = \"done\"\nstep = \"restart\"\n");
    let run = run_cell(&s, &settings(), &mut SlowFirst(0)).await;
    assert_eq!(run.phases[0].outcome, Outcome::Timeout);
    assert_eq!(run.phases[1].outcome, Outcome::Ok);
    let phases: Vec<&str> = run.restarts.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(phases, ["done"]);
}

#[tokio::test]
async fn an_interrupt_ends_the_phase_runs_the_cleanup_within_its_bound_and_marks_the_cell() {
    let s = scenario("name = \"t\"\n[[phase]]\nname = \"quick\"\nstep = \"sleep\"\nms = 1\n[[phase]]\nname = \"long\"\nstep = \"sleep\"\nms = 60000\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n[[cleanup]]\nname = \"tidy\"\nstep = \"sleep\"\nms = 10\n[[cleanup]]\nname = \"slowTidy\"\nstep = \"sleep\"\nms = 60000\n");
    let (tx, rx) = watch::channel(false);
    let settings = CellSettings {
        interrupt: rx,
        default_timeout: Duration::from_secs(120),
        ..settings()
    };
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.send(true).unwrap();
    });
    let started = Instant::now();
    let run = run_cell(&s, &settings, &mut NoRestart(0)).await;
    let took = started.elapsed();
    assert_eq!(run.verdict, Verdict::Interrupted);
    assert_eq!(run.failure_boundary.as_deref(), Some("long"));
    let outcomes = outcomes(&run);
    assert_eq!(
        outcomes,
        [
            ("quick", Outcome::Ok),
            ("long", Outcome::Interrupted),
            ("after", Outcome::NotRun),
            ("tidy", Outcome::Ok),
            ("slowTidy", Outcome::Interrupted),
        ]
    );
    // Cut at the interrupt, then at most the cleanup bound (and some slack).
    assert!(
        took < Duration::from_millis(300) + INTERRUPTED_CLEANUP_BOUND + Duration::from_secs(1),
        "{took:?}"
    );
}

/// A client that takes every step but `write_file`.
struct NoFiles;

#[async_trait(?Send)]
impl ScenarioClient for NoFiles {
    fn name(&self) -> &'static str {
        "test"
    }
    fn supports(&self, step: &Step) -> Result<(), Unsupported> {
        match step {
            Step::WriteFile { .. } => Err(Unsupported {
                api: "no file call",
                call: "files",
            }),
            _ => Ok(()),
        }
    }
    fn connected(&self, _: &RunningCell<'_>, _: &str) -> bool {
        false
    }
    async fn connect(&self, _: &mut RunningCell<'_>, _: &str) -> Result<(), StepFailure> {
        Ok(())
    }
    async fn create_session(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<crate::report::detail::CreateSessionDetail, StepFailure> {
        Err(self.cannot(crate::scenario::StepKind::CreateSession))
    }
    async fn prompt(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
        _: &str,
        _: String,
    ) -> Result<driver::PromptAnswer, StepFailure> {
        Err(self.cannot(crate::scenario::StepKind::Prompt))
    }
    async fn get_events(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
        _: &str,
        _: usize,
        _: bool,
    ) -> StepResult {
        Err(self.cannot(crate::scenario::StepKind::GetEvents))
    }
    async fn resume_session(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
        _: &str,
    ) -> Result<crate::report::detail::ResumeDetail, StepFailure> {
        Err(self.cannot(crate::scenario::StepKind::ResumeSession))
    }
    async fn destroy_session(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
        _: &str,
    ) -> Result<(), StepFailure> {
        Err(self.cannot(crate::scenario::StepKind::DestroySession))
    }
    async fn dispose(&self, _: &mut RunningCell<'_>, _: &str) -> Result<(), StepFailure> {
        Ok(())
    }
    async fn health(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
    ) -> Result<crate::report::detail::HealthDetail, StepFailure> {
        Err(self.cannot(crate::scenario::StepKind::Health))
    }
    async fn replay_history(
        &self,
        _: &mut RunningCell<'_>,
        _: &str,
        _: &str,
    ) -> Result<Vec<crate::persist::SessionEvent>, StepFailure> {
        Err(self.cannot(crate::scenario::StepKind::ReplayCheck))
    }
}

async fn run_without_files(source: &str) -> CellRun {
    let (run, _) = run_cell_on(
        &scenario(source),
        &settings(),
        &mut NoRestart(0),
        Arc::new(NoFiles),
        None,
    )
    .await;
    run
}

#[tokio::test]
async fn a_step_the_client_cannot_take_is_not_applicable_and_the_cell_runs_on() {
    let run = run_without_files("name = \"t\"\n[[phase]]\nname = \"first\"\nstep = \"connect\"\nclient = \"a\"\n[[phase]]\nname = \"write\"\nstep = \"write_file\"\nclient = \"a\"\npath = \"x\"\ncontent = \"y\"\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n").await;
    let outcomes = outcomes(&run);
    assert_eq!(
        outcomes,
        [
            ("first", Outcome::Ok),
            ("write", Outcome::NotApplicable),
            ("after", Outcome::Ok),
        ]
    );
    assert_eq!(
        run.phases[1].detail["notApplicable"],
        "the test client: no file call"
    );
    assert!(run.phases[1].signature.is_none());
    assert_eq!((run.verdict, run.failure_boundary), (Verdict::Pass, None));
}

#[tokio::test]
async fn a_cell_whose_verdict_steps_are_all_not_applicable_is_not_applicable_not_passed() {
    let run = run_without_files("name = \"t\"\nverdict = [\"write\"]\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"a\"\n[[phase]]\nname = \"write\"\nstep = \"write_file\"\nclient = \"a\"\npath = \"x\"\ncontent = \"y\"\n").await;
    assert_eq!(run.phases[1].outcome, Outcome::NotApplicable);
    assert_eq!(run.phases[1].detail["missingCall"], "files");
    assert_eq!(
        (run.verdict, run.failure_boundary.as_deref()),
        (Verdict::NotApplicable, None)
    );
    assert_eq!(run.reason.as_deref(), Some("write: no call for files"));
}

/// A verdict step after the restart the client cannot take, beside
/// one it took before: the cell judged only on what ran says nothing
/// about the restart (the SDK's native-load); one verdict step after
/// the restart that ran judges it.
#[tokio::test]
async fn only_the_verdict_steps_after_the_restart_decide_on_it() {
    let head = "name = \"t\"\nverdict = [\"before\", \"write\"]\n[[phase]]\nname = \"before\"\nstep = \"sleep\"\nms = 1\n[[phase]]\nname = \"restart\"\nstep = \"restart\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"a\"\n[[phase]]\nname = \"write\"\nstep = \"write_file\"\nclient = \"a\"\npath = \"x\"\ncontent = \"y\"\n";
    let run = run_without_files(head).await;
    assert_eq!(run.verdict, Verdict::NotApplicable, "{:?}", run.phases);
    let judged_after = head.replace(
        "verdict = [\"before\", \"write\"]",
        "verdict = [\"before\", \"write\", \"after\"]",
    ) + "[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n";
    let run = run_without_files(&judged_after).await;
    assert_eq!(run.verdict, Verdict::Pass, "{:?}", run.phases);
}

/// continuity's client has no provider: the client `start_sandbox`
/// would make never exists, and the steps on it are not applicable
/// (saying why), never failed as "not connected".
#[tokio::test]
async fn the_steps_on_a_client_no_applicable_step_made_are_not_applicable() {
    let source = "name = \"t\"\nverdict = [\"reattach\", \"prompt\"]\n[[phase]]\nname = \"start\"\nstep = \"start_sandbox\"\nclient = \"app\"\n[[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"app\"\nsession = \"s\"\n[[phase]]\nname = \"prompt\"\nstep = \"prompt\"\nclient = \"app\"\nsession = \"s\"\ntext = \"hi\"\n[[phase]]\nname = \"reattach\"\nstep = \"reattach_sandbox\"\nclient = \"app\"\n[[phase]]\nname = \"after\"\nstep = \"sleep\"\nms = 1\n";
    let (run, _) = run_cell_on(
        &scenario(source),
        &settings(),
        &mut NoRestart(0),
        Arc::new(rust_client::RustClient),
        None,
    )
    .await;
    assert_eq!(
        outcomes(&run),
        [
            ("start", Outcome::NotApplicable),
            ("create", Outcome::NotApplicable),
            ("prompt", Outcome::NotApplicable),
            ("reattach", Outcome::NotApplicable),
            ("after", Outcome::Ok),
        ]
    );
    let why = run.phases[1].detail["notApplicable"].as_str().unwrap();
    assert!(why.starts_with("client `app` is made by phase `start`, not applicable for the rust client: continuity's Rust client has no SandboxProvider"), "{why}");
    assert_eq!(
        run.phases[1].detail["missingCall"],
        "SandboxAgent.start({ sandbox, sandboxId })"
    );
    assert_eq!(run.verdict, Verdict::NotApplicable);
}

/// Over every built-in scenario and both kinds of client (continuity's,
/// and the real SDK wherever it runs), every step each can take passing
/// and every other not applicable (with the clients such a step would
/// have made): no cell is a pass unless a verdict step after its
/// restart ran, and the cells with none are exactly the SDK's
/// native-load and continuity's sandbox-provider.
#[test]
fn no_builtin_cell_passes_without_a_verdict_step_after_its_restart() {
    type Lacks<'a> = &'a dyn Fn(&Step) -> Option<Unsupported>;
    let sdk = |step: &Step| sdk_client::unsupported(step);
    let rust = |step: &Step| rust_client::RustClient.supports(step).err();
    let clients: [(&str, Lacks<'_>); 2] = [("rust", &rust), ("sdk", &sdk)];
    let mut without_a_verdict = Vec::new();
    for scenario in crate::scenario::builtin_scenarios() {
        for (client, lacks) in clients {
            let mut unmade: Vec<&str> = Vec::new();
            let phases: Vec<PhaseResult> = scenario
                .phases
                .iter()
                .map(|phase| {
                    let default = Duration::from_secs(1);
                    let on_unmade = step_client(&phase.step).is_some_and(|c| unmade.contains(&c));
                    match lacks(&phase.step) {
                        Some(missing) => {
                            unmade.extend(made_client(&phase.step));
                            not_applicable(phase, default, false, client, missing)
                        }
                        None if on_unmade => {
                            judge::not_applicable_as(phase, default, false, "unmade".into(), "x")
                        }
                        None => PhaseResult {
                            outcome: Outcome::Ok,
                            ok: true,
                            ..not_run(phase, default, false)
                        },
                    }
                })
                .collect();
            let folded = judge::judge(&phases, &[]);
            let deciding: Vec<&PhaseResult> =
                crate::report::fold::restart_deciding(&phases, &[]).collect();
            assert!(!deciding.is_empty(), "{}: no verdict phase", scenario.name);
            let none_ran = deciding.iter().all(|p| p.outcome == Outcome::NotApplicable);
            assert_eq!(
                folded.verdict == Verdict::Pass,
                !none_ran,
                "{} × {client}: {folded:?}",
                scenario.name
            );
            if none_ran {
                assert_eq!(folded.verdict, Verdict::NotApplicable);
                without_a_verdict.push(format!("{} × {client}", scenario.name));
            }
        }
    }
    without_a_verdict.sort();
    assert_eq!(
        without_a_verdict,
        ["native-load × sdk", "sandbox-provider × rust"]
    );
}
