//! One cell's attempts: `repeat` runs, a failed one again up to `retries`
//! times, each with fresh clients, its own persist store and a restart of
//! the cell's target. What finished is kept when the run is cancelled.

use super::persist_axis;
use super::Worker;
use super::{RunEvent, RunPlan};
use crate::report::Floor;
use crate::report::{Attempt, RestartResult, Verdict};
use crate::scenario::{run_cell_deferring, CellRun, CellSettings, Restarter, Scenario};
use crate::targets::Target;
use async_trait::async_trait;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::watch;

/// Wraps a target so the scenario executor can restart it.
struct TargetRestarter<'a> {
    target: &'a mut Target,
    /// The `client` target of continuity's own client: the cell renews its clients.
    clients: bool,
}

#[async_trait]
impl Restarter for TargetRestarter<'_> {
    async fn restart(&mut self, phase: &str) -> RestartResult {
        self.target.restart(phase).await
    }

    fn cuts_open_requests(&self) -> bool {
        !self.target.keeps_open_requests
    }

    fn restarts_clients(&self) -> bool {
        self.clients
    }
}

/// Which cell the attempts belong to, for events and file names.
pub(super) struct CellId<'a> {
    pub index: usize,
    pub total: usize,
    /// Index into the plan's targets.
    pub target: usize,
    pub scenario: &'a Scenario,
}

/// The attempts of one cell, and whether the run was interrupted during them.
pub(super) struct Attempts {
    pub attempts: Vec<PendingAttempt>,
    pub interrupted: bool,
}

/// An attempt whose verdict is decided; what is left of it (its deferred
/// DELETEs, its trace's end, its floor) runs in [`PendingAttempt::finish`],
/// which the worker drives beside its next cell.
pub(super) struct PendingAttempt {
    pub verdict: Verdict,
    retry: bool,
    rest: Pin<Box<dyn Future<Output = Attempt> + Send>>,
}

impl PendingAttempt {
    fn ready(attempt: Attempt) -> Self {
        Self {
            verdict: attempt.verdict,
            retry: false,
            rest: Box::pin(std::future::ready(attempt)),
        }
    }

    /// The whole attempt, once its cleanup has run out.
    pub async fn finish(self) -> Attempt {
        let mut attempt = self.rest.await;
        attempt.retry = self.retry;
        attempt
    }
}

