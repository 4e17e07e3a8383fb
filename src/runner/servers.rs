//! One stack serves cells of every server point. A worker's sandbox-agent
//! runs one point's binary at a time and switches between cells: the
//! component stops, the other binary starts on the same port (same data
//! folder, same gateway in front) and is probed healthy, about 0.2 s. So
//! one queue and the same workers serve the whole server axis, and its
//! cells interleave as targets do, where one stack per version, run one
//! version after the other, left every other worker idle at each
//! version's tail and paid a whole stack's start per version. Every
//! point's binary is installed before the run; a worker prefers cells of
//! the point it runs (`workers::next_job`), so it switches about once per
//! point. The same slot will serve a candidate binary (a
//! [`super::ServerSource::Binary`] point).

use super::matrix::{CellPoint, ServerPoint};
use super::Worker;
use crate::targets::{BuiltinTarget, Target, TargetError};
use std::path::PathBuf;
use std::sync::Arc;

/// A server point's binary, installed before the run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServedBinary {
    pub label: String,
    pub binary: PathBuf,
}

/// A local stack's sandbox-agent as its worker switches it between
/// server points.
pub(crate) struct ServerSlot {
    binaries: Arc<[ServedBinary]>,
    /// The restart target that runs the server.
    target: BuiltinTarget,
    /// That target when this run does not restart it (`--target gateway`):
    /// it is then not among the worker's targets, but still switched.
    background: Option<Target>,
    /// The point running now; `None` after a switch that failed.
    serving: Option<String>,
    /// Points that did not start on this stack, with why: their next
    /// cells are errors at once rather than another wait for health.
    failed: Vec<SwitchError>,
}

/// Why a worker's stack cannot serve a cell's server point: the cell is
/// an error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum SwitchError {
    #[error("sandbox-agent {label} was not installed for this run")]
    NotInstalled { label: String },
    #[error("this stack has no `{target}` to run sandbox-agent {label}")]
    NoServerTarget {
        target: BuiltinTarget,
        label: String,
    },
    #[error("sandbox-agent {label} did not start on this stack: {source}")]
    DidNotStart {
        label: String,
        #[source]
        source: TargetError,
    },
}

impl SwitchError {
    fn label(&self) -> &str {
        match self {
            SwitchError::NotInstalled { label }
            | SwitchError::NoServerTarget { label, .. }
            | SwitchError::DidNotStart { label, .. } => label,
        }
    }
}

impl ServerSlot {
    /// The slot of a stack that came up running the `serving` point
    /// (`None`: none of `binaries`, so its first cell switches), its
    /// server the restart target `target` (`background` when this run
    /// does not restart it).
    pub(crate) fn new(
        binaries: Arc<[ServedBinary]>,
        serving: Option<&str>,
        target: BuiltinTarget,
        background: Option<Target>,
    ) -> ServerSlot {
        ServerSlot {
            binaries,
            target,
            background,
            serving: serving.map(str::to_string),
            failed: Vec::new(),
        }
    }

    /// The server's target when the worker does not hold it, for a cell
    /// it is lent to (a reboot, a schedule).
    pub(crate) fn background_mut(&mut self) -> Option<&mut Target> {
        self.background.as_mut()
    }

    /// The server's target when the worker does not hold it, for teardown.
    pub(crate) fn take_background(&mut self) -> Option<Target> {
        self.background.take()
    }
}

impl Worker {
    /// Whether this worker's stack runs `server` now (a deployment runs
    /// its only server always).
    pub(super) fn serves(&self, server: &ServerPoint) -> bool {
        match &self.server {
            None => true,
            Some(slot) => slot.serving.as_deref() == Some(server.label.as_str()),
        }
    }

    /// Sets this worker to `point` before its cell's attempts: the server
    /// its stack runs (switched if need be) and the store its attempts
    /// keep sessions in. `Err` says why the cell cannot run here.
    pub(super) async fn take_point(&mut self, point: &CellPoint) -> Result<(), SwitchError> {
        // A store of a server this stack does not run is
        // PersistChoice::Unavailable, which its attempts report (skipped
        // with the install command, or an error when the server failed).
        self.persist = self.stores.resolve(point.persist);
        if self.serves(&point.server) {
            return Ok(());
        }
        let Worker {
            server: Some(slot),
            targets,
            ..
        } = self
        else {
            return Ok(());
        };
        let label = &point.server.label;
        if let Some(failed) = slot.failed.iter().find(|f| f.label() == label) {
            return Err(failed.clone());
        }
        let Some(binary) = slot.binaries.iter().find(|b| &b.label == label) else {
            return Err(SwitchError::NotInstalled {
                label: label.clone(),
            });
        };
        let binary = binary.binary.clone();
        let server = slot.target;
        let target = match slot.background.as_mut() {
            Some(target) => target,
            None => match targets.iter_mut().find(|t| t.id == server) {
                Some(target) => target,
                None => {
                    return Err(SwitchError::NoServerTarget {
                        target: server,
                        label: label.clone(),
                    })
                }
            },
        };
        // Between cells: the switch belongs to no cell's trace, but the
        // server's log says which point's lines follow.
        target.set_trace(crate::trace::Trace::detached());
        note_in_log(
            target,
            &format!(
                "continuity: sandbox-agent {label} ({}) from here",
                binary.display()
            ),
        );
        match target.switch_program(binary).await {
            Ok(()) => {
                slot.serving = Some(label.clone());
                Ok(())
            }
            Err(source) => {
                let failed = SwitchError::DidNotStart {
                    label: label.clone(),
                    source,
                };
                slot.serving = None;
                slot.failed.push(failed.clone());
                Err(failed)
            }
        }
    }
}

