//! The always-on checker's verdict on a cell, applied to its phases: a
//! violation fails the phase during which the offending event arrived
//! (kind `integrity`, its signature naming the invariant, the hop and the
//! evidence), and the cell is judged again, so a cell whose phases all
//! passed fails there, and one that failed later fails there first.
//! Violations are listed in the detail of the phase they fell in.

use super::judge::judge;
use super::{diagnose, CellRun};
use crate::check::{Verdict as Checked, Violation};
use crate::report::{Outcome, PhaseResult, Signature, SignatureKind, Verdict};
use serde_json::Value;

/// How many violations a phase's detail lists.
const LISTED: usize = 20;

/// The signature of an `integrity` failure: words that compare across
/// runs, and the violation itself as the evidence.
pub(crate) fn signature(violation: &Violation) -> Signature {
    let mut signature = diagnose::other(SignatureKind::Integrity, violation.message());
    signature.integrity = Some(violation.clone());
    signature
}

impl CellRun {
    /// Fails the phase of the first violation (the one first on the
    /// path), lists each violation in its phase's detail, and judges the
    /// cell again. A cell that errored, was interrupted or skipped keeps
    /// its verdict: the violations are only listed.
    pub(crate) fn apply_integrity(&mut self, checked: &Checked) {
        for phase in &mut self.phases {
            let mine: Vec<Value> = checked
                .violations
                .iter()
                .filter(|v| v.phase.as_deref() == Some(phase.name.as_str()))
                .take(LISTED)
                .filter_map(|v| serde_json::to_value(v).ok())
                .collect();
            if !mine.is_empty() {
                phase.detail.insert("integrity".into(), Value::Array(mine));
            }
        }
        let Some(first) = checked.first() else {
            return;
        };
        if !matches!(
            self.verdict,
            Verdict::Pass | Verdict::Fail | Verdict::NotApplicable
        ) {
            return;
        }
        let named = first
            .phase
            .as_deref()
            .and_then(|name| self.phases.iter().position(|p| p.name == name));
        let ran = || {
            self.phases
                .iter()
                .rposition(|p| !p.cleanup && p.outcome != Outcome::NotRun)
        };
        let Some(index) = named.or_else(ran) else {
            return;
        };
        let phase = &mut self.phases[index];
        if phase.ok {
            phase.ok = false;
            phase.outcome = Outcome::Fail;
            phase.decides_verdict = true;
            phase.signature = Some(signature(first));
        }
        if phase.cleanup {
            // A cleanup phase decides nothing, but what broke in it is the cell's.
            if matches!(self.verdict, Verdict::Pass | Verdict::NotApplicable) {
                self.verdict = Verdict::Fail;
                self.failure_boundary = Some(phase.name.clone());
                self.reason = None;
            }
            return;
        }
        self.judge_again();
    }

    /// The verdict, boundary and reason folded again from the phases.
    fn judge_again(&mut self) {
        let folded = judge(&self.phases, &self.restarts);
        self.verdict = folded.verdict;
        self.failure_boundary = folded.boundary;
        self.reason = folded.reason;
    }
}

/// What a finished attempt was judged: its phases, verdict, failure
/// boundary and (for `not_applicable`) reason.
pub(crate) struct Judged {
    pub phases: Vec<PhaseResult>,
    pub verdict: Verdict,
    pub failure_boundary: Option<String>,
    pub reason: Option<String>,
}

