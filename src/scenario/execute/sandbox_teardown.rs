//! The end of every cell that made sandbox state: its terminals closed, its
//! processes killed and deleted, any process still carrying the cell's mark
//! killed (a restarted server forgets processes without killing them), its
//! folder removed; bounded, with a fresh client, whatever happened before.

use super::sandbox_steps::{file_missing, marked_processes};
use super::RunningCell;
use crate::client::{Client, ClientError, ClientOptions};
use crate::clock::millis;
use crate::diagnose;
use crate::persist::MemoryDriver;
use crate::report::detail::{Detail, TeardownDetail};
use crate::report::{Outcome, PhaseResult, Signature, SignatureKind};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the teardown of a cell's files and processes may take.
const TEARDOWN_BOUND: Duration = Duration::from_secs(10);

impl RunningCell<'_> {
    /// Closes the cell's terminals and removes its processes and files, bounded,
    /// with a fresh client (the scenario's may be disposed or broken). `None`
    /// when the cell made nothing.
    pub(super) async fn sandbox_teardown(&mut self) -> Option<PhaseResult> {
        if self.sandbox.is_empty() {
            return None;
        }
        let started = Instant::now();
        let state = std::mem::take(&mut self.sandbox);
        for entry in state.terminals.values() {
            let _ = tokio::time::timeout(Duration::from_secs(1), entry.terminal.close()).await;
        }
        let options = self.teardown_options();
        let mut errors: Vec<String> = Vec::new();
        let mut orphans = 0usize;
        let work = async {
            let client = Client::connect(options)?;
            for id in state.processes.values() {
                if let Err(e) = client.remove_process(id).await {
                    errors.push(format!("process {id}: {e}"));
                }
            }
            // A server restart can orphan its processes (a PTY process has
            // its own session): the cell's mark in their environment finds them.
            if state.spawned {
                match marked_processes(&client, &self.settings.session_suffix, true).await {
                    Ok(killed) => {
                        orphans = killed.len();
                    }
                    Err(e) => errors.push(format!("orphan sweep: {e}")),
                }
            }
            if !state.files.is_empty() {
                match client.delete_entry(&self.sandbox_folder()).await {
                    Err(e) if !file_missing(&e) => {
                        errors.push(format!("folder {}: {e}", self.sandbox_folder()))
                    }
                    _ => {}
                }
            }
            client.dispose().await;
            Ok::<(), ClientError>(())
        };
        let outcome = tokio::time::timeout(TEARDOWN_BOUND, work).await;
        let detail = TeardownDetail {
            processes: state.processes.len(),
            files: state.files.len(),
            orphans_killed: orphans,
        }
        .to_map();
        let signature = match outcome {
            Err(_) => Some(diagnose::timeout(
                millis(TEARDOWN_BOUND),
                "removing the cell's processes and files",
            )),
            Ok(Err(e)) => Some(diagnose::other(SignatureKind::Client, e.to_string())),
            Ok(Ok(())) if !errors.is_empty() => Some(diagnose::other(
                SignatureKind::Client,
                crate::secret::redact(&errors.join("; "), self.settings.token.as_ref()),
            )),
            Ok(Ok(())) => None,
        };
        Some(teardown_phase(signature, started.elapsed(), detail))
    }

    /// A fresh client's options: the scenario's may be disposed or broken.
    fn teardown_options(&self) -> ClientOptions {
        let mut options = ClientOptions::new(
            self.settings.base_url.clone(),
            Arc::new(MemoryDriver::default()),
        );
        options.token = self.settings.token.clone();
        options.headers = self.settings.headers.clone();
        options.trace = self.settings.trace.clone();
        options
    }
}

/// The teardown's phase: a cleanup phase, failed by `signature` if any.
fn teardown_phase(
    signature: Option<Signature>,
    took: Duration,
    detail: serde_json::Map<String, serde_json::Value>,
) -> PhaseResult {
    let ok = signature.is_none();
    PhaseResult {
        name: "sandboxCleanup".into(),
        step: "sandbox_cleanup".into(),
        decides_verdict: false,
        cleanup: true,
        outcome: match (&signature, ok) {
            (_, true) => Outcome::Ok,
            (Some(s), _) if s.kind == SignatureKind::Timeout => Outcome::Timeout,
            _ => Outcome::Fail,
        },
        ok,
        duration_ms: millis(took),
        deadline_ms: millis(TEARDOWN_BOUND),
        detail,
        signature,
    }
}
