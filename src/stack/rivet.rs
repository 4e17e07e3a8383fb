//! The Rivet layer of the local stack: a Rivet Engine (the binary shipped in
//! `@rivetkit/engine-cli-linux-x64-musl`) and a RivetKit runner (Node, the app
//! in `stack/rivet/`) whose actor `persist` holds the clients' session records
//! and events. Both are restart targets: `rivet` restarts the runner,
//! `rivet-engine` the engine. The engine always starts first and must be
//! healthy: a runner that finds none spawns its own on the default ports,
//! which would outlive it; that engine inherits the run's owner tag, and the
//! teardown's sweep finds it by that tag (never by its name).
//!
//! Over 400 lines on purpose: the engine and the runner are started,
//! restarted and torn down in one order by one `RivetStack` (the engine
//! healthy first, or the runner spawns one of its own), with the app it runs
//! embedded here (`app_files`), which the tests below check along with the
//! persist driver; the hosted SDK's contract tests are apart
//! (`rivet/hosted_contract.rs`).

use super::npm;
use super::progress::{blocking_with_notes, Note, Progress};
use super::StackError;
use crate::faults::LocalHop;
use crate::persist::PersistFactory;
use crate::persist::{PersistDriver, RivetConfig, RivetDriver};
use crate::signal::Signal;
use crate::supervise::{free_port, Supervisor};
use crate::targets::{Afresh, BuiltinTarget, ManagedSpec, Readiness, RestartAction, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const PACKAGE_JSON: &str = include_str!("../../stack/rivet/package.json");
const PACKAGE_LOCK: &str = include_str!("../../stack/rivet/package-lock.json");
const SERVER: &str = include_str!("../../stack/rivet/server.mjs");
const SDK_CLIENT: &str = include_str!("../../stack/rivet/sdk-client.mjs");
const RECORDS: &str = include_str!("../../stack/rivet/records.mjs");
const DRIVERS: &str = include_str!("../../stack/rivet/drivers.mjs");
const WIRE: &str = include_str!("../../stack/rivet/wire.mjs");
// What the SDK handed its application and stored, with digests (both hosts).
const LEDGER: &str = include_str!("../../stack/rivet/ledger.mjs");
const SDK_STEPS: &str = include_str!("../../stack/rivet/sdk-steps.mjs");
// The stack's own SandboxProvider and the reconnect route, shared by both hosts.
const SANDBOX_PROVIDER: &str = include_str!("../../stack/rivet/sandbox-provider.mjs");
/// The `sandbox-agent` SDK version `package.json` and its lock pin.
pub(crate) const PINNED_SDK_VERSION: &str = "0.4.2";
/// The Rivet layer's hops, each with a fault proxy: the runner's link to
/// the engine, and the persist driver's.
pub(crate) const HOPS: [LocalHop; 2] = [LocalHop::Runner, LocalHop::Persist];
const ENGINE_CONFIG: &str = include_str!("../../stack/rivet/engine.json.example");
const ENGINE_PACKAGE: &str = "@rivetkit/engine-cli-linux-x64-musl";

const READY_TIMEOUT: Duration = Duration::from_secs(60);
const ENGINE_RESTART_READY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a persist call waits for the actor through a restart.
const PERSIST_RETRY_FOR: Duration = Duration::from_secs(30);

/// What the Rivet app hosts beside the `persist` actor: whether the
/// hosted SQLite driver's native module is built (its SDK is the pinned
/// one; the hosted client's cells import their SDK point's module).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HostedApp {
    pub native_sqlite: bool,
}

/// How the actor saves its state (the `CONTINUITY_RIVET_SAVE` knob of the app).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SaveMode {
    /// `await c.saveState({ immediate: true })` after every write: survives SIGKILL.
    Immediate,
    /// RivetKit's periodic save, here every 60 s so that a crash loses the
    /// writes since the last save every time, not by chance.
    Deferred,
}

impl SaveMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SaveMode::Immediate => "immediate",
            SaveMode::Deferred => "deferred",
        }
    }
}

/// How the `rivet` target stops the RivetKit runner before starting it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RunnerStop {
    /// SIGKILL: a crash. Pending state is lost unless saved at once, and
    /// the live clients an actor holds die without a word.
    #[default]
    Kill,
    /// SIGTERM: RivetKit's shutdown (its grace period), actors put to sleep.
    Graceful,
}

