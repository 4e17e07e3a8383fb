//! Overlapping ("hedged") readiness attempts, for probes whose server may
//! hold a request rather than refuse it.
//!
//! A Rivet Engine holds an actor call while the actor is rescheduled, an HTTP
//! server still starting holds its accepted connections, a proxy holds a
//! request while it waits on its upstream. One attempt at a time, each cut
//! at a short bound, then dropped and started again from scratch, would only
//! see such a server come back at the next bound. Here a new attempt starts
//! every `interval` while the earlier ones stay in flight, so readiness is
//! seen within about an interval of when the server answers, whether it
//! answers the requests it held or only new ones.
//!
//! At most [`MAX_IN_FLIGHT`] attempts are in flight. When a tick finds them
//! all waiting, one is dropped to make room: the younger of the two whose
//! start times are closest relative to their age. So a fresh attempt still
//! starts every interval, and the ones in flight keep spanning short and
//! long waits (roughly one interval, two, four...): the oldest runs on until
//! its own bound, [`ATTEMPT_LIMIT`], and a server that takes long to answer
//! any request can still pass.
//!
//! Attempts start on a fixed beat, not after the previous one ended, so an
//! attempt that fails at once (connection refused) does not make the next
//! start sooner, and a failure does not add a sleep after itself either.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};

/// How many attempts may wait at once. Eight cover waits from one interval
/// to about 2^6 intervals (6.4 s at Rivet's 100 ms) while a fresh attempt
/// still starts every interval, at the cost of eight idle connections.
pub(super) const MAX_IN_FLIGHT: usize = 8;

/// How long one attempt may wait for its answer: long enough for any hold
/// after which the stacks answer (a Rivet Engine fails a held actor call
/// after ~18 s, it does not answer it late), short enough that a probe
/// within the default 30 s ready timeout sees a wedged attempt end with an
/// error rather than only the deadline.
pub(super) const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);

/// How one attempt ended.
#[derive(Debug)]
pub(super) enum Ended<T> {
    /// Its future completed with `T`.
    Answered(T),
    /// No answer within [`ATTEMPT_LIMIT`].
    TimedOut,
    /// Dropped, still waiting, to make room for a newer attempt.
    Dropped,
}

/// A finished attempt: `number` is the order in which it was started (from 1),
/// `took` how long it was in flight.
#[derive(Debug)]
pub(super) struct Finished<T> {
    pub number: u32,
    pub took: Duration,
    pub ended: Ended<T>,
}

/// Starts `start()` every `interval` (the first at once) and hands each
/// finished attempt, in the order they finish, to `judge`; returns what
/// `judge` breaks with. Attempts still in flight then are dropped.
/// `started` counts the attempts started, and stays readable when the
/// caller's deadline drops this future.
pub(super) async fn hedge<T, B, Fut>(
    interval: Duration,
    started: &mut u32,
    mut start: impl FnMut() -> Fut,
    mut judge: impl FnMut(Finished<T>) -> ControlFlow<B>,
) -> B
where
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    // Dropping the set (on return, or at the caller's deadline) aborts
    // every attempt still in flight.
    let mut attempts = JoinSet::new();
    // Oldest first.
    let mut waiting: Vec<Waiting> = Vec::new();
    let mut beat = tokio::time::interval(interval.max(Duration::from_millis(1)));
    // After a stall (a slow judge, a busy machine), keep the beat's spacing
    // rather than starting a burst of attempts to catch up.
    beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // A finished attempt is judged before another one starts.
            biased;
            Some(joined) = attempts.join_next(), if !attempts.is_empty() => {
                let (number, outcome) = match joined {
                    Ok(done) => done,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    // Aborted by us, and already judged as dropped.
                    Err(_) => continue,
                };
                // It may have finished just as it was dropped for room.
                let Some(at) = waiting.iter().position(|w| w.number == number) else {
                    continue;
                };
                let took = waiting.remove(at).since.elapsed();
                let ended = match outcome {
                    Some(answer) => Ended::Answered(answer),
                    None => Ended::TimedOut,
                };
                if let ControlFlow::Break(b) = judge(Finished { number, took, ended }) {
                    return b;
                }
            }
            _ = beat.tick() => {
                if waiting.len() >= MAX_IN_FLIGHT {
                    let now = Instant::now();
                    let ages: Vec<Duration> = waiting.iter().map(|w| now - w.since).collect();
                    let dropped = waiting.remove(to_drop(&ages));
                    dropped.abort.abort();
                    let finished = Finished {
                        number: dropped.number,
                        took: now - dropped.since,
                        ended: Ended::Dropped,
                    };
                    if let ControlFlow::Break(b) = judge(finished) {
                        return b;
                    }
                }
                *started += 1;
                let number = *started;
                let attempt = tokio::time::timeout(ATTEMPT_LIMIT, start());
                let abort = attempts.spawn(async move { (number, attempt.await.ok()) });
                waiting.push(Waiting {
                    number,
                    since: Instant::now(),
                    abort,
                });
            }
        }
    }
}

