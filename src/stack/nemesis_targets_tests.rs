//! Every nemesis target fails when its fault cannot take: the process it
//! would act on already gone, or its record (`stack.json`, nginx's pid
//! file) naming another process. Never a pass, never a signal to a
//! process that is not the stack's.

use super::*;
use crate::report::{FaultKind, Schedule, ScheduledFault};
use crate::targets::ManagedSpec;
use std::os::unix::process::CommandExt;

/// A `sleep` in a group of its own, in `cwd`, killed when dropped.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn start(cwd: &std::path::Path) -> Sleeper {
        let child = std::process::Command::new("sleep")
            .arg("300")
            .current_dir(cwd)
            .process_group(0)
            .spawn()
            .unwrap();
        Sleeper(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        crate::supervise::kill_group(self.pid() as i32);
        let _ = self.0.wait();
    }
}

/// A component target that runs nothing (only its name and probe matter).
fn component(id: BuiltinTarget) -> Target {
    Target::new(id, RestartAction::Clients, Readiness::None)
}

/// The nemesis targets of a stack whose records name what `record` says:
/// every component's journal entry, and nginx's pid file.
fn targets_naming(
    dir: &std::path::Path,
    record: impl Fn(BuiltinTarget) -> (u32, Option<u64>),
) -> Vec<Target> {
    let journal = StackJournal::begin(dir, "tag-test:/nowhere").unwrap();
    for id in COMPONENTS {
        let (pid, started) = record(id);
        journal.record_start(id.name(), "x".as_ref(), "x.log".as_ref(), pid, started);
    }
    let prefix = dir.join("gateway");
    std::fs::create_dir_all(&prefix).unwrap();
    let (gateway_pid, _) = record(BuiltinTarget::Gateway);
    std::fs::write(prefix.join("nginx.pid"), format!("{gateway_pid}\n")).unwrap();
    let components: Vec<Target> = COMPONENTS.into_iter().map(component).collect();
    let hops = Hops::new(false);
    let no_probe = |_: &str| None;
    let parts = Parts {
        components: components.iter().collect(),
        absent: Vec::new(),
        journal: &journal,
        gateway_prefix: prefix,
        owner: Some("tag-test:/nowhere".into()),
        hops: &hops,
        engine_health: None,
        hop_ready: &no_probe,
        phase_deadline: Duration::from_secs(1),
    };
    let named: Vec<String> = BuiltinTarget::ALL
        .into_iter()
        .filter(|b| b.paused().is_some() || *b == BuiltinTarget::AgentProcess)
        .map(|b| b.name().to_string())
        .collect();
    let (targets, unavailable) = build(&parts, &Selection::named(&named));
    assert!(unavailable.is_empty(), "{unavailable:?}");
    assert_eq!(targets.len(), 11, "ten pauses and the agent kill");
    targets
}

/// Each target's restart fails as "never went down", saying `why`.
async fn each_fails(targets: Vec<Target>, why: &[&str]) {
    for mut target in targets {
        let outcome = target.restart("restart").await;
        assert!(!outcome.ok, "{}: {outcome:?}", target.name());
        let detail = outcome.detail.unwrap_or_default();
        assert!(
            detail.starts_with("the target never went down")
                && why.iter().any(|w| detail.contains(w)),
            "{}: {detail}",
            target.name()
        );
    }
}

#[tokio::test]
async fn every_pause_and_the_agent_kill_fail_on_a_process_that_is_not_the_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // A live process, not started by this stack: its start time is not the
    // recorded one, and it runs outside the gateway's folder without the tag.
    let foreign = Sleeper::start(elsewhere.path());
    let pid = foreign.pid();
    let targets = targets_naming(dir.path(), |_| (pid, Some(1)));
    each_fails(targets, &["is not the one the stack started"]).await;
    // Left alone: never stopped, never killed.
    assert_eq!(crate::supervise::owner::state_of(pid as i32), Some('S'));
}

#[tokio::test]
async fn every_pause_and_the_agent_kill_fail_on_a_process_already_gone() {
    let dir = tempfile::tempdir().unwrap();
    let gone = Sleeper::start(dir.path());
    let (pid, started) = (
        gone.pid(),
        crate::supervise::owner::start_time(gone.pid() as i32),
    );
    drop(gone);
    let targets = targets_naming(dir.path(), |_| (pid, started));
    each_fails(targets, &["is gone"]).await;
}

/// The reboot needs each component to go down: one whose process is
/// already gone was never seen down, and the reboot fails.
#[tokio::test]
async fn the_whole_stack_fails_when_a_component_was_already_gone() {
    let dir = tempfile::tempdir().unwrap();
    let journal = StackJournal::begin(dir.path(), "tag-test:/nowhere").unwrap();
    let components: Vec<Target> = COMPONENTS.into_iter().map(component).collect();
    let hops = Hops::new(false);
    let no_probe = |_: &str| None;
    let parts = Parts {
        components: components.iter().collect(),
        absent: Vec::new(),
        journal: &journal,
        gateway_prefix: dir.path().join("gateway"),
        owner: None,
        hops: &hops,
        engine_health: None,
        hop_ready: &no_probe,
        phase_deadline: Duration::from_secs(1),
    };
    let (mut targets, _) = build(&parts, &Selection::named(&["whole-stack".into()]));
    let mut reboot = targets.remove(0);
    // The lent components: managed processes that are not running (never
    // started, as a crashed one is not).
    let mut lent: Vec<Target> = COMPONENTS
        .into_iter()
        .map(|id| {
            let mut spec = ManagedSpec::new("sleep", ["300".to_string()]);
            spec.log = Some(dir.path().join(format!("{id}.log")));
            Target::new(id, RestartAction::Managed(spec), Readiness::None)
        })
        .collect();
    let mut borrowed: Vec<&mut Target> = lent.iter_mut().collect();
    let outcome = reboot.restart_lent("restart", &mut borrowed).await.record;
    assert!(!outcome.ok, "{outcome:?}");
    let detail = outcome.detail.unwrap_or_default();
    assert!(detail.contains("no process was running"), "{detail}");
    // Lent none at all: it fails too, naming what it lacks.
    let outcome = reboot.restart("restart").await;
    assert!(!outcome.ok, "{outcome:?}");
    assert!(
        outcome
            .detail
            .unwrap_or_default()
            .contains("lent the reboot no"),
        "lent nothing"
    );
    for target in &mut lent {
        target.shutdown().await;
    }
}