impl RunnerStop {
    fn signal(self) -> Signal {
        match self {
            RunnerStop::Kill => Signal::KILL,
            RunnerStop::Graceful => Signal::TERM,
        }
    }
}

/// `node`, or the message naming the install command.
pub(crate) fn find_node() -> Result<PathBuf, StackError> {
    npm::which("node").ok_or_else(|| {
        StackError::NotInstalled(
            "node is not installed (Debian: apt-get install -y nodejs npm)".into(),
        )
    })
}

/// A running engine + runner pair.
pub(crate) struct RivetStack {
    endpoint: String,
    /// Where the persist driver reaches the engine: the `persist` hop.
    persist_endpoint: String,
    key: String,
    engine: Option<Target>,
    runner: Option<Target>,
    logs: Vec<(String, PathBuf)>,
}

/// Where the Rivet layer's processes are supervised and its hops proxied.
pub(crate) struct Wiring<'a> {
    pub supervisor: &'a Supervisor,
    pub hops: &'a mut super::hops::Hops,
}

/// The app's folder, installed (once); with the hosted SQLite driver's
/// native module built when `app` asks for it. The hosted SQLite driver
/// loads better-sqlite3; only a ts-sdk × sqlite run pays for building it
/// (once per app slot). A failed build leaves those cells failing with the
/// reason, nothing else.
async fn prepare_app(app: HostedApp, progress: &mut Progress<'_>) -> Result<PathBuf, StackError> {
    let HostedApp { native_sqlite } = app;
    let app = install_app(progress).await?;
    if native_sqlite {
        let app = app.clone();
        let built = blocking_with_notes(progress, move |note| {
            npm::ensure_native_module(&app, "better-sqlite3", note)
        })
        .await?;
        if let Err(reason) = built {
            progress(Note::step(format!(
                "the hosted sqlite driver cannot run: {reason}"
            )));
        }
    }
    Ok(app)
}

/// The engine's config in `dir`, on free loopback ports: its guard port
/// (where actors are called) and the file's path.
fn write_engine_config(dir: &Path) -> Result<(u16, PathBuf), StackError> {
    let (guard, api_peer, metrics) = (free_port()?, free_port()?, free_port()?);
    let config = ENGINE_CONFIG
        .replace("{{DATA_DIR}}", &engine_data(dir).display().to_string())
        .replace("{{GUARD_PORT}}", &guard.to_string())
        .replace("{{API_PEER_PORT}}", &api_peer.to_string())
        .replace("{{METRICS_PORT}}", &metrics.to_string());
    let config_path = dir.join("engine.json");
    std::fs::write(&config_path, config).map_err(StackError::io(format!(
        "cannot write {}",
        config_path.display()
    )))?;
    Ok((guard, config_path))
}

/// Where the engine in `dir` keeps its data.
fn engine_data(dir: &Path) -> PathBuf {
    dir.join("engine-data")
}

/// The `rivet-engine` target, ready when `/health` answers (until
/// [`RivetStack::start`] asks for the actor instead); started afresh on
/// an empty data folder, seen booting by `/health`, when its restarts do
/// not bring its actors back ([`crate::targets::Afresh`]).
fn engine_target(
    engine_bin: PathBuf,
    config_path: &Path,
    dir: &Path,
    endpoint: &str,
    log: &Path,
) -> Target {
    let health = Readiness::http(format!("{endpoint}/health"));
    Target::new(
        BuiltinTarget::RivetEngine,
        RestartAction::Managed(ManagedSpec {
            program: engine_bin,
            args: vec![
                "--config".into(),
                config_path.display().to_string(),
                "start".into(),
            ],
            env: vec![],
            cwd: Some(dir.to_path_buf()),
            log: Some(log.to_path_buf()),
            stop_signal: Signal::TERM,
            grace: Duration::from_secs(10),
        }),
        health.clone(),
    )
    .with_ready_timeout(READY_TIMEOUT)
    // Clients talk to sandbox-agent through the gateway, never to Rivet.
    .keeping_open_requests()
    .with_afresh(Afresh {
        data: engine_data(dir),
        boot: health,
    })
}

/// The runner's environment: the engine (through the runner hop) and the
/// actor's save mode.
fn runner_env(runner_endpoint: String, save: SaveMode) -> Vec<(String, String)> {
    let mut runner_env = vec![
        ("RIVET_ENDPOINT".to_string(), runner_endpoint),
        ("RIVET_RUN_SERVICES".to_string(), "0".to_string()),
        (
            "CONTINUITY_RIVET_SAVE".to_string(),
            save.as_str().to_string(),
        ),
    ];
    if save == SaveMode::Deferred {
        runner_env.push(("CONTINUITY_RIVET_SAVE_INTERVAL_MS".into(), "60000".into()));
    }
    runner_env
}

