//! Every nemesis target fails when its fault cannot take: the process it
//! would act on already gone, or its record (`stack.json`, nginx's pid
//! file) naming another process. Never a pass, never a signal to a
//! process that is not the stack's.
//!
//! Over 400 lines on purpose: each nemesis target gets the same refusals
//! (its process already gone, its record naming another process) on the same
//! real stand-in processes (`component`, `targets_naming`, `built_on`), so
//! the targets are held to one rule side by side.

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
    let no_probe = |_: &crate::faults::Hop| None;
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
    // Left alone: never stopped, never killed. Alive and not stopped: on
    // a busy machine the sleeper was seen runnable ('R') now and then.
    let state = crate::supervise::owner::state_of(pid as i32);
    assert!(matches!(state, Some('S' | 'R' | 'D')), "{state:?}");
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
    let no_probe = |_: &crate::faults::Hop| None;
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
    let no_probe = |_: &crate::faults::Hop| None;
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
    let state = crate::supervise::owner::state_of(foreign.pid() as i32);
    assert!(
        matches!(state, Some('S' | 'R' | 'D')),
        "left alone: {state:?}"
    );
}

/// A component of the stack, managed, that answers only while its marker
/// file exists, which every start writes but the `silent_start`th
/// (counting from 1, `prepare`'s).
struct MarkerComponent {
    target: Target,
    marker: std::path::PathBuf,
    journal: StackJournal,
}

impl MarkerComponent {
    async fn start(dir: &std::path::Path, id: BuiltinTarget, silent_start: Option<u32>) -> Self {
        let marker = dir.join("answers");
        let count = dir.join("starts");
        let probe = Readiness::Command {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), format!("test -f {}", marker.display())],
            interval: Duration::from_millis(50),
        };
        let silent = silent_start.unwrap_or(0);
        let script = format!(
            "n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo $n > {count}; \
             if [ $n -ne {silent} ]; then touch {marker}; fi; exec sleep 300",
            count = count.display(),
            marker = marker.display(),
        );
        Self::scripted(dir, id, &script, probe, marker).await
    }

    /// `script` run by `/bin/sh` in `dir`, ready by `probe`, as `id`.
    async fn scripted(
        dir: &std::path::Path,
        id: BuiltinTarget,
        script: &str,
        probe: Readiness,
        marker: std::path::PathBuf,
    ) -> Self {
        let mut spec = ManagedSpec::new("/bin/sh", ["-c".to_string(), script.to_string()]);
        spec.log = Some(dir.join("component.log"));
        spec.grace = Duration::from_secs(1);
        let journal = StackJournal::begin(dir, "tag-test:/nowhere").unwrap();
        let supervisor = crate::supervise::Supervisor::default()
            .with_journal(std::sync::Arc::new(journal.clone()));
        let mut target = Target::new(id, RestartAction::Managed(spec), probe)
            .with_ready_timeout(Duration::from_secs(1))
            .supervised_by(supervisor);
        target.prepare().await.expect("the component starts");
        MarkerComponent {
            target,
            marker,
            journal,
        }
    }
}

/// A shell probe: `test` succeeds.
fn sh_probe(test: String) -> Readiness {
    Readiness::Command {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), test],
        interval: Duration::from_millis(50),
    }
}

/// The nemesis targets named `names` of a stack whose components are
/// `real` and (`stand_ins`) stand-ins for the rest, over `hops`.
fn built_on(
    dir: &std::path::Path,
    real: &MarkerComponent,
    hops: &Hops,
    (names, stand_ins): (&[&str], bool),
) -> Vec<Target> {
    let others: Vec<Target> = COMPONENTS
        .into_iter()
        .filter(|id| stand_ins && real.target.id != *id)
        .map(component)
        .collect();
    let no_probe = |_: &crate::faults::Hop| None;
    let parts = Parts {
        components: others.iter().chain([&real.target]).collect(),
        absent: Vec::new(),
        journal: &real.journal,
        gateway_prefix: dir.join("gateway"),
        owner: None,
        hops,
        engine_health: None,
        hop_ready: &no_probe,
        phase_deadline: Duration::from_secs(1),
    };
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let (targets, unavailable) = build(&parts, &Selection::named(&names));
    assert!(unavailable.is_empty(), "{unavailable:?}");
    targets
}

