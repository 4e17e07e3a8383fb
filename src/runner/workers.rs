//! `--jobs N`: the run's cells shared among workers, each on a stack of its
//! own (own ports, folders, processes), so no two cells that touch the same
//! stack ever run at once (a cell's deferred DELETEs aside, which restarts
//! that would cut them wait for). Workers take the next cell from one queue
//! (targets interleaved, and with them every other axis, see
//! [`dispatch_order`]; a worker prefers cells of the server point its stack
//! runs, see [`next_job`]); what they finish is put back in matrix order,
//! so the report is the one `--jobs 1` writes, whichever worker ran which
//! cell.

use super::attempts::{run_attempts, skipped_attempt, CellId, PendingAttempt};
use super::matrix::{CellLabels, CellPoint, PlannedCell};
use super::{RunEvent, RunPlan, RunSettings, RunStacks, Worker};
use crate::report::attempts::aggregate;
use crate::report::Cell;
use crate::targets::Target;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;
use tokio::sync::{mpsc, watch};

/// One cell of the matrix to run: its place in the run and its point.
pub(super) struct Job {
    pub index: usize,
    /// The target's name: a worker runs only cells of targets it holds.
    pub target: String,
    /// Index into the run's scenarios.
    pub scenario: usize,
    pub point: CellPoint,
    /// What the cell's record names of its point.
    pub labels: CellLabels,
}

impl Job {
    pub fn of(planned: &PlannedCell) -> Job {
        Job {
            index: planned.index,
            target: planned.point.target.clone(),
            scenario: planned.scenario,
            point: planned.point.clone(),
            labels: planned.labels.clone(),
        }
    }
}

/// The cells the workers finished (with their index), in matrix order,
/// and whether the run was interrupted.
pub(super) struct Finished {
    pub cells: Vec<(usize, Cell)>,
    pub interrupted: bool,
}

