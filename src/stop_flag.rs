//! The flag that stops a run (Ctrl-C, SIGTERM, the overall deadline): a
//! `watch` channel of `bool`, and the wait for it to turn true.

use tokio::sync::watch;

/// Returns once `flag` is true. A flag whose sender is gone can no longer
/// turn true, so the wait then never ends (it is always one side of a select).
pub(crate) async fn wait_true(mut flag: watch::Receiver<bool>) {
    if flag.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// `work`'s output, or `None` when `flag` turns true first (looked at
/// first on every poll: once stopped, work that is also ready is not
/// taken, so nothing more is begun after a Ctrl-C).
pub(crate) async fn unless_stopped<T>(
    flag: &watch::Receiver<bool>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        _ = wait_true(flag.clone()) => None,
        done = work => Some(done),
    }
}

#[cfg(test)]
mod tests {
    use super::{unless_stopped, wait_true};
    use std::time::Duration;
    use tokio::sync::watch;

    #[tokio::test]
    async fn it_ends_when_the_flag_turns_true_and_never_when_its_sender_is_gone() {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            tx.send(true).unwrap();
        });
        tokio::time::timeout(Duration::from_secs(5), wait_true(rx))
            .await
            .expect("the flag turned true");
        let (tx, rx) = watch::channel(false);
        drop(tx);
        let waited = tokio::time::timeout(Duration::from_millis(100), wait_true(rx)).await;
        assert!(waited.is_err(), "a dropped sender is not a stop");
    }

    /// Stopped, work that is ready too is not taken; not stopped, it is.
    #[tokio::test]
    async fn a_stop_wins_over_work_that_is_ready_too() {
        let (tx, rx) = watch::channel(false);
        assert_eq!(unless_stopped(&rx, async { 7 }).await, Some(7));
        tx.send(true).unwrap();
        assert_eq!(unless_stopped(&rx, async { 7 }).await, None);
    }
}