/// `repeat` attempts, each failed one run again up to `retries` times, on
/// `worker`'s stack; stops (keeping what finished) when `interrupt` turns
/// true (Ctrl-C, SIGTERM or the overall deadline): the attempt then running
/// ends `interrupted` after its cleanup, and is kept too. `sequence` numbers
/// the run's attempts (persist keys, trace folders), across workers.
pub(super) async fn run_attempts(
    plan: RunPlan<'_>,
    worker: &mut Worker,
    cell: &CellId<'_>,
    sequence: &AtomicUsize,
    interrupt: &watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Attempts {
    let (index, total, scenario) = (cell.index, cell.total, cell.scenario);
    let target = worker.targets[cell.target].name.clone();
    let mut attempts: Vec<PendingAttempt> = Vec::new();
    for _ in 0..plan.settings.repeat {
        let mut retries_left = plan.settings.retries;
        let mut retry = false;
        loop {
            if *interrupt.borrow() {
                return Attempts {
                    attempts,
                    interrupted: true,
                };
            }
            let sequence = sequence.fetch_add(1, Ordering::SeqCst) + 1;
            let number = attempts.len() as u32 + 1;
            on_event(RunEvent::CellStarted {
                index,
                total,
                target: target.clone(),
                scenario: scenario.name.clone(),
                attempt: number,
            });
            let mut attempt = run_one(
                plan,
                worker,
                cell.target,
                scenario,
                number,
                sequence,
                interrupt.clone(),
            )
            .await
            .unwrap_or_else(PendingAttempt::ready);
            attempt.retry = retry;
            if attempt.verdict == Verdict::Interrupted {
                attempts.push(attempt);
                return Attempts {
                    attempts,
                    interrupted: true,
                };
            }
            let again =
                matches!(attempt.verdict, Verdict::Fail | Verdict::Error) && retries_left > 0;
            if again {
                // The retry's restart would wait for this cleanup anyway.
                let finished = attempt.finish().await;
                on_event(RunEvent::Retrying {
                    index,
                    total,
                    attempt: Box::new(finished.clone()),
                    target: target.clone(),
                    scenario: scenario.name.clone(),
                });
                attempt = PendingAttempt::ready(finished);
            }
            attempts.push(attempt);
            if !again {
                break;
            }
            retries_left -= 1;
            retry = true;
        }
    }
    Attempts {
        attempts,
        interrupted: false,
    }
}

/// Why an attempt ended `interrupted`: the run was stopped during `what`.
fn interrupted_during(what: &str) -> String {
    format!("the run was interrupted (Ctrl-C, SIGTERM or the overall deadline) during {what}")
}

pub(super) fn skipped_attempt(attempt: u32, reason: &str) -> Attempt {
    Attempt {
        attempt,
        retry: false,
        verdict: Verdict::Skipped,
        failure_boundary: None,
        reason: Some(reason.into()),
        duration_ms: 0,
        phases: Vec::new(),
        restarts: Vec::new(),
        trace: None,
        timing: None,
    }
}

/// One attempt on `worker`'s stack, its verdict decided; an attempt that
/// ended before its cell ran (skipped, no store, interrupted during setup)
/// is the `Err`.
async fn run_one(
    plan: RunPlan<'_>,
    worker: &mut Worker,
    t: usize,
    scenario: &Scenario,
    attempt: u32,
    index: usize,
    interrupt: watch::Receiver<bool>,
) -> Result<PendingAttempt, Attempt> {
    let target_name = worker.targets[t].name.clone();
    let client = worker.client(&plan.point.client);
    if let Some(reason) = super::client_axis::skip_reason(&client, scenario) {
        return Err(skipped_attempt(attempt, &reason));
    }
    if let Some(reason) = persist_axis::skip_reason(&target_name, &worker.persist) {
        return Err(skipped_attempt(attempt, &reason));
    }
    let restarts_clients = target_name == persist_axis::CLIENT_TARGET;
    let hosts_sdk = matches!(client, super::ClientChoice::TsSdk(_));
    if restarts_clients
        && hosts_sdk
        && worker.sdk_process.is_none()
        && !worker.targets.iter().any(|t| t.name == "rivet")
    {
        return Err(skipped_attempt(
            attempt,
            "the hosted client's process (the RivetKit runner) is not running on this stack",
        ));
    }
    // Each point of the persistence axis runs the matrix again: its own keys, files and folders.
    let tag = format!("{}{}", super::client_axis::tag(&client), worker.persist_tag);
    let key = format!("{}-{tag}{index}", plan.settings.id);
    let file_cell = format!("{index:03}-{tag}{target_name}-{}-{attempt}", scenario.name);
    let store =
        match persist_axis::cell_store(&worker.persist, &plan.settings.run_dir, &file_cell, &key) {
            Ok(p) => p,
            Err(reason) => {
                let mut failed = skipped_attempt(attempt, &reason.to_string());
                let absent = matches!(
                    reason,
                    persist_axis::StoreError::Unavailable { failed: false, .. }
                );
                failed.verdict = if absent {
                    Verdict::Skipped
                } else {
                    Verdict::Error
                };
                return Err(failed);
            }
        };
    let hosted_store = persist_axis::hosted_store(
        &client,
        &worker.persist,
        worker.stores.postgres_url.as_deref(),
        &plan.settings.run_dir,
        &file_cell,
        &key,
    );
    // The wait for the hosted client's actor is setup, but Ctrl-C still ends it.
    let setup = tokio::select! {
        setup = super::client_axis::hosted_cell(&client, &key, hosted_store) => Some(setup),
        _ = crate::stop_flag::wait_true(interrupt.clone()) => None,
    };
    let hosted = match setup {
        None => {
            let mut cut = skipped_attempt(
                attempt,
                &interrupted_during("the setup of the hosted client's actor"),
            );
            cut.verdict = Verdict::Interrupted;
            return Err(cut);
        }
        Some(Ok(hosted)) => hosted,
        Some(Err(reason)) => {
            let mut failed = skipped_attempt(attempt, &reason.to_string());
            failed.verdict = Verdict::Error;
            return Err(failed);
        }
    };
    let cell_dir = crate::trace::cell_dir_name(
        index,
        &format!("{tag}{target_name}"),
        &scenario.name,
        attempt,
    );
    let (trace, trace_path) = crate::trace::for_cell(
        &plan.settings.run_dir,
        &cell_dir,
        plan.settings.trace_level,
        plan.settings.token.clone(),
        serde_json::json!({"cell": {"target": target_name, "scenario": scenario.name, "attempt": attempt}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let settings = CellSettings {
        trace: trace.clone(),
        base_url: worker.base_url.clone(),
        token: plan.settings.token.clone(),
        headers: plan.settings.headers.clone(),
        agent: plan.point.agent.clone(),
        default_timeout: plan.settings.timeout,
        session_suffix: key,
        interrupt,
        store,
        agent_sent_log: worker.agent_sent_log.clone(),
        // Only real agents talk to the fake provider: its log judges their cells only.
        model_calls: worker.model_calls.clone().filter(|_| plan.point.real_agent),
    };
    // A hosted client's `client` restart is its process's: the RivetKit runner's.
    let target = match (restarts_clients, hosted.is_some()) {
        (true, true) => match worker.targets.iter().position(|t| t.name == "rivet") {
            Some(runner) => &mut worker.targets[runner],
            None => worker
                .sdk_process
                .as_mut()
                .expect("checked before the setup"),
        },
        _ => &mut worker.targets[t],
    };
    target.set_trace(trace.clone());
    let mut restarter = TargetRestarter {
        target,
        clients: restarts_clients && hosted.is_none(),
    };
    let fence = Some(worker.fence.clone());
    let (run, deferred) =
        run_cell_deferring(scenario, &settings, &mut restarter, hosted, fence).await;
    let run_dir = plan.settings.run_dir.clone();
    let verdict = run.verdict;
    let rest = async move {
        let mut run = run;
        if let Some(deferred) = deferred {
            run.complete(deferred).await;
        }
        finish_attempt(run, attempt, &trace, trace_path, &run_dir)
    };
    Ok(PendingAttempt {
        verdict,
        retry: false,
        rest: Box::pin(rest),
    })
}

/// The attempt's record once its cell has run out: the trace closed and
/// read back for the floor.
fn finish_attempt(
    run: CellRun,
    attempt: u32,
    trace: &crate::trace::Trace,
    trace_path: Option<String>,
    run_dir: &std::path::Path,
) -> Attempt {
    trace.event(
        "cell_end",
        serde_json::json!({"verdict": run.verdict.as_str(), "failureBoundary": run.failure_boundary})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    trace.flush();
    let reason = (run.verdict == Verdict::Interrupted)
        .then(|| interrupted_during(run.failure_boundary.as_deref().unwrap_or("the cell")));
    let trace_text = trace_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(run_dir.join(p)).ok());
    let timing = Floor::of_attempt(run.duration_ms, &run.restarts, trace_text.as_deref());
    Attempt {
        attempt,
        retry: false,
        verdict: run.verdict,
        failure_boundary: run.failure_boundary,
        reason,
        duration_ms: run.duration_ms,
        phases: run.phases,
        restarts: run.restarts,
        trace: trace_path,
        timing: Some(timing),
    }
}
