//! `continuity show`: a finished run read back from its folder — the
//! summary and a block per failed cell, fitted to the terminal as `run`
//! prints them, or one cell's timeline as text
//! (`--cell TARGET/SCENARIO[/CLIENT[@SDK]][#ATTEMPT]`, with `--persist` and
//! `--agent` for the axes the path does not name).

use super::{open_run, CommandError};
use crate::report::{
    render_terminal, timeline::render_timeline, Axis, AxisValue, Cell, Layout, Point, Report,
};
use std::path::Path;

/// The axes `--cell`'s path does not name, picked by flags of their own
/// (`--persist`, `--agent`): needed where a run has several of their values.
#[derive(Debug, Default, Clone, Copy)]
pub struct CellPick<'a> {
    pub persist: Option<&'a str>,
    pub agent: Option<&'a str>,
}

/// The text to print for `show RUN [--cell … [--persist S] [--agent A]]`.
pub fn show(run: &Path, cell: Option<&str>, pick: &CellPick<'_>) -> Result<String, CommandError> {
    let folder = open_run(run)?;
    let report = folder
        .report()
        .map_err(|e| CommandError::usage(e.to_string()))?;
    let Some(wanted) = cell else {
        let stdout = crate::console::Stream::Stdout;
        let layout = Layout {
            width: crate::console::width(stdout),
            color: crate::console::color(stdout),
            folder: run.display().to_string(),
        };
        return Ok(render_terminal(&report, &layout));
    };
    // Its messages name the run's cells and axis values: one inert line.
    let cell = &find_cell(&report, wanted, pick).map_err(|e| match e {
        CommandError::Usage(why) => {
            CommandError::usage(crate::untrusted::Untrusted::new(&why).terminal())
        }
        other => other,
    })?;
    // A trace that is gone or torn costs its events, never the timeline:
    // the report's phases are drawn as for a run with `--trace off`, with
    // whatever events came before the damage.
    let mut events = Vec::new();
    if let Some(path) = &cell.trace {
        if let Err(e) = folder.for_each_event(path, |event| events.push(event)) {
            crate::console::errln(&format!(
                "warning: {e}; the timeline shows the report's phases{}",
                if events.is_empty() {
                    " only".to_string()
                } else {
                    format!(" and the {} events before it", events.len())
                }
            ));
        }
    }
    Ok(render_timeline(cell, &events))
}

/// `TARGET/SCENARIO[/CLIENT[@SDK]][#ATTEMPT]`: the cell (the attempt it
/// shows) or, with `#N`, its Nth attempt. TARGET may carry the server
/// point (`agent@0.4.0`, `agent@fix`) on a server axis; CLIENT (`rust`,
/// `ts-sdk`) picks one of a client axis's cells, and is needed there, as
/// is `@SDK` (`ts-sdk@fix`) on an SDK axis.
fn find_cell(report: &Report, wanted: &str, pick: &CellPick<'_>) -> Result<Cell, CommandError> {
    let at = CellPath::parse(wanted)?;
    let cell = the_one_cell(report, &at, pick)?;
    let Some(n) = at.attempt else {
        return Ok(cell.clone());
    };
    nth_attempt(cell, &at, n)
}

/// `--cell`'s parts: the path (before `#`) and what it names.
struct CellPath<'a> {
    path: &'a str,
    attempt: Option<u32>,
    target: &'a str,
    scenario: &'a str,
    client: Option<&'a str>,
    sdk: Option<&'a str>,
}

