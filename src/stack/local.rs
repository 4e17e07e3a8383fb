//! The local stack `continuity run` brings up when no deployment is given:
//! sandbox-agent (its `mock` agent is `continuity agent`), an nginx gateway in
//! front of it, and the Rivet layer that persists session history — each a
//! real program in its own process group on a free loopback port, each a
//! restart target. A component whose program is missing is reported as a
//! skipped target with the install command, never silently dropped.

use super::nginx::{self, GatewayConfig};
use super::progress::{blocking_with_notes, Note, Progress};
use super::rivet::{self, RivetStack};
use super::sandbox_agent::{self, SandboxAgentConfig};
pub use super::state::Component;
use super::state::StackJournal;
use super::StackError;
use crate::client::hosted::Unhosted;
use crate::persist::PersistFactory;
use crate::report::LogFile;
use crate::signal::Signal;
use crate::supervise::{free_port, Supervisor};
use crate::targets::Unavailable;
use crate::targets::{ManagedSpec, Readiness, RestartAction, Target};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The local stack's restart targets and what each restarts.
pub const TARGETS: [(&str, &str); 5] = [
    (
        "agent",
        "the sandbox-agent server (SIGTERM to its process group, start again on the same port)",
    ),
    (
        "gateway",
        "the nginx gateway in front of it (stop the master, start again)",
    ),
    (
        "gateway-reload",
        "the nginx gateway, gracefully (SIGHUP: reload the config, keep the master)",
    ),
    (
        "rivet",
        "the RivetKit runner holding the session-persistence actor",
    ),
    ("rivet-engine", "the Rivet Engine the runner connects to"),
];

/// The restart target that runs the sandbox-agent server.
pub const SERVER_TARGET: &str = "agent";

/// How long sandbox-agent has to answer `/v1/health` after a start.
pub const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(30);
const READY_TIMEOUT: Duration = SERVER_READY_TIMEOUT;
const AGENT_GRACE: Duration = Duration::from_secs(3);

/// How to bring the stack up.
#[derive(Debug, Clone)]
pub struct StackOptions {
    pub run_dir: PathBuf,
    pub server_version: String,
    /// The `continuity` binary, for the agent launcher.
    pub agent_program: PathBuf,
    /// Only these targets (all when empty); every component still starts.
    pub only: Vec<String>,
    /// How the Rivet actor saves state.
    pub rivet_save: rivet::SaveMode,
    /// How the `rivet` target stops the RivetKit runner.
    pub rivet_stop: rivet::RunnerStop,
    /// Real agents to install and wire behind sandbox-agent (`mock` is always there).
    pub agents: Vec<String>,
    /// The run's owner tag and keeper; the stack adds its own journal.
    pub supervisor: Supervisor,
}

/// Where the hosted TypeScript SDK client runs: the engine endpoint its
/// actor is called through (each cell's actor imports its SDK point's
/// module, see [`super::sdk`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SdkHost {
    pub endpoint: String,
}