/// A paused component seen running again that does not answer after its
/// wake did not come back: the system's failure (`not_back`, was the
/// setup's error), naming it; it is restarted through its own target
/// (lent to the cell) so the next cell finds it whole, and that is said.
#[tokio::test]
async fn a_component_that_does_not_answer_after_its_wake_is_not_back_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = MarkerComponent::start(dir.path(), BuiltinTarget::RivetEngine, None).await;
    let hops = Hops::new(false);
    let mut pause =
        built_on(dir.path(), &engine, &hops, (&["rivet-engine-pause"], false)).remove(0);
    assert_eq!(
        pause.lends(),
        [BuiltinTarget::RivetEngine, BuiltinTarget::Rivet]
    );
    let paused = pause
        .restart_lent("restart", &mut [&mut engine.target])
        .await
        .record;
    assert!(paused.ok, "{paused:?}");
    // It stops answering while frozen, and nothing brings that back but a start.
    std::fs::remove_file(&engine.marker).unwrap();
    let e = pause.settle_lent(&mut [&mut engine.target]).await;
    let Err(crate::targets::SettleError::NotBack(not_back)) = e else {
        panic!("not a not-back: {e:?}");
    };
    assert_eq!(not_back.component, Some(BuiltinTarget::RivetEngine));
    assert!(
        not_back
            .said
            .contains("seen running again but did not answer")
            && not_back
                .said
                .ends_with("`rivet-engine` was restarted for the next cell"),
        "{}",
        not_back.said
    );
    assert!(engine.marker.exists(), "the component was started again");
    engine.target.shutdown().await;
}

/// The Rivet Engine's probe is answered through the runner: when the
/// engine's own restart does not bring it back (the runner lost the actor
/// the engine routes to it), the runner is restarted too, and both are
/// said.
#[tokio::test]
async fn an_engine_its_restart_does_not_bring_back_has_its_runner_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let (engine_dir, runner_dir) = (dir.path().join("engine"), dir.path().join("runner"));
    std::fs::create_dir_all(&engine_dir).unwrap();
    std::fs::create_dir_all(&runner_dir).unwrap();
    let mut runner = MarkerComponent::start(&runner_dir, BuiltinTarget::Rivet, None).await;
    let mut engine = MarkerComponent::start(&engine_dir, BuiltinTarget::RivetEngine, None).await;
    engine.target.readiness = Readiness::Command {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), format!("test -f {}", runner.marker.display())],
        interval: Duration::from_millis(50),
    };
    let hops = Hops::new(false);
    let mut pause = built_on(
        &engine_dir,
        &engine,
        &hops,
        (&["rivet-engine-pause"], false),
    )
    .remove(0);
    let traced = tempfile::tempdir().unwrap();
    let level = crate::trace::TraceLevel::Summary;
    let trace = crate::trace::Trace::create(traced.path(), level, None, Default::default());
    pause.set_trace(trace.unwrap());
    let paused = pause
        .restart_lent("restart", &mut [&mut engine.target, &mut runner.target])
        .await
        .record;
    assert!(paused.ok, "{paused:?}");
    std::fs::remove_file(&runner.marker).unwrap();
    let started = std::time::Instant::now();
    let e = pause
        .settle_lent(&mut [&mut engine.target, &mut runner.target])
        .await;
    let settled = started.elapsed();
    let Err(crate::targets::SettleError::NotBack(not_back)) = e else {
        panic!("not a not-back: {e:?}");
    };
    assert!(
        not_back
            .said
            .contains("; restarting `rivet-engine` for the next cell failed too")
            && not_back
                .said
                .ends_with("; `rivet` was restarted for the next cell"),
        "{}",
        not_back.said
    );
    assert!(runner.marker.exists(), "the runner was started again");
    assert_eq!(
        engine.target.unrecovered(),
        None,
        "back through its runner's restart: the Engine is not noted as left down"
    );
    // The stack's waits are in the trace for the floor: the heal's and the
    // engine's restart's, each to the deadline it was never ready by, and
    // the runner's restart, to ready; between them, the whole settle.
    for held in [&mut pause, &mut engine.target, &mut runner.target] {
        held.set_trace(crate::trace::Trace::detached());
    }
    let path = traced.path().join(crate::trace::TRACE_FILE);
    let waits: Vec<u64> = crate::trace::read_trace(&path)
        .unwrap()
        .iter()
        .filter(|e| e["ev"] == "fault_ready")
        .map(|e| e["ms"].as_u64().unwrap())
        .collect();
    assert_eq!(waits.len(), 3, "{waits:?}");
    let deadline = engine.target.ready_timeout.as_millis() as u64;
    assert!(waits[..2].iter().all(|ms| *ms >= deadline), "{waits:?}");
    let sum: u64 = waits.iter().sum();
    assert!(
        sum <= settled.as_millis() as u64,
        "{waits:?} in {settled:?}"
    );
    engine.target.shutdown().await;
    runner.target.shutdown().await;
}

