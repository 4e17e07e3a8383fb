//! A process the harness runs itself, as a restart target's way of
//! restarting ([`super::restart::Restart`]): started, stopped (its stop
//! signal, grace, SIGKILL, with the hooks around the stop), seen down, and
//! recorded in the cell's trace as a component's stop and start.

use super::{verify, ActionError, Ctx, ManagedSpec};
use crate::signal::Signal;
use crate::supervise::{ManagedProcess, ProcessSpec, ProcessState};
use crate::trace::event::{self, Event};
use std::path::PathBuf;

/// Lines of a managed process's log quoted in a failure.
const LOG_TAIL_LINES: usize = 10;

/// A managed target's process: what to run, the process while it runs,
/// and what its last stop saw.
#[derive(Debug)]
pub(super) struct Managed {
    pub(super) spec: ManagedSpec,
    /// The running process.
    process: Option<ManagedProcess>,
    /// Runs around the process's stop (restart or shutdown); what it
    /// returns goes into the restart's detail.
    pub(super) after_stop: Option<AfterStop>,
    pub(super) after_stop_note: Option<String>,
    /// Its last stop: how it went down, or what was seen instead.
    pub(super) stopped: Option<Result<String, verify::NotDown>>,
}

/// A check around a managed target's stop, e.g. a count of the children
/// that outlive the process. `before` gets the pid before the group is
/// stopped (it may stop the process itself, to see what survives it);
/// `after` runs once the group is gone. Their notes join the restart's detail.
#[derive(Clone)]
pub(crate) struct AfterStop {
    pub before: std::sync::Arc<dyn Fn(Option<u32>) -> Option<String> + Send + Sync>,
    pub after: std::sync::Arc<dyn Fn() -> Option<String> + Send + Sync>,
}

// The hooks wait and scan /proc: on a blocking thread, so the other
// workers' cells (timers, streams) keep running meanwhile.
impl AfterStop {
    async fn run_before(&self, pid: Option<u32>) -> Option<String> {
        let before = std::sync::Arc::clone(&self.before);
        tokio::task::spawn_blocking(move || before(pid))
            .await
            .unwrap_or_default()
    }

    async fn run_after(&self, before: Option<String>) -> Option<String> {
        let after = std::sync::Arc::clone(&self.after);
        let after = tokio::task::spawn_blocking(move || after())
            .await
            .unwrap_or_default();
        match (before, after) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }
}

impl std::fmt::Debug for AfterStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterStop")
    }
}

impl Managed {
    pub(super) fn new(spec: ManagedSpec) -> Managed {
        Managed {
            spec,
            process: None,
            after_stop: None,
            after_stop_note: None,
            stopped: None,
        }
    }