/// A finished attempt's phases, verdict and boundary judged again with
/// `checked` (`continuity check`): what an earlier check failed is undone
/// first, so the verdict is the phases' own with this check applied.
pub(crate) fn recheck(
    judged: Judged,
    restarts: &[crate::report::RestartResult],
    checked: &Checked,
) -> Judged {
    let mut run = CellRun {
        phases: judged.phases,
        restarts: restarts.to_vec(),
        verdict: judged.verdict,
        failure_boundary: judged.failure_boundary,
        reason: judged.reason,
        duration_ms: 0,
        started: std::time::Instant::now(),
    };
    let mut undone = false;
    for phase in &mut run.phases {
        phase.detail.remove("integrity");
        if phase
            .signature
            .as_ref()
            .is_some_and(|s| s.integrity.is_some())
        {
            phase.signature = None;
            phase.outcome = Outcome::Ok;
            phase.ok = true;
            undone = true;
        }
    }
    if undone && matches!(run.verdict, Verdict::Pass | Verdict::Fail) {
        run.judge_again();
    }
    run.apply_integrity(checked);
    Judged {
        phases: run.phases,
        verdict: run.verdict,
        failure_boundary: run.failure_boundary,
        reason: run.reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Breach, Hop, Invariant};
    use serde_json::Map;

    fn phase(name: &str, ok: bool) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            step: "prompt".into(),
            decides_verdict: true,
            cleanup: false,
            outcome: if ok { Outcome::Ok } else { Outcome::Fail },
            ok,
            duration_ms: 1,
            deadline_ms: 1,
            detail: Map::new(),
            signature: (!ok).then(|| diagnose::other(SignatureKind::Client, "closed")),
        }
    }

    fn run(phases: Vec<PhaseResult>) -> CellRun {
        let folded = judge(&phases, &[]);
        CellRun {
            phases,
            restarts: Vec::new(),
            verdict: folded.verdict,
            failure_boundary: folded.boundary,
            reason: folded.reason,
            duration_ms: 1,
            started: std::time::Instant::now(),
        }
    }

    fn violated_in(phase: &str) -> Checked {
        Checked {
            violations: vec![Violation {
                invariant: Invariant::Stream,
                breach: Breach::Duplicate,
                hop: Hop::Gateway,
                since: Some(Hop::Server),
                stream: Some("sdk-mock-1".into()),
                session: None,
                ids: vec!["3".into()],
                event_index: None,
                t: 5.0,
                phase: Some(phase.into()),
                detail: "SSE id 3 came twice on one GET of the stream".into(),
            }],
            ..Checked::default()
        }
    }

    #[test]
    fn a_cell_whose_phases_passed_fails_where_the_offending_event_arrived() {
        let mut cell = run(vec![phase("a", true), phase("b", true), phase("c", true)]);
        assert_eq!(cell.verdict, Verdict::Pass);
        cell.apply_integrity(&violated_in("b"));
        assert_eq!(cell.verdict, Verdict::Fail);
        assert_eq!(cell.failure_boundary.as_deref(), Some("b"));
        let sig = cell.phases[1].signature.as_ref().unwrap();
        assert_eq!(sig.kind, SignatureKind::Integrity);
        assert_eq!(sig.integrity.as_ref().unwrap().ids, ["3"]);
        assert!(
            sig.message
                .starts_with("stream: an SSE event delivered twice"),
            "{}",
            sig.message
        );
        assert_eq!(cell.phases[1].detail["integrity"][0]["hop"], "gateway");
    }

    #[test]
    fn an_earlier_violation_becomes_the_boundary_a_later_one_is_only_listed() {
        let mut cell = run(vec![phase("a", true), phase("b", false), phase("c", true)]);
        cell.apply_integrity(&violated_in("a"));
        assert_eq!(cell.failure_boundary.as_deref(), Some("a"));
        let mut cell = run(vec![phase("a", true), phase("b", false), phase("c", true)]);
        cell.apply_integrity(&violated_in("c"));
        assert_eq!(cell.failure_boundary.as_deref(), Some("b"));
        assert_eq!(
            cell.phases[1].signature.as_ref().unwrap().kind,
            SignatureKind::Client
        );
    }

    #[test]
    fn a_check_again_undoes_the_last_one_first() {
        let mut cell = run(vec![phase("a", true), phase("b", true)]);
        cell.apply_integrity(&violated_in("a"));
        let judged = |cell: &CellRun| Judged {
            phases: cell.phases.clone(),
            verdict: cell.verdict,
            failure_boundary: cell.failure_boundary.clone(),
            reason: cell.reason.clone(),
        };
        let again = recheck(judged(&cell), &[], &Checked::default());
        assert_eq!(
            (again.verdict, again.failure_boundary.clone()),
            (Verdict::Pass, None)
        );
        assert!(again.phases.iter().all(|p| p.ok && p.detail.is_empty()));
        let again = recheck(again, &[], &violated_in("b"));
        assert_eq!(
            (again.verdict, again.failure_boundary.as_deref()),
            (Verdict::Fail, Some("b"))
        );
    }

    #[test]
    fn no_violation_changes_nothing() {
        let mut cell = run(vec![phase("a", true)]);
        cell.apply_integrity(&Checked::default());
        assert_eq!(cell.verdict, Verdict::Pass);
        assert!(cell.phases[0].detail.is_empty());
    }
}
