//! A component an earlier cell left down. When a component's restart (a
//! repair after its fault, a reboot's, a schedule's) does not bring it
//! back, the next cell on the same stack would run on a stack that is not
//! whole and fail at its first call, before its own fault: its verdict
//! would be the earlier cell's. So the target remembers it, and before the
//! next cell the worker asks it to come back: its probe, then one more
//! restart. A component that answers runs the cell as usual; one that
//! still does not makes the cell an error that names it and what was
//! tried, never a failure of the cell's own fault.

use super::restart::Restart;
use super::{Action, Target};

/// A component left down that one more restart did not bring back either.
#[derive(Debug, thiserror::Error)]
#[error("`{component}` did not come back after an earlier cell's fault ({said}), and restarting it again before this cell failed too: {again}")]
pub(crate) struct NotBroughtBack {
    pub component: String,
    pub said: String,
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

    /// Brings back a component an earlier cell left down, between cells
    /// (in no cell's trace): whether its probe answers now, else whether
    /// one more restart brings it back. `Err` says what was left and what
    /// was tried.
    pub(crate) async fn bring_back(&mut self) -> Result<(), NotBroughtBack> {
        let Some(said) = self.unrecovered().map(str::to_string) else {
            return Ok(());
        };
        self.set_trace(crate::trace::Trace::detached());
        let (action, ctx) = self.split();
        if ctx.ready_after_heal().await.is_ok() {
            if let Action::Restart(restart) = action {
                restart.unrecovered = None;
            }
            return Ok(());
        }
        let again = self
            .restart_lent("bringBackBeforeCell", &mut [])
            .await
            .record;
        match again.ok {
            true => Ok(()),
            false => Err(NotBroughtBack {
                component: self.name().to_string(),
                said: first_line(&said).to_string(),
                again: first_line(again.detail.as_deref().unwrap_or("no detail")).to_string(),
            }),
        }
    }
}

/// A restart's detail up to its first line: the log tail that follows is
/// in the earlier cell's record and the run's logs, not this cell's reason.
fn first_line(detail: &str) -> &str {
    detail.lines().next().unwrap_or_default()
}