/// A schedule's pause whose component, woken, does not answer: the
/// fault's not-back (never the setup's error), the component restarted
/// through the target lent to the schedule.
#[tokio::test]
async fn a_schedules_component_not_answering_after_its_fault_is_not_back_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = MarkerComponent::start(dir.path(), BuiltinTarget::RivetEngine, None).await;
    let mut hops = Hops::new(true);
    for hop in chaos::HOPS {
        hops.front(hop, crate::supervise::free_port().unwrap())
            .unwrap();
    }
    let mut chaos = built_on(dir.path(), &engine, &hops, (&["chaos"], true)).remove(0);
    assert!(chaos.lends().contains(&BuiltinTarget::RivetEngine));
    chaos.plan_schedule(Schedule {
        seed: 1,
        window_ms: 1000,
        faults: vec![ScheduledFault {
            at_ms: 0,
            hold_ms: 100,
            fault: FaultKind::Pause,
            on: "rivet-engine".into(),
        }],
    });
    std::fs::remove_file(&engine.marker).unwrap();
    let started = chaos
        .restart_lent("restart", &mut [&mut engine.target])
        .await
        .record;
    assert!(started.ok, "the schedule starts: {started:?}");
    let e = chaos.settle_lent(&mut [&mut engine.target]).await;
    let Err(crate::targets::SettleError::NotBack(not_back)) = e else {
        panic!("not a not-back: {e:?}");
    };
    assert_eq!(not_back.component, Some(BuiltinTarget::RivetEngine));
    assert!(
        not_back.said.starts_with("fault #0 (")
            && not_back
                .said
                .ends_with("`rivet-engine` was restarted for the next cell"),
        "{}",
        not_back.said
    );
    assert!(engine.marker.exists(), "the component was started again");
    assert!(engine.target.pid().is_some(), "given back to its slot");
    engine.target.shutdown().await;
}

/// A reboot whose component starts but does not answer: the restart's
/// not-back, naming the component (a part of continuity's own among them
/// is the harness's failure), the component restarted once more.
#[tokio::test]
async fn a_reboot_whose_component_does_not_answer_names_it_and_restarts_it() {
    let dir = tempfile::tempdir().unwrap();
    // Its second start (the reboot's) leaves it silent; the third answers.
    let mut engine = MarkerComponent::start(dir.path(), BuiltinTarget::RivetEngine, Some(2)).await;
    let hops = Hops::new(false);
    let mut reboot = built_on(dir.path(), &engine, &hops, (&["whole-stack"], false)).remove(0);
    std::fs::remove_file(&engine.marker).unwrap();
    let restarted = reboot
        .restart_lent("restart", &mut [&mut engine.target])
        .await;
    let failure = restarted.failure.expect("the reboot failed");
    assert_eq!(failure.component(), Some(BuiltinTarget::RivetEngine));
    let sig = crate::diagnose::restart_failed(&restarted.record, Some(&failure), None);
    assert_eq!(sig.kind, crate::report::SignatureKind::NotBack);
    assert!(
        sig.message
            .starts_with("`rivet-engine` did not come back within 1 s")
            && sig
                .message
                .ends_with("`rivet-engine` was restarted for the next cell"),
        "{}",
        sig.message
    );
    assert!(engine.marker.exists(), "the component was started again");
    engine.target.shutdown().await;
}

/// A Rivet layer whose Engine can wedge on its data: the Engine keeps an
/// epoch in its data folder (a new one on an empty folder), the runner
/// takes the Engine's epoch when it starts, and the actor answers only
/// while the two agree and the data holds no `wedged` mark — as the
/// Engine 2.3.19 whose workflow worker ended in a freeze places no actor
/// again on its data, whoever restarts. Returns the folder, the Engine
/// (startable afresh), the runner and the Engine's data folder.
async fn wedgeable_rivet() -> (
    tempfile::TempDir,
    MarkerComponent,
    MarkerComponent,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let (engine_dir, runner_dir) = (dir.path().join("engine"), dir.path().join("runner"));
    std::fs::create_dir_all(&engine_dir).unwrap();
    std::fs::create_dir_all(&runner_dir).unwrap();
    let data = engine_dir.join("engine-data");
    let (epoch, seen) = (data.join("epoch"), runner_dir.join("seen"));
    let boot = sh_probe(format!("test -f {}", epoch.display()));
    let engine_script = format!(
        "mkdir -p {data}; [ -f {epoch} ] || date +%s%N > {epoch}; exec sleep 300",
        data = data.display(),
        epoch = epoch.display()
    );
    let id = BuiltinTarget::RivetEngine;
    let marker = epoch.clone();
    let mut engine =
        MarkerComponent::scripted(&engine_dir, id, &engine_script, boot.clone(), marker).await;
    let answers = sh_probe(format!(
        "test ! -e {wedged} && cmp -s {epoch} {seen}",
        wedged = data.join("wedged").display(),
        epoch = epoch.display(),
        seen = seen.display()
    ));
    let runner_script = format!("cp {} {}; exec sleep 300", epoch.display(), seen.display());
    let id = BuiltinTarget::Rivet;
    let runner =
        MarkerComponent::scripted(&runner_dir, id, &runner_script, answers.clone(), seen).await;
    // As the stack's: from now on the Engine is ready when the actor answers.
    let held = Target::placeholder(BuiltinTarget::RivetEngine.into());
    let afresh = crate::targets::Afresh {
        data: data.clone(),
        boot,
    };
    engine.target = std::mem::replace(&mut engine.target, held).with_afresh(afresh);
    engine.target.readiness = answers;
    (dir, engine, runner, data)
}