impl<'a> CellPath<'a> {
    fn parse(wanted: &'a str) -> Result<CellPath<'a>, CommandError> {
        let (path, attempt) = match wanted.rsplit_once('#') {
            Some((path, n)) => (
                path,
                Some(n.parse::<u32>().map_err(|_| {
                    CommandError::usage(format!(
                        "--cell {wanted:?}: the attempt after # must be a number"
                    ))
                })?),
            ),
            None => (wanted, None),
        };
        let Some((target, rest)) = path.split_once('/') else {
            return Err(CommandError::usage(format!(
                "--cell {wanted:?}: expected TARGET/SCENARIO[/CLIENT[@SDK]][#ATTEMPT]"
            )));
        };
        let (scenario, client) = match rest.split_once('/') {
            Some((scenario, client)) => (scenario, Some(client)),
            None => (rest, None),
        };
        let (client, sdk) = match client.map(|c| c.split_once('@')) {
            Some(Some((client, sdk))) => (Some(client), Some(sdk)),
            Some(None) => (client, None),
            None => (None, None),
        };
        Ok(CellPath {
            path,
            attempt,
            target,
            scenario,
            client,
            sdk,
        })
    }
}

/// The one cell `at` and `pick` name, or a usage error naming what is
/// missing (none matches) or which axis to name (several do).
fn the_one_cell<'r>(
    report: &'r Report,
    at: &CellPath<'_>,
    pick: &CellPick<'_>,
) -> Result<&'r Cell, CommandError> {
    let CellPath {
        path,
        target,
        scenario,
        ..
    } = *at;
    let known = || -> String {
        report
            .cells
            .iter()
            .map(|c| format!("{}/{}", cell_name(c), c.point.scenario))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let matching = matching_cells(report, at, pick);
    // An axis the path does not name, with several values among the matches.
    let several = |flag: &str, of: fn(&Cell) -> Option<&str>| -> Result<(), CommandError> {
        let values = distinct(matching.iter().filter_map(|c| of(c)));
        match values.as_slice() {
            [_, .., last] => Err(CommandError::usage(format!(
                "{target}/{scenario} ran with {flag} {}: name one, e.g. --cell {path} --{flag} {last}",
                values.join(" and ")
            ))),
            _ => Ok(()),
        }
    };
    several("persist", |c| c.point.name_on(Axis::Persist))?;
    several("agent", |c| c.point.name_on(Axis::Agent))?;
    let sdks = distinct(matching.iter().filter_map(|c| c.point.name_on(Axis::Sdk)));
    let clients: Vec<&str> = matching.iter().map(|c| c.point.client().name()).collect();
    match matching.first() {
        None => {
            let mut picked = String::new();
            for (flag, value) in [("persist", pick.persist), ("agent", pick.agent)] {
                if let Some(value) = value {
                    picked.push_str(&format!(" with --{flag} {value}"));
                }
            }
            Err(CommandError::usage(format!(
                "no cell {path}{picked} in this run (cells: {})",
                known()
            )))
        }
        Some(_) if clients.iter().any(|k| *k != clients[0]) => {
            Err(CommandError::usage(format!(
                "{target}/{scenario} ran with clients {}: name one, e.g. --cell {target}/{scenario}/{}",
                clients.join(" and "),
                clients[clients.len() - 1]
            )))
        }
        Some(_) if sdks.len() > 1 => {
            Err(CommandError::usage(format!(
                "{target}/{scenario} ran on SDK points {}: name one, e.g. --cell {target}/{scenario}/{}@{}",
                sdks.join(" and "),
                clients[0],
                sdks[sdks.len() - 1]
            )))
        }
        Some(cell) => Ok(*cell),
    }
}

/// A cell's target as `--cell` may name it: with its server point on a
/// server axis (`agent@0.4.0`).
fn cell_name(c: &Cell) -> String {
    match c.point.name_on(Axis::Server) {
        Some(v) => format!("{}@{v}", c.point.target),
        None => c.point.target.to_string(),
    }
}

/// Every cell whose point one of [`selections`] selects, its client named
/// (a cell naming none ran continuity's own, which `/rust` names).
fn matching_cells<'r>(report: &'r Report, at: &CellPath<'_>, pick: &CellPick<'_>) -> Vec<&'r Cell> {
    let selections = selections(at, pick);
    report
        .cells
        .iter()
        .filter(|c| {
            let ran = c.point.with(AxisValue::Client(c.point.client().clone()));
            selections.iter().any(|s| s.selects(&ran))
        })
        .collect()
}

