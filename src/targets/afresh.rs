//! A component started afresh: stopped, the data folder it keeps set
//! aside, and started on an empty one — the last step of a repair when
//! its restarts did not bring it back ([`super::Repair::Afresh`]). The
//! Rivet Engine 2.3.19, woken from a freeze past its ping timeout, can
//! lose its workflow worker while the process stays up; restarted on its
//! data it then routes nothing ("received request for unknown actor"),
//! and only an empty data folder serves the next cell. The folder set
//! aside is kept beside the old one and named in the cell's record, for
//! whoever looks into why.

use super::{Readiness, RestartFailure, RestartResult, Target};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What starting a component afresh needs: where it keeps its data, and
/// how it is seen booting before what it serves answers (the Engine's
/// `/health`: its actors answer only once a runner is back on it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Afresh {
    pub data: PathBuf,
    pub boot: Readiness,
}

impl Target {
    /// It can be started afresh ([`Target::restart_afresh`]).
    pub(crate) fn with_afresh(mut self, afresh: Afresh) -> Self {
        self.afresh = Some(afresh);
        self
    }

    /// Stopped and seen down as its restart sees it, its data folder set
    /// aside, then started and seen booting; always started again, even
    /// when the folder could not be set aside (the stack is never left
    /// down by a repair). The record's detail names the folder kept.
    pub(super) async fn restart_afresh(&mut self, phase: &str) -> RestartResult {
        let started = Instant::now();
        let mut record = RestartResult {
            phase: phase.to_string(),
            action: self.kind().to_string(),
            ok: false,
            restart_ms: 0,
            ready_ms: None,
            down: None,
            detail: None,
        };
        let Some(Afresh { data, boot }) = self.afresh.clone() else {
            record.detail = Some("it keeps no data folder continuity can set aside".into());
            return record;
        };
        let down = self.take_down().await;
        let set_aside = set_aside(&data)
            .map(|kept| kept.to_string())
            .map_err(|e| e.to_string());
        let up = self.bring_up(Some(&boot)).await;
        record.restart_ms = crate::clock::millis(started.elapsed());
        let said = |e: RestartFailure| e.to_string();
        record.down = down.as_ref().ok().cloned();
        record.ready_ms = up.as_ref().ok().copied();
        let outcome = down
            .map_err(said)
            .and(set_aside)
            .and_then(|kept| up.map(|_| kept).map_err(said));
        record.ok = outcome.is_ok();
        record.detail = Some(outcome.unwrap_or_else(|failed| failed));
        record
    }
}

/// What setting a data folder aside did.
#[derive(Debug, PartialEq)]
enum SetAside {
    /// Renamed to this path.
    Moved(PathBuf),
    /// There was none to set aside.
    Absent(PathBuf),
}

impl std::fmt::Display for SetAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetAside::Moved(to) => write!(f, "its data folder set aside as {}", to.display()),
            SetAside::Absent(data) => write!(f, "it had no data folder ({})", data.display()),
        }
    }
}

/// A data folder that could not be renamed.
#[derive(Debug, thiserror::Error)]
#[error("its data folder {} could not be set aside: {source}", data.display())]
struct NotSetAside {
    data: PathBuf,
    source: std::io::Error,
}

/// `data` renamed to `<data>.set-aside-<n>` (the first `n` free), so the
/// component starts on an empty folder.
fn set_aside(data: &Path) -> Result<SetAside, NotSetAside> {
    if !data.exists() {
        return Ok(SetAside::Absent(data.to_path_buf()));
    }
    let aside = (1..)
        .map(|n| PathBuf::from(format!("{}.set-aside-{n}", data.display())))
        .find(|p| !p.exists())
        .expect("some n is free");
    match std::fs::rename(data, &aside) {
        Ok(()) => Ok(SetAside::Moved(aside)),
        Err(source) => Err(NotSetAside {
            data: data.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{set_aside, SetAside};

    /// The folder moves to the first free name, beside the one before it.
    #[test]
    fn a_data_folder_is_set_aside_under_the_first_free_name() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("engine-data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("db"), "old").unwrap();
        std::fs::create_dir(dir.path().join("engine-data.set-aside-1")).unwrap();
        let said = set_aside(&data).unwrap();
        let aside = dir.path().join("engine-data.set-aside-2");
        assert_eq!(said, SetAside::Moved(aside.clone()));
        assert_eq!(std::fs::read_to_string(aside.join("db")).unwrap(), "old");
        assert!(!data.exists());
        let none = set_aside(&data).unwrap();
        assert_eq!(none, SetAside::Absent(data.clone()));
        assert!(
            none.to_string().starts_with("it had no data folder"),
            "{none}"
        );
    }
}
