//! The queue of a run's jobs, one per repeat of each cell, and which one
//! a worker takes next: pass by pass, targets interleaved within a pass
//! ([`dispatch_order`]), and among those a worker can run, the one that
//! fits its stack best ([`next_job`]).

use super::matrix::{CellPoint, PlannedCell};
use super::Worker;
use crate::report::Point;
use crate::targets::TargetId;
use std::cmp::Reverse;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// One repeat of a cell of the matrix to run: the cell's place in the run
/// and its point.
#[derive(Clone)]
pub(super) struct Job {
    pub index: usize,
    /// Which of the cell's repeats (1 for the first).
    pub repeat: u32,
    /// The target: a worker runs only cells of targets it holds.
    pub target: TargetId,
    /// Index into the run's scenarios.
    pub scenario: usize,
    pub point: CellPoint,
    /// The point as the cell's record names it.
    pub named: Point,
    /// What the cell is expected to take (its [`PlannedCell`]'s): among
    /// jobs a worker likes equally, the longest goes first.
    pub expected_ms: u64,
}

impl Job {
    pub(super) fn of(planned: &PlannedCell) -> Job {
        Job {
            expected_ms: planned.expected_ms,
            index: planned.index,
            repeat: 1,
            target: planned.point.target.clone(),
            scenario: planned.scenario,
            point: planned.point.clone(),
            named: planned.named.clone(),
        }
    }
}

/// One job per repeat of each cell, a whole pass of the matrix apart: the
/// first repeat of every cell, then the second of every cell, and so on.
/// Run back to back, one component's restarts would come seconds apart,
/// and some come back slower each time (the RivetKit runner's reconnect
/// backoff grows with every engine restart within a minute, and resets
/// only with a new runner).
pub(super) fn repeats(cells: Vec<Job>, repeat: u32) -> Vec<Job> {
    (1..=repeat.max(1))
        .flat_map(|repeat| {
            cells.iter().cloned().map(move |mut job| {
                job.repeat = repeat;
                job
            })
        })
        .collect()
}

