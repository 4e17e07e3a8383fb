//! A component's restart, the kind of target most are: a process the
//! harness runs ([`Managed`]), a shell command, a signal to the pid in a
//! file, or an HTTP hook. Each restart is proven ([`verify`]: the target
//! seen going down, then ready within its deadline), may open a fault
//! window along its action ([`super::Target::with_window_along`]), and
//! one that did not bring its component back is remembered for the next
//! cell ([`super::unrecovered`]).

use super::action;
use super::action_error::ActionError;
use super::fault::FaultWindow;
use super::managed::Managed;
use super::{
    fmt_duration, signal, verify, Ctx, ManagedSpec, Readiness, Ready, RestartFailure, RestartKind,
    Seen,
};
use crate::clock::millis;
use crate::secret::display_url;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A component stopped and started again, and what it keeps between
/// restarts.
#[derive(Debug)]
pub(crate) struct Restart {
    pub(super) way: Way,
    /// The least wait after a command's or hook's action before its probe
    /// (a deployment command's `SA_RESTART_WAIT_SEC`, a delay kept beside
    /// the default probe).
    pub(super) min_wait: Duration,
    /// A window each restart opens on a hop just before its action.
    pub(super) along: Option<FaultWindow>,
    /// What its last restart said when it did not bring it back: the next
    /// cell brings it back first ([`super::Target::bring_back`]).
    pub(super) unrecovered: Option<String>,
}

/// How a component is restarted.
#[derive(Debug)]
pub(super) enum Way {
    /// A process the harness starts itself, stopped and started.
    Managed(Box<Managed>),
    /// `/bin/sh -c command`, killed (with its group) at `timeout`.
    Command { command: String, timeout: Duration },
    /// `signal` to the pid written in `pid_file`.
    Signal {
        pid_file: PathBuf,
        signal: crate::signal::Signal,
    },
    /// A hook URL called; any 2xx passes unless `expect_status` is given.
    Http {
        url: String,
        method: String,
        expect_status: Option<u16>,
        timeout: Duration,
    },
}

impl Restart {
    pub(super) fn new(way: Way) -> Restart {
        Restart {
            way,
            min_wait: Duration::ZERO,
            along: None,
            unrecovered: None,
        }
    }

    pub(super) fn kind(&self) -> RestartKind {
        match &self.way {
            Way::Managed(_) => RestartKind::Managed,
            Way::Command { .. } => RestartKind::Command,
            Way::Signal { .. } => RestartKind::Signal,
            Way::Http { .. } => RestartKind::Http,
        }
    }

    /// One line: `managed: sandbox-agent server -p 2468 (SIGTERM, grace 5 s)`.
    pub(super) fn describe(&self) -> String {
        match &self.way {
            Way::Command { command, timeout } => {
                format!("command: {command} (timeout {})", fmt_duration(*timeout))
            }
            Way::Managed(managed) => format!(
                "managed: {} ({}, grace {})",
                managed.spec.command_line(),
                managed.spec.stop_signal,
                fmt_duration(managed.spec.grace)
            ),
            Way::Signal { pid_file, signal } => {
                format!("signal: {} to the pid in {}", signal, pid_file.display())
            }
            Way::Http {
                url,
                method,
                expect_status,
                timeout,
            } => format!(
                "http: {method} {} (expect {}, timeout {})",
                display_url(url),
                action::expected_status_text(*expect_status),
                fmt_duration(*timeout)
            ),
        }
    }

    /// Its process's spec, when the harness runs it.
    pub(super) fn managed_spec(&self) -> Option<&ManagedSpec> {
        match &self.way {
            Way::Managed(managed) => Some(&managed.spec),
            _ => None,
        }
    }

    pub(super) fn managed_spec_mut(&mut self) -> Option<&mut ManagedSpec> {
        match &mut self.way {
            Way::Managed(managed) => Some(&mut managed.spec),
            _ => None,
        }
    }

    /// Runs `hook` each time its managed process has stopped.
    pub(super) fn set_after_stop(&mut self, hook: super::AfterStop) {
        if let Way::Managed(managed) = &mut self.way {
            managed.after_stop = Some(hook);
        }
    }

    /// A command or a hook: the restarts whose probe is watched while
    /// they run, and which a deployment's default probe serves.
    pub(super) fn is_watched(&self) -> bool {
        matches!(self.way, Way::Command { .. } | Way::Http { .. })
    }

    pub(super) fn pid(&self) -> Option<u32> {
        match &self.way {
            Way::Managed(managed) => managed.pid(),
            _ => None,
        }
    }