/// Runs `jobs` on the own stack and on every stack of `stacks.workers`,
/// one cell at a time per stack; on a shared deployment (no worker stacks,
/// `stacks.jobs` > 1), see [`run_lanes`]. Events reach `on_event` as they happen.
pub(super) async fn run_jobs(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    jobs: Vec<Job>,
    total: usize,
    interrupt: &watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Finished {
    if stacks.workers.is_empty()
        && stacks.jobs > 1
        && stacks.own.targets.iter().any(|t| t.independent)
    {
        return run_lanes(settings, stacks, jobs, total, interrupt, on_event).await;
    }
    let workers: Vec<&mut Worker> = std::iter::once(&mut stacks.own)
        .chain(stacks.workers.iter_mut())
        .collect();
    let sequence = AtomicUsize::new(0);
    let run = (settings, &sequence, total, interrupt);
    drive(run, workers, jobs, on_event).await
}

/// One shared deployment, `stacks.jobs` lanes: the cells of targets that are
/// not `independent` first, one at a time and alone (their restarts would
/// disturb any other cell); then the independent targets' cells, up to
/// `stacks.jobs` at once, never two of one target (a lane holds its targets).
async fn run_lanes(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    jobs: Vec<Job>,
    total: usize,
    interrupt: &watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Finished {
    let own = &mut stacks.own;
    let order: Vec<String> = own.targets.iter().map(|t| t.name.clone()).collect();
    let (independent, alone): (Vec<Target>, Vec<Target>) =
        own.targets.drain(..).partition(|t| t.independent);
    let is_independent = |job: &Job| independent.iter().any(|t| t.name == job.target);
    let (later, first): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(is_independent);
    let lanes = stacks.jobs.min(independent.len()).max(1);
    let mut workers: Vec<Worker> = (0..lanes).map(|_| own.sharing()).collect();
    for (n, target) in independent.into_iter().enumerate() {
        workers[n % lanes].targets.push(target);
    }
    own.targets = alone;
    let sequence = AtomicUsize::new(0);
    let run = (settings, &sequence, total, interrupt);
    let mut finished = drive(run, vec![&mut *own], first, on_event).await;
    if !finished.interrupted {
        let more = drive(run, workers.iter_mut().collect(), later, on_event).await;
        finished.cells.extend(more.cells);
        finished.cells.sort_by_key(|(index, _)| *index);
        finished.interrupted = more.interrupted;
    }
    own.targets
        .extend(workers.into_iter().flat_map(|w| w.targets));
    own.targets.sort_by_key(|t| position(&order, &t.name));
    finished
}

fn position(order: &[String], name: &str) -> usize {
    order.iter().position(|n| n == name).unwrap_or(usize::MAX)
}

/// The run's side of a drive: the settings, the attempt counter, the cell
/// count and the interrupt flag.
type RunRef<'a> = (
    &'a RunSettings,
    &'a AtomicUsize,
    usize,
    &'a watch::Receiver<bool>,
);

/// Runs `jobs` on `workers`, each taking the next cell it can run.
async fn drive(
    (settings, sequence, total, interrupt): RunRef<'_>,
    workers: Vec<&mut Worker>,
    jobs: Vec<Job>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Finished {
    let queue = Mutex::new(dispatch_order(jobs));
    let (events, mut received) = mpsc::unbounded_channel();
    let results = {
        let shared = Shared {
            settings,
            queue: &queue,
            sequence,
            total,
            interrupt,
        };
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
    let interrupted = results.iter().any(|(_, interrupted)| *interrupted);
    let mut cells: Vec<(usize, Cell)> = results.into_iter().flat_map(|(c, _)| c).collect();
    cells.sort_by_key(|(index, _)| *index);
    Finished { cells, interrupted }
}

/// What every worker reads.
struct Shared<'a> {
    settings: &'a RunSettings,
    queue: &'a Mutex<VecDeque<Job>>,
    sequence: &'a AtomicUsize,
    total: usize,
    interrupt: &'a watch::Receiver<bool>,
}

/// The order workers take cells in: each target's first cell, then each
/// one's second, and so on. In matrix order one target's cells come
/// together, so the slow ones (a Rivet restart takes seconds) would pile
/// up at the end on every worker at once, and one stack would restart the
/// same component back to back.
fn dispatch_order(jobs: Vec<Job>) -> VecDeque<Job> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut ranked: Vec<(usize, Job)> = jobs
        .into_iter()
        .map(|job| {
            let count = seen.entry(job.target.clone()).or_default();
            *count += 1;
            (*count, job)
        })
        .collect();
    // Stable: within a round, matrix order.
    ranked.sort_by_key(|(round, _)| *round);
    ranked.into_iter().map(|(_, job)| job).collect()
}

/// The next job for `worker`, among those whose target it holds, by these
/// preferences in turn. One of the server point its stack runs, so it
/// switches its server only once that point's cells are taken. While its stack still has deferred DELETEs
/// running, one whose restart would not have to wait for them (a reload,
/// the Rivet engine or runner), and among those one that leaves no DELETE
/// behind (its scenario does not end by disposing a client), so the stack
/// is clear again for the next; otherwise one whose restart would wait, so
/// those run while nothing is deferred. Then the target this worker has
/// restarted least (`ran`): some components come back slower each time
/// (the RivetKit runner's reconnect backoff doubles on every engine
/// restart within a minute), so one target's cells go to different stacks.
/// Then the first in line.
fn next_job(
    queue: &Mutex<VecDeque<Job>>,
    worker: &Worker,
    ran: &HashMap<String, usize>,
    leaves_deletes: impl Fn(&Job) -> bool,
) -> Option<(Job, usize)> {
    let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
    let busy = worker.fence.busy();
    let (at, target) = queue
        .iter()
        .enumerate()
        .filter_map(|(at, job)| {
            let target = worker.targets.iter().position(|t| t.name == job.target)?;
            let switches = !worker.serves(&job.point.server);
            Some((at, target, busy && leaves_deletes(job), switches))
        })
        .min_by_key(|(at, t, keeps_busy, switches)| {
            let target = &worker.targets[*t];
            let waits = target.keeps_open_requests != busy;
            let ran = ran.get(&target.name).copied().unwrap_or(0);
            (*switches, waits, *keeps_busy, ran, *at)
        })
        .map(|(at, t, _, _)| (at, t))?;
    queue.remove(at).map(|job| (job, target))
}

/// Whether a cell of `scenario` ends with DELETEs deferred past it.
fn ends_disposing(scenario: &crate::scenario::Scenario) -> bool {
    scenario
        .cleanup
        .last()
        .is_some_and(|p| matches!(p.step, crate::scenario::Step::Dispose { .. }))
}

/// One worker: the next cell it can run until none is left or the run is
/// interrupted. A cell whose verdict is in but whose cleanup is still
/// running out (deferred DELETEs) finishes beside the next cell.
async fn work(
    shared: &Shared<'_>,
    worker: &mut Worker,
    events: mpsc::UnboundedSender<RunEvent>,
) -> (Vec<(usize, Cell)>, bool) {
    let settings = shared.settings;
    let mut finished = Vec::new();
    let mut finishing = FuturesUnordered::new();
    let mut done = |(index, cell): (usize, Cell), events: &mpsc::UnboundedSender<RunEvent>| {
        let _ = events.send(RunEvent::CellFinished {
            index,
            total: shared.total,
            cell: Box::new(cell.clone()),
        });
        finished.push((index, cell));
    };
    let mut send = |event: RunEvent| {
        let _ = events.send(event);
    };
    let mut interrupted = false;
    let mut ran: HashMap<String, usize> = HashMap::new();
    let leaves_deletes = |job: &Job| ends_disposing(&settings.scenarios[job.scenario]);
    while let Some((job, target)) = next_job(shared.queue, worker, &ran, leaves_deletes) {
        *ran.entry(job.target.clone()).or_default() += 1;
        let scenario = &settings.scenarios[job.scenario];
        if !worker.serves(&job.point.server) {
            // A switch stops the server: what earlier cells still DELETE runs out first.
            while let Some(cell) = finishing.next().await {
                done(cell, &events);
            }
        }
        let ready = tokio::select! {
            ready = worker.take_point(&job.point) => Some(ready),
            _ = crate::stop_flag::wait_true(shared.interrupt.clone()) => None,
        };
        match ready {
            None => {
                interrupted = true;
                break;
            }
            Some(Err(reason)) => {
                let mut cell = aggregate(
                    &job.target,
                    &scenario.name,
                    None,
                    vec![skipped_attempt(1, &reason)],
                );
                cell.verdict = crate::report::Verdict::Error;
                job.labels.stamp(&mut cell);
                done((job.index, cell), &events);
                continue;
            }
            Some(Ok(())) => {}
        }
        let plan = RunPlan {
            settings,
            point: &job.point,
        };
        let cell_id = CellId {
            index: job.index,
            total: shared.total,
            target,
            scenario,
        };
        let attempts = {
            let running = run_attempts(
                plan,
                worker,
                &cell_id,
                shared.sequence,
                shared.interrupt,
                &mut send,
            );
            tokio::pin!(running);
            loop {
                tokio::select! {
                    attempts = &mut running => break attempts,
                    Some(cell) = finishing.next(), if !finishing.is_empty() => done(cell, &events),
                }
            }
        };
        // An interrupted cell keeps the attempts that finished: nothing run is lost.
        if !attempts.attempts.is_empty() {
            send(RunEvent::CellJudged {
                index: job.index,
                total: shared.total,
                verdicts: attempts.attempts.iter().map(|a| a.verdict).collect(),
            });
            finishing.push(finish_cell(job, scenario.name.clone(), attempts.attempts));
        }
        // Cells whose cleanup is already over (nothing was deferred, or a
        // DELETE answered at once) end now, so the next pick sees the stack clear.
        while let Some(Some(cell)) = finishing.next().now_or_never() {
            done(cell, &events);
        }
        if attempts.interrupted {
            interrupted = true;
            break;
        }
    }
    while let Some(cell) = finishing.next().await {
        done(cell, &events);
    }
    (finished, interrupted)
}

/// A cell's record once each of its attempts has run out.
async fn finish_cell(job: Job, scenario: String, attempts: Vec<PendingAttempt>) -> (usize, Cell) {
    // Side by side: each attempt's cleanup runs out at once, none after another's.
    let finished =
        futures_util::future::join_all(attempts.into_iter().map(PendingAttempt::finish)).await;
    let mut cell = aggregate(&job.target, &scenario, None, finished);
    job.labels.stamp(&mut cell);
    (job.index, cell)
}

/// How many workers a run of `cells` cells gets for `--jobs jobs`: never
/// more than there are cells (an idle worker's stack would only cost), and
/// the message that says so when it is fewer.
pub fn workers_for(jobs: usize, cells: usize) -> (usize, Option<String>) {
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
    use super::{dispatch_order, next_job, workers_for, Job};
    use crate::runner::matrix::tests::point;
    use crate::runner::{ServedBinary, ServerSlot};
    use crate::targets::{Readiness, RestartAction, Target};
    use std::collections::{HashMap, VecDeque};
    use std::sync::Mutex;

    fn job(index: usize, target: &str, scenario: usize, server: &str) -> Job {
        Job {
            index,
            target: target.to_string(),
            scenario,
            point: point(target, server),
            labels: Default::default(),
        }
    }

    /// A worker whose stack runs 0.4.2 takes the 0.4.2 cell first, though
    /// a 0.4.0 cell is ahead of it in line; with only 0.4.0 left, it takes that.
    #[test]
    fn a_worker_takes_the_cells_of_the_server_it_runs_first() {
        let target = Target::new(
            "gateway",
            RestartAction::Command {
                command: "true".into(),
                timeout: std::time::Duration::from_secs(1),
            },
            Readiness::None,
        );
        let mut worker = crate::runner::tests::bare_worker(vec![target]);
        let binaries: Vec<ServedBinary> = ["0.4.0", "0.4.2"]
            .iter()
            .map(|v| ServedBinary {
                label: v.to_string(),
                binary: format!("/bin/sandbox-agent-{v}").into(),
            })
            .collect();
        worker.server = Some(ServerSlot::new(
            binaries.into(),
            Some("0.4.2"),
            "agent",
            None,
        ));
        let queue = Mutex::new(VecDeque::from([
            job(1, "gateway", 0, "0.4.0"),
            job(2, "gateway", 0, "0.4.2"),
        ]));
        let pick = || {
            next_job(&queue, &worker, &HashMap::new(), |_| false)
                .map(|(job, _)| job.index)
                .unwrap()
        };
        assert_eq!(pick(), 2);
        assert_eq!(pick(), 1);
    }

    #[test]
    fn workers_take_each_targets_first_cell_then_each_ones_second() {
        let matrix = [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 0), ("c", 1)];
        let jobs = matrix
            .iter()
            .enumerate()
            .map(|(n, (target, scenario))| job(n + 1, target, *scenario, "0.4.2"))
            .collect();
        let order: Vec<usize> = dispatch_order(jobs).iter().map(|j| j.index).collect();
        assert_eq!(order, [1, 4, 5, 2, 6, 3]);
    }

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