/// Ready means the cells' actor answers, not merely that node started.
fn actor_answers(endpoint: &str, key: &str) -> Result<Readiness, StackError> {
    let probe = RivetDriver::new(RivetConfig {
        endpoint: endpoint.to_string(),
        namespace: "default".into(),
        key: key.to_string(),
        retry_for: Duration::ZERO,
    })?;
    Ok(Readiness::HttpPost {
        url: probe.action_url("getSession"),
        body: r#"{"args":["readiness-probe"]}"#.into(),
        headers: vec![("x-rivet-encoding".into(), "json".into())],
        expect_status: 200,
        interval: Duration::from_millis(100),
    })
}

impl RivetStack {
    /// Installs the app (once), starts the engine, waits for `/health`, then the
    /// runner, and waits until the actor answers an action. The app's own
    /// `sandbox-agent` SDK is the pinned one; the hosted client's cells
    /// import theirs by path ([`super::sdk`]), so one runner hosts every
    /// point of the SDK axis.
    pub(crate) async fn up(
        dir: &Path,
        node: &Path,
        save: SaveMode,
        runner_stop: RunnerStop,
        app: HostedApp,
        wiring: Wiring<'_>,
        progress: &mut Progress<'_>,
    ) -> Result<RivetStack, StackError> {
        let Wiring { supervisor, hops } = wiring;
        std::fs::create_dir_all(dir)
            .map_err(StackError::io(format!("cannot create {}", dir.display())))?;
        // The engine runs in `dir`; given a config path it cannot open, it would
        // fall back to its defaults (every interface, port 6420).
        let dir = &std::path::absolute(dir).map_err(StackError::io(dir.display().to_string()))?;
        let app = prepare_app(app, progress).await?;
        let engine_bin = app
            .join("node_modules")
            .join(ENGINE_PACKAGE)
            .join("rivet-engine");
        npm::make_executable(&engine_bin)?;

        let (guard, config_path) = write_engine_config(dir)?;
        let endpoint = format!("http://127.0.0.1:{guard}");
        // The runner and the persist driver reach the engine through their hops.
        let [runner_hop, persist_hop] = HOPS;
        let runner_endpoint = format!("http://127.0.0.1:{}", hops.front(runner_hop, guard)?);
        let persist_endpoint = format!("http://127.0.0.1:{}", hops.front(persist_hop, guard)?);
        let key = format!(
            "continuity-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );

        let engine_log = dir.join("rivet-engine.log");
        let engine = engine_target(engine_bin, &config_path, dir, &endpoint, &engine_log)
            .supervised_by(supervisor.clone());
        let runner_log = dir.join("rivet-runner.log");
        let actor_answers = actor_answers(&endpoint, &key)?;
        let runner = Target::new(
            BuiltinTarget::Rivet,
            RestartAction::Managed(ManagedSpec {
                program: node.to_path_buf(),
                args: vec![app.join("server.mjs").display().to_string()],
                env: runner_env(runner_endpoint, save),
                // The run folder, so its processes are found by where they run.
                cwd: Some(dir.to_path_buf()),
                log: Some(runner_log.clone()),
                // A crash by default, not a shutdown: a graceful stop saves
                // pending state in either save mode, so only SIGKILL tells the
                // modes apart (`--rivet-stop graceful` asks for the shutdown).
                stop_signal: runner_stop.signal(),
                grace: Duration::from_secs(10),
            }),
            actor_answers.clone(),
        )
        .with_ready_timeout(READY_TIMEOUT)
        .keeping_open_requests()
        .supervised_by(supervisor.clone());

        let mut stack = RivetStack {
            endpoint,
            persist_endpoint,
            key,
            engine: Some(engine),
            runner: Some(runner),
            logs: vec![
                ("rivet-engine".into(), engine_log),
                ("rivet-runner".into(), runner_log),
            ],
        };
        stack.start(save, actor_answers, progress).await?;
        Ok(stack)
    }

    /// Starts the engine, then the runner; from then on an engine restart
    /// is ready when the actor answers.
    async fn start(
        &mut self,
        save: SaveMode,
        actor_answers: Readiness,
        progress: &mut Progress<'_>,
    ) -> Result<(), StackError> {
        progress(Note::step(format!(
            "starting Rivet Engine on {}",
            self.endpoint
        )));
        if let Some(engine) = self.engine.as_mut() {
            engine.prepare().await?;
        }
        progress(Note::step(format!(
            "starting the RivetKit runner (actor save mode: {})",
            save.as_str()
        )));
        if let Some(runner) = self.runner.as_mut() {
            runner.prepare().await?;
        }
        // An engine restart is over when the runner has reconnected and the
        // actor answers again, not when `/health` does: RivetKit's envoy client
        // reconnects with a backoff (1 s, doubling to 30 s, reset only after a
        // connection lasted 60 s), so with restarts less than a minute apart
        // `/health` comes back seconds before the actor does. Waiting here puts
        // that time in the restart's `readyMs`, where it belongs, instead of in
        // the next phase's persistence calls.
        if let Some(engine) = self.engine.as_mut() {
            engine.readiness = actor_answers;
            // The backoff tops out at 30 s (+25 % jitter), and a call held by
            // the engine meanwhile takes up to ~18 s to fail.
            engine.ready_timeout = ENGINE_RESTART_READY_TIMEOUT;
        }
        Ok(())
    }

    /// The engine's guard endpoint, where actor actions are called.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The engine and runner targets; the stack keeps nothing running after this.
    pub(crate) fn targets(&mut self) -> (Target, Target) {
        (
            self.engine.take().expect("targets() is called once"),
            self.runner.take().expect("targets() is called once"),
        )
    }

    /// (target, program, URL, log) of the engine and the runner.
    pub(crate) fn components(&self) -> Vec<(String, String, String, PathBuf)> {
        vec![
            (
                BuiltinTarget::RivetEngine.name().into(),
                "rivet-engine".into(),
                self.endpoint.clone(),
                self.logs[0].1.clone(),
            ),
            (
                BuiltinTarget::Rivet.name().into(),
                "node (RivetKit runner)".into(),
                format!("actor {}", crate::persist::rivet::ACTOR),
                self.logs[1].1.clone(),
            ),
        ]
    }

    pub(crate) fn logs(&self) -> Vec<(String, PathBuf)> {
        self.logs.clone()
    }

    /// Every cell's persist store: the one actor this stack made for the run,
    /// through one driver, so the actor id it learns serves every cell.
    pub(crate) fn persist_factory(&self) -> PersistFactory {
        let driver = RivetDriver::new(RivetConfig {
            endpoint: self.persist_endpoint.clone(),
            namespace: "default".into(),
            key: self.key.clone(),
            retry_for: PERSIST_RETRY_FOR,
        })
        .map(Arc::new);
        Arc::new(move |_cell: &str| match &driver {
            Ok(driver) => Ok(Arc::clone(driver) as Arc<dyn PersistDriver>),
            Err(e) => Err(e.clone()),
        })
    }

    /// Stops what the stack still holds. An engine a runner spawned is found
    /// by the owner tag it inherited ([`crate::supervise::owner::sweep`]), never by name.
    pub(crate) async fn down(&mut self) {
        for target in [self.runner.as_mut(), self.engine.as_mut()]
            .into_iter()
            .flatten()
        {
            target.shutdown().await;
        }
    }
}

/// The app's files, its lock pinning every package.
fn app_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("package.json", PACKAGE_JSON),
        ("package-lock.json", PACKAGE_LOCK),
        ("server.mjs", SERVER),
        ("sdk-client.mjs", SDK_CLIENT),
        ("records.mjs", RECORDS),
        ("drivers.mjs", DRIVERS),
        ("wire.mjs", WIRE),
        ("ledger.mjs", LEDGER),
        ("sdk-steps.mjs", SDK_STEPS),
        ("sandbox-provider.mjs", SANDBOX_PROVIDER),
    ]
}

