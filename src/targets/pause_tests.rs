//! The pause against real process groups: stopped whole (with the
//! leader's descendants outside it), woken by its timer or a drop, and
//! refused on a process gone or not the run's.

use super::super::process_of::tests::Sleeper;
use super::*;

fn action(process: ProcessOf, hold: Duration) -> PauseAction {
    PauseAction {
        component: super::super::BuiltinTarget::Agent,
        process,
        hold,
    }
}

#[tokio::test]
async fn a_pause_stops_the_whole_group_and_wakes_it() {
    let dir = tempfile::tempdir().unwrap();
    let sleeper = Sleeper::start(dir.path());
    let pause = action(sleeper.recorded(), Duration::from_secs(60));
    let open = pause.open(&Trace::detached()).await.unwrap();
    let members = crate::supervise::group_members(sleeper.pid());
    assert_eq!(members.len(), 3, "{members:?}");
    for pid in &members {
        assert_eq!(owner::state_of(*pid), Some('T'), "{pid}");
    }
    assert!(open.taken().contains("seen stopped"), "{}", open.taken());
    let woke = open.close().await.unwrap();
    assert!(woke.contains("3 processes running again"), "{woke}");
    for pid in &members {
        assert_ne!(owner::state_of(*pid), Some('T'), "{pid}");
    }
}

/// A component whose processes leave its group (each Postgres backend
/// leads a group of its own) is frozen whole: the leader's descendant
/// outside the group is stopped and woken with it. It ran on before,
/// and a store "paused" this way kept answering its clients.
#[tokio::test]
async fn a_pause_stops_the_leaders_descendants_that_left_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let sleeper = Sleeper::running(
        dir.path(),
        "sleep 300 & sleep 300 & setsid sleep 300 & wait",
    );
    let until = Instant::now() + Duration::from_secs(5);
    let away = loop {
        let away = outside_group(sleeper.pid(), sleeper.pid());
        if !away.is_empty() {
            break away[0];
        }
        assert!(Instant::now() < until, "the setsid child never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // Outside the sleeper's group: killed here, whatever the test does.
    struct KillOnDrop(Pinned);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            self.0.send(crate::signal::Signal::KILL.number());
        }
    }
    let _away = KillOnDrop(Pinned::open(away).unwrap());
    let open = action(sleeper.recorded(), Duration::from_secs(60))
        .open(&Trace::detached())
        .await
        .unwrap();
    assert_eq!(
        owner::state_of(away),
        Some('T'),
        "outside the group, stopped"
    );
    assert!(
        open.taken()
            .contains("1 of its leader's descendants outside it"),
        "{}",
        open.taken()
    );
    let woke = open.close().await.unwrap();
    assert!(woke.contains("its 4 processes running again"), "{woke}");
    assert_ne!(owner::state_of(away), Some('T'));
}

#[tokio::test]
async fn the_timer_wakes_a_pause_and_dropping_one_never_leaves_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let sleeper = Sleeper::start(dir.path());
    let open = action(sleeper.recorded(), Duration::from_millis(100))
        .open(&Trace::detached())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_ne!(owner::state_of(sleeper.pid()), Some('T'));
    drop(open);
    let open = action(sleeper.recorded(), Duration::from_secs(60))
        .open(&Trace::detached())
        .await
        .unwrap();
    drop(open);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_ne!(owner::state_of(sleeper.pid()), Some('T'));
}

/// A pause that cannot take fails: the process already gone, or a
/// record naming another process (same pid, another start time).
#[tokio::test]
async fn a_pause_of_a_process_gone_or_not_ours_does_not_take() {
    let dir = tempfile::tempdir().unwrap();
    let sleeper = Sleeper::start(dir.path());
    let recorded = sleeper.recorded();
    let other = ProcessOf::Recorded {
        what: "the sleeper".into(),
        record: std::sync::Arc::new(super::super::process_of::tests::Fixed(Some((
            sleeper.pid() as u32,
            Some(7),
        )))),
    };
    let e = action(other, Duration::from_secs(2))
        .open(&Trace::detached())
        .await
        .unwrap_err();
    assert!(
        matches!(e, PauseError::NotOurs(NotOurs::Foreign { .. })),
        "{e}"
    );
    assert_ne!(owner::state_of(sleeper.pid()), Some('T'), "left alone");
    drop(sleeper);
    let e = action(recorded, Duration::from_secs(2))
        .open(&Trace::detached())
        .await
        .unwrap_err();
    assert!(
        matches!(e, PauseError::NotOurs(NotOurs::Gone { .. })),
        "{e}"
    );
}
