//! Targets against real processes, sockets and files on 127.0.0.1.
//!
//! Over 400 lines: one test or two per kind of target (managed, command,
//! signal, hook, fault, left down, timeout), each on the real thing.

use super::*;
use crate::supervise::{free_port, group_members};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The interpreter itself, not a version-manager shim that would sit
/// between the process group leader and the server.
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is needed for these tests");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn http_server(dir: &std::path::Path, port: u16) -> ManagedSpec {
    let script = format!("exec {} -m http.server --bind 127.0.0.1 {port}", python());
    let mut spec = ManagedSpec::new("/bin/sh", ["-c".to_string(), script]);
    spec.cwd = Some(dir.to_path_buf());
    spec.log = Some(dir.join("server.log"));
    spec.grace = Duration::from_secs(2);
    spec
}

async fn restart_managed_and_check(readiness: Readiness, port: u16, dir: &std::path::Path) {
    let mut target = Target::new(
        OwnTarget::new("server"),
        RestartAction::Managed(http_server(dir, port)),
        readiness,
    )
    .with_ready_timeout(Duration::from_secs(15));
    target.prepare().await.expect("prepare");
    let first = target.pid().expect("running") as i32;

    let outcome = target.restart("restart").await;
    assert!(outcome.ok, "{outcome:?}");
    assert!(outcome.ready_ms.is_some(), "{outcome:?}");
    assert!(outcome.detail.is_none());
    let second = target.pid().expect("running again") as i32;
    assert_ne!(first, second);
    assert!(
        group_members(first).is_empty(),
        "the old server's group survived the restart"
    );

    target.shutdown().await;
    assert!(target.pid().is_none());
    assert!(group_members(second).is_empty());
}

#[tokio::test]
async fn managed_restart_with_tcp_readiness_replaces_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let addr = format!("127.0.0.1:{port}");
    restart_managed_and_check(Readiness::Tcp { addr }, port, dir.path()).await;
}

#[tokio::test]
async fn managed_restart_with_http_readiness_replaces_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    restart_managed_and_check(Readiness::http(url), port, dir.path()).await;
}

#[tokio::test]
async fn dropping_a_managed_target_kills_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ManagedSpec::new("/bin/sh", ["-c".to_string(), "sleep 300 & wait".into()]);
    spec.log = Some(dir.path().join("log"));
    let mut target = Target::new(
        OwnTarget::new("sleeper"),
        RestartAction::Managed(spec),
        Readiness::None,
    );
    target.prepare().await.unwrap();
    let pid = target.pid().unwrap() as i32;
    drop(target);
    assert!(group_members(pid).is_empty());
}

/// In a run, a managed target whose config names no `log` writes into
/// the folder it is given (the run's `logs/`), under its own name; a
/// `log` the config names is kept.
#[tokio::test]
async fn a_managed_target_without_a_log_writes_it_into_the_runs_folder() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("run").join("logs");
    let spec = ManagedSpec::new(
        "/bin/sh",
        ["-c".to_string(), "echo up; exec sleep 300".into()],
    );
    let mut target = Target::new(
        OwnTarget::new("my server"),
        RestartAction::Managed(spec),
        Readiness::None,
    );
    target.log_into(&logs);
    target.prepare().await.unwrap();
    let file = logs.join(format!("{}.log", crate::file_name::safe("my server")));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&file).unwrap_or_default() != "up\n" {
        assert!(std::time::Instant::now() < deadline, "{}", file.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    target.shutdown().await;
    let mut named = ManagedSpec::new("/bin/true", Vec::<String>::new());
    named.log = Some(dir.path().join("mine.log"));
    let mut target = Target::new(
        OwnTarget::new("named"),
        RestartAction::Managed(named),
        Readiness::None,
    );
    target.log_into(&logs);
    let spec = target.managed_spec().expect("a managed target");
    assert_eq!(
        spec.log.as_deref(),
        Some(dir.path().join("mine.log").as_path())
    );
}

#[tokio::test]
async fn a_failing_command_reports_its_exit_code_and_stderr() {
    let command = "echo first >&2; echo 'cannot restart: unit not found' >&2; exit 3";
    let mut target = Target::new(
        OwnTarget::new("gateway"),
        RestartAction::Command {
            command: command.into(),
            timeout: Duration::from_secs(10),
        },
        Readiness::None,
    );
    let outcome = target.restart("restart").await;
    assert!(!outcome.ok);
    assert_eq!(outcome.ready_ms, None);
    let detail = outcome.detail.unwrap();
    assert!(detail.contains(command), "{detail}");
    assert!(detail.contains("code 3"), "{detail}");
    assert!(detail.contains("unit not found"), "{detail}");
}

#[tokio::test]
async fn a_hanging_command_is_killed_at_its_timeout_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("echo $$ > {}; sleep 30 & wait", pid_file.display());
    let timeout = Duration::from_millis(400);
    let mut target = Target::new(
        OwnTarget::new("hang"),
        RestartAction::Command { command, timeout },
        Readiness::None,
    );
    let started = Instant::now();
    let outcome = target.restart("restart").await;
    let took = started.elapsed();
    assert!(!outcome.ok);
    assert!(took >= timeout, "{took:?}");
    assert!(took < timeout + Duration::from_millis(700), "{took:?}");
    assert!(outcome.restart_ms >= 400, "{outcome:?}");
    let detail = outcome.detail.unwrap();
    assert!(detail.contains("did not finish within 400 ms"), "{detail}");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        group_members(pgid).is_empty(),
        "the command's sleep survived"
    );
}

