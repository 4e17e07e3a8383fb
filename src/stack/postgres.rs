//! The session store's server: PostgreSQL from Debian's packages
//! (`/usr/lib/postgresql/N/bin`), a child process of the stack with its own
//! data folder (`STACK/postgres/data`), a free port on 127.0.0.1, its Unix
//! socket in its own folder and no system service. It is the `store`
//! restart target: a fast shutdown (SIGINT: clients are disconnected,
//! nothing is lost that was committed), then a start on the same port and
//! data. One database (`continuity`) per stack; each cell keeps its tables
//! in a schema of its own.
//!
//! Postgres refuses to run as root. The harness runs as root in CI, so as
//! root it runs `initdb` and `postgres` as the `postgres` system user that
//! Debian's package creates (`nobody` where there is none), through
//! `setpriv` (util-linux), with the data and socket folders given to that
//! user. Every folder above them must let that user pass (`o+x`); one that
//! does not is named in the error.
//!
//! Over 400 lines on purpose: running Postgres as root through another user
//! reaches every step (finding the binaries, `initdb`, the folders' owner
//! and modes, the start and the restart), so `RunAs` and the reachability
//! checks go through the one start path with the server's.

use super::StackError;
use crate::persist::{PersistDriver, PersistFactory, PostgresConfig, PostgresDriver};
use crate::signal::Signal;
use crate::supervise::free_port;
use crate::targets::{ManagedSpec, Readiness, RestartAction, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The install command a missing Postgres is named with.
pub(crate) const INSTALL: &str = "apt-get install -y postgresql";
/// The superuser `initdb` makes, and the database each stack gets.
pub(crate) const USER: &str = "continuity";
pub(crate) const DATABASE: &str = "continuity";
/// Where Debian's packages put the server's programs, one folder per major version.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";
/// The programs the component needs in that folder.
const PROGRAMS: [&str; 3] = ["initdb", "postgres", "pg_isready"];

const FIRST_READY_TIMEOUT: Duration = Duration::from_secs(20);
const RESTART_READY_TIMEOUT: Duration = Duration::from_secs(30);
const INITDB_TIMEOUT: Duration = Duration::from_secs(120);
/// From the fast-shutdown signal to SIGKILL of the group.
const GRACE: Duration = Duration::from_secs(10);

/// The folder holding `initdb`, `postgres` and `pg_isready`:
/// `$CONTINUITY_POSTGRES_BIN` when set, else Debian's newest version.
pub(crate) fn find_bin_dir() -> Result<PathBuf, StackError> {
    bin_dir_from(std::env::var_os("CONTINUITY_POSTGRES_BIN").map(PathBuf::from))
}

fn bin_dir_from(chosen: Option<PathBuf>) -> Result<PathBuf, StackError> {
    if let Some(dir) = chosen {
        return match missing_program(&dir) {
            None => Ok(dir),
            Some(program) => Err(StackError::NotInstalled(format!(
                "Postgres is not installed at CONTINUITY_POSTGRES_BIN={} (no {program}; Debian: {INSTALL})",
                dir.display()
            ))),
        };
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            missing_program(&bin).is_none().then_some((major, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        StackError::NotInstalled(format!(
            "Postgres is not installed (no {DEBIAN_ROOT}/*/bin/postgres; Debian: {INSTALL})"
        ))
    })
}

fn missing_program(dir: &Path) -> Option<&'static str> {
    PROGRAMS.into_iter().find(|p| !dir.join(p).is_file())
}

/// The unprivileged account a root harness runs Postgres as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
}

/// `postgres` (Debian's package makes it), else `nobody`; `None` when not root.
fn run_as() -> Option<RunAs> {
    if !crate::supervise::os::is_root() {
        return None;
    }
    ["postgres", "nobody"].into_iter().find_map(lookup_user)
}

fn lookup_user(name: &str) -> Option<RunAs> {
    let (uid, gid) = crate::supervise::os::user_ids(name)?;
    Some(RunAs {
        name: name.to_string(),
        uid,
        gid,
    })
}

/// `program args…`, or through `setpriv` as `user` when the harness is root.
fn command(user: Option<&RunAs>, program: &Path, args: Vec<String>) -> (PathBuf, Vec<String>) {
    match user {
        None => (program.to_path_buf(), args),
        Some(user) => {
            let mut wrapped = vec![
                format!("--reuid={}", user.uid),
                format!("--regid={}", user.gid),
                "--clear-groups".into(),
                "--".into(),
                program.display().to_string(),
            ];
            wrapped.extend(args);
            (PathBuf::from("setpriv"), wrapped)
        }
    }
}