/// Appends `line` to a managed target's log (best effort: a log that
/// cannot be written must not stop the run).
fn note_in_log(target: &Target, line: &str) {
    use std::io::Write as _;
    let Some(spec) = target.managed_spec() else {
        return;
    };
    let Some(log) = &spec.log else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(file, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::{PersistChoice, Store};
    use crate::runner::matrix::tests::point;
    use crate::targets::{ManagedSpec, Readiness, RestartAction};
    use std::time::Duration;

    /// A worker whose `agent` target is a tiny HTTP server on 127.0.0.1,
    /// run by `/usr/bin/dash` (point `good`); point `bad` names a program
    /// that does not exist.
    async fn worker(dir: &std::path::Path) -> Worker {
        let port = crate::supervise::free_port().unwrap();
        let python = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is needed for this test");
        let python = String::from_utf8_lossy(&python.stdout).trim().to_string();
        let script = format!("exec {python} -m http.server --bind 127.0.0.1 {port}");
        let mut spec = ManagedSpec::new("/usr/bin/dash", ["-c".to_string(), script]);
        spec.log = Some(dir.join("server.log"));
        spec.grace = Duration::from_secs(2);
        let mut target = Target::new(
            BuiltinTarget::Agent,
            RestartAction::Managed(spec),
            Readiness::Tcp {
                addr: format!("127.0.0.1:{port}"),
            },
        )
        .with_ready_timeout(Duration::from_secs(15));
        target.prepare().await.expect("the server starts");
        let binaries: Arc<[ServedBinary]> = vec![
            ServedBinary {
                label: "good".into(),
                binary: "/usr/bin/dash".into(),
            },
            ServedBinary {
                label: "bad".into(),
                binary: dir.join("no-such-server"),
            },
        ]
        .into();
        let mut worker = crate::runner::tests::bare_worker(vec![target]);
        worker.server = Some(ServerSlot::new(
            binaries,
            Some("good"),
            BuiltinTarget::Agent,
            None,
        ));
        worker
    }

    /// A point whose binary cannot start makes its cells errors that say
    /// so, at once for the next ones; a good point starts again after it.
    #[tokio::test]
    async fn a_point_that_cannot_start_errs_its_cells_and_the_stack_serves_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let mut worker = worker(dir.path()).await;
        let good = point("agent", "good");
        let bad = point("agent", "bad");
        assert!(worker.serves(&good.server));
        worker
            .take_point(&good)
            .await
            .expect("already serving good");
        let e = worker.take_point(&bad).await.unwrap_err();
        assert!(
            e.to_string()
                .starts_with("sandbox-agent bad did not start on this stack"),
            "{e}"
        );
        assert!(!worker.serves(&good.server) && !worker.serves(&bad.server));
        let started = std::time::Instant::now();
        assert_eq!(worker.take_point(&bad).await.unwrap_err(), e);
        assert!(started.elapsed() < Duration::from_secs(1), "no second wait");
        worker.take_point(&good).await.expect("good starts again");
        assert!(worker.serves(&good.server));
        let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
        assert!(log.contains("continuity: sandbox-agent bad ("), "{log}");
        assert!(log.contains("continuity: sandbox-agent good ("), "{log}");
        worker.targets[0].shutdown().await;
    }

    #[tokio::test]
    async fn a_cell_in_rivet_needs_the_stacks_rivet_store() {
        let mut worker = crate::runner::tests::bare_worker(Vec::new());
        let mut rivet = point("agent", "0.4.2");
        rivet.persist = Store::Rivet;
        worker.take_point(&rivet).await.unwrap();
        match &worker.persist {
            PersistChoice::Unavailable { store, reason, .. } => {
                assert_eq!(*store, Store::Rivet);
                assert!(reason.contains("Rivet actor store"), "{reason}");
            }
            other => panic!("a stack without Rivet gave {other:?}"),
        }
        rivet.persist = Store::Memory;
        worker.take_point(&rivet).await.unwrap();
        assert_eq!(worker.persist, PersistChoice::Own(Store::Memory));
    }
}
