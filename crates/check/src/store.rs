//! The store's indexes: each session's stored events carry the indexes
//! 1, 2, 3… once each, with none skipped (what the SDK's `eventIndex`
//! promises). What the events are, and their order, is the content
//! checker's ([`crate::content`]).

use crate::history::{History, Name};
use crate::verdict::{Breach, Hop, Invariant, Violation};
use std::collections::{BTreeMap, HashMap};

/// The index violations; `host_gaps` are windows in which the SDK's host
/// lost its records (a write seen nowhere there is not a gap in the store).
pub(crate) fn check(history: &History, host_gaps: &[(f64, f64)]) -> Vec<Violation> {
    let mut by_session: HashMap<Option<Name>, BTreeMap<u64, Vec<f64>>> = HashMap::new();
    for g in &history.store {
        if let Some(index) = g.event_index {
            by_session
                .entry(g.session)
                .or_default()
                .entry(index)
                .or_default()
                .push(g.t);
        }
    }
    let mut sessions: Vec<_> = by_session.into_iter().collect();
    sessions.sort_by_key(|(s, _)| s.map(|s| history.names.text(s).to_string()));
    let mut out = Vec::new();
    for (session, indexes) in sessions {
        let name = session.map(|s| history.names.text(s).to_string());
        // A session this cell created starts at index 1.
        let mut previous: Option<(u64, f64)> = Some((0, f64::NEG_INFINITY));
        for (index, times) in &indexes {
            if times.len() > 1 {
                out.push(violation(
                    history,
                    &name,
                    *index,
                    times[1],
                    format!("event index {index} was stored {} times", times.len()),
                ));
            }
            if let Some((before, t_before)) = previous {
                let skipped = index - before - 1;
                let excused = host_gaps
                    .iter()
                    .any(|(a, b)| times[0] >= *a && t_before <= *b);
                // Indexes whose write the store refused (the client saw
                // it) are failed operations, not holes.
                let refused = history
                    .store_failures
                    .iter()
                    .filter(|f| f.session == session)
                    .filter_map(|f| f.event_index)
                    .filter(|i| *i > before && i < index)
                    .collect::<std::collections::BTreeSet<u64>>()
                    .len() as u64;
                if skipped > refused && !excused {
                    let first = before + 1;
                    let missing = match skipped {
                        1 => format!("index {first} was"),
                        _ => format!("indexes {first}–{} were", index - 1),
                    };
                    let failed = history
                        .store_failures
                        .iter()
                        .filter(|f| f.session == session)
                        .count();
                    let why = match failed {
                        0 => String::new(),
                        n => format!(" ({n} of the session's writes failed)"),
                    };
                    out.push(violation(
                        history,
                        &name,
                        first,
                        times[0],
                        format!(
                            "{missing} never stored: the next stored event is index {index}{why}"
                        ),
                    ));
                }
            }
            previous = Some((*index, times[0]));
        }
    }
    out
}

fn violation(
    history: &History,
    session: &Option<String>,
    index: u64,
    t: f64,
    detail: String,
) -> Violation {
    Violation {
        invariant: Invariant::Store,
        breach: Breach::Index,
        hop: Hop::Store,
        since: None,
        stream: None,
        session: session.clone(),
        ids: Vec::new(),
        event_index: Some(index),
        t,
        phase: history.phase_at(t).map(str::to_string),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use crate::made_up::Made;
    use crate::{Breach, Invariant, Status};

    fn indexes(stored: &[u64]) -> Vec<(Breach, Option<u64>)> {
        let mut m = Made::new();
        for (n, index) in stored.iter().enumerate() {
            m.store("s", n as u32 + 1, *index);
        }
        super::check(&crate::History::of(m.lines()), &[])
            .into_iter()
            .map(|v| (v.breach, v.event_index))
            .collect()
    }

    #[test]
    fn stored_indexes_run_from_one_once_each_without_a_gap() {
        assert!(indexes(&[1, 2, 3]).is_empty());
        assert_eq!(indexes(&[1, 2, 2, 3]), [(Breach::Index, Some(2))]);
        assert_eq!(indexes(&[1, 2, 4]), [(Breach::Index, Some(3))]);
        assert_eq!(indexes(&[2, 3]), [(Breach::Index, Some(1))]);
    }

    #[test]
    fn a_store_index_gap_breaks_the_store_invariant() {
        let mut m = Made::new();
        m.store("s", 1, 1).store("s", 2, 3);
        let verdict = m.check(&[]);
        assert_eq!(
            verdict.status(Invariant::Store),
            Some(Status::Broken),
            "{verdict:#?}"
        );
        assert!(verdict
            .first()
            .unwrap()
            .detail
            .contains("index 2 was never stored"));
    }
}
