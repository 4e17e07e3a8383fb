//! A drawn schedule at work ([`super::chaos`] draws it): its faults run
//! in the background on the components the cell lent it, each recorded
//! (`scheduled_start` … `scheduled_end`), proven as it runs and healed;
//! what each acted on must answer again, else it is restarted for the next
//! cell and the fault's failure says so. When the schedule is over it
//! gives the components back, with its failures judged fault by fault.

use super::chaos::{Chaos, Resource};
use super::fault::OpenWindow;
use super::pause::PauseError;
use super::readiness::ProbeAuth;
use super::{BuiltinTarget, FaultAction, Target};
use crate::faults::{parse_toxic, Hop, Param, ProxyError, ToxicSpec};
use crate::report::{FaultKind, Schedule, ScheduledFault};
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

impl Chaos {
    /// Starts `schedule` now, in the background, on `parts` (the components
    /// it restarts, lent for the cell). Records the schedule into `trace`.
    pub(super) fn start(
        &self,
        schedule: &Schedule,
        parts: Vec<Target>,
        trace: &Trace,
        auth: &ProbeAuth,
    ) -> RunningSchedule {
        trace.emit(Event::Schedule(event::Schedule {
            schedule: serde_json::to_value(schedule).unwrap_or_default(),
        }));
        let chaos = self.clone();
        let (schedule, trace, auth) = (schedule.clone(), trace.clone(), auth.clone());
        let task = tokio::spawn(async move {
            let start = Instant::now();
            let parts: Vec<(super::TargetId, Mutex<Target>)> = parts
                .into_iter()
                .map(|t| (t.id.clone(), Mutex::new(t)))
                .collect();
            let runs = schedule.faults.iter().enumerate().map(|(index, fault)| {
                let ran = Ran {
                    chaos: &chaos,
                    parts: &parts,
                    trace: &trace,
                    auth: &auth,
                };
                async move {
                    tokio::time::sleep_until((start + Duration::from_millis(fault.at_ms)).into())
                        .await;
                    ran.one(index, fault).await
                }
            });
            let outcomes = futures_util::future::join_all(runs).await;
            Finished {
                parts: parts.into_iter().map(|(_, t)| t.into_inner()).collect(),
                failures: outcomes.into_iter().filter_map(Result::err).collect(),
            }
        });
        RunningSchedule { task }
    }
}

/// A schedule running in the background.
pub(super) struct RunningSchedule {
    task: JoinHandle<Finished>,
}

/// A schedule over: the parts it was lent, and its faults that failed.
pub(super) struct Finished {
    pub parts: Vec<Target>,
    pub failures: Vec<Failed>,
}

/// A fault of a schedule that failed, and why.
#[derive(Debug, thiserror::Error)]
#[error("fault #{index} ({fault}): {error}")]
pub(super) struct Failed {
    index: usize,
    fault: String,
    error: FaultError,
}

/// Why a fault of a schedule failed: it did not take, or what it acted on
/// did not come back.
#[derive(Debug, thiserror::Error)]
pub(super) enum FaultError {
    #[error("`{on}` is no component of the stack")]
    Unknown { on: String },
    #[error("the stack lent the schedule no `{on}` component")]
    NotLent { on: String },
    #[error("{detail}")]
    Restart { detail: String },
    #[error("the stack cannot pause `{of}`")]
    NoPause { of: BuiltinTarget },
    #[error(transparent)]
    Pause(#[from] PauseError),
    #[error("the {hop} hop has no fault proxy here")]
    NoHop { hop: Hop },
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// What the fault acted on did not answer again once it was over.
    #[error(transparent)]
    NotBack(super::NotBack),
    #[error("the schedule's task ended: {0}")]
    Task(String),
}

/// A schedule's failed fault, blamed as its kind says: what it acted on
/// not back is `not_back` (or a part of continuity's own), a fault proxy
/// that failed is continuity's own part, anything else did not take (the
/// test's setup).
impl From<Failed> for super::SettleError {
    fn from(failed: Failed) -> Self {
        let Failed {
            index,
            fault,
            error,
        } = failed;
        match error {
            FaultError::NotBack(mut not_back) => {
                not_back.said = format!("fault #{index} ({fault}): {}", not_back.said);
                super::SettleError::NotBack(not_back)
            }
            FaultError::Proxy(e) => super::SettleError::Proxy(e),
            error => super::SettleError::Setup(
                Failed {
                    index,
                    fault,
                    error,
                }
                .to_string(),
            ),
        }
    }
}

impl FaultError {
    /// A not-back with `clause` (its repair) added to what it says.
    fn noted(self, clause: &str) -> FaultError {
        match self {
            FaultError::NotBack(mut not_back) => {
                not_back.said.push_str(clause);
                FaultError::NotBack(not_back)
            }
            other => other,
        }
    }
}

impl RunningSchedule {
    /// Waits until every fault is over (each is bounded: a restart by its
    /// readiness deadline, a heal by its probe's).
    pub(super) async fn finish(self) -> Finished {
        match self.task.await {
            Ok(finished) => finished,
            Err(e) => Finished {
                parts: Vec::new(),
                failures: vec![Failed {
                    index: 0,
                    fault: "the schedule".into(),
                    error: FaultError::Task(e.to_string()),
                }],
            },
        }
    }
}

impl std::fmt::Debug for RunningSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunningSchedule")
    }
}