/// Installs the app (once per content) and returns its folder.
pub(crate) async fn install_app(progress: &mut Progress<'_>) -> Result<PathBuf, StackError> {
    blocking_with_notes(progress, move |note| {
        npm::ensure_app_installed("rivet-app", &app_files(), note)
    })
    .await?
}

#[cfg(test)]
mod afresh_tests;
#[cfg(test)]
mod churn_tests;
#[cfg(test)]
pub(crate) mod hosted_contract;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_app_pins_the_sdk_version() {
        assert!(PACKAGE_JSON.contains(&format!("\"sandbox-agent\": \"{PINNED_SDK_VERSION}\"")));
        assert!(PACKAGE_LOCK.contains(&format!(
            "\"node_modules/sandbox-agent\": {{\n      \"version\": \"{PINNED_SDK_VERSION}\""
        )));
    }

    /// A real engine and runner in `dir` (immediate saves, SIGKILL restarts).
    pub(super) async fn real_stack(dir: &std::path::Path) -> RivetStack {
        let node = npm::which("node")
            .expect("the Rivet layer needs node: apt-get install -y nodejs npm (.ci/run does)");
        RivetStack::up(
            dir,
            &node,
            SaveMode::Immediate,
            RunnerStop::Kill,
            HostedApp::default(),
            Wiring {
                supervisor: &Supervisor::default(),
                hops: &mut super::super::hops::Hops::default(),
            },
            &mut |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("the Rivet layer would not start: {e}"))
    }

    /// The store the local stack actually uses meets the same contract as
    /// the memory and SQLite drivers, against a real engine and runner.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_rivet_driver_passes_the_persist_contract() {
        let dir = tempfile::tempdir().unwrap();
        let mut stack = real_stack(dir.path()).await;
        let driver = (stack.persist_factory())("contract").expect("a driver for the run's actor");
        // Whatever the contract finds, the engine and runner are stopped first.
        let checked = tokio::spawn(async move {
            // A finding, pinned: the engine sorts payload keys, so anything
            // that re-serialises a stored envelope sees another byte order.
            use crate::persist::contract::{check_driver_with, PayloadKeys};
            check_driver_with(driver.as_ref(), PayloadKeys::Sorted).await;
        })
        .await;
        stack.down().await;
        if let Err(failure) = checked {
            std::panic::resume_unwind(failure.into_panic());
        }
    }

    /// Calls by actor id, against the real engine: the id learnt from the
    /// first answer keeps serving across a runner SIGKILL and an engine
    /// restart, and an id the engine calls stale (a destroyed actor's, as
    /// the engine really answers it) sends the call back through the key.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_by_actor_id_survive_restarts_and_stale_ids_resolve_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut stack = real_stack(dir.path()).await;
        let config = RivetConfig {
            endpoint: stack.endpoint.clone(),
            namespace: "default".into(),
            key: stack.key.clone(),
            retry_for: PERSIST_RETRY_FOR,
        };
        let (mut engine, mut runner) = stack.targets();
        // Errors, not panics, until both targets are stopped.
        let checked: Result<(), String> = async {
            let driver = RivetDriver::new(config.clone()).map_err(|e| e.to_string())?;
            let record = crate::persist::contract::record("s1", 1);
            let read = |driver: RivetDriver| async move {
                match driver.get_session("s1").await {
                    Ok(Some(found)) if found.id == "s1" => Ok(()),
                    other => Err(format!("getSession s1: {other:?}")),
                }
            };
            if driver.known_actor_id().is_some() {
                return Err("an id before any answer".into());
            }
            driver
                .update_session(record)
                .await
                .map_err(|e| e.to_string())?;
            let id = driver
                .known_actor_id()
                .ok_or("the first answer named no actor")?;
            for target in [&mut runner, &mut engine] {
                let restarted = target.restart("restart").await;
                if !restarted.ok {
                    return Err(format!("restart failed: {restarted:?}"));
                }
                read(driver.clone()).await?;
                if driver.known_actor_id().as_deref() != Some(id.as_str()) {
                    return Err(format!(
                        "the id changed: {:?} != {id}",
                        driver.known_actor_id()
                    ));
                }
            }
            // Another key's actor, destroyed: its id is stale for good.
            let other = RivetDriver::new(RivetConfig {
                key: format!("{}-gone", config.key),
                ..config.clone()
            })
            .map_err(|e| e.to_string())?;
            other.get_session("x").await.map_err(|e| e.to_string())?;
            let gone = other.known_actor_id().ok_or("no id for the other actor")?;
            let deleted = reqwest::Client::new()
                .delete(format!(
                    "{}/actors/{gone}?namespace=default",
                    config.endpoint
                ))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !deleted.status().is_success() {
                return Err(format!("DELETE the other actor: {}", deleted.status()));
            }
            driver.remember(gone.clone());
            read(driver.clone()).await?;
            match driver.known_actor_id() {
                Some(now) if now == id => Ok(()),
                now => Err(format!("after the stale {gone}: {now:?}, expected {id}")),
            }
        }
        .await;
        runner.shutdown().await;
        engine.shutdown().await;
        checked.unwrap();
    }
}