/// What a stack's Postgres is asked to do differently (tests of bad input).
#[derive(Debug, Clone, Default)]
pub(crate) struct PostgresOptions {
    /// Listen here instead of a free port.
    pub port: Option<u16>,
    /// The run's owner tag and keeper (the stack's journal with it).
    pub supervisor: crate::supervise::Supervisor,
}

/// The data folder (made by `initdb` once) and the socket folder, owned
/// by the user Postgres runs as (`None`: this one), which is returned.
async fn prepare_data(
    dir: &Path,
    data: &Path,
    socket: &Path,
    bin: &Path,
    progress: &mut super::progress::Progress<'_>,
) -> Result<Option<RunAs>, StackError> {
    for folder in [dir, data, socket] {
        std::fs::create_dir_all(folder).map_err(StackError::io(format!(
            "cannot create {}",
            folder.display()
        )))?;
    }
    let user = run_as();
    if let Some(user) = &user {
        check_reachable(data, user)?;
        for folder in [data, socket] {
            give_to(folder, user)?;
        }
    }
    set_mode(data, 0o700)?;
    if !data.join("PG_VERSION").is_file() {
        progress(super::progress::Note::step(format!(
            "initialising the Postgres data folder {}",
            data.display()
        )));
        initdb(bin, data, dir, user.as_ref()).await?;
    }
    Ok(user)
}

/// The server's command line (through the user it runs as): loopback
/// only, its socket in the stack's folder.
fn server_command(
    user: Option<&RunAs>,
    bin: &Path,
    data: &Path,
    socket: &Path,
    port: u16,
) -> (PathBuf, Vec<String>) {
    let args = vec![
        "-D".into(),
        data.display().to_string(),
        "-p".into(),
        port.to_string(),
        "-c".into(),
        "listen_addresses=127.0.0.1".into(),
        "-c".into(),
        format!("unix_socket_directories={}", socket.display()),
        "-c".into(),
        "max_connections=50".into(),
    ];
    command(user, &bin.join("postgres"), args)
}

/// Ready when `pg_isready` says the server takes connections.
fn accepts_connections(bin: &Path, port: u16) -> Readiness {
    Readiness::Command {
        program: bin.join("pg_isready"),
        args: vec![
            "-q".into(),
            "-h".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-t".into(),
            "1".into(),
        ],
        interval: Duration::from_millis(100),
    }
}

/// A running Postgres of one stack.
pub(crate) struct PostgresStack {
    port: u16,
    log: PathBuf,
    target: Option<Target>,
}

impl PostgresStack {
    /// Makes the data folder (`initdb`, once), starts the server, waits
    /// until it takes connections and makes the stack's database.
    pub(crate) async fn up(
        dir: &Path,
        bin: &Path,
        options: PostgresOptions,
        progress: &mut super::progress::Progress<'_>,
    ) -> Result<PostgresStack, StackError> {
        let dir = std::path::absolute(dir).map_err(StackError::io(dir.display().to_string()))?;
        let (data, socket) = (dir.join("data"), dir.join("socket"));
        let user = prepare_data(&dir, &data, &socket, bin, progress).await?;
        let port = match options.port {
            Some(port) => port,
            None => free_port()?,
        };
        let log = dir.join("postgres.log");
        let (program, args) = server_command(user.as_ref(), bin, &data, &socket, port);
        let ready = accepts_connections(bin, port);
        let mut target = Target::new(
            crate::targets::BuiltinTarget::Store,
            RestartAction::Managed(ManagedSpec {
                program,
                args,
                env: vec![],
                cwd: Some(dir.clone()),
                log: Some(log.clone()),
                // Postgres's fast shutdown: SIGTERM would wait for every
                // client to leave (a pool never does).
                stop_signal: Signal::INT,
                grace: GRACE,
            }),
            ready,
        )
        .with_ready_timeout(FIRST_READY_TIMEOUT)
        // The store is off the path of the clients' requests to sandbox-agent.
        .keeping_open_requests()
        .supervised_by(options.supervisor.clone());
        progress(super::progress::Note::step(format!(
            "starting Postgres on 127.0.0.1:{port}"
        )));
        target.prepare().await?;
        target.ready_timeout = RESTART_READY_TIMEOUT;
        let mut stack = PostgresStack {
            port,
            log,
            target: Some(target),
        };
        if let Err(e) = stack.create_database().await {
            stack.down().await;
            return Err(e);
        }
        Ok(stack)
    }