#[tokio::test]
async fn a_command_that_succeeds_then_readiness_that_never_comes() {
    let port = free_port().unwrap();
    let mut target = Target::new(
        OwnTarget::new("agent"),
        RestartAction::Command {
            command: "true".into(),
            timeout: Duration::from_secs(10),
        },
        Readiness::Tcp {
            addr: format!("127.0.0.1:{port}"),
        },
    )
    .with_ready_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let outcome = target.restart("restart").await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(!outcome.ok);
    assert_eq!(outcome.ready_ms, None);
    let detail = outcome.detail.unwrap();
    assert!(
        detail.contains(&format!("tcp 127.0.0.1:{port}")),
        "{detail}"
    );
    assert!(detail.contains("300 ms"), "{detail}");
    assert!(detail.to_lowercase().contains("refused"), "{detail}");
    assert!(
        detail.starts_with("the target did not come back within 300 ms"),
        "{detail}"
    );

    let e = target.prepare().await.unwrap_err().to_string();
    assert!(
        e.contains("`agent` is not ready") && e.contains("refused"),
        "{e}"
    );
}

#[tokio::test]
async fn http_readiness_reports_the_last_status() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(serve_statuses(listener, vec![503; 100]));
    let readiness = Readiness::http(format!("http://127.0.0.1:{port}/v1/health"));
    let e = readiness
        .wait(Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(e.last_error, "status 503");
    assert!(e.to_string().contains("/v1/health = 200"), "{e}");
    server.abort();
}

