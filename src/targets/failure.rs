//! What went wrong with a target, typed for whoever judges the cell: why
//! it could not be prepared ([`TargetError`]), why a restart failed
//! ([`RestartFailure`]), why a cell's faults could not be settled
//! ([`SettleError`], [`NotBack`]), and why a target cannot run here at all
//! ([`Unavailable`]).

use super::fmt_duration;
use super::{verify, ActionError, BuiltinTarget, ProbeError, RestartResult, TargetId};
use std::time::Duration;

/// Why a target could not be prepared. The message is complete on its own.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    #[error("target `{target}`: {error}")]
    Action { target: String, error: ActionError },
    #[error("target `{target}` is not ready: {error}{hint}")]
    NotReady {
        target: String,
        error: ProbeError,
        /// What the managed process did meanwhile, when there is one.
        hint: String,
    },
    /// Its managed process failed while its probe was waited for: no
    /// use waiting out the probe's deadline.
    #[error("target `{target}` is not ready: its process failed before its probe passed{hint}")]
    Failed {
        target: String,
        /// How the process ended and what it logged.
        hint: String,
    },
}

/// Why a restart failed: its action failed, the target was never seen to
/// go down, or it did not come back in time. The restart phase is then the
/// cell's boundary, not a later session phase.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RestartFailure {
    #[error(transparent)]
    Action(#[from] ActionError),
    /// The action returned, yet nothing showed the target going down.
    #[error("the target never went down: {observed}")]
    NeverDown { observed: String },
    /// Without a probe nothing can show the target going down and coming back.
    #[error("the restart cannot be verified: the target has no readiness probe to see it go down and come back (give it a `ready` probe)")]
    Unverifiable,
    #[error("{} did not come back within {}: {error}{hint}", who(*.of), fmt_duration(*.timeout))]
    NotBack {
        timeout: Duration,
        #[source]
        error: ProbeError,
        /// What the managed process did meanwhile, when there is one, and
        /// what was done about it (a reboot's repair).
        hint: String,
        /// The component of the stack that did not come back, when the
        /// restart acted on several (a reboot's); `None`: the target.
        of: Option<BuiltinTarget>,
    },
}

/// Who did not come back: a component named, else the target.
fn who(of: Option<BuiltinTarget>) -> String {
    match of {
        Some(component) => format!("`{component}`"),
        None => "the target".into(),
    }
}

impl RestartFailure {
    /// A component's failure (a reboot's), naming it and adding `clause`
    /// (what was done about it) when it did not come back.
    pub(crate) fn of_component(self, component: Option<BuiltinTarget>, clause: &str) -> Self {
        match self {
            RestartFailure::NotBack {
                timeout,
                error,
                hint,
                ..
            } => RestartFailure::NotBack {
                timeout,
                error,
                hint: format!("{hint}{clause}"),
                of: component,
            },
            other => other,
        }
    }

    /// The component of the stack that did not come back, when a restart
    /// acting on several says which (a part of continuity's own among
    /// them is then the harness's failure, not the system's).
    pub(crate) fn component(&self) -> Option<BuiltinTarget> {
        match self {
            RestartFailure::NotBack { of, .. } => *of,
            _ => None,
        }
    }
}

/// A restart as the cell records it and, when it failed, what failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Restarted {
    pub record: RestartResult,
    pub failure: Option<RestartFailure>,
}

impl Restarted {
    /// A record alone, with no typed failure (a restarter standing in for
    /// a target).
    pub fn from_record(record: RestartResult) -> Restarted {
        Restarted {
            record,
            failure: None,
        }
    }
}

impl From<verify::NotDown> for RestartFailure {
    fn from(seen: verify::NotDown) -> Self {
        RestartFailure::NeverDown { observed: seen.0 }
    }
}

/// Why a cell's faults could not be settled once its phases were over,
/// by whom it is blamed: a fault proxy that stopped is continuity's own
/// part failing; a fault that did not take or a process that did not
/// wake, the test's setup; something the fault acted on, seen running
/// again, that did not answer its probe did not come back ([`NotBack`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettleError {
    #[error(transparent)]
    Proxy(#[from] crate::faults::ProxyError),
    /// A pause that did not wake, a schedule's fault that did not take:
    /// the test's setup failed.
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    NotBack(#[from] NotBack),
    /// Several of the above: a schedule's faults, each failing its way.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<SettleError>),
}

impl SettleError {
    /// The failure with `clause` (what was done about it) added to what it says.
    pub(crate) fn noted(self, clause: &str) -> SettleError {
        match self {
            SettleError::Setup(said) => SettleError::Setup(format!("{said}{clause}")),
            SettleError::NotBack(mut not_back) => {
                not_back.said.push_str(clause);
                SettleError::NotBack(not_back)
            }
            other => other,
        }
    }
}

/// Something a fault acted on (a hop's toxic, a pause, a restart in a
/// schedule) that was seen running again, or healed, yet did not answer
/// its readiness probe: it did not come back from the fault. The system's
/// failure, unless the component is a part of continuity's own; `said`
/// also tells what was done so the next cell finds the stack whole.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{said}")]
pub struct NotBack {
    /// The component that did not come back; `None` for the stack behind
    /// a hop whose fault healed.
    pub component: Option<BuiltinTarget>,
    /// The probe that kept failing: its last cause is the signature's.
    pub probe: ProbeError,
    /// The whole sentence: what did not answer, within how long, the
    /// probe's error, and the repair.
    pub said: String,
}

/// A target that cannot run here, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unavailable {
    pub id: TargetId,
    pub reason: String,
    pub absence: Absence,
}

/// Why a target cannot run: its cells are skipped when its program is
/// missing, errors when the program failed to start, and not applicable
/// when the run has nothing it could restart (the `store` target without
/// a store server): they would say nothing about a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Absence {
    Missing,
    StartFailed,
    NotApplicable,
}

impl Unavailable {
    pub(crate) fn skipped(id: impl Into<TargetId>, reason: &str) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            absence: Absence::Missing,
        }
    }

    pub(crate) fn not_applicable(id: impl Into<TargetId>, reason: &str) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            absence: Absence::NotApplicable,
        }
    }

    pub(crate) fn failed(id: impl Into<TargetId>, reason: &str) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            absence: Absence::StartFailed,
        }
    }
}