/// One fault's run, with what it needs.
struct Ran<'a> {
    chaos: &'a Chaos,
    parts: &'a [(super::TargetId, Mutex<Target>)],
    trace: &'a Trace,
    auth: &'a ProbeAuth,
}

impl Ran<'_> {
    /// Runs fault `index`, records its start and end; `Err` says what failed.
    async fn one(&self, index: usize, fault: &ScheduledFault) -> Result<(), Failed> {
        let (kind, on) = (fault.fault.as_str().to_string(), fault.on.clone());
        self.trace
            .emit(Event::ScheduledStart(event::ScheduledStart {
                index: index as u32,
                fault: kind.clone(),
                on: on.clone(),
            }));
        let result = self.act(fault).await;
        self.trace.emit(Event::ScheduledEnd(event::ScheduledEnd {
            index: index as u32,
            fault: kind,
            on,
            ok: result.is_ok(),
            detail: Some(match &result {
                Ok(note) => note.clone(),
                Err(e) => e.to_string(),
            }),
        }));
        result.map(drop).map_err(|error| Failed {
            index,
            fault: fault.describe(),
            error,
        })
    }

    async fn act(&self, fault: &ScheduledFault) -> Result<String, FaultError> {
        let hold = Duration::from_millis(fault.hold_ms);
        if fault.fault == FaultKind::Restart {
            return self.restart(&fault.on).await;
        }
        let resource = match fault.fault.on_hop() {
            true => Resource::Hop(Hop::named(&fault.on)),
            false => Resource::Component(component(&fault.on)?),
        };
        let healed = match &resource {
            Resource::Component(of) => self.pause(*of, hold).await?,
            Resource::Hop(hop) => self.toxic(hop.clone(), fault.fault, hold).await?,
        };
        match self.ready(&resource).await {
            Ok(ready) => Ok(format!("{healed}; {ready}")),
            Err(FaultError::NotBack(not_back)) => {
                let note = match not_back.component {
                    Some(of) => self.repair(of).await,
                    None => String::new(),
                };
                Err(FaultError::NotBack(not_back).noted(&note))
            }
            Err(e) => Err(e),
        }
    }

    async fn restart(&self, on: &str) -> Result<String, FaultError> {
        let id = component(on)?;
        let Some((_, part)) = self.parts.iter().find(|(of, _)| *of == id) else {
            return Err(FaultError::NotLent { on: on.into() });
        };
        let mut part = part.lock().await;
        part.set_trace(self.trace.clone());
        let restarted = part
            .restart_lent(&format!("chaos restart of {on}"), &mut [])
            .await;
        let result = restarted.record;
        match (result.ok, restarted.failure) {
            (true, _) => Ok(result.down.unwrap_or_else(|| "restarted".into())),
            // Restarted and not answering: the system's, repaired for the next cell.
            (false, Some(super::RestartFailure::NotBack { error, .. })) => {
                let repaired = part
                    .restart_lent(&format!("repair of {on} after its chaos restart"), &mut [])
                    .await
                    .record;
                Err(FaultError::NotBack(super::NotBack {
                    component: Some(id),
                    probe: error,
                    said: result.detail.unwrap_or_default(),
                })
                .noted(&super::repair_note(id, &repaired)))
            }
            (false, _) => Err(FaultError::Restart {
                detail: result.detail.unwrap_or_else(|| "the restart failed".into()),
            }),
        }
    }

    /// `of`, not answering once its fault was over, restarted through its
    /// own target (lent to the schedule), and what its probe is answered
    /// through when that was not enough ([`BuiltinTarget::repaired_with`]),
    /// so the next cell finds the stack whole: what that did, as clauses.
    async fn repair(&self, of: BuiltinTarget) -> String {
        super::repair_lent(of, &mut &*self).await.said
    }

    async fn pause(&self, of: BuiltinTarget, hold: Duration) -> Result<String, FaultError> {
        let mut pause = self
            .chaos
            .0
            .pauses
            .iter()
            .find(|(id, _)| *id == of)
            .map(|(_, p)| p.clone())
            .ok_or(FaultError::NoPause { of })?;
        pause.hold = hold;
        let open = pause.open(self.trace).await?;
        tokio::time::sleep(hold).await;
        Ok(open.close().await?)
    }

    async fn toxic(&self, hop: Hop, kind: FaultKind, hold: Duration) -> Result<String, FaultError> {
        let control = self
            .chaos
            .0
            .hops
            .iter()
            .find(|c| *c.hop() == hop)
            .ok_or_else(|| FaultError::NoHop { hop: hop.clone() })?;
        let action = FaultAction {
            hop,
            toxic: toxic(kind),
            hold,
        };
        let window = OpenWindow::open(&action, control, self.trace)?;
        tokio::time::sleep(hold).await;
        window.close()?;
        Ok(format!("{} healed", action.describe()))
    }

    /// What answers once the fault on `resource` is over.
    async fn ready(&self, resource: &Resource) -> Result<String, FaultError> {
        let Some((_, probe, within)) = self.chaos.0.ready.iter().find(|(r, _, _)| r == resource)
        else {
            return Ok("no probe".into());
        };
        let took = probe
            .wait_with(*within, self.auth, self.trace)
            .await
            .map_err(|probe| {
                let (component, what) = match resource {
                    Resource::Component(of) => {
                        (Some(*of), format!("`{of}` was seen running again but"))
                    }
                    Resource::Hop(hop) => (None, format!("with the {hop} hop healed, the stack")),
                };
                FaultError::NotBack(super::NotBack {
                    component,
                    said: format!(
                        "{what} did not answer within {} of the fault's end: {probe}",
                        super::fmt_duration(*within)
                    ),
                    probe,
                })
            })?;
        Ok(format!("ready again after {}", super::fmt_duration(took)))
    }
}

