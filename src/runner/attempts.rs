//! One repeat of a cell on a worker's stack: an attempt, a failed one
//! again up to `retries` times, each with fresh clients, its own persist
//! store and a restart of the cell's target. Every repeat runs the one
//! lifecycle, in which an attempt's deferred cleanup always runs out beside
//! what comes next (a restart waiting on the cleanup fence would otherwise
//! wait for ever). What finished is kept when the run is cancelled.
//!
//! Over 400 lines on purpose: one repeat's lifecycle (the restarter, each
//! attempt and its retry, its trace and store set-up, the deferred cleanup
//! that runs out beside what comes next, the attempt record it ends with)
//! shares the worker's stack and the cell's plan throughout; the queue,
//! workers and gathering are apart (`runner/`).

use super::persist_axis;
use super::Worker;
use super::{RunEvent, RunPlan};
use crate::client::ClientRestart;
use crate::errors::HarnessPart;
use crate::report::floor;
use crate::report::{Attempt, RestartResult, Verdict};
use crate::scenario::{run_cell_deferring, CellRun, CellSettings, Restarter, Scenario};
use crate::targets::{BuiltinTarget, Target};
use crate::trace::event::{self, Event};
use async_trait::async_trait;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::watch;

mod applies;
mod lifecycle;

use lifecycle::{lifecycle, AttemptSource};
pub(super) use lifecycle::{Attempts, Finishing, PendingAttempt};

/// Wraps a target so the scenario executor can restart it.
struct TargetRestarter<'a> {
    target: &'a mut Target,
    /// The stack's components lent to its restart (a reboot's, a schedule's).
    lent: Vec<&'a mut Target>,
    /// The `client` target of continuity's own client: the cell renews its clients.
    clients: bool,
    /// The parts of continuity's own the restart takes down on purpose.
    parts: Vec<HarnessPart>,
    /// The built-in target restarted, if it is one: its own part (or its
    /// component's) stands for no component of the deployment.
    builtin: Option<BuiltinTarget>,
    /// Whether the Rivet app hosts the cell's SDK (a part of continuity's own then).
    hosts_sdk: bool,
}