    /// The pid of its process while it runs.
    pub(super) fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(ManagedProcess::pid)
    }

    /// Leaves its process running past this handle; returns its pid.
    pub(super) fn detach(&mut self) -> Option<u32> {
        self.process.as_mut().and_then(ManagedProcess::detach)
    }

    /// Stops its process (its stop signal, grace, then SIGKILL), the hooks
    /// around the stop run; nothing recorded.
    pub(super) async fn shutdown(&mut self) {
        let hook = self.after_stop.clone();
        if let Some(mut process) = self.process.take() {
            let before = match hook.as_ref() {
                Some(h) => h.run_before(process.pid()).await,
                None => None,
            };
            process.stop(self.spec.stop_signal, self.spec.grace).await;
            if let Some(hook) = &hook {
                hook.run_after(before).await;
            }
        }
    }

    /// A process that failed to prepare leaves nothing running.
    pub(super) async fn stop_unready(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.stop(self.spec.stop_signal, self.spec.grace).await;
        }
    }

    /// Stops its running process (its hook around it), and records how it
    /// went down (`stopped`) and the stop in the trace.
    pub(super) async fn stop(&mut self, ctx: &Ctx<'_>) {
        let hook = self.after_stop.clone();
        let Some(process) = self.process.as_mut() else {
            return;
        };
        let before = match hook.as_ref() {
            Some(h) => h.run_before(process.pid()).await,
            None => None,
        };
        process.stop(self.spec.stop_signal, self.spec.grace).await;
        let state = process.state();
        component_event(ctx.trace, Event::ComponentStop, ctx.name(), state);
        let addr = verify::probe_addr(ctx.readiness);
        self.stopped = Some(verify::managed_down(&exit_words(state), addr.as_deref()).await);
        self.after_stop_note = match hook {
            Some(h) => h.run_after(before).await,
            None => None,
        };
    }

    /// Starts its process and records the start in the trace.
    pub(super) fn start_and_record(&mut self, ctx: &Ctx<'_>) -> Result<(), ActionError> {
        let started = self.start(ctx);
        if let Some(process) = self.process.as_mut() {
            let state = process.state();
            component_event(ctx.trace, Event::ComponentStart, ctx.name(), state);
        }
        started
    }

    pub(super) fn start(&mut self, ctx: &Ctx<'_>) -> Result<(), ActionError> {
        let name = ctx.name();
        let spec = &self.spec;
        let process = self.process.get_or_insert_with(|| {
            ManagedProcess::new(
                ProcessSpec {
                    name: name.to_string(),
                    program: spec.program.clone(),
                    args: spec.args.clone(),
                    env: spec.env.clone(),
                    cwd: spec.cwd.clone(),
                    log: spec.log.clone().unwrap_or_else(|| default_log_path(name)),
                },
                ctx.supervisor.clone(),
            )
        });
        process.start().map(drop).map_err(|e| ActionError::Start {
            command: spec.command_line(),
            reason: e.to_string(),
            log_tail: process.log_tail(LOG_TAIL_LINES),
        })
    }

    /// Whether its process exited other than 0, or by a signal.
    pub(super) fn failed(&mut self) -> bool {
        let state = self.process.as_mut().map(ManagedProcess::state);
        matches!(state, Some(ProcessState::Exited { code, signal }) if code != Some(0) || signal.is_some())
    }

    /// When its probe failed: had the process exited, and what did it log?
    pub(super) fn hint(&mut self) -> String {
        let Some(process) = self.process.as_mut() else {
            return String::new();
        };
        let state = format!("; the process {}", exit_words(process.state()));
        let tail = process.log_tail(LOG_TAIL_LINES);
        if tail.trim().is_empty() {
            state
        } else {
            format!(
                "{state}; log {}: {}",
                process.log_path().display(),
                tail.trim_end()
            )
        }
    }
}

/// How a process stands, as a sentence's predicate: its exit status in
/// [`crate::supervise::exit_text`]'s words.
fn exit_words(state: ProcessState) -> String {
    match state {
        ProcessState::Exited { code, signal } => crate::supervise::exit_text(code, signal),
        ProcessState::Running { pid } => format!("(pid {pid}) is still running"),
        ProcessState::NotStarted => "never started".into(),
    }
}

/// A managed component stopped or started, with its pid or exit status.
fn component_event(
    trace: &crate::trace::Trace,
    ev: fn(event::Component) -> Event,
    name: &str,
    state: ProcessState,
) {
    let mut component = event::Component {
        component: name.into(),
        ..Default::default()
    };
    match state {
        ProcessState::Running { pid } => component.pid = Some(pid),
        ProcessState::Exited { code, signal } => {
            component.exit_code = code;
            component.signal = signal.map(|s| Signal::from_number(s).to_string());
        }
        ProcessState::NotStarted => component.state = Some("not started".into()),
    }
    trace.emit(ev(component));
}

/// `<tmp>/continuity-<harness pid>/<target>.log`: unique per harness
/// run, for a managed target outside a run (a run's are in its folder,
/// [`super::Target::log_into`]).
fn default_log_path(target: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!("continuity-{}", std::process::id()))
        .join(format!("{}.log", crate::file_name::safe(target)))
}
