//! The step table's own checks: each kind listed once, parsed back from
//! its name, and documented in `scenarios/README.md` with its fields.

use super::StepKind;
use std::collections::{BTreeSet, HashSet};

#[test]
fn every_kind_is_listed_once_and_parses_back_from_its_name() {
    let names: HashSet<&str> = StepKind::all().iter().map(|k| k.name()).collect();
    assert_eq!(names.len(), StepKind::all().len());
    for &kind in StepKind::all() {
        assert_eq!(kind.name().parse::<StepKind>(), Ok(kind));
    }
    let e = "Prompt".parse::<StepKind>().unwrap_err().to_string();
    assert!(
        e.starts_with("unknown step \"Prompt\"; expected one of: connect, create_session, prompt,"),
        "{e}"
    );
}

/// The step table of `scenarios/README.md` lists every kind once, with
/// exactly the fields the parser accepts for it.
#[test]
fn the_scenario_readme_documents_every_kind_with_its_fields() {
    let readme = include_str!("../../../scenarios/README.md");
    let all_fields: BTreeSet<&str> = StepKind::all()
        .iter()
        .flat_map(|k| k.fields().iter().copied())
        .collect();
    let rows: Vec<(String, BTreeSet<String>)> = readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let step = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            step.parse::<StepKind>().ok()?;
            let fields = cells
                .get(2)?
                .split('`')
                .skip(1)
                .step_by(2)
                .filter_map(|quoted| quoted.split([' ', '=']).next())
                .filter(|word| all_fields.contains(word))
                .map(str::to_string)
                .collect();
            Some((step.to_string(), fields))
        })
        .collect();
    let mut documented: Vec<&str> = rows.iter().map(|(s, _)| s.as_str()).collect();
    documented.sort();
    let mut expected: Vec<&str> = StepKind::all().iter().map(|k| k.name()).collect();
    expected.sort();
    assert_eq!(documented, expected, "every step kind has one row");
    for (step, fields) in &rows {
        let kind: StepKind = step.parse().unwrap();
        let takes: BTreeSet<String> = kind.fields().iter().map(|f| f.to_string()).collect();
        assert_eq!(fields, &takes, "the fields documented for `{step}`");
    }
}
