//! `continuity show`: a finished run read back from its folder — the
//! summary and a block per failed cell, fitted to the terminal as `run`
//! prints them, or one cell's timeline as text
//! (`--cell TARGET/SCENARIO[/CLIENT[@SDK]][#ATTEMPT]`, with a flag called
//! as the axis, `--persist`, `--agent`, for each axis the path does not
//! name).

use super::{open_run, CommandError};
use crate::cli::CellPicks;
use crate::report::{
    render_terminal, timeline::render_timeline, Axis, AxisValue, Cell, Layout, Point, Report,
};
use std::path::Path;

/// The text to print for `show RUN [--cell … [--AXIS VALUE…]]`; `picks`
/// are the values the flags beside `--cell` name (see [`CellPicks`]).
pub fn show(run: &Path, cell: Option<&str>, picks: &[AxisValue]) -> Result<String, CommandError> {
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
    let cell = &find_cell(&report, wanted, picks).map_err(|e| match e {
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
fn find_cell(report: &Report, wanted: &str, picks: &[AxisValue]) -> Result<Cell, CommandError> {
    let at = CellPath::parse(wanted)?;
    let cell = the_one_cell(report, &at, picks)?;
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

/// The one cell `at` and `picks` name, or a usage error naming what is
/// missing (none matches) or which axis to name (several do: the first
/// axis, in [`asking_order`], on which the matching cells differ).
fn the_one_cell<'r>(
    report: &'r Report,
    at: &CellPath<'_>,
    picks: &[AxisValue],
) -> Result<&'r Cell, CommandError> {
    let matching = matching_cells(report, at, picks);
    let Some(first) = matching.first() else {
        let known: Vec<String> = report
            .cells
            .iter()
            .map(|c| format!("{}/{}", cell_name(c), c.point.scenario))
            .collect();
        let picked: String = picks
            .iter()
            .map(|value| format!(" with --{} {value}", value.axis().name()))
            .collect();
        return Err(CommandError::usage(format!(
            "no cell {}{picked} in this run (cells: {})",
            at.path,
            known.join(", ")
        )));
    };
    for axis in asking_order() {
        let values = distinct(matching.iter().filter_map(|c| ran_on(c, axis)));
        if values.len() > 1 {
            return Err(CommandError::usage(question(at, axis, &values, first)));
        }
    }
    Ok(*first)
}

/// The order `show` asks for an axis in when cells of several values on
/// it match: those a flag picks ([`CellPicks::axes`]: the store, the
/// agent, any other), then those the path names (the client, its SDK, the
/// server), as it always has.
fn asking_order() -> impl Iterator<Item = Axis> {
    CellPicks::axes().chain([Axis::Client, Axis::Sdk, Axis::Server])
}

/// The name of `cell`'s value on `axis`; on the client axis the client it
/// ran (a cell naming none ran continuity's own).
fn ran_on(cell: &Cell, axis: Axis) -> Option<&str> {
    match axis {
        Axis::Client => Some(cell.point.client().name()),
        other => cell.point.name_on(other),
    }
}

/// What `show` asks when the cells `at` names ran with several `values`
/// on `axis`: name one, the way `--cell` names it there.
fn question(at: &CellPath<'_>, axis: Axis, values: &[&str], first: &Cell) -> String {
    let CellPath {
        path,
        target,
        scenario,
        ..
    } = *at;
    let (listed, last) = (values.join(" and "), values[values.len() - 1]);
    match axis {
        Axis::Client => format!(
            "{target}/{scenario} ran with clients {listed}: name one, e.g. --cell {target}/{scenario}/{last}"
        ),
        Axis::Sdk => format!(
            "{target}/{scenario} ran on SDK points {listed}: name one, e.g. --cell {target}/{scenario}/{}@{last}",
            first.point.client().name()
        ),
        Axis::Server => format!(
            "{target}/{scenario} ran on server points {listed}: name one, e.g. --cell {target}@{last}{}",
            &path[target.len()..]
        ),
        flag => format!(
            "{target}/{scenario} ran with {} {listed}: name one, e.g. --cell {path} --{} {last}",
            flag.name(),
            flag.name()
        ),
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
fn matching_cells<'r>(report: &'r Report, at: &CellPath<'_>, picks: &[AxisValue]) -> Vec<&'r Cell> {
    let selections = selections(at, picks);
    report
        .cells
        .iter()
        .filter(|c| {
            let ran = c.point.with(AxisValue::Client(c.point.client().clone()));
            selections.iter().any(|s| s.selects(&ran))
        })
        .collect()
}

/// The points `at` and `picks` select: target × scenario and every value
/// they name. TARGET is read as a target's name, and at each `@` in it as
/// a target and its server point (`agent@0.4.0`): a target's own name may
/// hold an `@`, so each reading is a selection of its own.
fn selections(at: &CellPath<'_>, picks: &[AxisValue]) -> Vec<Point> {
    let in_path = [
        at.client.map(|k| AxisValue::parse(Axis::Client, k)),
        at.sdk.map(|s| AxisValue::parse(Axis::Sdk, s)),
    ];
    let mut base = Point::new(at.target, at.scenario);
    for value in in_path.into_iter().flatten().chain(picks.iter().cloned()) {
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
mod tests;
