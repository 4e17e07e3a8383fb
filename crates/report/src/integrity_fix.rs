//! "Where the fix belongs" for the always-on checker's findings: for each
//! cell whose history broke an invariant, the hop where the first
//! violation showed, and so the party the fix belongs to (the server, the
//! gateway between it and the client, the client, the store).

use super::model::Report;

/// One line per cell with a violation: its first, and whose it is.
pub(crate) fn lines(report: &Report) -> Vec<String> {
    report
        .cells
        .iter()
        .filter_map(|cell| {
            let first = cell.checked.as_ref()?.first()?;
            let since = first
                .since
                .map(|s| format!(", still right at the {}", s.as_str()))
                .unwrap_or_default();
            Some(format!(
                "- **{}** × {}: {} ({}{since}) → {}",
                crate::untrusted::Untrusted::new(&cell.label()).markdown(),
                crate::untrusted::Untrusted::new(&cell.point.scenario).markdown(),
                first.short(),
                first.invariant,
                whose(first.hop)
            ))
        })
        .collect()
}

/// Whose fix a violation first seen at `hop` is.
fn whose(hop: continuity_check::Hop) -> &'static str {
    use continuity_check::Hop;
    match hop {
        Hop::Agent => "the agent's",
        Hop::Server => "server-side fix (sandbox-agent sent it so)",
        Hop::Gateway => "the gateway's (between the server and the client)",
        Hop::Client => "client-side fix (how the client reads the stream)",
        Hop::Application => "client-side fix (what the client hands the application)",
        Hop::Store => "the session store's (its driver)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_that_broke_an_invariant_says_whose_fix_it_is() {
        let mut report = crate::fixture::report();
        assert!(lines(&report).is_empty());
        report.cells[1].checked = Some(continuity_check::Verdict {
            violations: vec![continuity_check::Violation {
                invariant: continuity_check::Invariant::Stream,
                breach: continuity_check::Breach::Duplicate,
                hop: continuity_check::Hop::Gateway,
                since: Some(continuity_check::Hop::Server),
                stream: None,
                session: None,
                ids: vec!["3".into()],
                event_index: None,
                t: 1.0,
                phase: None,
                detail: String::new(),
            }],
            ..Default::default()
        });
        let lines = lines(&report);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].ends_with("stream duplicate at gateway (stream, still right at the server) → the gateway's (between the server and the client)"),
            "{}",
            lines[0]
        );
    }
}
