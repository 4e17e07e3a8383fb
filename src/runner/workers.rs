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
use super::matrix::{CellLabels, CellPoint, PlannedCell};
use super::{RunEvent, RunPlan, RunSettings, RunStacks, Worker};
use crate::report::{Attempt, Cell};
use crate::targets::Target;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;
use tokio::sync::{mpsc, watch};

/// One repeat of a cell of the matrix to run: the cell's place in the run
/// and its point.
#[derive(Clone)]
pub(super) struct Job {
    pub index: usize,
    /// Which of the cell's repeats (1 for the first).
    pub repeat: u32,
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
            repeat: 1,
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

/// Runs every repeat of `cells` on the own stack and on every stack of
/// `stacks.workers`, one at a time per stack; on a shared deployment (no
/// worker stacks, `stacks.jobs` > 1), see [`run_lanes`]. Events reach
/// `on_event` as they happen.
pub(super) async fn run_jobs(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    cells: Vec<Job>,
    total: usize,
    interrupt: &watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Finished {
    let jobs = repeats(cells, settings.repeat);
    let gather = Gather::new(jobs.iter().map(|job| CellName {
        index: job.index,
        target: job.target.clone(),
        scenario: settings.scenarios[job.scenario].name.clone(),
        labels: job.labels.clone(),
    }));
    let sequence = AtomicUsize::new(0);
    let run = Run {
        settings,
        sequence: &sequence,
        gather: &gather,
        total,
        interrupt,
    };
    let mut finished = if stacks.workers.is_empty()
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
            cell: Box::new(cell.clone()),
        });
        finished.cells.push((index, cell));
    }
    finished.cells.sort_by_key(|(index, _)| *index);
    finished
}

/// One job per repeat of each cell, a whole pass of the matrix apart: the
/// first repeat of every cell, then the second of every cell, and so on.
/// Run back to back, one component's restarts would come seconds apart,
/// and some come back slower each time (the RivetKit runner's reconnect
/// backoff grows with every engine restart within a minute, and resets
/// only with a new runner).
fn repeats(cells: Vec<Job>, repeat: u32) -> Vec<Job> {
    (1..=repeat.max(1))
        .flat_map(|repeat| {
            cells.iter().cloned().map(move |mut job| {
                job.repeat = repeat;
                job
            })
        })
        .collect()
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
) -> Finished {
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
    let interrupted = results.iter().any(|(_, interrupted)| *interrupted);
    let mut cells: Vec<(usize, Cell)> = results.into_iter().flat_map(|(c, _)| c).collect();
    cells.sort_by_key(|(index, _)| *index);
    Finished { cells, interrupted }
}

/// What every worker of a drive reads.
struct Shared<'a> {
    run: &'a Run<'a>,
    queue: &'a Mutex<VecDeque<Job>>,
}

/// The order workers take jobs in: pass by pass (every cell's first
/// repeat, then every cell's second...), and within a pass each target's
/// first cell, then each one's second, and so on. In matrix order one
/// target's cells come together, so the slow ones (a Rivet restart takes
/// seconds) would pile up at the end on every worker at once, and one
/// stack would restart the same component back to back; so would one
/// cell's repeats run back to back.
fn dispatch_order(jobs: Vec<Job>) -> VecDeque<Job> {
    let mut seen: HashMap<(u32, String), usize> = HashMap::new();
    let mut ranked: Vec<((u32, usize), Job)> = jobs
        .into_iter()
        .map(|job| {
            let count = seen.entry((job.repeat, job.target.clone())).or_default();
            *count += 1;
            ((job.repeat, *count), job)
        })
        .collect();
    // Stable: within a round, matrix order.
    ranked.sort_by_key(|(rank, _)| *rank);
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

/// One worker: the next job it can run until none is left or the run is
/// interrupted. A repeat whose verdicts are in but whose cleanup is still
/// running out (deferred DELETEs) finishes beside the next job.
async fn work(
    shared: &Shared<'_>,
    worker: &mut Worker,
    events: mpsc::UnboundedSender<RunEvent>,
) -> (Vec<(usize, Cell)>, bool) {
    let run = shared.run;
    let settings = run.settings;
    let mut finished = Vec::new();
    let mut finishing: Finishing<usize> = Finishing::new();
    let mut done = |index: usize, attempts: Vec<Attempt>| {
        if let Some(cell) = run.gather.finished(index, attempts) {
            let _ = events.send(RunEvent::CellFinished {
                index,
                total: run.total,
                cell: Box::new(cell.clone()),
            });
            finished.push((index, cell));
        }
    };
    let judged = |index: usize, verdicts: Vec<(u32, crate::report::Verdict)>| {
        if let Some(verdicts) = run.gather.judged(index, verdicts) {
            let _ = events.send(RunEvent::CellJudged {
                index,
                total: run.total,
                verdicts,
            });
        }
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
            // A switch stops the server: what earlier jobs still DELETE runs out first.
            finishing.drain(&mut done).await;
        }
        let ready = tokio::select! {
            ready = worker.take_point(&job.point) => Some(ready),
            _ = crate::stop_flag::wait_true(run.interrupt.clone()) => None,
        };
        match ready {
            None => {
                interrupted = true;
                break;
            }
            Some(Err(reason)) => {
                let mut failed = skipped_attempt(run.gather.next_number(job.index), &reason);
                failed.verdict = crate::report::Verdict::Error;
                judged(job.index, vec![(failed.attempt, failed.verdict)]);
                done(job.index, vec![failed]);
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
                &mut done,
            )
            .await;
        // An interrupted repeat keeps the attempts that finished: nothing run is lost.
        if !attempts.attempts.is_empty() {
            judged(
                job.index,
                attempts
                    .attempts
                    .iter()
                    .map(|a| (a.number, a.verdict))
                    .collect(),
            );
            finishing.push(job.index, attempts.attempts);
        }
        finishing.take_ready(&mut done);
        if attempts.interrupted {
            interrupted = true;
            break;
        }
    }
    finishing.drain(&mut done).await;
    (finished, interrupted)
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
    use super::{dispatch_order, next_job, repeats, workers_for, Job};
    use crate::runner::matrix::tests::point;
    use crate::runner::{ServedBinary, ServerSlot};
    use crate::targets::{Readiness, RestartAction, Target};
    use std::collections::{HashMap, VecDeque};
    use std::sync::Mutex;

    fn job(index: usize, target: &str, scenario: usize, server: &str) -> Job {
        Job {
            index,
            repeat: 1,
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

    /// One cell's repeats are a whole pass of the matrix apart, each pass
    /// in the order of a run without repeats.
    #[test]
    fn a_cells_repeats_come_a_pass_of_the_matrix_apart() {
        let cells = vec![
            job(1, "a", 0, "0.4.2"),
            job(2, "a", 1, "0.4.2"),
            job(3, "b", 0, "0.4.2"),
        ];
        let order: Vec<(usize, u32)> = dispatch_order(repeats(cells, 3))
            .iter()
            .map(|j| (j.index, j.repeat))
            .collect();
        assert_eq!(
            order,
            [
                (1, 1),
                (3, 1),
                (2, 1),
                (1, 2),
                (3, 2),
                (2, 2),
                (1, 3),
                (3, 3),
                (2, 3)
            ],
            "each pass: a's first cell, b's, then a's second"
        );
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
