//! Overlapping ("hedged") readiness attempts, for probes whose server may
//! hold a request rather than refuse it.
//!
//! A Rivet Engine holds an actor call while the actor is rescheduled, an HTTP
//! server still starting holds its accepted connections, a proxy holds a
//! request while it waits on its upstream. One attempt at a time, each cut
//! at a short bound, then started again from scratch, only saw such a server
//! come back at the next bound. Here a new attempt starts every `interval`
//! while earlier ones stay in flight, so readiness is seen within about an
//! interval of when the server answers the requests it held, or a new one.
//!
//! Waiting requests are not free for the server, so each attempt still
//! waiting doubles the time to the next start, up to [`SLOWEST_BEAT`], and
//! no more than [`MAX_IN_FLIGHT`] wait at once (measured on the local Rivet
//! stack: with 8 held actor calls at once from the first 0.8 s on, the actor
//! answered ~300 ms later than with one at a time; with this beat, as soon).
//! A server that answers only requests sent after it came back is still
//! seen within about a second, for the first 7 s of holding.
//!
//! No attempt is cut before [`ATTEMPT_LIMIT`], not even to make room: a
//! server may be slowed by clients that give up on held requests (measured
//! on the local Rivet Engine: with a held actor call cut every 100 ms, an
//! actor that came back in 1-4 s took 13 s). When one attempt settles the
//! probe, the others are left to finish on their own (each within its
//! limit) rather than cut.
//!
//! Attempts start on a beat, counted from the previous start, so one that
//! fails at once (connection refused) does not make the next start sooner,
//! and no sleep follows a failure.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How many attempts may wait at once: each holds a connection, and the
/// server may work on each.
pub(super) const MAX_IN_FLIGHT: usize = 10;

/// The longest spacing between starts while attempts wait.
pub(super) const SLOWEST_BEAT: Duration = Duration::from_secs(1);

/// How long one attempt may wait for its answer: longer than any hold after
/// which the local stacks answer (a Rivet Engine fails a held actor call
/// after ~18 s rather than answering it late), short enough that within the
/// default 30 s ready timeout a wedged attempt ends with an error of its own.
pub(super) const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);

/// How one attempt ended.
#[derive(Debug)]
pub(super) enum Ended<T> {
    /// Its future completed with `T`.
    Answered(T),
    /// No answer within [`ATTEMPT_LIMIT`].
    TimedOut,
}

/// A finished attempt: `number` is the order in which it was started (from 1),
/// `took` how long it was in flight.
#[derive(Debug)]
pub(super) struct Finished<T> {
    pub number: u32,
    pub took: Duration,
    pub ended: Ended<T>,
}

/// Starts `start()` on the beat described above (the first at once) and
/// hands each finished attempt, in the order they finish, to `judge`;
/// returns what `judge` breaks with. `started` counts the attempts started,
/// and stays readable when the caller's deadline drops this future (which
/// cuts the attempts still in flight).
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
    let mut attempts = JoinSet::new();
    // When each attempt in flight started.
    let mut waiting: Vec<(u32, Instant)> = Vec::new();
    let mut last_start: Option<Instant> = None;
    loop {
        let next_start = match last_start {
            None => Instant::now(),
            Some(at) => at + spacing(interval, waiting.len()),
        };
        tokio::select! {
            // A finished attempt is judged before another one starts.
            biased;
            Some(joined) = attempts.join_next(), if !attempts.is_empty() => {
                let (number, outcome) = match joined {
                    Ok(done) => done,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => continue,
                };
                let Some(at) = waiting.iter().position(|(n, _)| *n == number) else {
                    continue;
                };
                let took = waiting.remove(at).1.elapsed();
                let ended = match outcome {
                    Some(answer) => Ended::Answered(answer),
                    None => Ended::TimedOut,
                };
                if let ControlFlow::Break(b) = judge(Finished { number, took, ended }) {
                    attempts.detach_all();
                    return b;
                }
            }
            _ = tokio::time::sleep_until(next_start), if waiting.len() < MAX_IN_FLIGHT => {
                *started += 1;
                let number = *started;
                let attempt = tokio::time::timeout(ATTEMPT_LIMIT, start());
                attempts.spawn(async move { (number, attempt.await.ok()) });
                let now = Instant::now();
                waiting.push((number, now));
                last_start = Some(now);
            }
        }
    }
}

/// The time from one start to the next while `waiting` attempts are in
/// flight: `interval`, doubled for each of them, at most [`SLOWEST_BEAT`]
/// (or `interval`, if that is longer).
fn spacing(interval: Duration, waiting: usize) -> Duration {
    let interval = interval.max(Duration::from_millis(1));
    let doublings = waiting.min(16) as u32;
    (interval * 2u32.pow(doublings)).min(SLOWEST_BEAT.max(interval))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    const TICK: Duration = Duration::from_millis(100);

    #[test]
    fn spacing_doubles_with_each_waiting_attempt_up_to_the_slowest_beat() {
        let ms = |m| Duration::from_millis(m);
        let beats: Vec<Duration> = (0..6).map(|w| spacing(TICK, w)).collect();
        assert_eq!(
            beats,
            [TICK, ms(200), ms(400), ms(800), SLOWEST_BEAT, SLOWEST_BEAT]
        );
        assert_eq!(spacing(TICK, usize::MAX), SLOWEST_BEAT);
        assert_eq!(spacing(ms(5000), 20), ms(5000));
        assert_eq!(spacing(Duration::ZERO, 0), ms(1));
    }

    /// Attempts that never answer: the beat slows but never stops below
    /// the cap, nothing is cut, and the first runs to its limit.
    #[tokio::test(start_paused = true)]
    async fn held_attempts_slow_the_beat_and_run_to_their_limit() {
        let begin = Instant::now();
        let starts = Arc::new(Mutex::new(Vec::new()));
        let mut started = 0;
        let mut finished = Vec::new();
        hedge(
            TICK,
            &mut started,
            || {
                starts.lock().unwrap().push(begin.elapsed());
                std::future::pending::<()>()
            },
            |f: Finished<()>| {
                finished.push((f.number, f.took, matches!(f.ended, Ended::TimedOut)));
                ControlFlow::Break(())
            },
        )
        .await;
        let starts = starts.lock().unwrap().clone();
        let ms = |m| Duration::from_millis(m);
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(&gaps[..4], &[ms(200), ms(400), ms(800), SLOWEST_BEAT]);
        assert!(gaps[4..].iter().all(|&g| g == SLOWEST_BEAT), "{gaps:?}");
        // The cap is reached before the first attempt's limit, then no more start.
        assert_eq!(started as usize, MAX_IN_FLIGHT);
        assert!(*starts.last().unwrap() < ATTEMPT_LIMIT);
        assert_eq!(finished, vec![(1, ATTEMPT_LIMIT, true)]);
    }

    /// A server answering each request after a fixed time longer than the
    /// tick still passes: no attempt is cut early.
    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_wins() {
        let mut started = 0;
        let begin = Instant::now();
        let winner = hedge(
            TICK,
            &mut started,
            || tokio::time::sleep(Duration::from_secs(3)),
            |f: Finished<()>| match f.ended {
                Ended::Answered(()) => ControlFlow::Break((f.number, f.took)),
                Ended::TimedOut => ControlFlow::Continue(()),
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
}
