//! A component an earlier cell left down. When a component's restart (a
//! repair after its fault, a reboot's, a schedule's) does not bring it
//! back, the next cell on the same stack would run on a stack that is not
//! whole and fail at its first call, before its own fault: its verdict
//! would be the earlier cell's. So the target remembers it, and before the
//! next cell the worker asks it to come back: its probe, then its repair
//! once more ([`super::repair`]: for the Rivet Engine, up to a start
//! afresh). A component that answers runs the cell as usual; one that
//! still does not makes the cell an error that names it and what was
//! tried, never a failure of the cell's own fault.

use super::repair::{first_line, repair_lent, restart_before_cell, Holder, LentSlice};
use super::restart::Restart;
use super::{Action, Target};

/// A component left down that its repair, tried again, did not bring
/// back either.
#[derive(Debug, thiserror::Error)]
#[error("`{component}` did not come back after an earlier cell's fault ({said}), and {again}")]
pub(crate) struct NotBroughtBack {
    pub component: String,
    pub said: String,
    /// What was tried again, as clauses.
    pub again: String,
}

impl Restart {
    /// Notes how its last restart ended: `detail` when it did not bring
    /// the component back. Only a restart of a component counts (a fault,
    /// a timeout, a nemesis or the clients' restart leaves nothing of its
    /// own down, and doing it again would be another fault; the components
    /// a nemesis lends are noted by their restarts), so only a [`Restart`]
    /// notes it.
    pub(super) fn note(&mut self, ok: bool, detail: Option<&str>) {
        self.unrecovered = (!ok).then(|| detail.unwrap_or("no detail").to_string());
    }
}

impl Target {
    /// What its last restart said when it did not bring it back.
    pub(crate) fn unrecovered(&self) -> Option<&str> {
        match self.action() {
            Action::Restart(restart) => restart.unrecovered.as_deref(),
            _ => None,
        }
    }

    /// Back, as a later step of its repair showed (its own restart noted
    /// it left down): no longer noted so, and the next cell's bring-back
    /// need not probe it.
    pub(super) fn brought_back(&mut self) {
        if let Action::Restart(restart) = self.split().0 {
            restart.unrecovered = None;
        }
    }

    /// Whether it answers its probe now (within its deadline); if so, it
    /// is no longer noted as left down.
    async fn answers_now(&mut self) -> bool {
        let answers = self.split().1.ready_after_heal().await.is_ok();
        if answers {
            self.brought_back();
        }
        answers
    }
}

/// Brings back `parts[at]`, a component an earlier cell left down,
/// between cells (in no cell's trace): whether its probe answers now,
/// else whether its repair, tried again, brings it back — a component of
/// the stack's repaired as after its fault ([`super::repair`]), through
/// every part of the stack; another restarted once more. `Err` says what
/// was left and what was tried.
pub(crate) async fn bring_back(parts: &mut [&mut Target], at: usize) -> Result<(), NotBroughtBack> {
    let part = &mut *parts[at];
    let Some(said) = part.unrecovered().map(str::to_string) else {
        return Ok(());
    };
    let trace = crate::trace::Trace::detached();
    part.set_trace(trace.clone());
    if part.answers_now().await {
        return Ok(());
    }
    let component = part.name().to_string();
    let (ok, again) = match part.id.builtin() {
        Some(builtin) => {
            let mut stack = LentSlice {
                holder: Holder::Stack,
                trace: &trace,
                parts,
                phase: "bringBackBeforeCell",
            };
            let repaired = repair_lent(builtin, &mut stack).await;
            (repaired.ok, repaired.said)
        }
        None => {
            let again = part
                .restart_lent("bringBackBeforeCell", &mut [])
                .await
                .record;
            let said = restart_before_cell(&component, &again);
            (again.ok, said)
        }
    };
    match ok {
        true => Ok(()),
        false => Err(NotBroughtBack {
            component,
            said: first_line(&said).to_string(),
            again: again.trim_start_matches("; ").to_string(),
        }),
    }
}