/// A schedule whose fault cannot take (a pause of a process that is not
/// the stack's) ends its cell as the setup's failure when it is settled.
#[tokio::test]
async fn a_schedule_whose_fault_cannot_take_fails_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let foreign = Sleeper::start(elsewhere.path());
    let journal = StackJournal::begin(dir.path(), "tag-test:/nowhere").unwrap();
    for id in COMPONENTS {
        journal.record_start(
            id.name(),
            "x".as_ref(),
            "x.log".as_ref(),
            foreign.pid(),
            Some(1),
        );
    }
    let components: Vec<Target> = COMPONENTS.into_iter().map(component).collect();
    let mut hops = Hops::new(true);
    for hop in chaos::HOPS {
        hops.front(hop, crate::supervise::free_port().unwrap())
            .unwrap();
    }
    let no_probe = |_: &str| None;
    let parts = Parts {
        components: components.iter().collect(),
        absent: Vec::new(),
        journal: &journal,
        gateway_prefix: dir.path().join("gateway"),
        owner: None,
        hops: &hops,
        engine_health: None,
        hop_ready: &no_probe,
        phase_deadline: Duration::from_secs(1),
    };
    let (mut targets, unavailable) = build(&parts, &Selection::named(&["chaos".into()]));
    assert!(unavailable.is_empty(), "{unavailable:?}");
    let mut chaos = targets.remove(0);
    chaos.plan_schedule(Schedule {
        seed: 1,
        window_ms: 1000,
        faults: vec![ScheduledFault {
            at_ms: 0,
            hold_ms: 100,
            fault: FaultKind::Pause,
            on: "agent".into(),
        }],
    });
    let started = chaos.restart_lent("restart", &mut []).await.record;
    assert!(started.ok, "the schedule starts: {started:?}");
    let e = chaos.settle_lent(&mut []).await.unwrap_err().to_string();
    assert!(
        e.contains("fault #0") && e.contains("is not the one the stack started"),
        "{e}"
    );
    assert_eq!(
        crate::supervise::owner::state_of(foreign.pid() as i32),
        Some('S')
    );
}

/// A paused component that does not answer after its wake is restarted
/// through its own target (lent to the cell), so the next cell finds it
/// whole; the cell is still the setup's error, saying so. The component
/// here answers only while its marker file exists, which only its start
/// writes.
#[tokio::test]
async fn a_component_that_does_not_answer_after_its_wake_is_restarted_for_the_next_cell() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("answers");
    let probe = Readiness::Command {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), format!("test -f {}", marker.display())],
        interval: Duration::from_millis(50),
    };
    let mut spec = ManagedSpec::new(
        "/bin/sh",
        [
            "-c".to_string(),
            format!("touch {}; exec sleep 300", marker.display()),
        ],
    );
    spec.log = Some(dir.path().join("component.log"));
    spec.grace = Duration::from_secs(1);
    let journal = StackJournal::begin(dir.path(), "tag-test:/nowhere").unwrap();
    let supervisor =
        crate::supervise::Supervisor::default().with_journal(std::sync::Arc::new(journal.clone()));
    let mut component = Target::new(
        BuiltinTarget::RivetEngine,
        RestartAction::Managed(spec),
        probe,
    )
    .with_ready_timeout(Duration::from_secs(5))
    .supervised_by(supervisor);
    component.prepare().await.expect("the component starts");
    let hops = Hops::new(false);
    let no_probe = |_: &str| None;
    let parts = Parts {
        components: vec![&component],
        absent: Vec::new(),
        journal: &journal,
        gateway_prefix: dir.path().join("gateway"),
        owner: None,
        hops: &hops,
        engine_health: None,
        hop_ready: &no_probe,
        phase_deadline: Duration::from_secs(1),
    };
    let (mut targets, _) = build(&parts, &Selection::named(&["rivet-engine-pause".into()]));
    let mut pause = targets.remove(0).with_ready_timeout(Duration::from_secs(1));
    assert_eq!(pause.lends(), [BuiltinTarget::RivetEngine]);
    let paused = pause
        .restart_lent("restart", &mut [&mut component])
        .await
        .record;
    assert!(paused.ok, "{paused:?}");
    // It stops answering while frozen, and nothing brings that back but a start.
    std::fs::remove_file(&marker).unwrap();
    let e = pause
        .settle_lent(&mut [&mut component])
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("was restarted for the next cell"), "{e}");
    assert!(marker.exists(), "the component was started again");
    component.shutdown().await;
}
