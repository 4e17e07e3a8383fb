//! `--jobs N`: the run's cells shared among workers, each on a stack of its
//! own (own ports, folders, processes), so no two cells that touch the same
//! stack ever run at once (a cell's deferred DELETEs aside, which restarts
//! that would cut them wait for). The queue holds one job per repeat of
//! each cell, and workers take the next from it (targets interleaved, and
//! with them every other axis, one cell's repeats a whole pass apart, see
//! [`dispatch_order`]; a worker prefers cells of the server point its stack
//! runs, see [`next_job`]); what they finish is gathered into cells
//! ([`Gather`]) and put back in matrix order, so the report is the one
//! `--jobs 1` writes, whichever worker ran which repeat.

use super::attempts::{run_attempts, skipped_attempt, CellId, Finishing};
use super::gather::{CellName, Gather};
pub(super) use super::queue::Job;
use super::queue::{dispatch_order, ends_disposing, next_job, repeats};
use super::{RunEvent, RunPlan, RunSettings, RunStacks, Worker};
use crate::report::Attempt;
use crate::stop_flag::unless_stopped;
use crate::targets::{NotBroughtBack, Target, TargetId};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;
use tokio::sync::{mpsc, watch};

/// Runs every repeat of `cells` on the own stack and on every stack of
/// `stacks.workers`, one at a time per stack; on a shared deployment (no
/// worker stacks, `stacks.jobs` > 1), see [`run_lanes`]. Events reach
/// `on_event` as they happen, each finished cell among them
/// (`CellFinished`, the one place its record goes); returns whether the
/// run was interrupted.
pub(super) async fn run_jobs(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    cells: Vec<Job>,
    total: usize,
    interrupt: &watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> bool {
    let jobs = repeats(cells, settings.repeat);
    let gather = Gather::new(jobs.iter().map(|job| CellName {
        index: job.index,
        named: job.named.clone(),
    }));
    let sequence = AtomicUsize::new(0);
    let run = Run {
        settings,
        sequence: &sequence,
        gather: &gather,
        total,
        interrupt,
    };
    let interrupted = if stacks.workers.is_empty()
        && stacks.jobs > 1
        && stacks.own.targets.iter().any(|t| t.independent)
    {
        run_lanes(&run, stacks, jobs, on_event).await
    } else {
        let workers: Vec<&mut Worker> = std::iter::once(&mut stacks.own)
            .chain(stacks.workers.iter_mut())
            .collect();
        drive(&run, workers, jobs, on_event).await
    };
    // A stopped run keeps what ran of the cells it cut short.
    for (index, cell) in gather.cut_short() {
        on_event(RunEvent::CellFinished {
            index,
            total,
            cell: Box::new(cell),
        });
    }
    interrupted
}

/// One shared deployment, `stacks.jobs` lanes: the cells of targets that are
/// not `independent` first, one at a time and alone (their restarts would
/// disturb any other cell); then the independent targets' cells, up to
/// `stacks.jobs` at once, never two of one target (a lane holds its targets).
async fn run_lanes(
    run: &Run<'_>,
    stacks: &mut RunStacks,
    jobs: Vec<Job>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> bool {
    let own = &mut stacks.own;
    let order: Vec<TargetId> = own.targets.iter().map(|t| t.id.clone()).collect();
    let (independent, alone): (Vec<Target>, Vec<Target>) =
        own.targets.drain(..).partition(|t| t.independent);
    let is_independent = |job: &Job| independent.iter().any(|t| t.id == job.target);
    let (later, first): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(is_independent);
    let lanes = stacks.jobs.min(independent.len()).max(1);
    let mut workers: Vec<Worker> = (0..lanes).map(|_| own.sharing()).collect();
    for (n, target) in independent.into_iter().enumerate() {
        workers[n % lanes].targets.push(target);
    }
    own.targets = alone;
    let mut interrupted = drive(run, vec![&mut *own], first, on_event).await;
    if !interrupted {
        interrupted = drive(run, workers.iter_mut().collect(), later, on_event).await;
    }
    own.targets
        .extend(workers.into_iter().flat_map(|w| w.targets));
    own.targets.sort_by_key(|t| position(&order, &t.id));
    interrupted
}

fn position(order: &[TargetId], id: &TargetId) -> usize {
    order.iter().position(|n| n == id).unwrap_or(usize::MAX)
}

/// The run's side of every drive: the settings, the run's attempt
/// counter, its cells being gathered, the cell count and the interrupt flag.
struct Run<'a> {
    settings: &'a RunSettings,
    sequence: &'a AtomicUsize,
    gather: &'a Gather,
    total: usize,
    interrupt: &'a watch::Receiver<bool>,
}

/// Runs `jobs` on `workers`, each taking the next job it can run.
async fn drive(
    run: &Run<'_>,
    workers: Vec<&mut Worker>,
    jobs: Vec<Job>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> bool {
    let queue = Mutex::new(dispatch_order(jobs));
    let (events, mut received) = mpsc::unbounded_channel();
    let results = {
        let shared = Shared { run, queue: &queue };
        let running = futures_util::future::join_all(
            workers
                .into_iter()
                .map(|worker| work(&shared, worker, events.clone())),
        );
        drop(events);
        tokio::pin!(running);
        loop {
            tokio::select! {
                Some(event) = received.recv() => on_event(event),
                results = &mut running => break results,
            }
        }
    };
    while let Ok(event) = received.try_recv() {
        on_event(event);
    }
    results.into_iter().any(|interrupted| interrupted)
}

/// What every worker of a drive reads.
struct Shared<'a> {
    run: &'a Run<'a>,
    queue: &'a Mutex<VecDeque<Job>>,
}

/// One worker: the next job it can run until none is left or the run is
/// interrupted. A repeat whose verdicts are in but whose cleanup is still
/// running out (deferred DELETEs) finishes beside the next job.
async fn work(
    shared: &Shared<'_>,
    worker: &mut Worker,
    events: mpsc::UnboundedSender<RunEvent>,
) -> bool {
    let run = shared.run;
    let settings = run.settings;
    let mut finishing: Finishing<usize> = Finishing::new();
    // A cell's record goes out on the one channel, its event: the run's
    // report is folded from the events (`runner::run`).
    let mut done = |index: usize, attempts: Vec<Attempt>| {
        if let Some(cell) = run.gather.finished(index, attempts) {
            let _ = events.send(RunEvent::CellFinished {
                index,
                total: run.total,
                cell: Box::new(cell),
            });
        }
    };
    let judged = |index: usize, verdicts| judged(run, &events, index, verdicts);
    let mut interrupted = false;
    let mut ran: HashMap<TargetId, usize> = HashMap::new();
    let leaves_deletes = |job: &Job| ends_disposing(&settings.scenarios[job.scenario]);
    while let Some((job, target)) = next_job(shared.queue, worker, &ran, leaves_deletes) {
        *ran.entry(job.target.clone()).or_default() += 1;
        if !worker.serves(&job.point.server) {
            // A switch stops the server: what earlier jobs still DELETE runs out first.
            finishing.drain(&mut done).await;
        }
        // What the stack does before the cell runs beside the earlier cells'
        // cleanup, as the cell does: left unpolled, a deferred DELETE was
        // sent only after it, and its phase measured the wait as the
        // server's (540 s after an Engine that did not come back).
        // Each under the interrupt: after a Ctrl-C no cell is begun, and a
        // component's bring-back (its restart and probe, minutes when it
        // never comes back) is dropped, as a cell's phases are.
        let taking = unless_stopped(run.interrupt, worker.take_point(&job.point));
        let Some(ready) = finishing.beside(taking, &mut done).await else {
            interrupted = true;
            break;
        };
        // An earlier cell left a component down: brought back first, or
        // this cell is not run, so its verdict is never the earlier one's.
        let ready = match ready.map_err(|e| crate::errors::error_chain(&e)) {
            Ok(()) => {
                let bringing = unless_stopped(run.interrupt, bring_back(worker, target));
                let Some(brought) = finishing.beside(bringing, &mut done).await else {
                    interrupted = true;
                    break;
                };
                brought
                    .map_err(|e| format!("not run: the stack was not whole before this cell: {e}"))
            }
            not_taken => not_taken,
        };
        if let Err(reason) = ready {
            let mut failed = skipped_attempt(run.gather.next_number(job.index), &reason);
            failed.verdict = crate::report::Verdict::Error;
            judged(job.index, vec![(failed.attempt, failed.verdict)]);
            done(job.index, vec![failed]);
            continue;
        }
        if run_job(
            run,
            worker,
            &job,
            target,
            &mut finishing,
            &mut done,
            &events,
        )
        .await
        {
            interrupted = true;
            break;
        }
    }
    finishing.drain(&mut done).await;
    interrupted
}

/// The components on the path of a cell of `worker`'s target `own` that
/// an earlier cell's restart left down ([`crate::targets::bring_back`]),
/// brought back through the worker's parts; `Err` says the first that
/// would not come back, as the reason the cell is not run. On the path
/// are the cell's own target and every component of continuity's local
/// stack (each cell's traffic and store go through all of them); a
/// deployment's other targets are not known to be, so one left down is
/// brought back before its own next cell only.
async fn bring_back(worker: &mut Worker, own: usize) -> Result<(), NotBroughtBack> {
    let on_the_path = |t: Option<usize>, part: &Target| match t {
        Some(t) => t == own || part.id.builtin().is_some(),
        None => true,
    };
    let (mut parts, on_path): (Vec<&mut Target>, Vec<bool>) = worker
        .parts_mut()
        .map(|(t, part)| {
            let on = on_the_path(t, part);
            (part, on)
        })
        .unzip();
    for at in 0..parts.len() {
        if on_path[at] && parts[at].unrecovered().is_some() {
            crate::targets::bring_back(&mut parts, at).await?;
        }
    }
    Ok(())
}

/// One job on `worker`, its point taken: the repeat's attempts, run
/// beside what earlier jobs still clean up, judged at once and handed to
/// `finishing`. Whether the run was interrupted meanwhile.
async fn run_job(
    run: &Run<'_>,
    worker: &mut Worker,
    job: &Job,
    target: usize,
    finishing: &mut Finishing<usize>,
    done: &mut impl FnMut(usize, Vec<Attempt>),
    events: &mpsc::UnboundedSender<RunEvent>,
) -> bool {
    let mut send = |event: RunEvent| {
        let _ = events.send(event);
    };
    let settings = run.settings;
    let scenario = &settings.scenarios[job.scenario];
    let plan = RunPlan {
        settings,
        point: &job.point,
    };
    let cell_id = CellId {
        index: job.index,
        total: run.total,
        target,
        scenario,
    };
    let attempts = finishing
        .beside(
            run_attempts(
                plan,
                worker,
                &cell_id,
                run.gather,
                run.sequence,
                run.interrupt,
                &mut send,
            ),
            done,
        )
        .await;
    // An interrupted repeat keeps the attempts that finished: nothing run is lost.
    if !attempts.attempts.is_empty() {
        judged(
            run,
            events,
            job.index,
            attempts
                .attempts
                .iter()
                .map(|a| (a.number, a.verdict))
                .collect(),
        );
        finishing.push(job.index, attempts.attempts);
    }
    finishing.take_ready(done);
    attempts.interrupted
}

/// Tells the run a cell's verdicts once all its repeats are judged.
fn judged(
    run: &Run<'_>,
    events: &mpsc::UnboundedSender<RunEvent>,
    index: usize,
    verdicts: Vec<(u32, crate::report::Verdict)>,
) {
    if let Some(verdicts) = run.gather.judged(index, verdicts) {
        let _ = events.send(RunEvent::CellJudged {
            index,
            total: run.total,
            verdicts,
        });
    }
}

/// How many workers a run of `cells` cells gets for `--jobs jobs`: never
/// more than there are cells (an idle worker's stack would only cost), and
/// the message that says so when it is fewer.
pub(crate) fn workers_for(jobs: usize, cells: usize) -> (usize, Option<String>) {
    let workers = jobs.min(cells).max(1);
    let message = (workers < jobs).then(|| {
        format!(
            "--jobs {jobs}: {cells} cell{} to run, so {workers} worker{} (one stack each)",
            if cells == 1 { "" } else { "s" },
            if workers == 1 { "" } else { "s" }
        )
    });
    (workers, message)
}

#[cfg(test)]
mod tests {
    use super::workers_for;

    #[test]
    fn never_more_workers_than_cells_and_say_so() {
        assert_eq!(workers_for(4, 20), (4, None));
        assert_eq!(workers_for(2, 2), (2, None));
        let (n, message) = workers_for(8, 3);
        assert_eq!(n, 3);
        assert_eq!(
            message.as_deref(),
            Some("--jobs 8: 3 cells to run, so 3 workers (one stack each)")
        );
        let (n, message) = workers_for(2, 1);
        assert_eq!(n, 1);
        assert!(message.unwrap().contains("1 cell to run, so 1 worker "));
        assert_eq!(
            workers_for(3, 0).0,
            1,
            "a run of no cells still has its stack"
        );
    }
}
