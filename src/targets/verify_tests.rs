//! Restarts that must be seen to happen: real processes on 127.0.0.1 that
//! escape their group, commands that do nothing or restart in the
//! background, a signal nothing reacts to.

use super::verify::{listener_owner, managed_down, probe_addr};
use super::*;
use crate::supervise::free_port;

fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is needed for these tests");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `kill -9` of the process whose pid `pid_file` holds, if it still runs.
fn kill_from(pid_file: &std::path::Path) {
    if let Ok(text) = std::fs::read_to_string(pid_file) {
        if let Ok(pid) = text.trim().parse::<i32>() {
            crate::supervise::kill_group(pid);
        }
    }
}

/// A script that starts a python HTTP server on `port` in its own
/// session, in the background after `delay` seconds, writing its pid.
fn start_server_script(dir: &std::path::Path, port: u16, delay: &str) -> String {
    format!(
        "(sleep {delay}; exec setsid {} -m http.server --bind 127.0.0.1 {port}) >{log} 2>&1 </dev/null & echo $! > {pid}",
        python(),
        log = dir.join("server.log").display(),
        pid = dir.join("server.pid").display(),
    )
}

/// A managed "server" that daemonises (the wrapper forks the real server
/// into its own session and exits 0): the stop signal to its group misses
/// the server, which keeps serving. The restart must fail, not pass.
#[tokio::test]
async fn a_managed_server_that_escapes_its_group_never_went_down() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let script = start_server_script(dir.path(), port, "0");
    let mut spec = ManagedSpec::new("/bin/sh", ["-c".to_string(), script]);
    spec.log = Some(dir.path().join("wrapper.log"));
    spec.grace = Duration::from_secs(1);
    let mut target = Target::new(
        OwnTarget::new("agent"),
        RestartAction::Managed(spec),
        Readiness::http(format!("http://127.0.0.1:{port}/")),
    )
    .with_ready_timeout(Duration::from_secs(15));
    target.prepare().await.expect("the daemon serves");
    let outcome = target.restart("restart").await;
    kill_from(&dir.path().join("server.pid"));
    assert!(!outcome.ok, "{outcome:?}");
    assert_eq!(outcome.down, None);
    let detail = outcome.detail.unwrap();
    assert!(
        detail.starts_with("the target never went down: its process group was stopped"),
        "{detail}"
    );
    assert!(
        detail.contains(&format!("127.0.0.1:{port} still accepted connections")),
        "{detail}"
    );
    assert!(detail.contains("escaped the group"), "{detail}");
}

/// A restart command that does nothing, in front of a server that keeps
/// answering: never went down.
#[tokio::test]
async fn a_command_that_does_nothing_never_went_down() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let script = format!("exec {} -m http.server --bind 127.0.0.1 {port}", python());
    let mut spec = ManagedSpec::new("/bin/sh", ["-c".to_string(), script]);
    spec.log = Some(dir.path().join("server.log"));
    let readiness = Readiness::http(format!("http://127.0.0.1:{port}/"));
    let mut server = Target::new(
        OwnTarget::new("server"),
        RestartAction::Managed(spec),
        readiness.clone(),
    )
    .with_ready_timeout(Duration::from_secs(15));
    server.prepare().await.expect("server");
    let mut target = Target::new(
        OwnTarget::new("command"),
        RestartAction::Command {
            command: "true".into(),
            timeout: Duration::from_secs(5),
        },
        readiness,
    );
    let outcome = target.restart("restart").await;
    server.shutdown().await;
    assert!(!outcome.ok, "{outcome:?}");
    let detail = outcome.detail.unwrap();
    assert!(
        detail.starts_with("the target never went down: its probe answered throughout"),
        "{detail}"
    );
    assert!(
        detail.contains("still served by the same process"),
        "{detail}"
    );
}

