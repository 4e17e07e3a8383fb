//! The attempt lifecycle as a model: attempts that restart through a real
//! [`CleanupFence`] (waiting for its write side when they cut requests) and
//! leave deferred cleanup under its leases, in any mix of repeats, retries,
//! verdicts and interruptions, the repeats one after another on one stack
//! with [`Finishing`] between them, as a worker runs them. Whatever the mix,
//! the lifecycle ends (on paused time, so a deadlock shows as the hour
//! running out), runs the attempts it should, and once its attempts are
//! finished no lease is left.

use super::lifecycle::{lifecycle, AttemptSource, Finishing, PendingAttempt};
use super::skipped_attempt;
use crate::report::{Attempt, Verdict};
use crate::scenario::CleanupFence;
use async_trait::async_trait;
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What one scripted attempt does.
#[derive(Debug, Clone)]
struct Step {
    /// Its restart cuts open requests: it waits for every lease to end.
    cuts: bool,
    /// How long the attempt runs to its verdict, in ms.
    runs_ms: u64,
    /// Its verdict (pass, fail or error).
    verdict: Verdict,
    /// Deferred cleanup: how long its DELETEs take, under a lease.
    defers_ms: Option<u64>,
    /// Ctrl-C lands while it runs: it ends `interrupted`.
    interrupts: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        any::<bool>(),
        0u64..50,
        prop_oneof![
            Just(Verdict::Pass),
            Just(Verdict::Fail),
            Just(Verdict::Error)
        ],
        proptest::option::of(0u64..3000),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(cuts, runs_ms, verdict, defers_ms, interrupts)| Step {
            cuts,
            runs_ms,
            verdict,
            defers_ms,
            interrupts,
        })
}

/// The scripted stack: one fence, leases counted as they are taken and dropped.
struct Model {
    fence: CleanupFence,
    script: Vec<Step>,
    interrupt: watch::Sender<bool>,
    leases: Arc<AtomicUsize>,
    ran: Vec<u32>,
    retried: Vec<u32>,
}

/// Counts a lease out when dropped, however its future ends.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn record(number: u32, verdict: Verdict) -> Attempt {
    let mut attempt = skipped_attempt(number, "scripted");
    attempt.verdict = verdict;
    attempt
}

#[async_trait(?Send)]
impl AttemptSource for Model {
    async fn run(&mut self) -> PendingAttempt {
        let number = self.ran.len() as u32 + 1;
        self.ran.push(number);
        let step = self.script[(number as usize - 1) % self.script.len()].clone();
        if step.cuts {
            self.fence.clear().await;
        }
        tokio::time::sleep(Duration::from_millis(step.runs_ms)).await;
        let verdict = if step.interrupts {
            let _ = self.interrupt.send(true);
            Verdict::Interrupted
        } else {
            step.verdict
        };
        match step.defers_ms {
            None => PendingAttempt::ready(record(number, verdict)),
            Some(ms) => {
                let lease = self.fence.lease().await;
                self.leases.fetch_add(1, Ordering::SeqCst);
                let counted = Counted(Arc::clone(&self.leases));
                PendingAttempt::pending(number, verdict, async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    drop((lease, counted));
                    record(number, verdict)
                })
            }
        }
    }

    fn retrying(&mut self, attempt: &Attempt) {
        self.retried.push(attempt.attempt);
    }
}

/// The attempts the lifecycle should run for `script`: per repeat, until
/// one is not a failure or the retries are used up; none after an interruption.
fn expected_attempts(script: &[Step], repeat: u32, retries: u32) -> (u32, bool) {
    let mut number = 0u32;
    for _ in 0..repeat {
        let mut left = retries;
        loop {
            number += 1;
            let step = &script[(number as usize - 1) % script.len()];
            if step.interrupts {
                return (number, true);
            }
            if matches!(step.verdict, Verdict::Fail | Verdict::Error) && left > 0 {
                left -= 1;
                continue;
            }
            break;
        }
    }
    (number, false)
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_mix_of_attempts_ends_with_every_lease_released(
        script in proptest::collection::vec(step(), 1..8),
        repeat in 1u32..5,
        retries in 0u32..3,
        dropped_after_ms in proptest::option::of(0u64..4000),
    ) {
        let (expected, interrupted) = expected_attempts(&script, repeat, retries);
        let (tx, rx) = watch::channel(false);
        let leases = Arc::new(AtomicUsize::new(0));
        let mut model = Model {
            fence: CleanupFence::default(),
            script,
            interrupt: tx,
            leases: Arc::clone(&leases),
            ran: Vec::new(),
            retried: Vec::new(),
        };
        let fence = model.fence.clone();
        let outcome = paused_runtime().block_on(async {
            // A worker's loop over one cell's repeats.
            let whole = async {
                let mut finishing: Finishing<()> = Finishing::new();
                let mut finished: Vec<Attempt> = Vec::new();
                let mut interrupted = false;
                let mut done = |(), attempts: Vec<Attempt>| finished.extend(attempts);
                for _ in 0..repeat {
                    let attempts = finishing
                        .beside(lifecycle(retries, &rx, &mut model), &mut done)
                        .await;
                    if !attempts.attempts.is_empty() {
                        finishing.push((), attempts.attempts);
                    }
                    finishing.take_ready(&mut done);
                    if attempts.interrupted {
                        interrupted = true;
                        break;
                    }
                }
                finishing.drain(&mut done).await;
                finished.sort_by_key(|a| a.attempt);
                (finished, interrupted)
            };
            // Cancellation: the whole run dropped part-way (a second Ctrl-C).
            match dropped_after_ms {
                Some(ms) => tokio::time::timeout(Duration::from_millis(ms), whole)
                    .await
                    .map_or(Ok(None), |done| Ok(Some(done))),
                None => tokio::time::timeout(Duration::from_secs(3600), whole)
                    .await
                    .map(Some),
            }
        });
        let done = outcome.map_err(|_| {
            TestCaseError::fail(format!(
                "the lifecycle hung (attempts started: {:?})",
                model.ran
            ))
        })?;
        prop_assert_eq!(leases.load(Ordering::SeqCst), 0, "a lease outlived the lifecycle");
        prop_assert!(!fence.busy(), "the fence is still held");
        if let Some((finished, was_interrupted)) = done {
            prop_assert_eq!(was_interrupted, interrupted);
            let numbers: Vec<u32> = finished.iter().map(|a| a.attempt).collect();
            prop_assert_eq!(numbers, (1..=expected).collect::<Vec<u32>>());
            prop_assert_eq!(&model.ran, &(1..=expected).collect::<Vec<u32>>());
            for attempt in &finished {
                prop_assert_eq!(
                    attempt.retry,
                    model.retried.contains(&(attempt.attempt - 1)),
                    "attempt {} follows a retried one", attempt.attempt
                );
            }
        }
    }
}
