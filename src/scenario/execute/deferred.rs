//! Cleanup off the critical path. On 0.4.2 a dispose waits out a DELETE the
//! server never answers (the SDK's 2 s bound), so a cell whose cleanup ends
//! with its `dispose` phases hands their DELETEs to the worker, which starts
//! the next cell while they run out. Only the DELETEs go: streams are
//! stopped and events stored first, in the cell's own time, so nothing
//! deferred touches the session store. Each phase keeps its own deadline
//! and its measured duration (start to DELETE answered or bound reached):
//! what the report shows per client is what an undeferred run shows.
//!
//! The stack's [`CleanupFence`] keeps the overlap safe: deferred DELETEs
//! hold a lease, and a restart that would cut requests in flight (the
//! server's, or a gateway stopped rather than reloaded) first waits until
//! no lease is left, so it never lands on another cell's DELETE.

use super::{dispose_ended, RunningCell};
use crate::client::Disposal;
use crate::report::PhaseResult;
use crate::scenario::{Phase, Step};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedRwLockReadGuard, RwLock};

/// One stack's fence between deferred DELETEs and restarts that cut them.
#[derive(Clone, Default)]
pub(crate) struct CleanupFence(Arc<RwLock<()>>);

impl CleanupFence {
    /// Waits until no deferred DELETE is in flight; how long that took.
    pub(crate) async fn clear(&self) -> Duration {
        let started = Instant::now();
        drop(self.0.write().await);
        started.elapsed()
    }

    /// Whether deferred DELETEs are running now.
    pub(crate) fn busy(&self) -> bool {
        self.0.try_write().is_err()
    }

    /// A lease for work a restart must not cut: held until dropped.
    pub(crate) async fn lease(&self) -> OwnedRwLockReadGuard<()> {
        Arc::clone(&self.0).read_owned().await
    }
}

/// The deferred DELETEs of one cell: the phase results they complete, by
/// their position among the cell's phase results.
pub(crate) struct DeferredCleanup {
    work: BoxFuture<'static, Vec<(usize, PhaseResult)>>,
}

impl DeferredCleanup {
    /// Runs the DELETEs out; the finished phase results, by position.
    pub(super) async fn finish(self) -> Vec<(usize, PhaseResult)> {
        self.work.await
    }
}

/// A `dispose` phase whose DELETEs are still to come.
pub(super) struct PendingDispose {
    position: usize,
    phase: Phase,
    disposal: Disposal,
    started: Instant,
}

/// DELETEs with no phase of their own: clients the scenario left open,
/// the recovering client's server id.
pub(super) type LooseDelete = BoxFuture<'static, ()>;

impl RunningCell<'_> {
    /// `dispose` phases, begun side by side: each stops its client's
    /// streams and stores its events now (under its deadline); their
    /// DELETEs wait in `self.pending_disposes`. Returns results in order,
    /// placeholders for the pending ones, which [`Self::run_out_disposes`]
    /// (now, or deferred through [`Self::take_deferred`]) replaces.
    pub(super) async fn begin_disposes(
        &mut self,
        phases: &[Phase],
        first_position: usize,
    ) -> Vec<PhaseResult> {
        let default = self.settings.default_timeout;
        let trace = self.settings.trace.clone();
        let context = self.result_context();
        let mut results: Vec<PhaseResult> = phases
            .iter()
            .map(|phase| super::not_run(phase, default, true))
            .collect();
        // Every dispose starts before any ends, as side by side in the cell.
        let mut begun = Vec::new();
        for (at, phase) in phases.iter().enumerate() {
            let client = match &phase.step {
                Step::Dispose { client } => self.clients.remove(client),
                _ => None,
            };
            if let Some(client) = client {
                trace.phase_start(&phase.name, phase.step.kind().name());
                begun.push((at, phase, client, Instant::now()));
            }
        }
        let begun = futures_util::future::join_all(begun.into_iter().map(
            |(at, phase, client, started)| async move {
                let deadline = phase.timeout.unwrap_or(default);
                let disposal = tokio::time::timeout(deadline, client.begin_dispose()).await;
                (at, phase, disposal, started, deadline)
            },
        ))
        .await;
        for (at, phase, disposal, started, deadline) in begun {
            match disposal {
                // Nothing was ever posted: the phase is over now.
                Ok(disposal) if disposal.is_empty() => {
                    results[at] = dispose_ended(&context, &trace, phase, started, deadline, true);
                }
                Ok(disposal) => self.pending_disposes.push(PendingDispose {
                    position: first_position + at,
                    phase: phase.clone(),
                    disposal,
                    started,
                }),
                Err(_) => {
                    results[at] = dispose_ended(&context, &trace, phase, started, deadline, false);
                }
            }
        }
        results
    }

    /// The pending disposes' DELETEs, side by side, each to its phase's
    /// deadline: their results by position; `None` when none is pending.
    pub(super) fn run_out_disposes(
        &mut self,
    ) -> Option<BoxFuture<'static, Vec<(usize, PhaseResult)>>> {
        let disposes = std::mem::take(&mut self.pending_disposes);
        if disposes.is_empty() {
            return None;
        }
        let trace = self.settings.trace.clone();
        let context = self.result_context();
        let phases = futures_util::future::join_all(disposes.into_iter().map(move |pending| {
            let trace = trace.clone();
            let context = context.clone();
            async move {
                let PendingDispose {
                    position,
                    phase,
                    disposal,
                    started,
                } = pending;
                let deadline = phase.timeout.unwrap_or(context.default_timeout);
                let left = deadline.saturating_sub(started.elapsed());
                let done = tokio::time::timeout(left, disposal.finish()).await.is_ok();
                let result = dispose_ended(&context, &trace, &phase, started, deadline, done);
                (position, result)
            }
        }));
        Some(Box::pin(phases))
    }

    /// Everything deferred so far, as one piece of work holding one lease
    /// on `fence`; `None` when nothing was.
    pub(super) async fn take_deferred(
        &mut self,
        fence: &CleanupFence,
        loose: Vec<LooseDelete>,
    ) -> Option<DeferredCleanup> {
        let phases = self.run_out_disposes();
        if phases.is_none() && loose.is_empty() {
            return None;
        }
        let lease = fence.lease().await;
        let loose = futures_util::future::join_all(loose);
        let work = async move {
            let phases = async {
                match phases {
                    Some(phases) => phases.await,
                    None => Vec::new(),
                }
            };
            let (finished, _) = futures_util::future::join(phases, loose).await;
            drop(lease);
            finished
        };
        Some(DeferredCleanup {
            work: Box::pin(work),
        })
    }
}

/// The DELETEs of clients the scenario left open (their streams stopped
/// and events stored now, within `bound`) and of the recovering client's
/// server ids, to run with the deferred phases.
pub(super) async fn loose_deletes(
    leftovers: &[Arc<crate::client::Client>],
    recovered: Vec<crate::acp::Transport>,
    bound: Duration,
) -> Vec<LooseDelete> {
    let mut loose: Vec<LooseDelete> = Vec::new();
    let begun = futures_util::future::join_all(leftovers.iter().map(|c| c.begin_dispose()));
    if let Ok(disposals) = tokio::time::timeout(bound, begun).await {
        for disposal in disposals {
            loose.push(Box::pin(async move {
                let _ = tokio::time::timeout(bound, disposal.finish()).await;
            }));
        }
    }
    for transport in recovered.into_iter().filter(|t| t.shut()) {
        loose.push(Box::pin(async move { transport.delete().await }));
    }
    loose
}
