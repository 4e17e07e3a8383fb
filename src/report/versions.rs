//! The version axis in `report.md`: for every pair of adjacent server
//! versions, what `continuity compare` would say (regressed, fixed,
//! changed, new, missing), so one run answers "what changed from 0.4.0 to
//! 0.4.2".

use std::fmt::Write as _;

use super::compare::{compare, Change};
use super::model::Report;

/// The server versions the cells carry, in run order; empty without a version axis.
pub fn axis_versions(report: &Report) -> Vec<&str> {
    let mut versions: Vec<&str> = Vec::new();
    for v in report
        .cells
        .iter()
        .filter_map(|c| c.server_version.as_deref())
    {
        if !versions.contains(&v) {
            versions.push(v);
        }
    }
    versions
}

/// The cells of one version, as a report of their own without the axis.
fn slice(report: &Report, version: &str) -> Report {
    let mut part = report.clone();
    part.cells
        .retain(|c| c.server_version.as_deref() == Some(version));
    for cell in &mut part.cells {
        cell.server_version = None;
    }
    part.run.server_version = Some(version.to_string());
    part
}

/// `## Versions`: one table per adjacent pair; `None` with fewer than two versions.
pub fn render_version_comparison(report: &Report) -> Option<String> {
    let versions = axis_versions(report);
    if versions.len() < 2 {
        return None;
    }
    let mut out = String::from("## Versions\n");
    for pair in versions.windows(2) {
        let (before, after) = (slice(report, pair[0]), slice(report, pair[1]));
        let rows = compare(&before, &after);
        let count = |c: Change| rows.iter().filter(|r| r.change == c).count();
        let _ = writeln!(
            out,
            "\n### {} → {}\n\n{} regressed, {} fixed, {} changed, {} same, {} new, {} missing\n",
            pair[0],
            pair[1],
            count(Change::Regressed),
            count(Change::Fixed),
            count(Change::Changed),
            count(Change::Same),
            count(Change::New),
            count(Change::Missing),
        );
        let differing: Vec<_> = rows.iter().filter(|r| r.change != Change::Same).collect();
        if differing.is_empty() {
            out.push_str("Every cell is the same.\n");
            continue;
        }
        let _ = writeln!(
            out,
            "| target | scenario | {} | {} | change |",
            pair[0], pair[1]
        );
        out.push_str("|---|---|---|---|---|\n");
        for row in differing {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                row.target,
                row.scenario,
                row.baseline.as_deref().unwrap_or("–").replace('|', "\\|"),
                row.candidate.as_deref().unwrap_or("–").replace('|', "\\|"),
                row.change.as_str()
            );
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{fixture, render_markdown, Verdict};

    fn two_versions() -> Report {
        let mut report = fixture::report();
        let mut newer = report.cells.clone();
        for cell in &mut report.cells {
            cell.server_version = Some("0.4.0".into());
        }
        for cell in &mut newer {
            cell.server_version = Some("0.4.2".into());
        }
        // 0.4.0 passed where 0.4.2 fails.
        report.cells[0].verdict = Verdict::Pass;
        report.cells[0].failure_boundary = None;
        report.cells.extend(newer);
        report
    }

    #[test]
    fn adjacent_versions_are_compared_in_the_markdown() {
        let r = two_versions();
        assert_eq!(axis_versions(&r), ["0.4.0", "0.4.2"]);
        let md = render_markdown(&r);
        assert!(md.contains("### 0.4.0 → 0.4.2"), "{md}");
        assert!(
            md.contains("1 regressed, 0 fixed, 0 changed, 3 same"),
            "{md}"
        );
        assert!(md.contains("| agent | native-continuity | pass | fail @ promptSameHandleAfterRestart (http 400 invalid_request) | REGRESSED |"), "{md}");
        assert!(md.contains("  - agent @ 0.4.2: "), "{md}");
        let summary = crate::report::render_summary(&r);
        assert!(
            summary.contains("│ agent   ┆ 0.4.0  ┆") && summary.contains("│ agent   ┆ 0.4.2  ┆"),
            "{summary}"
        );
    }

    #[test]
    fn one_version_has_no_comparison() {
        assert!(render_version_comparison(&fixture::report()).is_none());
    }
}