    pub(super) fn detach(&mut self) -> Option<u32> {
        match &mut self.way {
            Way::Managed(managed) => managed.detach(),
            _ => None,
        }
    }

    /// Starts what it owns: a managed process; a pid file must name a
    /// running process.
    pub(super) fn prepare(&mut self, ctx: &Ctx<'_>) -> Result<(), ActionError> {
        match &mut self.way {
            Way::Managed(managed) => managed.start(ctx),
            Way::Signal { pid_file, .. } => {
                let pid = signal::read_pid_file(pid_file)?;
                match signal::process_exists(pid) {
                    true => Ok(()),
                    false => Err(ActionError::NoProcess {
                        pid,
                        path: pid_file.clone(),
                    }),
                }
            }
            Way::Command { .. } | Way::Http { .. } => Ok(()),
        }
    }

    /// A target that failed to prepare leaves nothing running.
    pub(super) async fn stop_unready(&mut self) {
        if let Way::Managed(managed) = &mut self.way {
            managed.stop_unready().await;
        }
    }

    /// The window along heals; a managed process stops.
    pub(super) async fn shutdown(&mut self) {
        if let Some(along) = &mut self.along {
            along.shutdown();
        }
        if let Way::Managed(managed) = &mut self.way {
            managed.shutdown().await;
        }
    }

    /// The note of the hooks around its last stop, once.
    pub(super) fn take_after_stop_note(&mut self) -> Option<String> {
        match &mut self.way {
            Way::Managed(managed) => managed.after_stop_note.take(),
            _ => None,
        }
    }

    /// The action, then the way's proof that the target went down
    /// ([`verify`]) and its readiness. Returns how long the action took.
    pub(super) async fn restart(
        &mut self,
        ctx: &Ctx<'_>,
        started: Instant,
    ) -> (u64, Result<Seen, RestartFailure>) {
        match &self.way {
            Way::Command { .. } | Way::Http { .. } => self.restart_watched(ctx, started).await,
            Way::Signal { pid_file, .. } => {
                let family = signal::read_pid_file(pid_file)
                    .ok()
                    .map(|pid| (verify::Family::of(pid), pid_file.clone()));
                let action = self.run_action_along(ctx).await;
                let restart_ms = millis(started.elapsed());
                if let Err(error) = action {
                    return (restart_ms, Err(error.into()));
                }
                let down = match family {
                    Some((family, pid_file)) => family.changed(&pid_file, ctx.ready_timeout).await,
                    None => Err(verify::NotDown(
                        "the pid file named no process before the signal".into(),
                    )),
                };
                (restart_ms, self.back_after(ctx, down).await)
            }
            Way::Managed(_) => {
                let action = self.run_action_along(ctx).await;
                let restart_ms = millis(started.elapsed());
                if let Err(error) = action {
                    return (restart_ms, Err(error.into()));
                }
                let stopped = match &mut self.way {
                    Way::Managed(managed) => managed.stopped.take(),
                    _ => None,
                };
                let down = stopped.unwrap_or_else(|| Ok("no process was running".into()));
                (restart_ms, self.back_after(ctx, down).await)
            }
        }
    }

    /// A command's or hook's restart: its probe is watched from the
    /// action's start (a command may stop and start the server before it
    /// returns, or return before the server is back).
    async fn restart_watched(
        &mut self,
        ctx: &Ctx<'_>,
        started: Instant,
    ) -> (u64, Result<Seen, RestartFailure>) {
        let mut watch = verify::Watch::start(ctx.readiness, ctx.probe_auth).await;
        let action = self.run_action_along(ctx).await;
        let restart_ms = millis(started.elapsed());
        if let Err(error) = action {
            return (restart_ms, Err(error.into()));
        }
        if matches!(ctx.readiness, Readiness::None | Readiness::Delay { .. }) {
            return (restart_ms, Err(RestartFailure::Unverifiable));
        }
        let waited = Instant::now();
        tokio::time::sleep(self.min_wait).await;
        let during = match watch.as_mut() {
            Some(watch) => watch.during().await,
            None => None,
        };
        let ready = match self.wait_back(ctx).await {
            Ok(ready) => ready,
            Err(failure) => return (restart_ms, Err(failure)),
        };
        let down = match &watch {
            Some(watch) => watch.judge(during, ready.failed_first).await,
            None => ready.failed_first.map(|e| format!("the probe failed after the action returned: {e}")).ok_or_else(|| verify::NotDown("its probe passed at once after the action (a command probe is not watched while the action runs)".to_string())),
        };
        let seen = down
            .map(|down| Seen {
                down: Some(down),
                ready_ms: Some(millis(waited.elapsed())),
            })
            .map_err(RestartFailure::from);
        (restart_ms, seen)
    }