#[async_trait]
impl Restarter for TargetRestarter<'_> {
    async fn restart(&mut self, phase: &str) -> crate::targets::Restarted {
        self.target.restart_lent(phase, &mut self.lent).await
    }

    fn own_part_brought_back(&self, component: Option<BuiltinTarget>) -> Option<HarnessPart> {
        self.builtin
            .and_then(|b| b.own_part_not_back(component, self.hosts_sdk))
    }

    fn cuts_open_requests(&self) -> bool {
        !self.target.keeps_open_requests
    }

    async fn before_last_phase(&mut self) -> Result<(), crate::targets::SettleError> {
        self.target.before_last_phase(&mut self.lent).await
    }

    fn restarts_clients(&self) -> bool {
        self.clients
    }

    fn leaves_processes_running(&self) -> bool {
        self.target.leaves_processes_running()
    }

    async fn settle(&mut self) -> Result<(), crate::targets::SettleError> {
        self.target.settle_lent(&mut self.lent).await
    }

    fn restarts_parts(&self) -> Vec<HarnessPart> {
        self.parts.clone()
    }

    fn watched_parts(&self) -> Vec<crate::supervise::part::PartProcess> {
        self.target.watched_parts().to_vec()
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

/// A cell's attempts on a worker's stack.
struct OnWorker<'a, 'p> {
    plan: RunPlan<'p>,
    worker: &'a mut Worker,
    cell: &'a CellId<'p>,
    gather: &'a super::gather::Gather,
    target: crate::targets::TargetId,
    sequence: &'a AtomicUsize,
    interrupt: &'a watch::Receiver<bool>,
    on_event: &'a mut (dyn FnMut(RunEvent) + Send),
}

#[async_trait(?Send)]
impl AttemptSource for OnWorker<'_, '_> {
    async fn run(&mut self) -> PendingAttempt {
        let number = self.gather.next_number(self.cell.index);
        let sequence = self.sequence.fetch_add(1, Ordering::SeqCst) + 1;
        (self.on_event)(RunEvent::CellStarted {
            index: self.cell.index,
            total: self.cell.total,
            target: self.target.clone(),
            scenario: self.cell.scenario.name.clone(),
            attempt: number,
            point: Box::new(self.plan.point.clone()),
        });
        let attempt = run_one(
            self.plan,
            self.worker,
            self.cell.target,
            self.cell.scenario,
            number,
            sequence,
            self.interrupt.clone(),
        )
        .await
        .unwrap_or_else(PendingAttempt::ready);
        (self.on_event)(RunEvent::AttemptJudged {
            index: self.cell.index,
            total: self.cell.total,
            attempt: number,
            verdict: attempt.verdict,
        });
        attempt
    }

    fn retrying(&mut self, attempt: &Attempt) {
        (self.on_event)(RunEvent::Retrying {
            index: self.cell.index,
            total: self.cell.total,
            attempt: Box::new(attempt.clone()),
            target: self.target.clone(),
            scenario: self.cell.scenario.name.clone(),
            point: Box::new(self.plan.point.clone()),
        });
    }
}

/// One repeat of a cell, its [`lifecycle`], on `worker`'s stack: the
/// attempt then running when `interrupt` turns true (a stopping signal or
/// the overall deadline) ends `interrupted` after its cleanup, and is kept
/// too. `gather` numbers the cell's attempts; `sequence` numbers the run's
/// (persist keys, trace folders), across workers.
pub(super) async fn run_attempts(
    plan: RunPlan<'_>,
    worker: &mut Worker,
    cell: &CellId<'_>,
    gather: &super::gather::Gather,
    sequence: &AtomicUsize,
    interrupt: &watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Attempts {
    let target = worker.targets[cell.target].id.clone();
    let mut source = OnWorker {
        plan,
        worker,
        cell,
        gather,
        target,
        sequence,
        interrupt,
        on_event,
    };
    lifecycle(plan.settings.retries, interrupt, &mut source).await
}

/// The browser client's `client` target: its page reloads, as a deploy or
/// a user reloads it; the page's storage stays, its SDK clients do not.
struct PageReload(crate::client::browser::BrowserPage);

#[async_trait]
impl Restarter for PageReload {
    async fn restart(&mut self, phase: &str) -> crate::targets::Restarted {
        let started = std::time::Instant::now();
        let reloaded = self.0.reload().await;
        // A page that does not reload is Chromium's (continuity's) failure.
        crate::targets::Restarted::from_record(RestartResult {
            phase: phase.to_string(),
            action: "reload".into(),
            ok: reloaded.is_ok(),
            restart_ms: started.elapsed().as_millis() as u64,
            ready_ms: None,
            // A reloaded page is seen back by the reload's own answer.
            down: None,
            detail: reloaded.err().map(|e| e.to_string()),
        })
    }

    /// Only the page's own requests are cut.
    fn cuts_open_requests(&self) -> bool {
        false
    }
}

/// Why an attempt ended `interrupted`: the run was stopped during `what`.
fn interrupted_during(what: &str) -> String {
    format!("the run was interrupted (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT or the overall deadline) during {what}")
}

pub(super) fn skipped_attempt(attempt: u32, reason: &str) -> Attempt {
    Attempt {
        checked: None,
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
        schedule: None,
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
    let target_id = worker.targets[t].id.clone();
    let target_name = target_id.name();
    let client = worker.client(plan.point);
    if let Some((verdict, reason)) = not_runnable(worker, &client, &target_id, scenario) {
        let mut not_run = skipped_attempt(attempt, &reason);
        not_run.verdict = verdict;
        return Err(not_run);
    }
    let kind = client.kind();
    let restarts_clients = target_id == BuiltinTarget::Client;
    let hosts_sdk = kind.hosts_sdk();
    let tag = kind.tag();
    let (key, file_cell) = cell_names(plan, (&tag, index), target_name, scenario, attempt);
    let store = persist_axis::cell_store(&worker.persist, &plan.settings.run_dir, &file_cell, &key)
        .map_err(|reason| store_failed(attempt, reason))?;
    let hosted_store = super::client_axis::hosted_store(
        kind,
        &worker.persist,
        worker.stores.postgres_url.as_deref(),
        &plan.settings.run_dir,
        &file_cell,
        &key,
    );
    let profile = plan.settings.run_dir.join("browser").join(&file_cell);
    let (cell_client, chromium) =
        set_up_client(&client, &key, &profile, hosted_store, &interrupt, attempt).await?;
    let (trace, trace_path) = open_trace(plan, index, &tag, target_name, scenario, attempt);
    let settings = cell_settings(plan, worker, t, &trace, key, interrupt, store);
    let page = cell_client.page().cloned();
    if let Some(page) = &page {
        page.set_trace(trace.clone());
    }
    let restart = restarts_clients.then(|| kind.client_restart());
    // The browser client's `client` restart is a reload of its page.
    let mut reload = page
        .filter(|_| restart == Some(ClientRestart::PageReload))
        .map(PageReload);
    let fence = Some(worker.fence.clone());
    let watch = super::integrity::Watch::start(
        worker.targets[t].hops(),
        worker.agent_sent_log.as_deref(),
        &trace,
    );
    let (target, lent) = restarted_target(worker, t, restart == Some(ClientRestart::HostProcess));
    target.set_trace(trace.clone());
    target.begin_cell(plan.point.seed(plan.settings.seed, attempt));
    let schedule = schedule_of(plan, target);
    if let Some(schedule) = &schedule {
        target.plan_schedule(schedule.clone());
    }
    let mut on_target = TargetRestarter {
        target,
        lent,
        clients: restart == Some(ClientRestart::Renewed),
        // A deployment's own targets restart nothing of continuity's.
        parts: target_id
            .builtin()
            .map_or_else(Vec::new, |b| b.restarted_parts(hosts_sdk)),
        builtin: target_id.builtin(),
        hosts_sdk,
    };
    let restarter: &mut dyn Restarter = match reload.as_mut() {
        Some(reload) => reload,
        None => &mut on_target,
    };
    let (mut run, deferred) =
        run_cell_deferring(scenario, &settings, restarter, cell_client, fence).await;
    let run_dir = plan.settings.run_dir.clone();
    let trace_file = trace_path.as_ref().map(|p| run_dir.join(p));
    let checked = watch.finish(&trace, trace_file.as_deref(), &scenario.allows);
    if let Some(checked) = &checked {
        run.apply_integrity(checked);
    }
    let verdict = run.verdict;
    let rest = async move {
        let mut run = run;
        if let Some(deferred) = deferred {
            run.complete(deferred).await;
        }
        if let Some(mut chromium) = chromium {
            chromium.stop().await;
        }
        let mut attempt = finish_attempt(run, attempt, &trace, trace_path, &run_dir);
        attempt.checked = checked;
        attempt.schedule = schedule;
        attempt
    };
    Ok(PendingAttempt::pending(attempt, verdict, rest))
}

/// The attempt's key (unique in the run: its stores and hosted clients
/// are named by it) and its file name (its SQLite file, browser profile).
fn cell_names(
    plan: RunPlan<'_>,
    (tag, index): (&str, usize),
    target_name: &str,
    scenario: &Scenario,
    attempt: u32,
) -> (String, String) {
    let key = format!("{}-{tag}{index}", plan.settings.id);
    let file_cell = format!(
        "{index:03}-{tag}{}-{}-{attempt}",
        crate::file_name::safe(target_name),
        crate::file_name::safe(&scenario.name)
    );
    (key, file_cell)
}

/// The attempt's trace and its file (relative to the run folder), in a
/// folder of its own named after the cell.
fn open_trace(
    plan: RunPlan<'_>,
    index: usize,
    tag: &str,
    target_name: &str,
    scenario: &Scenario,
    attempt: u32,
) -> (crate::trace::Trace, Option<String>) {
    let cell_dir = crate::trace::cell_dir_name(
        index,
        &format!("{tag}{target_name}"),
        &scenario.name,
        attempt,
    );
    crate::trace::for_cell(
        &plan.settings.run_dir,
        &cell_dir,
        plan.settings.trace_level,
        plan.settings.token.clone(),
        event::CellId {
            target: target_name.into(),
            scenario: scenario.name.clone(),
            attempt,
        },
    )
}

/// What the executor needs of the run and the worker for one attempt: a
/// timeout target (index `t`) may send the cell's clients to a gateway of
/// its own, or give them a header timeout.
fn cell_settings(
    plan: RunPlan<'_>,
    worker: &Worker,
    t: usize,
    trace: &crate::trace::Trace,
    key: String,
    interrupt: watch::Receiver<bool>,
    store: crate::scenario::CellStore,
) -> CellSettings {
    let target = &worker.targets[t];
    CellSettings {
        trace: trace.clone(),
        base_url: target
            .cell_base_url()
            .map_or_else(|| worker.base_url.clone(), str::to_string),
        headers_timeout: target.client_headers_timeout(),
        hang_grace: plan.settings.hang_grace,
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
        sandboxes: worker.sandboxes.clone(),
    }
}

/// Why the cell does not run on this worker at all (before anything is
/// set up), and its verdict: `skipped` when its client or store cannot be
/// set up (or the hosted client's process is not there to restart);
/// `not_applicable` when the target is not one its client or store has
/// (a header timeout a browser cannot lower, a store with no server, a
/// provider's sandboxes continuity's client never makes), so the cell
/// would say nothing about it.
fn not_runnable(
    worker: &Worker,
    client: &super::ClientChoice,
    target_id: &crate::targets::TargetId,
    scenario: &Scenario,
) -> Option<(Verdict, String)> {
    let skipped = |reason: String| Some((Verdict::Skipped, reason));
    let not_applicable = |reason: String| Some((Verdict::NotApplicable, reason));
    if let Some(reason) = super::client_axis::skip_reason(client, scenario) {
        return skipped(reason);
    }
    let kind = client.kind();
    if let Some(reason) = super::client_axis::client_skip_reason(kind, &worker.persist) {
        return skipped(reason);
    }
    let target = worker.targets.iter().find(|t| t.id == *target_id);
    if let Some(reason) = target
        .and_then(|t| super::client_axis::timeout_not_applicable(kind, t))
        .or_else(|| persist_axis::not_applicable(target_id, &worker.persist))
    {
        return not_applicable(reason);
    }
    let restarts_clients = *target_id == BuiltinTarget::Client;
    if restarts_clients
        && kind.client_restart() == ClientRestart::HostProcess
        && worker.sdk_process.is_none()
        && !worker.targets.iter().any(|t| t.id == BuiltinTarget::Rivet)
    {
        return skipped(
            "the hosted client's process (the RivetKit runner) is not running on this stack".into(),
        );
    }
    if let Some(reason) = applies::nothing_to_act_on(target_id, target.map(Target::kind), scenario)
    {
        return not_applicable(reason);
    }
    // Its servers are the sandboxes an SDK made through the stack's provider.
    if *target_id == BuiltinTarget::ServerKill && !kind.runs_real_sdk() {
        return not_applicable("server-kill takes down the sandboxes the real SDK made through the stack's SandboxProvider: continuity's Rust client has no call for SandboxAgent.start({ sandbox, sandboxId }), so it has none".into());
    }
    None
}

/// The attempt when the cell's store cannot be had: skipped when the
/// store is absent, an error when it failed.
fn store_failed(attempt: u32, reason: persist_axis::StoreError) -> Attempt {
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
    failed
}

/// Sets up the cell's client. The wait for the hosted client's actor (or
/// the browser's page) is setup, but Ctrl-C still ends it (a Chromium half
/// started is killed with its dropped handle).
async fn set_up_client(
    client: &super::ClientChoice,
    key: &str,
    profile: &std::path::Path,
    hosted_store: Option<serde_json::Value>,
    interrupt: &watch::Receiver<bool>,
    attempt: u32,
) -> Result<super::client_axis::ClientSetup, Attempt> {
    let setup = super::client_axis::set_up(client, key, profile, hosted_store);
    let setup = tokio::select! {
        setup = setup => Some(setup),
        _ = crate::stop_flag::wait_true(interrupt.clone()) => None,
    };
    match setup {
        None => {
            let mut cut = skipped_attempt(
                attempt,
                &interrupted_during("the setup of the hosted client's actor"),
            );
            cut.verdict = Verdict::Interrupted;
            Err(cut)
        }
        Some(Ok(setup)) => Ok(setup),
        Some(Err(reason)) => {
            let mut failed = skipped_attempt(attempt, &reason.to_string());
            failed.verdict = Verdict::Error;
            Err(failed)
        }
    }
}

/// The schedule a `chaos` cell runs: drawn from the run's seed and the
/// cell's point, never the attempt, so every repeat runs the same one
/// (and `rerun` draws it again from the same two).
pub(crate) fn schedule_of(plan: RunPlan<'_>, target: &Target) -> Option<crate::report::Schedule> {
    (target.kind() == crate::targets::RestartKind::Chaos).then(|| {
        crate::targets::chaos::draw(
            plan.point.schedule_seed(plan.settings.seed),
            plan.point.persist == crate::persist::Store::Postgres,
        )
    })
}

/// The target the cell restarts: its own, except that a hosted client's
/// `client` restart (`hosted_client`) is its process's, the RivetKit
/// runner's; and the stack's components it is lent ([`Target::lends`]).
fn restarted_target(
    worker: &mut Worker,
    t: usize,
    hosted_client: bool,
) -> (&mut Target, Vec<&mut Target>) {
    if hosted_client {
        let runner = match worker
            .targets
            .iter()
            .position(|t| t.id == BuiltinTarget::Rivet)
        {
            Some(runner) => &mut worker.targets[runner],
            None => worker
                .sdk_process
                .as_mut()
                .expect("checked before the setup"),
        };
        return (runner, Vec::new());
    }
    let wanted = worker.targets[t].lends();
    let mut own = None;
    let mut lent = Vec::new();
    for (index, part) in worker.parts_mut() {
        if index == Some(t) {
            own = Some(part);
        } else if wanted.iter().any(|w| part.id == *w) {
            lent.push(part);
        }
    }
    (own.expect("the cell's target is the worker's"), lent)
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
    trace.emit(Event::CellEnd(event::CellEnd {
        verdict: run.verdict.as_str().into(),
        failure_boundary: run.failure_boundary.clone(),
    }));
    trace.flush();
    let reason = match run.verdict {
        Verdict::Interrupted => Some(interrupted_during(
            run.failure_boundary.as_deref().unwrap_or("the cell"),
        )),
        _ => run.reason,
    };
    let trace_text = trace_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(run_dir.join(p)).ok());
    let timing = floor::of_attempt(run.duration_ms, &run.restarts, trace_text.as_deref());
    Attempt {
        checked: None,
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
        schedule: None,
    }
}

#[cfg(test)]
mod lifecycle_props;

#[cfg(test)]
mod walk_tests;