/// A command that stops the server and starts it again in the
/// background: it returns before the server listens. The restart waits for
/// the probe and says how the server went down.
#[tokio::test]
async fn a_command_that_returns_before_the_server_is_back_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let pid_file = dir.path().join("server.pid");
    let start = std::process::Command::new("/bin/sh")
        .args(["-c", &start_server_script(dir.path(), port, "0")])
        .status()
        .unwrap();
    assert!(start.success());
    let readiness = Readiness::http(format!("http://127.0.0.1:{port}/"));
    readiness.wait(Duration::from_secs(15)).await.unwrap();
    let command = format!(
        "kill $(cat {pid}); {start}",
        pid = pid_file.display(),
        start = start_server_script(dir.path(), port, "0.7")
    );
    let mut target = Target::new(
        OwnTarget::new("command"),
        RestartAction::Command {
            command,
            timeout: Duration::from_secs(5),
        },
        readiness,
    )
    .with_ready_timeout(Duration::from_secs(15));
    let outcome = target.restart("restart").await;
    kill_from(&pid_file);
    assert!(outcome.ok, "{outcome:?}");
    assert!(outcome.ready_ms.unwrap() >= 300, "{outcome:?}");
    let down = outcome.down.unwrap();
    assert!(down.contains("failed"), "{down}");
}

/// A signal the process ignores, with no children to renew: never went down.
#[tokio::test]
async fn a_signal_nothing_reacts_to_never_went_down() {
    let dir = tempfile::tempdir().unwrap();
    // The handler must be in place before the signal (Python's default for
    // SIGHUP is to exit): the script says so by creating `armed`.
    let armed = dir.path().join("armed");
    let code = format!(
        "import signal, time\nsignal.signal(signal.SIGHUP, lambda *a: None)\nopen({:?}, 'w').close()\ntime.sleep(300)",
        armed.display().to_string()
    );
    let mut spec = ManagedSpec::new(python(), ["-c".to_string(), code]);
    spec.log = Some(dir.path().join("log"));
    let mut holder = Target::new(
        OwnTarget::new("holder"),
        RestartAction::Managed(spec),
        Readiness::None,
    );
    holder.prepare().await.unwrap();
    let pid_file = dir.path().join("py.pid");
    std::fs::write(&pid_file, format!("{}\n", holder.pid().unwrap())).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !armed.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(armed.exists(), "python never installed its handler");
    let mut target = Target::new(
        OwnTarget::new("reload"),
        RestartAction::Signal {
            pid_file,
            signal: crate::signal::Signal::HUP,
        },
        Readiness::None,
    )
    .with_ready_timeout(Duration::from_millis(400));
    let outcome = target.restart("restart").await;
    holder.shutdown().await;
    assert!(!outcome.ok, "{outcome:?}");
    let detail = outcome.detail.unwrap();
    assert!(
        detail.starts_with("the target never went down: process")
            && detail.contains("were the same 400 ms after the signal"),
        "{detail}"
    );
}

/// A deployment's command target without a probe gets the health probe,
/// its delay kept as the least wait.
#[test]
fn a_command_without_a_probe_gets_the_default_one() {
    let mut target = Target::new(
        OwnTarget::new("command"),
        RestartAction::Command {
            command: "true".into(),
            timeout: DEFAULT_COMMAND_TIMEOUT,
        },
        Readiness::Delay {
            duration: Duration::from_secs(6),
        },
    );
    target.with_default_probe(Readiness::http("http://127.0.0.1:1/v1/health"));
    assert_eq!(
        target.describe(),
        "command: true (timeout 60 s); ready: http GET http://127.0.0.1:1/v1/health = 200 within 30 s after 6 s"
    );
}

#[tokio::test]
async fn the_owner_of_a_listener_is_found_and_a_closed_one_refuses() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    assert_eq!(listener_owner(&addr).await, Some(std::process::id()));
    let seen = managed_down("exited with code 0", Some(&addr))
        .await
        .unwrap_err()
        .0;
    assert!(
        seen.contains("still accepted connections") && seen.contains("escaped the group"),
        "{seen}"
    );
    drop(listener);
    let down = managed_down("exited with code 0", Some(&addr))
        .await
        .unwrap();
    assert!(down.contains("refused connections"), "{down}");
}

#[test]
fn a_probe_names_its_listener() {
    let http = Readiness::http("http://127.0.0.1:2468/v1/health");
    assert_eq!(probe_addr(&http).as_deref(), Some("127.0.0.1:2468"));
    let v6 = Readiness::http("http://[::1]:80/");
    assert_eq!(probe_addr(&v6).as_deref(), Some("[::1]:80"));
    assert_eq!(probe_addr(&Readiness::None), None);
}
