//! A component's repair after a fault it did not come back from, so that
//! the next cell finds the stack whole: the steps its [`BuiltinTarget`]
//! names ([`BuiltinTarget::repair_steps`]), each done to a part lent to
//! whoever repairs ([`LentParts`]: a cell, a schedule, the worker before
//! its next cell) until one brings it back, and what they did, as clauses
//! of the failure. A repair is continuity's, never the verdict's: the
//! cell that needed it has failed already; the repair only decides
//! whether the next one runs on a stack that is whole.

use super::{BuiltinTarget, Repair, RestartResult, Target};
use crate::trace::event::{Event, Took};
use crate::trace::Trace;

impl Repair {
    /// What `result` said, as a clause of `holder`'s repair.
    fn note(self, result: &RestartResult, holder: Holder) -> String {
        let afresh = matches!(self, Repair::Afresh(_));
        clause(afresh, &self.part().to_string(), result, holder)
    }
}

/// What a restart (or, `afresh`, a start afresh) of `part` did, as a
/// clause of `holder`'s repair.
fn clause(afresh: bool, part: &str, result: &RestartResult, holder: Holder) -> String {
    let detail = result.detail.as_deref().unwrap_or("no detail");
    let detail = match holder.brief() {
        true => first_line(detail),
        false => detail,
    };
    let when = holder.when();
    match (afresh, result.ok) {
        (false, true) => format!("; `{part}` was restarted {when}"),
        (false, false) => format!("; restarting `{part}` {when} failed too: {detail}"),
        (true, true) => format!("; `{part}` was started afresh {when}: {detail}"),
        (true, false) => format!("; starting `{part}` afresh {when} failed too: {detail}"),
    }
}

/// What restarting `part` (no component of continuity's stack: a
/// deployment's) before this cell did, as a clause.
pub(super) fn restart_before_cell(part: &str, result: &RestartResult) -> String {
    clause(false, part, result, Holder::Stack)
}

/// A detail up to its first line: the log tail that follows is in the
/// record of the restart and the run's logs, not a later cell's reason.
pub(super) fn first_line(detail: &str) -> &str {
    detail.lines().next().unwrap_or_default()
}

/// What restarting `component` for the next cell did, as a clause (a
/// reboot's and a schedule's one restart of a part that did not answer).
pub(super) fn repair_note(component: BuiltinTarget, repaired: &RestartResult) -> String {
    Repair::Restart(component).note(repaired, Holder::Cell)
}

/// Who holds the parts a repair may act on, as its clauses name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holder {
    /// A cell, lent the parts its fault acts on (a pause's).
    Cell,
    /// A schedule of faults, lent the stack's parts.
    Schedule,
    /// The worker, before its next cell: every part of its stack.
    Stack,
}

impl Holder {
    fn name(self) -> &'static str {
        match self {
            Holder::Cell => "the cell",
            Holder::Schedule => "the schedule",
            Holder::Stack => "the stack",
        }
    }

    /// For whom the repair is, in its clauses.
    fn when(self) -> &'static str {
        match self {
            Holder::Cell | Holder::Schedule => "for the next cell",
            Holder::Stack => "before this cell",
        }
    }

    /// Whether its clauses keep each detail's first line only: the
    /// worker's, which become a cell's reason, not its record.
    fn brief(self) -> bool {
        self == Holder::Stack
    }
}

/// The components a repair may act on: those lent to a cell or to a
/// schedule, or a worker's stack.
pub(super) trait LentParts {
    /// Who holds them.
    fn holder(&self) -> Holder;

    /// The trace of the cell the repair runs in.
    fn trace(&self) -> &Trace;

    /// `step` done to its part; `None`: the part is not held.
    async fn repair(&mut self, step: Repair) -> Option<RestartResult>;

    /// `component` is back, as a step of its repair showed (its runner's
    /// restart, after its own failed): no longer noted as left down.
    async fn brought_back(&mut self, component: BuiltinTarget);
}

/// What a repair did.
pub(crate) struct Repaired {
    /// Whether the component answers again.
    pub ok: bool,
    /// What each step did, as clauses (each begins "; ").
    pub said: String,
}

/// `component`, not well after its fault, repaired so the next cell finds
/// the stack whole: each step of its repair
/// ([`BuiltinTarget::repair_steps`]) done through `parts` until a restart
/// brings it back (a part not held, or a start afresh that failed, ends
/// it: what follows would wait on what is not there).
pub(super) async fn repair_lent<P: LentParts>(component: BuiltinTarget, parts: &mut P) -> Repaired {
    let holder = parts.holder();
    let mut said = String::new();
    for step in component.repair_steps() {
        let started = std::time::Instant::now();
        let Some(done) = parts.repair(step).await else {
            let (part, holder) = (step.part(), holder.name());
            said.push_str(&format!(
                "; `{part}` was not lent to {holder} and was left as it is"
            ));
            break;
        };
        // The stack's wait to answer again, as after a heal: from the
        // step's action to ready, or to the deadline it never was by.
        let took = crate::clock::millis(started.elapsed());
        parts.trace().emit(Event::FaultReady(Took { ms: took }));
        said.push_str(&step.note(&done, holder));
        match (step, done.ok) {
            (Repair::Restart(_), true) => {
                parts.brought_back(component).await;
                return Repaired { ok: true, said };
            }
            (Repair::Afresh(_), false) => break,
            _ => {}
        }
    }
    Repaired { ok: false, said }
}

/// Parts lent as a slice: a pause's to its cell, a stack's to the worker.
pub(super) struct LentSlice<'a, 't> {
    pub holder: Holder,
    pub trace: &'a Trace,
    pub parts: &'a mut [&'t mut Target],
    /// The restart records' phase.
    pub phase: &'static str,
}

impl LentParts for LentSlice<'_, '_> {
    fn holder(&self) -> Holder {
        self.holder
    }

    fn trace(&self) -> &Trace {
        self.trace
    }

    async fn repair(&mut self, step: Repair) -> Option<RestartResult> {
        let part = self.parts.iter_mut().find(|p| p.id == step.part())?;
        part.set_trace(self.trace.clone());
        Some(part.repair_step(self.phase, step).await)
    }

    async fn brought_back(&mut self, component: BuiltinTarget) {
        if let Some(part) = self.parts.iter_mut().find(|p| p.id == component) {
            part.brought_back();
        }
    }
}

impl Target {
    /// `step` done to it: a restart as its own, or a start afresh.
    pub(super) async fn repair_step(&mut self, phase: &str, step: Repair) -> RestartResult {
        match step {
            // Boxed: a restart may itself close a nemesis (never a managed
            // component's, which is all a repair acts on), a cycle of futures.
            Repair::Restart(_) => Box::pin(self.restart_lent(phase, &mut [])).await.record,
            Repair::Afresh(_) => self.restart_afresh(phase).await,
        }
    }
}
