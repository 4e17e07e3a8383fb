//! A cell's cleanup phases, after its verdict phases: each under its own
//! deadline (all of them cut at one bound after an interruption), and
//! consecutive `dispose` phases side by side. Each client still gets its
//! own deadline and its own measured duration (the SDK's bound per client
//! is what the report shows), but the cell waits for the slowest of them
//! rather than their sum: on 0.4.2 a dispose waits out an unanswered
//! DELETE, so two clients cost one bound instead of two. On a worker's
//! stack, disposes that end the cleanup are deferred (see `deferred`).

use super::{interrupted_phase, not_run, step_client, RunningCell};
use crate::report::PhaseResult;
use crate::scenario::{Phase, Step};
use std::time::Instant;

impl RunningCell<'_> {
    /// Runs `phases` (the scenario's cleanup) and returns their results in
    /// the scenario's order. `cut_at`: the bound after an interruption.
    /// `offset`: how many phase results come before these in the cell's
    /// list (where deferred ones are put back).
    pub(super) async fn run_cleanup(
        &mut self,
        phases: &[Phase],
        cut_at: Option<Instant>,
        offset: usize,
    ) -> Vec<PhaseResult> {
        let mut results = Vec::with_capacity(phases.len());
        let mut rest = phases;
        while let Some(first) = rest.first() {
            let disposes = rest
                .iter()
                .take_while(|p| matches!(p.step, Step::Dispose { .. }))
                .count();
            let last = disposes == rest.len();
            // Nothing after them: their DELETEs can end beside the next cell.
            if last && self.fence.is_some() && cut_at.is_none() && self.client.defers_disposes() {
                let position = offset + results.len();
                results.extend(self.begin_disposes(rest, position).await);
                break;
            }
            if disposes > 1 && cut_at.is_none() && self.client.defers_disposes() {
                results.extend(self.dispose_side_by_side(&rest[..disposes]).await);
                rest = &rest[disposes..];
            } else {
                results.push(self.cleanup_phase(first, cut_at).await);
                rest = &rest[1..];
            }
        }
        results
    }

    /// One cleanup phase; not run when its client never connected.
    async fn cleanup_phase(&mut self, phase: &Phase, cut_at: Option<Instant>) -> PhaseResult {
        let default = self.settings.default_timeout;
        if !self.connected(phase) {
            return not_run(phase, default, true);
        }
        let Some(by) = cut_at else {
            return self.run_phase(phase, true).await;
        };
        let phase_started = Instant::now();
        match tokio::time::timeout_at(by.into(), self.run_phase(phase, true)).await {
            Ok(result) => result,
            Err(_) => {
                let mut cut = interrupted_phase(phase, default, phase_started);
                cut.cleanup = true;
                cut.decides_verdict = false;
                cut
            }
        }
    }

    fn connected(&self, phase: &Phase) -> bool {
        step_client(&phase.step).is_none_or(|c| self.client.connected(self, c))
    }

    /// `dispose` phases at once, each under its own deadline, each timed
    /// on its own; results in the order given. The deferred path without
    /// the deferring: begun side by side, then run out here.
    async fn dispose_side_by_side(&mut self, phases: &[Phase]) -> Vec<PhaseResult> {
        let mut results = self.begin_disposes(phases, 0).await;
        if let Some(pending) = self.run_out_disposes() {
            for (at, result) in pending.await {
                results[at] = result;
            }
        }
        results
    }
}