/// The Engine wedged on its data (neither its restart nor its runner's
/// brings the actor back) is started afresh, its data folder set aside
/// and named, and its runner restarted after it: the cell's failure says
/// each step, the next cell finds the stack whole, and each step's wait
/// is the stack's in the trace.
#[tokio::test]
async fn an_engine_wedged_on_its_data_is_started_afresh_then_its_runner() {
    let (dir, mut engine, mut runner, data) = wedgeable_rivet().await;
    let hops = Hops::new(false);
    let names = (&["rivet-engine-pause"][..], false);
    let mut pause = built_on(&dir.path().join("engine"), &engine, &hops, names).remove(0);
    let traced = tempfile::tempdir().unwrap();
    let level = crate::trace::TraceLevel::Summary;
    let trace = crate::trace::Trace::create(traced.path(), level, None, Default::default());
    pause.set_trace(trace.unwrap());
    let lent = &mut [&mut engine.target, &mut runner.target];
    let paused = pause.restart_lent("restart", lent).await.record;
    assert!(paused.ok, "{paused:?}");
    std::fs::write(data.join("wedged"), "").unwrap();
    let e = pause.settle_lent(lent).await;
    let Err(crate::targets::SettleError::NotBack(not_back)) = e else {
        panic!("not a not-back: {e:?}");
    };
    let aside = format!("{}.set-aside-1", data.display());
    let steps = [
        "; restarting `rivet-engine` for the next cell failed too".to_string(),
        "; restarting `rivet` for the next cell failed too".to_string(),
        format!("; `rivet-engine` was started afresh for the next cell: its data folder set aside as {aside}"),
        "; `rivet` was restarted for the next cell".to_string(),
    ];
    let mut rest = not_back.said.as_str();
    for step in &steps {
        let at = rest.find(step.as_str());
        let at = at.unwrap_or_else(|| panic!("{step:?} in turn in {}", not_back.said));
        rest = &rest[at + step.len()..];
    }
    assert!(rest.is_empty(), "the runner's restart is last: {rest:?}");
    assert!(std::path::Path::new(&aside).join("wedged").exists());
    assert!(
        !data.join("wedged").exists(),
        "the Engine runs on an empty folder"
    );
    let answers = engine.target.readiness.clone();
    let now = answers.wait(Duration::from_secs(1)).await;
    assert!(now.is_ok(), "the actor answers for the next cell: {now:?}");
    // The heal's wait, then each of the four steps', are the stack's.
    for held in [&mut pause, &mut engine.target, &mut runner.target] {
        held.set_trace(crate::trace::Trace::detached());
    }
    let path = traced.path().join(crate::trace::TRACE_FILE);
    let trace = crate::trace::read_trace(&path).unwrap();
    let waits = trace.iter().filter(|e| e["ev"] == "fault_ready").count();
    assert_eq!(waits, 5, "{trace:?}");
    engine.target.shutdown().await;
    runner.target.shutdown().await;
}

/// Left down by an earlier cell's restart, the wedged Engine is brought
/// back before the next cell by the same repair (through every part of
/// the stack), not by one more restart of its own that cannot.
#[tokio::test]
async fn an_engine_left_wedged_is_brought_back_afresh_before_the_next_cell() {
    let (_dir, mut engine, mut runner, data) = wedgeable_rivet().await;
    std::fs::write(data.join("wedged"), "").unwrap();
    let left = engine.target.restart_lent("restart", &mut []).await.record;
    assert!(!left.ok, "{left:?}");
    assert!(engine.target.unrecovered().is_some());
    let parts = &mut [&mut engine.target, &mut runner.target];
    let brought = crate::targets::bring_back(parts, 0).await;
    assert!(brought.is_ok(), "{brought:?}");
    assert_eq!(engine.target.unrecovered(), None, "brought back");
    let aside = std::path::PathBuf::from(format!("{}.set-aside-1", data.display()));
    assert!(aside.join("wedged").exists(), "the wedged folder is kept");
    assert!(!data.join("wedged").exists());
    engine.target.shutdown().await;
    runner.target.shutdown().await;
}