/// The order workers take jobs in: pass by pass (every cell's first
/// repeat, then every cell's second...), and within a pass each target's
/// first cell, then each one's second, and so on. In matrix order one
/// target's cells come together, so the slow ones (a Rivet restart takes
/// seconds) would pile up at the end on every worker at once, and one
/// stack would restart the same component back to back; so would one
/// cell's repeats run back to back.
pub(super) fn dispatch_order(jobs: Vec<Job>) -> VecDeque<Job> {
    let mut seen: HashMap<(u32, TargetId), usize> = HashMap::new();
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
/// switches its server only once that point's cells are taken. One of the
/// earliest pass left (`--repeat`), so one cell's repeats stay a pass
/// apart. While its stack still has deferred DELETEs
/// running, one whose restart would not have to wait for them (a reload,
/// the Rivet engine or runner), and among those one that leaves no DELETE
/// behind (its scenario does not end by disposing a client), so the stack
/// is clear again for the next; otherwise one whose restart would wait, so
/// those run while nothing is deferred. Then the target this worker has
/// restarted least (`ran`): some components come back slower each time
/// (the RivetKit runner's reconnect backoff doubles on every engine
/// restart within a minute), so one target's cells go to different stacks.
/// Then the one expected to take longest, so that no long cell starts
/// last while the other workers have run dry (a shard's wall time is its
/// last worker's); then the first in line.
pub(super) fn next_job(
    queue: &Mutex<VecDeque<Job>>,
    worker: &Worker,
    ran: &HashMap<TargetId, usize>,
    leaves_deletes: impl Fn(&Job) -> bool,
) -> Option<(Job, usize)> {
    let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
    let busy = worker.fence.busy();
    let (at, target) = queue
        .iter()
        .enumerate()
        .filter_map(|(at, job)| {
            let target = worker.targets.iter().position(|t| t.id == job.target)?;
            let switches = !worker.serves(&job.point.server);
            Some((at, target, busy && leaves_deletes(job), switches))
        })
        .min_by_key(|(at, t, keeps_busy, switches)| {
            let target = &worker.targets[*t];
            let waits = target.keeps_open_requests != busy;
            let ran = ran.get(&target.id).copied().unwrap_or(0);
            let job = &queue[*at];
            let longest = Reverse(job.expected_ms);
            (*switches, job.repeat, waits, *keeps_busy, ran, longest, *at)
        })
        .map(|(at, t, _, _)| (at, t))?;
    queue.remove(at).map(|job| (job, target))
}

/// Whether a cell of `scenario` ends with DELETEs deferred past it.
pub(super) fn ends_disposing(scenario: &crate::scenario::Scenario) -> bool {
    scenario
        .cleanup
        .last()
        .is_some_and(|p| matches!(p.step, crate::scenario::Step::Dispose { .. }))
}

#[cfg(test)]
mod tests {
    use super::{dispatch_order, next_job, repeats, Job};
    use crate::report::Point;
    use crate::runner::matrix::tests::point;
    use crate::runner::{ServedBinary, ServerSlot};
    use crate::targets::{Readiness, RestartAction, Target, TargetId};
    use std::collections::{HashMap, VecDeque};
    use std::sync::Mutex;

    fn job(index: usize, target: &str, scenario: usize, server: &str) -> Job {
        Job {
            index,
            repeat: 1,
            target: TargetId::of_name(target),
            scenario,
            point: point(target, server),
            named: Point::new(target, "native-continuity"),
            expected_ms: 1_000,
        }
    }

    /// A worker whose stack holds one target, `gateway`, restarted by `true`.
    fn gateway_worker() -> crate::runner::Worker {
        let target = Target::new(
            crate::targets::BuiltinTarget::Gateway,
            RestartAction::Command {
                command: "true".into(),
                timeout: std::time::Duration::from_secs(1),
            },
            Readiness::None,
        );
        crate::runner::tests::bare_worker(vec![target])
    }

    /// A worker whose stack runs 0.4.2 takes the 0.4.2 cell first, though
    /// a 0.4.0 cell is ahead of it in line; with only 0.4.0 left, it takes that.
    #[test]
    fn a_worker_takes_the_cells_of_the_server_it_runs_first() {
        let mut worker = gateway_worker();
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
            crate::targets::BuiltinTarget::Agent,
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

    /// A job of a later pass that would suit the stack better (it leaves no
    /// DELETE behind while the stack has some running out) still waits
    /// for the earlier pass: the preferences hold within a pass.
    #[test]
    fn a_worker_finishes_a_pass_before_it_takes_the_next() {
        let worker = gateway_worker();
        // The stack has a deferred DELETE running out.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _lease = runtime.block_on(worker.fence.lease());
        assert!(worker.fence.busy());
        let mut later = job(2, "gateway", 1, "0.4.2");
        later.repeat = 2;
        let queue = Mutex::new(VecDeque::from([later, job(1, "gateway", 0, "0.4.2")]));
        let leaves_deletes = |j: &Job| j.scenario == 0;
        let pick = || {
            next_job(&queue, &worker, &HashMap::new(), leaves_deletes)
                .map(|(job, _)| (job.index, job.repeat))
                .unwrap()
        };
        assert_eq!(pick(), (1, 1));
        assert_eq!(pick(), (2, 2));
    }

    /// Among jobs the worker likes equally (one target, one server, one
    /// pass), the one expected to take longest goes first, whatever its
    /// place in line: a long cell taken last would end the shard alone.
    #[test]
    fn among_equals_a_worker_takes_the_longest_expected_first() {
        let worker = gateway_worker();
        let lengths = [3_000, 90_000, 700, 90_000, 12_000];
        let queue = Mutex::new(
            lengths
                .iter()
                .enumerate()
                .map(|(n, ms)| Job {
                    expected_ms: *ms,
                    ..job(n + 1, "gateway", 0, "0.4.2")
                })
                .collect::<VecDeque<Job>>(),
        );
        let order: Vec<usize> =
            std::iter::from_fn(|| next_job(&queue, &worker, &HashMap::new(), |_| false))
                .map(|(job, _)| job.index)
                .collect();
        // The two longest in their order in line, then by length.
        assert_eq!(order, [2, 4, 5, 1, 3]);
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
}
