//! The step kinds' own check: each listed once, and parsed back from its name.

use super::StepKind;
use std::collections::HashSet;

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
