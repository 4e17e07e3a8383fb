//! The local stack `continuity run` brings up when no deployment is given:
//! sandbox-agent (its `mock` agent is `continuity agent`), an nginx gateway in
//! front of it, and the Rivet layer that persists session history — each a
//! real program in its own process group on a free loopback port, each a
//! restart target. A component whose program is missing is reported as a
//! skipped target with the install command, never silently dropped.
//!
//! Over 400 lines on purpose: one `LocalStack` starts the components in the
//! order they depend on (the Rivet layer, Postgres, sandbox-agent and its
//! agents, the gateway, the browser) and registers each restart, fault and
//! timeout target against the one record of what it started (ports,
//! processes, hops, skipped targets) that its teardown reads again; the
//! target recipe adds its wiring here (ARCHITECTURE.md, "A restart target"),
//! and each component's own start is apart (`rivet.rs`, `postgres.rs`,
//! `sdk.rs`, `browser.rs`, `nginx.rs`, `sandbox_agent.rs`, `agents.rs`,
//! `fault_targets.rs`, `nemesis_targets.rs`).

use super::nginx::{self, GatewayConfig};
use super::postgres::{PostgresOptions, PostgresStack};
use super::progress::{blocking_with_notes, Note, Progress};
use super::rivet::{self, RivetStack};
use super::sandbox_agent::{self, SandboxAgentConfig};
pub(crate) use super::state::Component;
use super::state::StackJournal;
use super::StackError;
use crate::client::hosted::Unhosted;
use crate::faults::{Hop, LocalHop};
use crate::persist::{StackStores, StoreAbsent};
use crate::report::LogFile;
use crate::signal::Signal;
use crate::supervise::{free_port, Supervisor};
use crate::targets::{
    BuiltinTarget, FaultAction, ManagedSpec, OwnTarget, Readiness, RestartAction, Selection,
    Target, TargetId, Unavailable,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A target of the local stack as `continuity list` shows it: who it
/// is and what it does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KnownTarget {
    pub id: TargetId,
    pub what: String,
}

/// Every target of the local stack, in the report's order: the built-in
/// restarts and faults, then the config file's own faults (`custom`).
pub(crate) fn known_targets(custom: &[(OwnTarget, FaultAction)]) -> Vec<KnownTarget> {
    let builtin = BuiltinTarget::ALL.into_iter().map(|b| KnownTarget {
        id: b.into(),
        what: b.describe(),
    });
    let own = custom.iter().map(|(name, f)| KnownTarget {
        id: name.clone().into(),
        what: format!("{} (config file)", f.describe()),
    });
    builtin.chain(own).collect()
}

/// How long sandbox-agent has to answer `/v1/health` after a start.
pub(crate) const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(30);
const READY_TIMEOUT: Duration = SERVER_READY_TIMEOUT;
/// How long the session actor may take to answer after a fault on the
/// Rivet hops heals: the runner's reconnect backoff tops out at 30 s
/// (+25 % jitter), as after an engine restart.
const AFTER_HEAL_RIVET_TIMEOUT: Duration = Duration::from_secs(90);
const AGENT_GRACE: Duration = Duration::from_secs(3);

/// How to bring the stack up.
#[derive(Debug, Clone)]
pub(crate) struct StackOptions {
    pub run_dir: PathBuf,
    /// The sandbox-agent it comes up running.
    pub server: StackServer,
    /// The `continuity` binary, for the agent launcher.
    pub agent_program: PathBuf,
    /// The targets the run has; every component still starts.
    pub selection: Selection,
    /// How the Rivet actor saves state.
    pub rivet_save: rivet::SaveMode,
    /// How the `rivet` target stops the RivetKit runner.
    pub rivet_stop: rivet::RunnerStop,
    /// Real agents to install and wire behind sandbox-agent (`mock` is always there).
    pub agents: Vec<String>,
    /// Start the Postgres store server (`--persist postgres`).
    pub postgres: bool,
    /// Build better-sqlite3 for the hosted client's SQLite driver (`--client ts-sdk --persist sqlite`).
    pub hosted_sqlite: bool,
    /// Prepare the browser client (`--client browser`): Chromium, the
    /// bundled page app and its server, whose origin sandbox-agent allows.
    pub browser: bool,
    /// The run's owner tag and keeper; the stack adds its own journal.
    pub supervisor: Supervisor,
    /// A fault proxy on each hop (a run), or none (`stack up`, whose
    /// stack outlives the harness process the proxies live in).
    pub fault_proxies: bool,
    /// The config file's own fault targets on the stack's hops.
    pub custom_faults: Vec<(OwnTarget, FaultAction)>,
    /// The run's phase deadline (`--timeout-ms`): a long pause outlasts it.
    pub phase_deadline: Duration,
}