/// The component a schedule names.
fn component(on: &str) -> Result<BuiltinTarget, FaultError> {
    BuiltinTarget::from_name(on).ok_or_else(|| FaultError::Unknown { on: on.into() })
}

/// The toxic of a network fault of the schedule (the built-in fault
/// targets' own: a partition both ways, a reset at once, 1 s of latency).
pub(super) fn toxic(kind: FaultKind) -> ToxicSpec {
    let down = || ("stream".to_string(), Param::Text("downstream".into()));
    let (name, params) = match kind {
        FaultKind::Reset => (
            "reset_peer",
            vec![("timeout".to_string(), Param::Int(0)), down()],
        ),
        FaultKind::Latency => (
            "latency",
            vec![("latency".to_string(), Param::Int(1000)), down()],
        ),
        _ => ("partition", Vec::new()),
    };
    // Constant parameters: a bad one fails this module's tests.
    parse_toxic(name, &params).unwrap_or_else(|e| panic!("chaos toxic {name}: {e}"))
}

/// A schedule's repair restarts the components lent to it.
impl super::LentParts for &Ran<'_> {
    fn holder(&self) -> super::repair::Holder {
        super::repair::Holder::Schedule
    }

    fn trace(&self) -> &crate::trace::Trace {
        self.trace
    }

    async fn repair(&mut self, step: super::Repair) -> Option<super::RestartResult> {
        let id = step.part();
        let (_, part) = self.parts.iter().find(|(lent, _)| *lent == id)?;
        let mut part = part.lock().await;
        part.set_trace(self.trace.clone());
        let label = format!("repair of {id} after its fault");
        Some(part.repair_step(&label, step).await)
    }

    async fn brought_back(&mut self, component: BuiltinTarget) {
        if let Some((_, part)) = self.parts.iter().find(|(lent, _)| *lent == component) {
            part.lock().await.brought_back();
        }
    }
}