#[tokio::test]
async fn a_missing_pid_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("nginx.pid");
    let mut target = Target::new(
        OwnTarget::new("gateway"),
        RestartAction::Signal {
            pid_file: pid_file.clone(),
            signal: crate::signal::Signal::HUP,
        },
        Readiness::None,
    );
    let e = target.prepare().await.unwrap_err();
    assert!(
        matches!(
            &e,
            TargetError::Action {
                error: ActionError::PidFile { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("nginx.pid"), "{e}");
    let outcome = target.restart("restart").await;
    assert!(!outcome.ok);
    assert!(outcome.detail.unwrap().contains("nginx.pid"));
}

#[tokio::test]
async fn a_signal_reaches_the_process_in_the_pid_file() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("got-hup");
    let armed = dir.path().join("armed");
    // Python, not sh: a non-interactive sh cannot trap a signal that was
    // ignored when it started (as under `nohup`), while Python's handler
    // replaces any disposition. Like nginx, it renews its worker on SIGHUP,
    // which is what shows the reload happened. It says it is ready by
    // creating `armed`.
    let code = format!(
        "import signal, subprocess, time\n\
         worker = [subprocess.Popen(['sleep', '300'])]\n\
         def reload(*a):\n    \
             old = worker[0]\n    \
             worker[0] = subprocess.Popen(['sleep', '300'])\n    \
             old.kill()\n    \
             old.wait()\n    \
             open({marker:?}, 'w').close()\n\
         signal.signal(signal.SIGHUP, reload)\n\
         open({armed:?}, 'w').close()\n\
         while True: time.sleep(0.05)",
        marker = marker.display().to_string(),
        armed = armed.display().to_string(),
    );
    let mut spec = ManagedSpec::new("python3", ["-c".to_string(), code]);
    spec.log = Some(dir.path().join("log"));
    let mut holder = Target::new(
        OwnTarget::new("holder"),
        RestartAction::Managed(spec),
        Readiness::None,
    );
    holder.prepare().await.unwrap();
    let pid_file = dir.path().join("holder.pid");
    std::fs::write(&pid_file, format!("{}\n", holder.pid().unwrap())).unwrap();
    // The signal must find the handler installed (Python's default for
    // SIGHUP is to exit).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !armed.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(armed.exists(), "python never installed its handler");

    let mut target = Target::new(
        OwnTarget::new("gateway"),
        RestartAction::Signal {
            pid_file,
            signal: crate::signal::Signal::HUP,
        },
        Readiness::None,
    );
    target.prepare().await.unwrap();
    let outcome = target.restart("restart").await;
    assert!(outcome.ok, "{outcome:?}");
    // A bound, not a timing: a machine busy with a whole test run can put
    // the handler off for seconds.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marker.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alive = holder
        .pid()
        .is_some_and(|p| super::signal::process_exists(p as i32));
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    assert!(
        marker.exists(),
        "the process never saw SIGHUP: {outcome:?}; alive: {alive}; log: {log}"
    );
    holder.shutdown().await;
}

#[tokio::test]
async fn an_http_hook_checks_its_status() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(serve_statuses(listener, vec![204, 500]));
    let mut target = Target::new(
        OwnTarget::new("rivet"),
        RestartAction::Http {
            url: format!("http://127.0.0.1:{port}/restart"),
            method: "POST".into(),
            expect_status: Some(204),
            timeout: Duration::from_secs(5),
        },
        Readiness::None,
    );
    // The hook answered as expected, but without a probe nothing shows the
    // target going down and coming back.
    let unverified = target.restart("restart").await;
    assert!(!unverified.ok, "{unverified:?}");
    assert!(unverified
        .detail
        .unwrap()
        .contains("the restart cannot be verified"),);
    let outcome = target.restart("restart").await;
    assert!(!outcome.ok);
    let detail = outcome.detail.unwrap();
    assert!(detail.contains("answered 500, expected 204"), "{detail}");
    assert!(detail.contains("status-body"), "{detail}");
    server.abort();
}

#[test]
fn describe_is_one_readable_line() {
    let mut spec = ManagedSpec::new("sandbox-agent", ["server", "-p", "2468"].map(String::from));
    spec.grace = Duration::from_secs(5);
    let target = Target::new(
        OwnTarget::new("agent"),
        RestartAction::Managed(spec),
        Readiness::http("http://127.0.0.1:2468/v1/health"),
    );
    assert_eq!(target.kind(), RestartKind::Managed);
    assert_eq!(
        target.describe(),
        "managed: sandbox-agent server -p 2468 (SIGTERM, grace 5 s); \
         ready: http GET http://127.0.0.1:2468/v1/health = 200 within 30 s"
    );
    assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5 s");
}

/// Answers each connection with the next status in `statuses`.
async fn serve_statuses(listener: tokio::net::TcpListener, statuses: Vec<u16>) {
    for status in statuses {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut buf = [0u8; 4096];
        let _ = socket.read(&mut buf).await;
        let body = "status-body";
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
        let _ = socket.shutdown().await;
    }
}

#[tokio::test]
async fn stderr_cut_at_its_byte_limit_never_keeps_a_partial_line() {
    // 20 000 bytes on one line (the secret's tail at the cut), then a last
    // line: the kept 16 KiB start inside the first line, which is left out.
    let command = "printf 'SECRET-START-%s\\n' \"$(head -c 20000 /dev/zero | tr '\\0' x)SECRET-END\" >&2; echo 'the last line' >&2; exit 1";
    let mut target = Target::new(
        OwnTarget::new("cmd"),
        RestartAction::Command {
            command: command.into(),
            timeout: Duration::from_secs(10),
        },
        Readiness::None,
    );
    let detail = target.restart("restart").await.detail.unwrap();
    // The command itself is quoted first; what follows is the stderr kept.
    assert_eq!(
        detail.rsplit("; stderr: ").next(),
        Some("the last line"),
        "{detail}"
    );
    assert_eq!(
        command::last_lines(b"partial line\nwhole\n", 10, true),
        "whole"
    );
    assert_eq!(command::last_lines(b"a\nb\nc", 2, false), "b\nc");
}