/// The sandbox-agent a stack comes up running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StackServer {
    /// A registry version, installed into the shared cache as the stack comes up.
    Version(String),
    /// A binary installed or given already: a run's first server point,
    /// so no other version is installed or announced.
    Binary(PathBuf),
}

/// Where the hosted TypeScript SDK client runs: the engine endpoint its
/// actor is called through (each cell's actor imports its SDK point's
/// module, see [`super::sdk`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SdkHost {
    pub endpoint: String,
}

/// A running local stack.
pub(crate) struct LocalStack {
    /// Where clients connect: through the gateway when it runs.
    pub base_url: String,
    /// The selected restart targets, ready (the runner takes them).
    pub targets: Vec<Target>,
    /// Targets that cannot run here, with the reason.
    pub skipped: Vec<Unavailable>,
    pub server_version: Option<String>,
    /// The scripted agent's record of the chunks it streamed.
    pub agent_sent_log: Option<PathBuf>,
    /// What runs where, for `stack up` and `stack status`.
    pub components: Vec<Component>,
    /// Components not selected as targets, still running, stopped by `down`.
    background: Vec<Target>,
    rivet: Option<RivetStack>,
    logs: Vec<(String, PathBuf)>,
    /// The sandbox-agent's `XDG_DATA_HOME`: what its orphaned PTY processes carry.
    agent_data: Option<PathBuf>,
    /// The fake model provider the real agents use, and its call log.
    provider: Option<crate::provider::FakeProvider>,
    pub model_calls: Option<crate::provider::ModelCalls>,
    /// Real agents that could not be installed or wired: (agent, reason).
    pub agent_skips: Vec<(String, String)>,
    /// The mark in every launched agent process's environment.
    owner: String,
    /// The hosted SDK client's actor, or why it cannot run.
    pub sdk_host: Result<SdkHost, Unhosted>,
    /// The stores this stack provides (its Rivet actor, its Postgres).
    pub stores: StackStores,
    /// The RivetKit runner, when the `client` target needs it and `rivet` is not a target.
    pub sdk_process: Option<Target>,
    /// Where the browser client runs, or why it cannot.
    pub browser_host: Result<super::browser::BrowserHost, Unhosted>,
    page_server: Option<super::browser::PageServer>,
    postgres: Option<PostgresStack>,
    /// This stack's `stack.json`, written as components start and stop.
    journal: StackJournal,
    /// The fault proxies on the stack's hops.
    hops: super::hops::Hops,
    /// Its parts that run as processes (nginx), watched by every target's cells.
    parts: Vec<crate::supervise::part::PartProcess>,
    /// The back end of its sandbox provider (the SDK's `SandboxAgent.start`).
    pub sandboxes: Option<super::sandboxes::Sandboxes>,
}

/// The gateway's nginx folder in a stack's folder: its config, logs, pid file.
fn gateway_prefix(run_dir: &Path) -> PathBuf {
    run_dir.join("gateway")
}

fn managed(spec: crate::supervise::ProcessSpec, grace: Duration) -> RestartAction {
    RestartAction::Managed(ManagedSpec {
        program: spec.program,
        args: spec.args,
        env: spec.env,
        cwd: spec.cwd,
        log: Some(spec.log),
        stop_signal: Signal::TERM,
        grace,
    })
}

impl LocalStack {
    /// Installs what is missing (npm packages into the cache), starts every
    /// component in order and waits until each is ready. The folder's
    /// `stack.json` is written before the first component starts.
    pub(crate) async fn up(
        options: StackOptions,
        progress: &mut Progress<'_>,
    ) -> Result<LocalStack, StackError> {
        let (mut stack, supervisor, binary) = Self::begin(&options, progress).await?;
        stack.start_postgres(&options, &supervisor, progress).await;
        if options.browser {
            stack.prepare_browser(&supervisor, progress).await;
        }
        // Rivet first: the clients' persist store must be up before any session exists.
        stack.start_rivet(&options, &supervisor, progress).await;
        let agent_hop = stack
            .start_agent(binary.clone(), &options, &supervisor, progress)
            .await?;
        stack.start_sandboxes(binary, &options, &supervisor).await?;
        stack
            .start_gateway(agent_hop, &options, &supervisor, progress)
            .await?;
        stack.add_client_target(&options);
        stack
            .add_timeout_targets(agent_hop, &options, &supervisor, progress)
            .await;
        stack.add_nemesis_targets(&options);
        stack.add_fault_targets(&options);
        Ok(stack)
    }

