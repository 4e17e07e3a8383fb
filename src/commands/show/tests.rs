//! `show`'s tests (`show.rs`): how a cell path and an SDK point pick cells, and cells that differ on one axis told apart.

use super::*;

/// Two SDK points of one target, scenario and client are two cells:
/// `show` once took the first for either, so the candidate's was
/// never shown.
#[test]
fn an_sdk_point_is_named_after_the_client() {
    let report = crate::report::fixture::candidates("sandbox-agent 0.4.2");
    let fixed = find_cell(&report, "agent@fix/native-continuity/ts-sdk@fix", &[]).unwrap();
    assert_eq!(
        (
            fixed.point.name_on(Axis::Server),
            fixed.point.name_on(Axis::Sdk)
        ),
        (Some("fix"), Some("fix"))
    );
    assert_eq!(fixed.verdict, crate::report::Verdict::Pass);
    let release = find_cell(&report, "agent@0.4.2/native-continuity/ts-sdk@0.4.2", &[]).unwrap();
    assert_eq!(release.verdict, crate::report::Verdict::Fail);
    // What a block's `timeline:` line says finds that very cell.
    for cell in &report.cells {
        let spec = crate::report::terminal::cell_spec(cell);
        let picks: Vec<AxisValue> = CellPicks::axes()
            .filter_map(|axis| cell.point.get(axis).cloned())
            .collect();
        assert_eq!(
            find_cell(&report, &spec, &picks).unwrap().key(),
            cell.key(),
            "{spec}"
        );
    }
    let e = find_cell(&report, "agent@fix/native-continuity/ts-sdk", &[]).unwrap_err();
    assert!(
            e.to_string().contains("ran on SDK points 0.4.2 and fix: name one, e.g. --cell agent@fix/native-continuity/ts-sdk@fix"),
            "{e}"
        );
    assert!(find_cell(&report, "agent@fix/native-continuity/ts-sdk@nope", &[]).is_err());
}

/// A cell naming no client ran continuity's own, which `/rust` names;
/// a target whose own name holds an `@` is found by it, as is a
/// target at its server point.
#[test]
fn a_path_selects_by_the_client_a_cell_ran_and_by_either_reading_of_an_at() {
    let mut report = crate::report::fixture::report();
    let cell = report.cells[0].clone();
    let found = find_cell(
        &report,
        &format!("{}/{}/rust", cell.point.target, cell.point.scenario),
        &[],
    )
    .unwrap();
    assert_eq!(found.key(), cell.key());
    let mut odd = cell.clone();
    odd.point.target = "a@b".into();
    let mut served = cell.clone();
    served.point.target = "a".into();
    served.point.set(AxisValue::Server("c".into()));
    report.cells = vec![odd.clone(), served.clone()];
    let path = |target: &str| format!("{target}/{}", cell.point.scenario);
    let pick: [AxisValue; 0] = [];
    assert_eq!(
        find_cell(&report, &path("a@b"), &pick).unwrap().key(),
        odd.key()
    );
    assert_eq!(
        find_cell(&report, &path("a@c"), &pick).unwrap().key(),
        served.key()
    );
    assert!(find_cell(&report, &path("a@d"), &pick).is_err());
    assert!(find_cell(&report, &format!("{}/ts-sdk", path("a@c")), &pick).is_err());
}

/// Two cells that differ only on one axis, whichever: `--cell` naming
/// neither value asks which, with both, and naming one (in the path
/// or by its flag) finds that one. `show` once took the first of two
/// server points silently, as it took the first value of any axis it
/// did not list.
#[test]
fn cells_differing_on_any_one_axis_are_told_apart() {
    let template = crate::report::fixture::report().cells[0].clone();
    let spec_and_picks = |point: &Point| {
        let mut cell = template.clone();
        cell.point = point.clone();
        let picks: Vec<AxisValue> = CellPicks::axes()
            .filter_map(|axis| point.get(axis).cloned())
            .collect();
        (crate::report::terminal::cell_spec(&cell), picks)
    };
    for axis in Axis::ALL {
        let mut base = template.point.clone();
        if axis == Axis::Sdk {
            // A value on the SDK axis is a hosted client's.
            base.set(crate::report::ClientKind::TsSdk.into());
        }
        let mut report = crate::report::fixture::report();
        report.cells = ["one", "two"]
            .map(|value| {
                let mut cell = template.clone();
                cell.point = base.with(AxisValue::parse(axis, value));
                cell
            })
            .to_vec();
        let (spec, picks) = spec_and_picks(&base);
        let asked = find_cell(&report, &spec, &picks).unwrap_err().to_string();
        assert!(
            asked.contains("one and two: name one"),
            "{axis:?}: {spec}: {asked}"
        );
        for cell in &report.cells {
            let (spec, picks) = spec_and_picks(&cell.point);
            let found = find_cell(&report, &spec, &picks)
                .unwrap_or_else(|e| panic!("{axis:?}: {spec} {picks:?}: {e}"));
            assert_eq!(found.key(), cell.key(), "{axis:?}: {spec}");
        }
    }
}
