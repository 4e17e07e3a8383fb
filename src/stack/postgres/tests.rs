//! The Postgres component against the real server from Debian's packages,
//! and the Rust driver on it: the persist contract, a restart, bad input.

use super::*;
use crate::persist::contract;
use crate::persist::PageRequest;

/// A folder Postgres's unprivileged user can reach (a temp dir is 0700).
fn reachable_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755).unwrap();
    dir
}

fn bin() -> PathBuf {
    find_bin_dir().unwrap_or_else(|e| panic!("these tests need the real Postgres: {e}"))
}

async fn real(dir: &Path) -> PostgresStack {
    PostgresStack::up(
        &dir.join("postgres"),
        &bin(),
        PostgresOptions::default(),
        &mut |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("Postgres would not start: {e}"))
}

fn driver(stack: &PostgresStack, key: &str) -> Arc<dyn PersistDriver> {
    (stack.persist_factory())(key).unwrap()
}

/// Runs `check` and stops the server whatever it found.
async fn with_server<F, Fut>(check: F)
where
    F: FnOnce(PostgresStack) -> Fut,
    Fut: std::future::Future<Output = PostgresStack> + Send + 'static,
{
    let dir = reachable_tempdir();
    let stack = real(dir.path()).await;
    let log = stack.log().to_path_buf();
    let pid = stack.target.as_ref().and_then(Target::pid);
    let checked = tokio::spawn(check(stack)).await;
    if let Some(pid) = pid {
        crate::supervise::kill_group(pid as i32);
    }
    if let Err(failure) = checked {
        eprintln!(
            "postgres log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::panic::resume_unwind(failure.into_panic());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_driver_passes_the_persist_contract() {
    with_server(|mut stack| async move {
        contract::check_driver(driver(&stack, "contract").as_ref()).await;
        // Another cell's schema sees none of it.
        let other = driver(&stack, "other-cell");
        assert!(other.get_session("s1").await.unwrap().is_none());
        stack.down().await;
        stack
    })
    .await;
}

/// The `store` target stops the server (fast shutdown) and starts it on
/// the same port and data: what was written is there, a call made while it
/// was down failed naming the driver, and the same driver reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_data_and_the_driver_reconnects() {
    with_server(|mut stack| async move {
        let store = driver(&stack, "restart");
        store
            .update_session(contract::record("s", 1))
            .await
            .unwrap();
        store
            .insert_event("s", contract::event("s", 1))
            .await
            .unwrap();
        let mut target = stack.target();
        let port = stack.port();
        let stopped = tokio::spawn({
            let store = Arc::clone(&store);
            async move {
                // Lands while the server is down or restarting.
                tokio::time::sleep(Duration::from_millis(150)).await;
                store.insert_event("s", contract::event("s", 2)).await
            }
        });
        let restarted = target.restart("restart").await;
        assert!(restarted.ok, "{restarted:?}");
        assert_eq!(stack.port(), port);
        let during = stopped.await.unwrap();
        let events = store
            .list_events("s", PageRequest::default())
            .await
            .unwrap();
        let indexes: Vec<i64> = events.items.iter().map(|e| e.event_index).collect();
        match during {
            Ok(()) => assert_eq!(indexes, [1, 2]),
            Err(e) => {
                assert_eq!(e.driver, "postgres", "{e}");
                assert_eq!(indexes, [1], "a failed write is not in the history");
            }
        }
        assert_eq!(
            store.get_session("s").await.unwrap(),
            Some(contract::record("s", 1))
        );
        target.shutdown().await;
        stack
    })
    .await;
}

/// A store that starts refusing writes mid-run (a trigger raising, as a
/// read-only or full database would): each write fails at once with the
/// server's words, naming the driver; reads go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_refuses_writes_fails_each_write_clearly() {
    with_server(|mut stack| async move {
        let store = driver(&stack, "refusing");
        store
            .insert_event("s", contract::event("s", 1))
            .await
            .unwrap();
        let (admin, connection) =
            tokio_postgres::connect(&stack.connection(), tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        admin
            .batch_execute(
                "CREATE FUNCTION c_refusing.refuse() RETURNS trigger LANGUAGE plpgsql AS
                   $$ BEGIN RAISE EXCEPTION 'the store refuses writes'; END $$;
                 CREATE TRIGGER refuse BEFORE INSERT ON c_refusing.events
                   FOR EACH ROW EXECUTE FUNCTION c_refusing.refuse();",
            )
            .await
            .unwrap();
        let e = store
            .insert_event("s", contract::event("s", 2))
            .await
            .unwrap_err();
        assert!(!e.is_index_conflict());
        assert!(
            e.to_string()
                .starts_with("persist (postgres): insertEvent: ERROR: the store refuses writes"),
            "{e}"
        );
        let events = store
            .list_events("s", PageRequest::default())
            .await
            .unwrap();
        assert_eq!(events.items.len(), 1);
        stack.down().await;
        stack
    })
    .await;
}

#[test]
fn a_missing_postgres_names_its_install_command() {
    let e = bin_dir_from(Some("/nonexistent/postgres/bin".into())).unwrap_err();
    assert!(matches!(e, StackError::NotInstalled(_)), "{e}");
    assert!(
        e.to_string().contains("apt-get install -y postgresql"),
        "{e}"
    );
    assert!(e.to_string().contains("no initdb"), "{e}");
}

/// Bad input at start: a port another program holds, a data folder that
/// is not one. Each is a clear error naming Postgres, within the start's
/// bound, and nothing of it is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_that_cannot_start_is_a_clear_error_and_leaves_nothing() {
    let dir = reachable_tempdir();
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap().port();
    let started = std::time::Instant::now();
    let e = PostgresStack::up(
        &dir.path().join("taken"),
        &bin(),
        PostgresOptions {
            port: Some(taken),
            ..Default::default()
        },
        &mut |_| {},
    )
    .await
    .err()
    .expect("the port is taken");
    let text = e.to_string();
    assert!(text.contains("target `store`"), "{text}");
    assert!(text.contains("Address already in use"), "{text}");
    // The process's failure ends the wait: its probe's deadline is not
    // waited out.
    assert!(
        text.contains("its process failed before its probe passed"),
        "{text}"
    );
    assert!(started.elapsed() < FIRST_READY_TIMEOUT, "{text}");

    let bad = dir.path().join("bad");
    std::fs::create_dir_all(bad.join("data")).unwrap();
    std::fs::write(bad.join("data/stray-file"), "not a database").unwrap();
    let e = PostgresStack::up(&bad, &bin(), PostgresOptions::default(), &mut |_| {})
        .await
        .err()
        .expect("the data folder is not a cluster");
    let text = e.to_string();
    assert!(text.starts_with("Postgres: initdb"), "{text}");
    assert!(text.contains("not empty"), "{text}");

    let left = processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn as_root_it_runs_as_an_unprivileged_user_through_setpriv() {
    let user = RunAs {
        name: "postgres".into(),
        uid: 101,
        gid: 104,
    };
    let (program, args) = command(
        Some(&user),
        Path::new("/pg/bin/postgres"),
        vec!["-D".into()],
    );
    assert_eq!(program, Path::new("setpriv"));
    assert_eq!(
        args,
        [
            "--reuid=101",
            "--regid=104",
            "--clear-groups",
            "--",
            "/pg/bin/postgres",
            "-D"
        ]
    );
    let (program, args) = command(None, Path::new("/pg/bin/postgres"), vec!["-D".into()]);
    assert_eq!(
        (program.as_path(), args.len()),
        (Path::new("/pg/bin/postgres"), 1)
    );
    let closed = reachable_tempdir();
    let inner = closed.path().join("x/data");
    std::fs::create_dir_all(&inner).unwrap();
    set_mode(&closed.path().join("x"), 0o700).unwrap();
    let nobody = RunAs {
        name: "nobody".into(),
        uid: 65534,
        gid: 65534,
    };
    let e = check_reachable(&inner, &nobody).unwrap_err().to_string();
    assert!(
        e.contains("cannot reach its data folder") && e.contains("chmod o+x"),
        "{e}"
    );
}

/// Processes whose command line names `dir`.
fn processes_in(dir: &Path) -> Vec<String> {
    let dir = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline
                .contains(&dir)
                .then(|| format!("{}: {cmdline}", entry.path().display()))
        })
        .collect()
}