    /// Before any component starts: the run folder, its `stack.json`, the
    /// supervisor that journals into it, the sandbox-agent binary (installed
    /// when missing), and a stack with nothing running yet.
    async fn begin(
        options: &StackOptions,
        progress: &mut Progress<'_>,
    ) -> Result<(LocalStack, Supervisor, PathBuf), StackError> {
        std::fs::create_dir_all(&options.run_dir).map_err(StackError::io(format!(
            "cannot create {}",
            options.run_dir.display()
        )))?;
        let journal = StackJournal::begin(
            &options.run_dir,
            options.supervisor.owner_tag().unwrap_or_default(),
        )?;
        let supervisor = options
            .supervisor
            .with_journal(std::sync::Arc::new(journal.clone()));
        let binary = match options.server.clone() {
            StackServer::Binary(binary) => binary,
            StackServer::Version(version) => {
                blocking_with_notes(progress, move |note| sandbox_agent::install(&version, note))
                    .await??
            }
        };
        let mut stack = LocalStack {
            base_url: String::new(),
            targets: Vec::new(),
            skipped: Vec::new(),
            server_version: sandbox_agent::binary_version(&binary),
            agent_sent_log: None,
            components: Vec::new(),
            background: Vec::new(),
            rivet: None,
            logs: Vec::new(),
            agent_data: None,
            provider: None,
            model_calls: None,
            agent_skips: Vec::new(),
            owner: format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()),
            sdk_host: Err(Unhosted("the Rivet layer is not running".into())),
            stores: StackStores::default(),
            sdk_process: None,
            browser_host: Err(Unhosted(
                "the browser client runs with --client browser only".into(),
            )),
            page_server: None,
            postgres: None,
            journal,
            hops: super::hops::Hops::new(options.fault_proxies && super::hops::proxies_wanted()),
            parts: Vec::new(),
            sandboxes: None,
        };
        stack.stores.rivet = Err(StoreAbsent::skipped("the Rivet layer is not running"));
        Ok((stack, supervisor, binary))
    }

    /// The Rivet Engine and its runner (the `rivet-engine` and `rivet`
    /// targets, the Rivet store, the hosted SDK's actor), or why they cannot
    /// run: skipped without Node, an error when they would not start.
    async fn start_rivet(
        &mut self,
        options: &StackOptions,
        supervisor: &Supervisor,
        progress: &mut Progress<'_>,
    ) {
        let node = match rivet::find_node() {
            Ok(node) => node,
            Err(reason) => {
                let reason = reason.to_string();
                self.stores.rivet = Err(StoreAbsent::skipped(reason.clone()));
                self.sdk_host = Err(Unhosted(reason.clone()));
                for hop in rivet::HOPS {
                    self.hops.absent(hop, &reason);
                }
                self.skipped
                    .push(Unavailable::skipped(BuiltinTarget::Rivet, &reason));
                self.skipped
                    .push(Unavailable::skipped(BuiltinTarget::RivetEngine, &reason));
                return;
            }
        };
        match RivetStack::up(
            &options.run_dir.join("rivet"),
            &node,
            options.rivet_save,
            options.rivet_stop,
            rivet::HostedApp {
                native_sqlite: options.hosted_sqlite,
            },
            rivet::Wiring {
                supervisor,
                hops: &mut self.hops,
            },
            progress,
        )
        .await
        {
            Err(reason) => {
                let reason = reason.to_string();
                self.stores.rivet = Err(StoreAbsent {
                    reason: format!("the Rivet layer did not start: {reason}"),
                    failed: true,
                });
                self.sdk_host = Err(Unhosted(format!("the Rivet layer did not start: {reason}")));
                for hop in rivet::HOPS {
                    self.hops
                        .absent(hop, &format!("the Rivet layer did not start: {reason}"));
                }
                // The other layers can still be tested; cells use SQLite instead.
                progress(Note::step(format!(
                    "the Rivet layer did not start: {reason}"
                )));
                self.skipped
                    .push(Unavailable::failed(BuiltinTarget::Rivet, &reason));
                self.skipped
                    .push(Unavailable::failed(BuiltinTarget::RivetEngine, &reason));
            }
            Ok(rivet) => self.adopt_rivet(rivet, options),
        }
    }

    /// Takes in a Rivet layer that started: its logs, components, store,
    /// the hosted SDK's endpoint and its two restart targets.
    fn adopt_rivet(&mut self, mut rivet: RivetStack, options: &StackOptions) {
        self.logs.extend(rivet.logs());
        for (target, program, url, log) in rivet.components() {
            self.components.push(Component {
                target,
                program,
                url,
                log,
                pid: None,
                started: None,
            });
        }
        self.stores.rivet = Ok(rivet.persist_factory());
        self.sdk_host = Ok(SdkHost {
            endpoint: rivet.endpoint().to_string(),
        });
        let (engine, runner) = rivet.targets();
        self.add(engine, options);
        self.add(runner, options);
        self.rivet = Some(rivet);
    }

    /// The sandbox-agent server (the `agent` target) with the real agents
    /// wired behind it, and the agent hop in front of it. Returns the agent
    /// hop's port, which the gateway forwards to.
    async fn start_agent(
        &mut self,
        binary: PathBuf,
        options: &StackOptions,
        supervisor: &Supervisor,
        progress: &mut Progress<'_>,
    ) -> Result<u16, StackError> {
        let agent_port = free_port()?;
        let agent = SandboxAgentConfig {
            binary,
            run_dir: options.run_dir.join("sandbox-agent"),
            agent_program: options.agent_program.clone(),
            agent_env: Vec::new(),
            port: Some(agent_port),
            cors_origin: self.page_server.as_ref().map(|p| p.origin()),
        };
        let agent_spec = agent.prepare(agent_port)?;
        self.agent_data = Some(agent.run_dir.join("data"));
        self.agent_sent_log = Some(agent.agent_sent_path());
        self.wire_agents(options, &agent.run_dir, progress).await?;
        self.logs
            .push(("sandbox-agent".into(), agent_spec.log.clone()));
        let agent_url = format!("http://127.0.0.1:{agent_port}");
        let mut agent_target = Target::new(
            BuiltinTarget::Agent,
            managed(agent_spec, AGENT_GRACE),
            Readiness::http(format!("{agent_url}/v1/health")),
        )
        .with_ready_timeout(READY_TIMEOUT)
        .with_after_stop(super::agent_wiring::sweep(&self.owner))
        .supervised_by(supervisor.clone());
        // A binary's `--version` says "sandbox-agent X": the name once.
        let version = self.server_version.as_deref().unwrap_or("");
        let version = version.strip_prefix("sandbox-agent ").unwrap_or(version);
        progress(Note::step(format!(
            "starting sandbox-agent {version} on {agent_url}"
        )));
        agent_target.prepare().await?;
        self.components.push(Component {
            target: BuiltinTarget::Agent.name().into(),
            program: "sandbox-agent".into(),
            url: agent_url.clone(),
            log: self.logs.last().map(|l| l.1.clone()).unwrap_or_default(),
            pid: agent_target.pid(),
            started: None,
        });
        self.add(agent_target, options);
        // The gateway (or, without one, the clients) reach sandbox-agent through the agent hop.
        let agent_hop = self.hops.front(LocalHop::Agent, agent_port)?;
        self.base_url = format!("http://127.0.0.1:{agent_hop}");

        Ok(agent_hop)
    }

    /// The back end of the stack's sandbox provider, whose sandboxes run
    /// `binary` with the scripted agent, and the `server-kill` target that
    /// takes their servers down and leaves them down.
    async fn start_sandboxes(
        &mut self,
        binary: PathBuf,
        options: &StackOptions,
        supervisor: &Supervisor,
    ) -> Result<(), StackError> {
        let template = SandboxAgentConfig {
            binary,
            run_dir: options.run_dir.join("sandboxes"),
            agent_program: options.agent_program.clone(),
            agent_env: Vec::new(),
            port: None,
            cors_origin: self.page_server.as_ref().map(|p| p.origin()),
        };
        let sandboxes = super::sandboxes::Sandboxes::start(template, supervisor.clone()).await?;
        let control = crate::targets::LeftDownControl(std::sync::Arc::new(sandboxes.clone()));
        self.add(
            Target::new(
                BuiltinTarget::ServerKill,
                RestartAction::LeftDown(control),
                Readiness::None,
            ),
            options,
        );
        self.sandboxes = Some(sandboxes);
        Ok(())
    }

    /// The real agents behind sandbox-agent and the fake model provider
    /// they call, when any is asked for.
    async fn wire_agents(
        &mut self,
        options: &StackOptions,
        agent_dir: &Path,
        progress: &mut Progress<'_>,
    ) -> Result<(), StackError> {
        let wired = super::agent_wiring::wire_agents(
            &options.agents,
            &options.run_dir,
            agent_dir,
            &self.owner,
            progress,
        )
        .await?;
        if let Some(wired) = wired {
            self.components.push(Component {
                target: "provider".into(),
                program: "fake model provider".into(),
                url: wired.provider.base_url(),
                log: wired.log.clone(),
                // In the harness's own process: nothing for `stack down` to signal.
                pid: None,
                started: None,
            });
            self.logs.push(("provider".into(), wired.log));
            self.model_calls = Some(wired.provider.calls());
            self.provider = Some(wired.provider);
            self.agent_skips.extend(wired.skips);
        }
        Ok(())
    }

    /// The nginx gateway in front of the agent hop (the `gateway`,
    /// `gateway-reload` and reload-race targets), or why it cannot run.
    async fn start_gateway(
        &mut self,
        agent_hop: u16,
        options: &StackOptions,
        supervisor: &Supervisor,
        progress: &mut Progress<'_>,
    ) -> Result<(), StackError> {
        let binary = match nginx::find_binary() {
            Ok(binary) => binary,
            Err(reason) => {
                let reason = reason.to_string();
                self.hops.absent(LocalHop::Gateway, &reason);
                self.skipped
                    .push(Unavailable::skipped(BuiltinTarget::Gateway, &reason));
                self.skipped
                    .push(Unavailable::skipped(BuiltinTarget::GatewayReload, &reason));
                self.skipped.push(Unavailable::skipped(
                    BuiltinTarget::GatewayReloadIdle,
                    &reason,
                ));
                return Ok(());
            }
        };
        let gateway = GatewayConfig {
            binary,
            prefix: gateway_prefix(&options.run_dir),
            listen_port: free_port()?,
            upstream_port: agent_hop,
            read_timeout: nginx::READ_TIMEOUT,
        };
        let spec = gateway.prepare()?;
        self.logs
            .push(("nginx".into(), gateway.prefix.join("error.log")));
        let mut target = Target::new(
            BuiltinTarget::Gateway,
            managed(spec, Duration::from_secs(5)),
            Readiness::http(gateway.health_url()),
        )
        .with_ready_timeout(READY_TIMEOUT)
        .supervised_by(supervisor.clone());
        progress(Note::step(format!(
            "starting nginx gateway on {}",
            gateway.base_url()
        )));
        target.prepare().await?;
        self.components.push(Component {
            target: BuiltinTarget::Gateway.name().into(),
            program: "nginx".into(),
            url: gateway.base_url(),
            log: gateway.prefix.join("error.log"),
            pid: target.pid(),
            started: None,
        });
        self.add(target, options);
        self.parts.push(crate::supervise::part::PartProcess::new(
            crate::errors::HarnessPart::Nginx,
            gateway.prefix.join("nginx.pid"),
        ));
        let reload = Target::new(
            BuiltinTarget::GatewayReload,
            RestartAction::Signal {
                pid_file: gateway.prefix.join("nginx.pid"),
                signal: Signal::HUP,
            },
            Readiness::http(gateway.health_url()),
        )
        .with_ready_timeout(READY_TIMEOUT)
        .keeping_open_requests()
        .supervised_by(supervisor.clone());
        self.add(reload, options);
        // Clients reach the gateway through the gateway hop.
        let gateway_hop = self.hops.front(LocalHop::Gateway, gateway.listen_port)?;
        self.base_url = format!("http://127.0.0.1:{gateway_hop}{}", nginx::ROUTE);
        self.add_reload_race(&gateway, options, supervisor);
        Ok(())
    }

    /// The `client` target, which restarts what holds the SDK; for a
    /// hosted client that is the RivetKit runner, kept here when `rivet`
    /// itself is not a target.
    fn add_client_target(&mut self, options: &StackOptions) {
        self.add(
            Target::new(
                BuiltinTarget::Client,
                RestartAction::Clients,
                Readiness::None,
            )
            .keeping_open_requests(),
            options,
        );
        // The `client` target of a hosted client restarts the runner.
        let selection = &options.selection;
        if selection.includes(&BuiltinTarget::Client.into())
            && !selection.includes(&BuiltinTarget::Rivet.into())
        {
            self.sdk_process = self.take_background(BuiltinTarget::Rivet);
        }
    }

    /// The timeout targets the run selects: the gateway's read timeout on an
    /// nginx of its own (started only then, forwarding to the agent hop),
    /// the idle cut on the gateway hop's proxy, the client's header
    /// timeout (the cell's clients carry it). Each one that cannot run here
    /// is unavailable, saying why.
    async fn add_timeout_targets(
        &mut self,
        agent_hop: u16,
        options: &StackOptions,
        supervisor: &Supervisor,
        progress: &mut Progress<'_>,
    ) {
        use crate::targets::PathTimeout;
        for builtin in BuiltinTarget::ALL {
            let Some(timeout) = builtin.timeout() else {
                continue;
            };
            if !options.selection.includes(&builtin.into()) {
                continue;
            }
            let target = Target::new(
                builtin,
                RestartAction::Timeout(timeout.clone()),
                Readiness::None,
            )
            .keeping_open_requests();
            let placed = match &timeout {
                PathTimeout::GatewayRead { limit } => self
                    .start_timeout_gateway(agent_hop, *limit, options, supervisor, progress)
                    .await
                    .map(|url| target.with_cell_base_url(url)),
                PathTimeout::IdleCut { hop, .. } => match self.hops.control(hop) {
                    Some(control) => Ok(target.with_fault_proxy(control)),
                    None => Err(Unavailable::skipped(builtin, &self.hops.why_no_proxy(hop))),
                },
                PathTimeout::ClientHeaders { .. } => Ok(target),
            };
            match placed {
                Ok(target) => self.targets.push(target),
                Err(unavailable) => self.skipped.push(unavailable),
            }
        }
    }

    /// The `gateway-read-timeout` target's gateway: the stack's nginx
    /// config with `proxy_read_timeout` at `limit`, in a process and a
    /// folder of its own, stopped with the stack. Returns its base URL.
    async fn start_timeout_gateway(
        &mut self,
        agent_hop: u16,
        limit: Duration,
        options: &StackOptions,
        supervisor: &Supervisor,
        progress: &mut Progress<'_>,
    ) -> Result<String, Unavailable> {
        let name = BuiltinTarget::GatewayReadTimeout;
        let binary =
            nginx::find_binary().map_err(|e| Unavailable::skipped(name, &e.to_string()))?;
        let failed = |e: &dyn std::fmt::Display| Unavailable::failed(name, &e.to_string());
        let gateway = GatewayConfig {
            binary,
            prefix: options.run_dir.join("gateway-read-timeout"),
            listen_port: free_port().map_err(|e| failed(&e))?,
            upstream_port: agent_hop,
            read_timeout: limit,
        };
        let spec = gateway.prepare().map_err(|e| failed(&e))?;
        progress(Note::step(format!(
            "starting nginx gateway with proxy_read_timeout {} on {}",
            crate::targets::fmt_duration(limit),
            gateway.base_url()
        )));
        let mut process = Target::new(
            name,
            managed(spec, Duration::from_secs(5)),
            Readiness::http(gateway.health_url()),
        )
        .with_ready_timeout(READY_TIMEOUT)
        .supervised_by(supervisor.clone());
        process.prepare().await.map_err(|e| failed(&e))?;
        self.logs.push((
            "nginx (gateway-read-timeout)".into(),
            gateway.prefix.join("error.log"),
        ));
        self.parts.push(crate::supervise::part::PartProcess::new(
            crate::errors::HarnessPart::Nginx,
            gateway.prefix.join("nginx.pid"),
        ));
        // Its process, under the target's name, runs in the background
        // (never restarted) and stops with the stack.
        self.background.push(process);
        Ok(gateway.base_url())
    }

    /// The selected pauses, agent kill, reboot and schedule, over the
    /// components that run (each that cannot run here unavailable, saying why).
    fn add_nemesis_targets(&mut self, options: &StackOptions) {
        let ready = |hop: &Hop| self.hop_ready(hop);
        let mut absent = match &self.stores.postgres {
            Err(absent) => vec![(
                BuiltinTarget::Store,
                format!(
                    "the session store's Postgres is not running here (it runs under --persist postgres only): {}",
                    absent.reason
                ),
            )],
            Ok(_) => Vec::new(),
        };
        // A component that cannot run here says why once, for its restart
        // target: its pauses and the faults over it say the same (the
        // missing program and the command that installs it).
        absent.extend(
            self.skipped
                .iter()
                .filter_map(|u| u.id.builtin().map(|b| (b, u.reason.clone()))),
        );
        let parts = super::nemesis_targets::Parts {
            components: self.targets.iter().chain(self.background.iter()).collect(),
            absent,
            journal: &self.journal,
            gateway_prefix: gateway_prefix(&options.run_dir),
            owner: options.supervisor.owner_tag().map(str::to_string),
            hops: &self.hops,
            engine_health: self
                .rivet
                .as_ref()
                .map(|r| format!("{}/health", r.endpoint())),
            hop_ready: &ready,
            phase_deadline: options.phase_deadline,
        };
        let (targets, unavailable) = super::nemesis_targets::build(&parts, &options.selection);
        self.targets.extend(targets);
        self.skipped.extend(unavailable);
    }

    /// What must answer once a fault on `hop` heals: through the gateway
    /// (and the agent hop), or the session actor (through the runner's
    /// link to the engine, which reconnects with a backoff).
    fn hop_ready(&self, hop: &Hop) -> Option<(Readiness, Duration)> {
        let probe_of = |of: BuiltinTarget, timeout: Duration| {
            self.targets
                .iter()
                .chain(self.background.iter())
                .find(|t| t.id == of)
                .map(|t| (t.readiness.clone(), timeout))
        };
        match hop.local() {
            Some(LocalHop::Persist | LocalHop::Runner) => {
                probe_of(BuiltinTarget::Rivet, AFTER_HEAL_RIVET_TIMEOUT)
            }
            _ => probe_of(BuiltinTarget::Gateway, READY_TIMEOUT)
                .or_else(|| probe_of(BuiltinTarget::Agent, READY_TIMEOUT)),
        }
    }

    /// Last, once every component runs: the selected fault targets on the
    /// hops, each watching the hops' proxies and the harness's parts, and
    /// the targets in report order.
    fn add_fault_targets(&mut self, options: &StackOptions) {
        let selection = &options.selection;
        self.skipped.retain(|u| selection.includes(&u.id));
        // Once a fault heals, what its hop leads to answers again.
        let ready = |hop: &Hop| self.hop_ready(hop);
        let (faults, unavailable) =
            super::fault_targets::on_hops(selection, &options.custom_faults, &self.hops, &ready);
        self.targets.extend(faults);
        self.skipped.extend(unavailable);
        // Every cell's traffic crosses the hops: a proxy that fails makes it an error.
        let hops = self.hops.controls();
        for target in &mut self.targets {
            target.watch_hops(hops.clone());
            target.watch_parts(self.parts.clone());
        }
        // Report order follows known_targets(), not start order.
        let order: Vec<TargetId> = known_targets(&options.custom_faults)
            .into_iter()
            .map(|k| k.id)
            .collect();
        self.targets
            .sort_by_key(|t| order.iter().position(|id| *id == t.id));
    }

    /// Lets every process outlive this handle (for `stack up`); fills in
    /// the pids. The journal stops: the caller writes the file whole.
    pub(crate) fn detach(&mut self) -> Vec<Component> {
        self.journal.close();
        let mut pids: Vec<(String, Option<u32>)> = Vec::new();
        for target in self
            .targets
            .iter_mut()
            .chain(self.background.iter_mut())
            .chain(self.sdk_process.iter_mut())
        {
            pids.push((target.name().to_string(), target.detach()));
        }
        let mut components = self.components.clone();
        for c in &mut components {
            if let Some((_, pid)) = pids.iter().find(|(n, pid)| *n == c.target && pid.is_some()) {
                c.pid = *pid;
                c.started = pid.and_then(|p| crate::supervise::owner::start_time(p as i32));
            }
        }
        components
    }

    /// Postgres, when a cell may keep its sessions there: the `store`
    /// target, or the reason it cannot run (skipped when Postgres is not
    /// installed or not asked for, an error when it would not start).
    async fn start_postgres(
        &mut self,
        options: &StackOptions,
        supervisor: &Supervisor,
        progress: &mut Progress<'_>,
    ) {
        if !options.postgres {
            let reason = "no store server runs: the `store` target restarts Postgres, which the stack starts for --persist postgres only";
            self.stores.postgres = Err(StoreAbsent::skipped(reason));
            self.skipped
                .push(Unavailable::not_applicable(BuiltinTarget::Store, reason));
            return;
        }
        let bin = match super::postgres::find_bin_dir() {
            Ok(bin) => bin,
            Err(reason) => {
                let reason = reason.to_string();
                progress(Note::step(reason.clone()));
                self.stores.postgres = Err(StoreAbsent::skipped(reason.clone()));
                self.skipped
                    .push(Unavailable::skipped(BuiltinTarget::Store, &reason));
                return;
            }
        };
        let dir = options.run_dir.join("postgres");
        let postgres_options = PostgresOptions {
            port: None,
            supervisor: supervisor.clone(),
        };
        match PostgresStack::up(&dir, &bin, postgres_options, progress).await {
            Err(reason) => {
                let reason = format!("Postgres did not start: {reason}");
                progress(Note::step(reason.clone()));
                self.stores.postgres = Err(StoreAbsent {
                    reason: reason.clone(),
                    failed: true,
                });
                self.skipped
                    .push(Unavailable::failed(BuiltinTarget::Store, &reason));
            }
            Ok(mut postgres) => {
                self.stores.postgres = Ok(postgres.persist_factory());
                self.stores.postgres_url = Some(postgres.url());
                self.logs
                    .push(("postgres".into(), postgres.log().to_path_buf()));
                let target = postgres.target();
                self.components.push(Component {
                    target: BuiltinTarget::Store.name().into(),
                    program: "postgres".into(),
                    url: format!("postgres://127.0.0.1:{}", postgres.port()),
                    log: postgres.log().to_path_buf(),
                    pid: target.pid(),
                    started: None,
                });
                self.add(target, options);
                self.postgres = Some(postgres);
            }
        }
    }

    /// The browser client's Chromium and page server, or why it cannot
    /// run (its cells are skipped: Chromium missing, with the install
    /// command; the page app not installable, with why).
    async fn prepare_browser(&mut self, supervisor: &Supervisor, progress: &mut Progress<'_>) {
        let prepared = async {
            let chromium = super::browser::find_chromium()?;
            let app = super::browser::prepare_app(progress).await?;
            let server = super::browser::PageServer::start(&app).await?;
            Ok::<_, StackError>((chromium, server))
        };
        match prepared.await {
            Ok((chromium, server)) => {
                self.browser_host = Ok(super::browser::BrowserHost {
                    chromium,
                    page_url: format!("{}/", server.origin()),
                    supervisor: supervisor.clone(),
                });
                progress(Note::step(format!(
                    "serving the browser client's page on {}",
                    server.origin()
                )));
                self.page_server = Some(server);
            }
            Err(reason) => {
                progress(Note::step(format!(
                    "the browser client cannot run: {reason}"
                )));
                self.browser_host = Err(Unhosted(reason.to_string()));
            }
        }
    }

    /// Hands over the running components this run does not restart (not
    /// among `targets`) and no one else took (the server's slot, the hosted
    /// client's runner): a cell whose fault acts on several (a reboot, a
    /// schedule) is lent them. Whoever takes them stops them.
    pub(crate) fn take_components(&mut self) -> Vec<Target> {
        let component = |t: &Target| {
            t.id.builtin().is_some_and(|b| {
                matches!(
                    b,
                    BuiltinTarget::Agent
                        | BuiltinTarget::Gateway
                        | BuiltinTarget::Rivet
                        | BuiltinTarget::RivetEngine
                        | BuiltinTarget::Store
                )
            })
        };
        let (taken, kept) = std::mem::take(&mut self.background)
            .into_iter()
            .partition(component);
        self.background = kept;
        taken
    }

    /// Hands over a running component this run does not restart (not
    /// among `targets`); whoever takes it stops it.
    pub(crate) fn take_background(&mut self, of: BuiltinTarget) -> Option<Target> {
        let at = self.background.iter().position(|t| t.id == of)?;
        Some(self.background.remove(at))
    }

    /// The reload whose close of an idle connection is held in flight on
    /// the gateway hop: unavailable when the hop has no proxy to hold it.
    fn add_reload_race(
        &mut self,
        gateway: &GatewayConfig,
        options: &StackOptions,
        supervisor: &Supervisor,
    ) {
        let name = BuiltinTarget::GatewayReloadIdle;
        let Some(control) = self.hops.control(&LocalHop::Gateway) else {
            let reason = format!(
                "it holds the reload's close on the gateway hop's fault proxy, and the stack runs without one ({}=off)",
                super::hops::PROXIES_ENV
            );
            self.skipped.push(Unavailable::skipped(name, &reason));
            return;
        };
        let target = super::reload_race::target(
            gateway.prefix.join("nginx.pid"),
            gateway.health_url(),
            control,
        )
        .with_ready_timeout(READY_TIMEOUT)
        .supervised_by(supervisor.clone());
        self.add(target, options);
    }

    fn add(&mut self, target: Target, options: &StackOptions) {
        if options.selection.includes(&target.id) {
            self.targets.push(target);
        } else {
            self.background.push(target);
        }
    }

    /// Component logs for the report, relative to `run_dir` when inside it.
    pub(crate) fn logs(&self, run_dir: &Path) -> Vec<LogFile> {
        self.logs
            .iter()
            .map(|(name, path)| LogFile {
                name: name.clone(),
                path: path
                    .strip_prefix(run_dir)
                    .unwrap_or(path)
                    .display()
                    .to_string(),
            })
            .collect()
    }

    /// Stops every component still held here (the runner shuts down its
    /// targets itself), without the sweep of the run's owner tag, which
    /// would reach every other stack of the run too (`--jobs N`): several
    /// stacks stop side by side, then one [`Supervisor::sweep`].
    pub(crate) async fn stop_own(&mut self) {
        for target in self
            .targets
            .iter_mut()
            .chain(self.background.iter_mut())
            .chain(self.sdk_process.iter_mut())
            .rev()
        {
            target.shutdown().await;
        }
        if let Some(postgres) = self.postgres.as_mut() {
            postgres.down().await;
        }
        if let Some(rivet) = self.rivet.as_mut() {
            rivet.down().await;
        }
        // PTY processes the server started outlive its group (own session).
        if let Some(data) = &self.agent_data {
            super::orphans::kill_with_env(&super::orphans::agent_mark(data));
        }
        super::agents::reap(&self.owner);
        if let Some(provider) = self.provider.as_mut() {
            provider.stop().await;
        }
        if let Some(sandboxes) = &self.sandboxes {
            sandboxes.stop().await;
        }
        self.hops.stop();
    }
}
