//! The one attempt lifecycle, for every repeat of a cell: which attempt
//! runs when, and the rule that keeps a stack's cleanup fence from
//! deadlocking: whatever waits for an attempt drives the cleanup of the
//! attempts before it ([`beside`] within a lifecycle, [`Finishing`] across
//! lifecycles, as a worker runs one repeat after another).

use crate::report::{Attempt, Verdict};
use async_trait::async_trait;
use futures_util::future::MaybeDone;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
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
    /// Its number among the cell's attempts.
    pub number: u32,
    pub verdict: Verdict,
    retry: bool,
    rest: Rest,
}

impl PendingAttempt {
    pub(super) fn ready(attempt: Attempt) -> Self {
        Self {
            number: attempt.attempt,
            verdict: attempt.verdict,
            retry: false,
            rest: MaybeDone::Done(attempt),
        }
    }

    /// Attempt `number`, whose verdict is in and whose `rest` is still to run.
    pub(super) fn pending(
        number: u32,
        verdict: Verdict,
        rest: impl Future<Output = Attempt> + Send + 'static,
    ) -> Self {
        Self {
            number,
            verdict,
            retry: false,
            rest: MaybeDone::Future(Box::pin(rest)),
        }
    }

    /// The whole attempt, once its cleanup has run out.
    pub(crate) async fn finish(self) -> Attempt {
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
    /// Runs the cell's next attempt to its verdict (the source numbers
    /// them, across the cell's repeats and retries).
    async fn run(&mut self) -> PendingAttempt;
    /// `attempt` did not pass and will run again.
    fn retrying(&mut self, attempt: &Attempt);
}

/// The one attempt lifecycle, for every repeat of a cell: an attempt, run
/// again while it fails, up to `retries` times; stops (keeping what
/// finished) when `interrupt` turns true. Each attempt's cleanup runs out
/// beside whatever comes after it (the retry, or a retried one's record);
/// what is still running when the lifecycle ends is the caller's to finish
/// beside what it does next (see [`Finishing`]).
pub(super) async fn lifecycle(
    retries: u32,
    interrupt: &watch::Receiver<bool>,
    source: &mut dyn AttemptSource,
) -> Attempts {
    let mut attempts: Vec<PendingAttempt> = Vec::new();
    let mut retries_left = retries;
    let mut retry = false;
    loop {
        if *interrupt.borrow() {
            return Attempts {
                attempts,
                interrupted: true,
            };
        }
        let mut attempt = beside(&mut attempts, source.run()).await;
        attempt.retry = retry;
        if attempt.verdict == Verdict::Interrupted {
            attempts.push(attempt);
            return Attempts {
                attempts,
                interrupted: true,
            };
        }
        let again = matches!(attempt.verdict, Verdict::Fail | Verdict::Error) && retries_left > 0;
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
            return Attempts {
                attempts,
                interrupted: false,
            };
        }
        retries_left -= 1;
        retry = true;
    }
}

/// Finished work whose cleanup is still running out, each with its tag
/// (`T`, what it belongs to): the same rule as within a lifecycle, across
/// lifecycles. Whatever a stack runs next, it runs [`Finishing::beside`]
/// this, so a restart waiting for the fence's write side lets through the
/// leases these hold.
pub(in crate::runner) struct Finishing<T> {
    running: FuturesUnordered<RunningOut<T>>,
}

/// Attempts running out their cleanup, with their tag.
type RunningOut<T> = Pin<Box<dyn Future<Output = (T, Vec<Attempt>)> + Send>>;

impl<T: Send + 'static> Finishing<T> {
    pub(crate) fn new() -> Self {
        Self {
            running: FuturesUnordered::new(),
        }
    }

    /// `attempts`' cleanup, side by side (none waits for another's).
    pub(crate) fn push(&mut self, tag: T, attempts: Vec<PendingAttempt>) {
        self.running.push(Box::pin(async move {
            let finished =
                futures_util::future::join_all(attempts.into_iter().map(PendingAttempt::finish))
                    .await;
            (tag, finished)
        }));
    }

    /// Waits for `next` while what is finishing runs out beside it; what
    /// ends meanwhile goes to `done`.
    pub(crate) async fn beside<F: Future>(
        &mut self,
        next: F,
        done: &mut impl FnMut(T, Vec<Attempt>),
    ) -> F::Output {
        tokio::pin!(next);
        loop {
            tokio::select! {
                out = &mut next => return out,
                Some((tag, attempts)) = self.running.next(), if !self.running.is_empty() => done(tag, attempts),
            }
        }
    }

    /// What has already run out (nothing was deferred, or a DELETE answered
    /// at once) goes to `done` now, so the next pick sees the stack clear.
    pub(crate) fn take_ready(&mut self, done: &mut impl FnMut(T, Vec<Attempt>)) {
        while let Some(Some((tag, attempts))) = self.running.next().now_or_never() {
            done(tag, attempts);
        }
    }

    /// Runs out everything still finishing.
    pub(crate) async fn drain(&mut self, done: &mut impl FnMut(T, Vec<Attempt>)) {
        while let Some((tag, attempts)) = self.running.next().await {
            done(tag, attempts);
        }
    }
}