/// The points `at` and `pick` select: target × scenario and every value
/// they name. TARGET is read as a target's name, and at each `@` in it as
/// a target and its server point (`agent@0.4.0`): a target's own name may
/// hold an `@`, so each reading is a selection of its own.
fn selections(at: &CellPath<'_>, pick: &CellPick<'_>) -> Vec<Point> {
    let named = [
        at.client.map(|k| AxisValue::parse(Axis::Client, k)),
        at.sdk.map(|s| AxisValue::parse(Axis::Sdk, s)),
        pick.persist.map(|p| AxisValue::parse(Axis::Persist, p)),
        pick.agent.map(|a| AxisValue::parse(Axis::Agent, a)),
    ];
    let mut base = Point::new(at.target, at.scenario);
    for value in named.into_iter().flatten() {
        base.set(value);
    }
    let on_servers = at.target.match_indices('@').map(|(i, _)| {
        let mut point = base.with(AxisValue::parse(Axis::Server, &at.target[i + 1..]));
        point.target = at.target[..i].into();
        point
    });
    let mut selections: Vec<Point> = on_servers.collect();
    selections.insert(0, base);
    selections
}

/// The cell as its attempt `n` ran (`#N`).
fn nth_attempt(cell: &Cell, at: &CellPath<'_>, n: u32) -> Result<Cell, CommandError> {
    let CellPath {
        target, scenario, ..
    } = *at;
    if cell.attempts.is_empty() && cell.attempt == n {
        return Ok(cell.clone());
    }
    let Some(a) = cell.attempts.iter().find(|a| a.attempt == n) else {
        let ran = cell.attempts.len().max(1);
        return Err(CommandError::usage(format!(
            "{target}/{scenario} has no attempt #{n} (it ran {ran})"
        )));
    };
    Ok(Cell {
        attempt: a.attempt,
        verdict: a.verdict,
        failure_boundary: a.failure_boundary.clone(),
        reason: a.reason.clone(),
        duration_ms: a.duration_ms,
        phases: a.phases.clone(),
        restarts: a.restarts.clone(),
        trace: a.trace.clone(),
        turn: crate::report::fate_of_turn(&a.phases),
        ..cell.clone()
    })
}

/// Each value once, in the order first seen.
fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two SDK points of one target, scenario and client are two cells:
    /// `show` once took the first for either, so the candidate's was
    /// never shown.
    #[test]
    fn an_sdk_point_is_named_after_the_client() {
        let report = crate::report::fixture::candidates("sandbox-agent 0.4.2");
        let fixed = find_cell(
            &report,
            "agent@fix/native-continuity/ts-sdk@fix",
            &CellPick::default(),
        )
        .unwrap();
        assert_eq!(
            (
                fixed.point.name_on(Axis::Server),
                fixed.point.name_on(Axis::Sdk)
            ),
            (Some("fix"), Some("fix"))
        );
        assert_eq!(fixed.verdict, crate::report::Verdict::Pass);
        let release = find_cell(
            &report,
            "agent@0.4.2/native-continuity/ts-sdk@0.4.2",
            &CellPick::default(),
        )
        .unwrap();
        assert_eq!(release.verdict, crate::report::Verdict::Fail);
        // What a block's `timeline:` line says finds that very cell.
        for cell in &report.cells {
            let spec = crate::report::terminal::cell_spec(cell);
            let pick = CellPick {
                persist: cell.point.name_on(Axis::Persist),
                agent: cell.point.name_on(Axis::Agent),
            };
            assert_eq!(
                find_cell(&report, &spec, &pick).unwrap().key(),
                cell.key(),
                "{spec}"
            );
        }
        let e = find_cell(
            &report,
            "agent@fix/native-continuity/ts-sdk",
            &CellPick::default(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("ran on SDK points 0.4.2 and fix: name one, e.g. --cell agent@fix/native-continuity/ts-sdk@fix"),
            "{e}"
        );
        assert!(find_cell(
            &report,
            "agent@fix/native-continuity/ts-sdk@nope",
            &CellPick::default()
        )
        .is_err());
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
            &CellPick::default(),
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
        let pick = CellPick::default();
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
}