/// An attempt in flight.
struct Waiting {
    number: u32,
    since: Instant,
    abort: AbortHandle,
}

/// Which attempt to drop, given the ages of those in flight (oldest first,
/// at least two): the younger of the adjacent pair whose ages are closest
/// relative to the older one's, so the ages left stay spread out roughly
/// geometrically. Among equally close pairs, the youngest pair gives way,
/// so long waits are kept. The oldest attempt is never the one dropped.
fn to_drop(ages: &[Duration]) -> usize {
    let closeness = |older: usize| {
        let (a, b) = (ages[older].as_secs_f64(), ages[older + 1].as_secs_f64());
        if a > 0.0 {
            (a - b) / a
        } else {
            0.0
        }
    };
    let mut best = ages.len() - 2;
    for older in (0..ages.len() - 1).rev() {
        if closeness(older) < closeness(best) {
            best = older;
        }
    }
    best + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    const TICK: Duration = Duration::from_millis(100);

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn the_attempt_dropped_for_room_keeps_waits_spread_out() {
        // Evenly spaced starts: the closest pair relative to age is the oldest
        // two, and the younger of them goes; the oldest never does.
        assert_eq!(to_drop(&ms(&[800, 700, 600, 500, 400, 300, 200, 100])), 1);
        assert_eq!(
            to_drop(&ms(&[6400, 3200, 1600, 800, 400, 300, 200, 100])),
            5
        );
        // Geometric already: the youngest of the equally close pairs goes.
        assert_eq!(to_drop(&ms(&[800, 400, 200, 100])), 3);
        assert_eq!(to_drop(&ms(&[100, 100])), 1);
        assert_eq!(to_drop(&ms(&[0, 0, 0])), 2);
    }

    /// Attempts that never answer: ticks keep starting new ones, at most
    /// MAX_IN_FLIGHT wait at once, and the first survives to its limit.
    #[tokio::test(start_paused = true)]
    async fn held_attempts_are_bounded_and_the_oldest_runs_to_its_limit() {
        let in_flight = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let mut started = 0;
        let mut finished = Vec::new();
        let run = hedge(
            TICK,
            &mut started,
            || {
                let (in_flight, most) = (in_flight.clone(), most.clone());
                async move {
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Counted down on drop, answered or aborted.
                    let _leaving = Leaving(in_flight);
                    std::future::pending::<()>().await
                }
            },
            |f: Finished<()>| {
                let first_timed_out = f.number == 1 && matches!(f.ended, Ended::TimedOut);
                finished.push((f.number, f.took));
                match first_timed_out {
                    true => ControlFlow::Break(()),
                    false => ControlFlow::Continue(()),
                }
            },
        );
        run.await;
        assert_eq!(most.load(Ordering::SeqCst) as usize, MAX_IN_FLIGHT);
        // One start per tick until the first attempt's limit: no burst, no gap.
        let ticks = (ATTEMPT_LIMIT.as_millis() / TICK.as_millis()) as u32;
        assert!((ticks..=ticks + 1).contains(&started), "{started}");
        let (number, took) = *finished.last().unwrap();
        assert_eq!((number, took), (1, ATTEMPT_LIMIT));
        // Every other attempt that ended was dropped for room, one per tick.
        assert_eq!(finished.len() as u32, started - MAX_IN_FLIGHT as u32 + 1);
    }

    /// A server answering each request after a fixed time longer than the
    /// tick still passes: dropping for room keeps long waits.
    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_wins_despite_the_room_limit() {
        let mut started = 0;
        let begin = Instant::now();
        let winner = hedge(
            TICK,
            &mut started,
            || async { tokio::time::sleep(Duration::from_secs(3)).await },
            |f: Finished<()>| match f.ended {
                Ended::Answered(()) => ControlFlow::Break((f.number, f.took)),
                _ => ControlFlow::Continue(()),
            },
        )
        .await;
        assert_eq!(winner, (1, Duration::from_secs(3)));
        assert_eq!(begin.elapsed(), Duration::from_secs(3));
    }

    /// Attempts that fail at once do not spin: one per tick.
    #[tokio::test(start_paused = true)]
    async fn fast_failures_wait_for_the_next_tick() {
        let mut started = 0;
        let mut failures = 0;
        let begin = Instant::now();
        hedge(
            TICK,
            &mut started,
            || async { Err::<(), _>("refused") },
            |f: Finished<Result<(), &str>>| {
                assert!(matches!(f.ended, Ended::Answered(Err("refused"))));
                failures += 1;
                match f.number {
                    10 => ControlFlow::Break(()),
                    _ => ControlFlow::Continue(()),
                }
            },
        )
        .await;
        assert_eq!((started, failures), (10, 10));
        assert_eq!(begin.elapsed(), 9 * TICK);
    }

    struct Leaving(Arc<AtomicU32>);
    impl Drop for Leaving {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