/// A switched target runs the other program from then on, restarts
/// included, and the old process's group is gone.
#[tokio::test]
async fn a_managed_target_switches_its_program_and_keeps_it_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    // Each start notes which shell ran it (dash sets no BASH_VERSION).
    let script = format!(
        "echo \"shell=${{BASH_VERSION:-dash}}\" >> starts; exec {} -m http.server --bind 127.0.0.1 {port}",
        python()
    );
    let mut spec = ManagedSpec::new("/usr/bin/dash", ["-c".to_string(), script]);
    spec.cwd = Some(dir.path().to_path_buf());
    spec.log = Some(dir.path().join("server.log"));
    spec.grace = Duration::from_secs(2);
    let readiness = Readiness::Tcp {
        addr: format!("127.0.0.1:{port}"),
    };
    let mut target = Target::new(
        OwnTarget::new("server"),
        RestartAction::Managed(spec),
        readiness,
    )
    .with_ready_timeout(Duration::from_secs(15));
    target.prepare().await.expect("prepare");
    let first = target.pid().expect("running") as i32;
    target
        .switch_program("/usr/bin/bash".into())
        .await
        .expect("switch");
    assert!(group_members(first).is_empty(), "the old process survived");
    let outcome = target.restart("restart").await;
    assert!(outcome.ok, "{outcome:?}");
    target.shutdown().await;
    let starts = std::fs::read_to_string(dir.path().join("starts")).unwrap();
    let shells: Vec<bool> = starts.lines().map(|l| l == "shell=dash").collect();
    assert_eq!(shells, [true, false, false], "{starts}");

    let mut hook = Target::new(
        OwnTarget::new("hook"),
        RestartAction::Command {
            command: "true".into(),
            timeout: Duration::from_secs(1),
        },
        Readiness::None,
    );
    assert!(hook.switch_program("/usr/bin/bash".into()).await.is_err());
}

/// An echo server on loopback, for a fault proxy to stand in front of.
async fn echo_upstream() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = socket.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

fn down_for(hold: Duration) -> RestartAction {
    let toxic = crate::faults::parse_toxic("down", &[]).unwrap();
    RestartAction::Fault(FaultAction {
        hop: crate::faults::LocalHop::Gateway.into(),
        toxic,
        hold,
    })
}