/// A running local stack.
pub struct LocalStack {
    /// Where clients connect: through the gateway when it runs.
    pub base_url: String,
    /// The selected restart targets, ready (the runner takes them).
    pub targets: Vec<Target>,
    /// Targets that cannot run here, with the reason.
    pub skipped: Vec<Unavailable>,
    /// The Rivet persist driver for every cell, when the Rivet layer runs.
    pub persist_factory: Option<PersistFactory>,
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
    /// This stack's `stack.json`, written as components start and stop.
    journal: StackJournal,
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
    pub async fn up(
        options: StackOptions,
        progress: &mut Progress<'_>,
    ) -> Result<LocalStack, StackError> {
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
        let version = options.server_version.clone();
        let binary =
            blocking_with_notes(progress, move |note| sandbox_agent::install(&version, note))
                .await??;
        let mut stack = LocalStack {
            base_url: String::new(),
            targets: Vec::new(),
            skipped: Vec::new(),
            persist_factory: None,
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
            journal,
        };

        // Rivet first: the clients' persist store must be up before any session exists.
        match rivet::find_node() {
            Err(reason) => {
                let reason = reason.to_string();
                stack.sdk_host = Err(Unhosted(reason.clone()));
                stack.skipped.push(Unavailable::skipped("rivet", &reason));
                stack
                    .skipped
                    .push(Unavailable::skipped("rivet-engine", &reason));
            }
            Ok(node) => match RivetStack::up(
                &options.run_dir.join("rivet"),
                &node,
                options.rivet_save,
                options.rivet_stop,
                &supervisor,
                progress,
            )
            .await
            {
                Err(reason) => {
                    let reason = reason.to_string();
                    stack.sdk_host =
                        Err(Unhosted(format!("the Rivet layer did not start: {reason}")));
                    // The other layers can still be tested; cells use SQLite instead.
                    progress(Note::step(format!(
                        "the Rivet layer did not start: {reason}"
                    )));
                    stack.skipped.push(Unavailable::failed("rivet", &reason));
                    stack
                        .skipped
                        .push(Unavailable::failed("rivet-engine", &reason));
                }
                Ok(mut rivet) => {
                    stack.logs.extend(rivet.logs());
                    for (target, program, url, log) in rivet.components() {
                        stack.components.push(Component {
                            target,
                            program,
                            url,
                            log,
                            pid: None,
                            started: None,
                        });
                    }
                    stack.persist_factory = Some(rivet.persist_factory());
                    stack.sdk_host = Ok(SdkHost {
                        endpoint: rivet.endpoint().to_string(),
                    });
                    let (engine, runner) = rivet.targets();
                    stack.add(engine, &options);
                    stack.add(runner, &options);
                    stack.rivet = Some(rivet);
                }
            },
        }

        let agent_port = free_port()?;
        let agent = SandboxAgentConfig {
            binary,
            run_dir: options.run_dir.join("sandbox-agent"),
            agent_program: options.agent_program.clone(),
            agent_env: Vec::new(),
            port: Some(agent_port),
        };
        let agent_spec = agent.prepare(agent_port)?;
        stack.agent_data = Some(agent.run_dir.join("data"));
        stack.agent_sent_log = Some(agent.agent_sent_path());
        let wired = super::agent_wiring::wire_agents(
            &options.agents,
            &options.run_dir,
            &agent.run_dir,
            &stack.owner,
            progress,
        )
        .await?;
        if let Some(wired) = wired {
            stack.components.push(Component {
                target: "provider".into(),
                program: "fake model provider".into(),
                url: wired.provider.base_url(),
                log: wired.log.clone(),
                // In the harness's own process: nothing for `stack down` to signal.
                pid: None,
                started: None,
            });
            stack.logs.push(("provider".into(), wired.log));
            stack.model_calls = Some(wired.provider.calls());
            stack.provider = Some(wired.provider);
            stack.agent_skips.extend(wired.skips);
        }
        stack
            .logs
            .push(("sandbox-agent".into(), agent_spec.log.clone()));
        let agent_url = format!("http://127.0.0.1:{agent_port}");
        let mut agent_target = Target::new(
            SERVER_TARGET,
            managed(agent_spec, AGENT_GRACE),
            Readiness::http(format!("{agent_url}/v1/health")),
        )
        .with_ready_timeout(READY_TIMEOUT)
        .with_after_stop(super::agent_wiring::sweep(&stack.owner))
        .supervised_by(supervisor.clone());
        progress(Note::step(format!(
            "starting sandbox-agent {} on {agent_url}",
            stack.server_version.as_deref().unwrap_or("")
        )));
        agent_target.prepare().await?;
        stack.components.push(Component {
            target: "agent".into(),
            program: "sandbox-agent".into(),
            url: agent_url.clone(),
            log: stack.logs.last().map(|l| l.1.clone()).unwrap_or_default(),
            pid: agent_target.pid(),
            started: None,
        });
        stack.add(agent_target, &options);
        stack.base_url = agent_url;

        match nginx::find_binary() {
            Err(reason) => {
                let reason = reason.to_string();
                stack.skipped.push(Unavailable::skipped("gateway", &reason));
                stack
                    .skipped
                    .push(Unavailable::skipped("gateway-reload", &reason));
            }
            Ok(binary) => {
                let gateway = GatewayConfig {
                    binary,
                    prefix: options.run_dir.join("gateway"),
                    listen_port: free_port()?,
                    upstream_port: agent_port,
                };
                let spec = gateway.prepare()?;
                stack
                    .logs
                    .push(("nginx".into(), gateway.prefix.join("error.log")));
                let mut target = Target::new(
                    "gateway",
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
                stack.components.push(Component {
                    target: "gateway".into(),
                    program: "nginx".into(),
                    url: gateway.base_url(),
                    log: gateway.prefix.join("error.log"),
                    pid: target.pid(),
                    started: None,
                });
                stack.add(target, &options);
                let reload = Target::new(
                    "gateway-reload",
                    RestartAction::Signal {
                        pid_file: gateway.prefix.join("nginx.pid"),
                        signal: Signal::HUP,
                    },
                    Readiness::http(gateway.health_url()),
                )
                .with_ready_timeout(READY_TIMEOUT)
                .keeping_open_requests()
                .supervised_by(supervisor.clone());
                stack.add(reload, &options);
                stack.base_url = gateway.base_url();
            }
        }
        stack
            .skipped
            .retain(|u| options.only.is_empty() || options.only.contains(&u.name));
        // Report order follows TARGETS, not start order.
        stack
            .targets
            .sort_by_key(|t| TARGETS.iter().position(|(n, _)| *n == t.name));
        Ok(stack)
    }

    /// Lets every process outlive this handle (for `stack up`); fills in
    /// the pids. The journal stops: the caller writes the file whole.
    pub fn detach(&mut self) -> Vec<Component> {
        self.journal.close();
        let mut pids: Vec<(String, Option<u32>)> = Vec::new();
        for target in self.targets.iter_mut().chain(self.background.iter_mut()) {
            pids.push((target.name.clone(), target.detach()));
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

    /// Hands over a running component this run does not restart (not
    /// among `targets`); whoever takes it stops it.
    pub fn take_background(&mut self, name: &str) -> Option<Target> {
        let at = self.background.iter().position(|t| t.name == name)?;
        Some(self.background.remove(at))
    }

    fn add(&mut self, target: Target, options: &StackOptions) {
        if options.only.is_empty() || options.only.contains(&target.name) {
            self.targets.push(target);
        } else {
            self.background.push(target);
        }
    }

    /// Component logs for the report, relative to `run_dir` when inside it.
    pub fn logs(&self, run_dir: &Path) -> Vec<LogFile> {
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
    pub async fn stop_own(&mut self) {
        for target in self
            .targets
            .iter_mut()
            .chain(self.background.iter_mut())
            .rev()
        {
            target.shutdown().await;
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
    }
}
