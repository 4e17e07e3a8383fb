//! The one attempt lifecycle, for repeats and retries alike: which attempt
//! runs when, and the rule that keeps a stack's cleanup fence from
//! deadlocking: whatever waits for an attempt drives the cleanup of the
//! attempts before it (see [`beside`]).

use crate::report::{Attempt, Verdict};
use async_trait::async_trait;
use futures_util::future::MaybeDone;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::watch;

/// The attempts of one cell, and whether the run was interrupted during them.
pub(in crate::runner) struct Attempts {
    pub attempts: Vec<PendingAttempt>,
    pub interrupted: bool,
}

/// The rest of an attempt whose verdict is decided (its deferred DELETEs,
/// its trace's end, its floor), kept once it has run out.
type Rest = MaybeDone<Pin<Box<dyn Future<Output = Attempt> + Send>>>;

/// An attempt whose verdict is decided; what is left of it runs out
/// whenever its lifecycle waits for anything else (see [`beside`]), and
/// [`PendingAttempt::finish`] runs out whatever is still left.
pub(in crate::runner) struct PendingAttempt {
    pub verdict: Verdict,
    retry: bool,
    rest: Rest,
}

impl PendingAttempt {
    pub(super) fn ready(attempt: Attempt) -> Self {
        Self {
            verdict: attempt.verdict,
            retry: false,
            rest: MaybeDone::Done(attempt),
        }
    }

    /// An attempt whose verdict is in and whose `rest` is still to run.
    pub(super) fn pending(
        verdict: Verdict,
        rest: impl Future<Output = Attempt> + Send + 'static,
    ) -> Self {
        Self {
            verdict,
            retry: false,
            rest: MaybeDone::Future(Box::pin(rest)),
        }
    }

    /// The whole attempt, once its cleanup has run out.
    pub async fn finish(self) -> Attempt {
        let mut rest = self.rest;
        (&mut rest).await;
        let mut attempt = Pin::new(&mut rest)
            .take_output()
            .expect("a finished attempt's record is taken once");
        attempt.retry = self.retry;
        attempt
    }
}

/// Waits for `next` while the cleanup of every attempt in `earlier` runs
/// out beside it. A restart in `next` that waits for the fence's write
/// side can only be let through by these leases ending, so nothing may
/// wait on an attempt without driving the ones before it.
async fn beside<F: Future>(earlier: &mut [PendingAttempt], next: F) -> F::Output {
    let cleanup = futures_util::future::join_all(earlier.iter_mut().map(|a| &mut a.rest));
    tokio::pin!(next, cleanup);
    let mut cleaned = false;
    loop {
        tokio::select! {
            out = &mut next => return out,
            _ = &mut cleanup, if !cleaned => cleaned = true,
        }
    }
}

/// Where a cell's attempts come from: [`lifecycle`] decides which run
/// when; the source runs them (the real one on a worker's stack).
#[async_trait(?Send)]
pub(super) trait AttemptSource {
    /// Runs attempt `number` (counting retries) to its verdict.
    async fn run(&mut self, number: u32) -> PendingAttempt;
    /// `attempt` did not pass and will run again.
    fn retrying(&mut self, attempt: &Attempt);
}

/// The one attempt lifecycle, for repeats and retries alike: `repeat`
/// attempts, each failed one run again up to `retries` times; stops
/// (keeping what finished) when `interrupt` turns true. Every attempt's
/// cleanup runs out beside whatever comes after it (the next attempt, or
/// a retried one's record); what is still running when the lifecycle ends
/// is the caller's to finish (the worker drives it beside its next cell).
pub(super) async fn lifecycle(
    repeat: u32,
    retries: u32,
    interrupt: &watch::Receiver<bool>,
    source: &mut dyn AttemptSource,
) -> Attempts {
    let mut attempts: Vec<PendingAttempt> = Vec::new();
    for _ in 0..repeat {
        let mut retries_left = retries;
        let mut retry = false;
        loop {
            if *interrupt.borrow() {
                return Attempts {
                    attempts,
                    interrupted: true,
                };
            }
            let number = attempts.len() as u32 + 1;
            let mut attempt = beside(&mut attempts, source.run(number)).await;
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
                // The retry event carries the whole record (its disposes
                // too), so this one's cleanup runs out first; the earlier
                // attempts' goes on beside it.
                let finished = beside(&mut attempts, attempt.finish()).await;
                source.retrying(&finished);
                attempt = PendingAttempt::ready(finished);
                attempt.retry = retry;
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