#[tokio::test]
async fn a_fault_target_opens_a_window_that_settle_heals() {
    let upstream = echo_upstream().await;
    let proxy = crate::faults::FaultProxy::start(
        crate::faults::LocalHop::Gateway.into(),
        "127.0.0.1:0".parse().unwrap(),
        upstream,
    )
    .unwrap();
    let trace = crate::trace::Trace::detached();
    let mut target = Target::new(
        OwnTarget::new("gateway-down"),
        down_for(Duration::from_secs(60)),
        Readiness::None,
    )
    .with_fault_proxy(proxy.control());
    target.set_trace(trace.clone());
    target.prepare().await.unwrap();
    let outcome = target.restart("restart").await;
    assert!(outcome.ok, "{outcome:?}");
    assert_eq!(outcome.action, "fault");
    // In force after the phase: the hop refuses connections.
    let refused = tokio::time::timeout(Duration::from_secs(5), async {
        while tokio::net::TcpStream::connect(proxy.addr()).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(refused.is_ok(), "the hop went down");
    assert!(trace.snapshot().faults[0].active);
    // The cell's phases are over: it heals long before its 60 s.
    target.settle().await.unwrap();
    assert!(!trace.snapshot().faults[0].active);
    let back = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(mut c) = tokio::net::TcpStream::connect(proxy.addr()).await {
                c.write_all(b"x").await.unwrap();
                let mut b = [0u8; 1];
                c.read_exact(&mut b).await.unwrap();
                break b;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(&back, b"x");
}

#[tokio::test]
async fn a_fault_whose_proxy_stopped_is_the_harnesss_error() {
    let upstream = echo_upstream().await;
    let proxy = crate::faults::FaultProxy::start(
        crate::faults::LocalHop::Gateway.into(),
        "127.0.0.1:0".parse().unwrap(),
        upstream,
    )
    .unwrap();
    let mut target = Target::new(
        OwnTarget::new("gateway-down"),
        down_for(Duration::from_secs(60)),
        Readiness::None,
    )
    .with_fault_proxy(proxy.control());
    assert!(target.restart("restart").await.ok);
    drop(proxy);
    let e = target.settle().await.unwrap_err().to_string();
    assert!(
        e.contains("the fault proxy of the gateway hop has stopped"),
        "{e}"
    );
    // A restart now fails, saying why; so does a target with no proxy at all.
    let outcome = target.restart("restart").await;
    assert!(!outcome.ok && outcome.detail.unwrap().contains("has stopped"));
    let mut orphan = Target::new(
        OwnTarget::new("x"),
        down_for(Duration::from_secs(1)),
        Readiness::None,
    );
    let e = orphan.prepare().await.unwrap_err().to_string();
    assert!(e.contains("the gateway hop has no fault proxy here"), "{e}");
}

/// Servers a [`LeftDown`] holds: down once taken down, nothing brings them back.
struct Holds(Option<&'static str>);

#[async_trait::async_trait]
impl LeftDown for Holds {
    async fn take_down(&self) -> Result<String, ActionError> {
        self.0.map(str::to_string).ok_or(ActionError::NothingDown {
            reason: "no server running".into(),
        })
    }
    fn describe(&self) -> String {
        "test servers".into()
    }
}

/// A left-down restart is done once its servers went down: no probe is
/// waited for (nothing the harness does brings them back); with nothing
/// to take down it fails, saying so.
#[tokio::test]
async fn a_left_down_restart_reports_how_it_went_down_and_waits_for_nothing() {
    let target = |holds| {
        Target::new(
            OwnTarget::new("kill"),
            RestartAction::LeftDown(LeftDownControl(std::sync::Arc::new(holds))),
            Readiness::None,
        )
    };
    let mut down = target(Holds(Some("s1: killed by SIGKILL, refused")));
    let restarted = down.restart("restart").await;
    assert!(restarted.ok, "{restarted:?}");
    assert_eq!(restarted.action, "left_down");
    assert_eq!(
        restarted.down.as_deref(),
        Some("s1: killed by SIGKILL, refused")
    );
    assert_eq!(restarted.ready_ms, None);
    let mut none = target(Holds(None));
    let failed = none.restart("restart").await;
    assert!(!failed.ok);
    assert_eq!(
        failed.detail.as_deref(),
        Some("nothing to take down: no server running")
    );
    assert!(none.describe().starts_with("left down: test servers"));
}

/// A timeout target's timeout is in force from the cell's start to its
/// phases' end: the idle cut closes a silent connection on its hop, the
/// window is the trace's, and the cell's `restart` restarts nothing.
#[tokio::test]
async fn a_timeout_target_is_in_force_for_the_whole_cell() {
    let upstream = echo_upstream().await;
    let proxy = crate::faults::FaultProxy::start(
        crate::faults::LocalHop::Gateway.into(),
        "127.0.0.1:0".parse().unwrap(),
        upstream,
    )
    .unwrap();
    let limit = Duration::from_millis(300);
    let cut = PathTimeout::IdleCut {
        hop: crate::faults::LocalHop::Gateway.into(),
        limit,
    };
    let trace = crate::trace::Trace::detached();
    let mut target = Target::new(
        OwnTarget::new("idle"),
        RestartAction::Timeout(cut),
        Readiness::None,
    )
    .with_fault_proxy(proxy.control());
    target.set_trace(trace.clone());
    target.prepare().await.unwrap();
    target.begin_cell(7);
    assert!(
        trace.snapshot().faults[0].active,
        "in force from the cell's start"
    );
    let mut quiet = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    let mut buf = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(5), quiet.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0))),
        "a silent connection is cut: {closed:?}"
    );
    let outcome = target.restart("restart").await;
    assert!(outcome.ok && outcome.down.is_none(), "{outcome:?}");
    assert_eq!(outcome.action, "timeout");
    target.settle().await.unwrap();
    let window = &trace.snapshot().faults[0];
    assert_eq!(
        (window.toxic.as_str(), window.active, window.closes),
        ("idle_cut", false, 1)
    );
    // The cleanup runs without it: a connection now stays open past the limit.
    let mut later = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    let silent = tokio::time::timeout(limit * 2, later.read(&mut buf)).await;
    assert!(silent.is_err(), "{silent:?}");

    // The client's header timeout is a marked window, carried to the cell's clients.
    let mut client = Target::new(
        OwnTarget::new("headers"),
        RestartAction::Timeout(PathTimeout::ClientHeaders { limit }),
        Readiness::None,
    );
    let trace = crate::trace::Trace::detached();
    client.set_trace(trace.clone());
    client.begin_cell(1);
    assert_eq!(client.client_headers_timeout(), Some(limit));
    assert_eq!(trace.snapshot().faults[0].toxic, "headers_timeout");
    client.settle().await.unwrap();
    assert!(!trace.snapshot().faults[0].active);
}