    /// Once `down` was seen (or what was seen instead), the target must be
    /// ready within its deadline.
    async fn back_after(
        &mut self,
        ctx: &Ctx<'_>,
        down: Result<String, verify::NotDown>,
    ) -> Result<Seen, RestartFailure> {
        let down = down?;
        let waited = Instant::now();
        if *ctx.readiness == Readiness::None {
            return Ok(Seen {
                down: Some(down),
                ready_ms: None,
            });
        }
        self.wait_back(ctx).await?;
        Ok(Seen {
            down: Some(down),
            ready_ms: Some(millis(waited.elapsed())),
        })
    }

    /// The target's probe within its deadline; a failure is the restart's.
    async fn wait_back(&mut self, ctx: &Ctx<'_>) -> Result<Ready, RestartFailure> {
        match ctx
            .readiness
            .wait_observing(ctx.ready_timeout, ctx.probe_auth, ctx.trace)
            .await
        {
            Ok(ready) => Ok(ready),
            Err(error) => Err(RestartFailure::NotBack {
                timeout: ctx.ready_timeout,
                error,
                hint: self.hint(),
                of: None,
            }),
        }
    }

    /// For a managed target whose probe failed: had the process exited, and
    /// what did it log? Empty for the other ways.
    pub(super) fn hint(&mut self) -> String {
        match &mut self.way {
            Way::Managed(managed) => managed.hint(),
            _ => String::new(),
        }
    }

    /// The action, within the window along it when it has one.
    async fn run_action_along(&mut self, ctx: &Ctx<'_>) -> Result<(), ActionError> {
        let Some(along) = &mut self.along else {
            return self.run_action(ctx).await;
        };
        along.open(ctx.trace)?;
        self.run_action(ctx).await?;
        match &self.along {
            Some(along) if along.acted_within(ctx.ready_timeout).await => Ok(()),
            Some(along) => Err(along.never_acted(ctx.ready_timeout)),
            None => Ok(()),
        }
    }

    async fn run_action(&mut self, ctx: &Ctx<'_>) -> Result<(), ActionError> {
        match &mut self.way {
            Way::Command { command, timeout } => {
                super::command::run_command(command, *timeout, ctx.supervisor).await
            }
            Way::Managed(managed) => {
                managed.stop(ctx).await;
                managed.start_and_record(ctx)
            }
            Way::Signal { pid_file, signal } => signal::send_from_pid_file(pid_file, *signal),
            Way::Http {
                url,
                method,
                expect_status,
                timeout,
            } => super::command::call_hook(url, method, *expect_status, *timeout).await,
        }
    }

    /// For a reboot: the managed process stopped (its stop signal, grace,
    /// SIGKILL) and seen down, as its own restart sees it; not started again.
    pub(super) async fn take_down(&mut self, ctx: &Ctx<'_>) -> Result<String, RestartFailure> {
        let Way::Managed(managed) = &mut self.way else {
            return Err(ActionError::runs_no_process(ctx.name()).into());
        };
        managed.stop(ctx).await;
        managed
            .stopped
            .take()
            .unwrap_or_else(|| Err(verify::NotDown("no process was running".into())))
            .map_err(Into::into)
    }

    /// For a reboot: the managed process started again and seen ready (by
    /// `boot`'s probe when given, else its own); how long that took.
    pub(super) async fn bring_up(
        &mut self,
        ctx: &Ctx<'_>,
        boot: Option<&Readiness>,
    ) -> Result<u64, RestartFailure> {
        let Way::Managed(managed) = &mut self.way else {
            return Err(ActionError::runs_no_process(ctx.name()).into());
        };
        managed.start_and_record(ctx)?;
        let waited = Instant::now();
        match boot {
            None => {
                self.wait_back(ctx).await?;
            }
            Some(probe) => {
                probe
                    .wait_observing(ctx.ready_timeout, ctx.probe_auth, ctx.trace)
                    .await
                    .map_err(|error| RestartFailure::NotBack {
                        timeout: ctx.ready_timeout,
                        error,
                        hint: self.hint(),
                        of: None,
                    })?;
            }
        }
        Ok(millis(waited.elapsed()))
    }
}
