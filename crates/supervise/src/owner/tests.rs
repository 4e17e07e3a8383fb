//! The owner tag's tests (`owner.rs`): a sweep finds and kills what carries the run's tag, and nothing else.

use super::*;
use std::os::unix::process::CommandExt;

fn sleeper(env: Option<&str>) -> std::process::Child {
    let mut command = std::process::Command::new("sleep");
    command.arg("300").process_group(0);
    if let Some(tag) = env {
        command.env(OWNER_ENV, tag);
    }
    command.spawn().unwrap()
}

#[test]
fn the_start_time_names_one_process() {
    let mut child = sleeper(None);
    let pid = child.id() as i32;
    let started = start_time(pid).unwrap();
    assert!(verified(pid, started).is_some());
    assert!(verified(pid, started + 1).is_none(), "another start time");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(verified(pid, started).is_none(), "gone");
}

#[test]
fn a_sweep_reaches_a_descendant_that_left_the_group() {
    // As the engine a RivetKit runner spawns: its own group, parent gone.
    let tag = new_tag(std::path::Path::new("/tmp/sweep-descendant"));
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let mut parent = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("setsid sleep 300 & echo $! > {}", pid_file.display()),
        ])
        .env(OWNER_ENV, &tag)
        .spawn()
        .unwrap();
    parent.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let pid = loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            if carries_tag(pid, &tag) {
                break pid;
            }
        }
        assert!(Instant::now() < until, "the descendant never started");
        std::thread::sleep(Duration::from_millis(5));
    };
    let started = start_time(pid).unwrap();
    assert_eq!(sweep(&tag), 1);
    assert!(
        verified(pid, started).is_none_or(|p| !p.running()),
        "the descendant survived"
    );
}

#[test]
fn a_process_changing_programs_is_found_by_its_tag_in_every_scan() {
    // A shell that execs itself over and over. Between two programs a
    // process's environment reads empty for a moment; the sweep that
    // took that for "not ours" found 0 of 1 in a loaded full test run.
    let tag = new_tag(std::path::Path::new("/tmp/sweep-exec"));
    let again = r#"exec sh -c "$0" "$0""#;
    let child = std::process::Command::new("sh")
        .args(["-c", again, again])
        .env(OWNER_ENV, &tag)
        .process_group(0)
        .spawn()
        .unwrap();
    // A failed assertion must not leave it spinning.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = KillOnDrop(child);
    let until = Instant::now() + Duration::from_secs(5);
    while !carries_tag(child.0.id() as i32, &tag) {
        assert!(Instant::now() < until, "the shell never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let missed = (0..50).filter(|_| tagged(&tag).len() != 1).count();
    assert_eq!(missed, 0, "scans of 50 that missed it mid-exec");
    assert_eq!(sweep(&tag), 1);
    assert!(
        child.0.wait().unwrap().code().is_none(),
        "killed by a signal"
    );
}

#[test]
fn a_sweep_kills_what_carries_the_tag_and_nothing_else() {
    let tag = new_tag(std::path::Path::new("/tmp/sweep-test"));
    let mut ours = sleeper(Some(&tag));
    let mut other_run = sleeper(Some("someone-else:/tmp/x"));
    let mut foreign = sleeper(None);
    // The environment is readable once exec has happened.
    let until = Instant::now() + Duration::from_secs(5);
    while !carries_tag(ours.id() as i32, &tag) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sweep(&tag), 1);
    assert!(ours.wait().unwrap().code().is_none(), "killed by a signal");
    for child in [&mut other_run, &mut foreign] {
        assert!(child.try_wait().unwrap().is_none(), "left alone");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