    /// `CREATE DATABASE continuity`, unless a kept data folder has it already.
    async fn create_database(&self) -> Result<(), StackError> {
        let failed = |source| StackError::CreateDatabase {
            port: self.port,
            database: DATABASE,
            source,
        };
        let (client, connection) = tokio_postgres::connect(
            &format!(
                "host=127.0.0.1 port={} user={USER} dbname=postgres",
                self.port
            ),
            tokio_postgres::NoTls,
        )
        .await
        .map_err(failed)?;
        let connection = tokio::spawn(connection);
        let exists = client
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DATABASE])
            .await
            .map_err(failed)?
            .is_some();
        if !exists {
            client
                .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
                .await
                .map_err(failed)?;
        }
        drop(client);
        let _ = connection.await;
        Ok(())
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn log(&self) -> &Path {
        &self.log
    }

    /// The libpq connection string of the stack's database.
    pub(crate) fn connection(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user={USER} dbname={DATABASE}",
            self.port
        )
    }

    /// The same as a URL, as `pg` (Node) takes it.
    pub(crate) fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// A store per cell: the stack's database, the cell's own schema.
    pub(crate) fn persist_factory(&self) -> PersistFactory {
        let connection = self.connection();
        Arc::new(move |key: &str| {
            PostgresDriver::new(PostgresConfig {
                connection: connection.clone(),
                schema: crate::persist::postgres_schema_for(key),
            })
            .map(|d| Arc::new(d) as Arc<dyn PersistDriver>)
        })
    }

    /// The `store` target; the stack keeps nothing running after this.
    pub(crate) fn target(&mut self) -> Target {
        self.target.take().expect("target() is called once")
    }

    /// Stops the server if the stack still holds it.
    pub(crate) async fn down(&mut self) {
        if let Some(target) = self.target.as_mut() {
            target.shutdown().await;
        }
    }
}

/// `initdb` as `user`: a `continuity` superuser trusted on loopback only
/// (the server listens nowhere else), UTF-8, C locale.
async fn initdb(
    bin: &Path,
    data: &Path,
    cwd: &Path,
    user: Option<&RunAs>,
) -> Result<(), StackError> {
    let args = vec![
        "-D".into(),
        data.display().to_string(),
        "-U".into(),
        USER.into(),
        "--auth=trust".into(),
        "-E".into(),
        "UTF8".into(),
        "--locale=C".into(),
        "--no-sync".into(),
        "--no-instructions".into(),
    ];
    let (program, args) = command(user, &bin.join("initdb"), args);
    let child = tokio::process::Command::new(&program)
        .args(&args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(StackError::io(format!("cannot run {}", program.display())))?;
    let out = match tokio::time::timeout(INITDB_TIMEOUT, child.wait_with_output()).await {
        Ok(out) => out.map_err(StackError::io("waiting for initdb"))?,
        Err(_) => {
            return Err(StackError::Failed(format!(
                "Postgres: initdb {} did not finish within {} s",
                data.display(),
                INITDB_TIMEOUT.as_secs()
            )))
        }
    };
    if out.status.success() {
        return Ok(());
    }
    // initdb's own error lines say why; its progress goes to stdout.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("error") || l.contains("FATAL"))
        .collect();
    let why = match errors.is_empty() {
        false => errors.join(" "),
        true => stderr.lines().rev().take(3).collect::<Vec<_>>().join(" "),
    };
    Err(StackError::Failed(format!(
        "Postgres: initdb {} failed ({}): {}",
        data.display(),
        out.status,
        why.trim()
    )))
}

/// Every folder above `path` must let `user` pass: Postgres opens its data
/// folder by path after dropping root.
fn check_reachable(path: &Path, user: &RunAs) -> Result<(), StackError> {
    use std::os::unix::fs::MetadataExt;
    for ancestor in path.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.mode();
        let passes = if meta.uid() == user.uid {
            mode & 0o100 != 0
        } else if meta.gid() == user.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !passes {
            return Err(StackError::Failed(format!(
                "Postgres refuses to run as root, so it runs as user `{}`, who cannot reach its data folder {}: {} is mode {:o} (give others search permission, `chmod o+x {}`, or put the run folder elsewhere with --out)",
                user.name,
                path.display(),
                ancestor.display(),
                mode & 0o7777,
                ancestor.display()
            )));
        }
    }
    Ok(())
}

fn give_to(folder: &Path, user: &RunAs) -> Result<(), StackError> {
    std::os::unix::fs::chown(folder, Some(user.uid), Some(user.gid)).map_err(StackError::io(
        format!("cannot give {} to user {}", folder.display(), user.name),
    ))
}

fn set_mode(folder: &Path, mode: u32) -> Result<(), StackError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(mode))
        .map_err(StackError::io(format!("cannot chmod {}", folder.display())))
}

#[cfg(test)]
mod tests;
