//! `continuity bisect`: over an ordered list of points on one axis
//! (server versions or `--server-bin` builds, SDK versions or `--sdk`
//! builds), the first point where a cell's verdict changes from the first
//! point's. Each point tried is one `run` of the cells (`--runs N` times
//! each, as `--repeat`), in a folder of its own under the bisect's, with
//! one seed for all; runs that disagree make the point flaky, which is
//! neither as the first nor changed ([`search`] leaves it out). Each try
//! is printed as it ends and `bisect.json` records them all.
//!
//! Over 400 lines on purpose: the command's loop (`Probe`: each point's runs
//! in its own folder, their `Verdicts`, the conclusion) shares the bisect's
//! folder, seed and cells throughout; the search order and the record are
//! apart (`search.rs`, `record.rs`), the tests in `tests.rs`.

mod record;
mod search;

use super::{CommandError, Given, Outcome};
use crate::cli::{BisectArgs, Cli, Command};
use crate::console;
use crate::report::{Axis, Point, Report, Verdict};
use clap::Parser;
use record::{BisectRecord, Try};
use search::{Found, Judged, Search};
use std::path::{Path, PathBuf};

/// `continuity bisect`. A stopping signal stops it where it is: during a
/// point, that point's run stops as a run does; between points, no other
/// point starts. Either way the points tried so far are in `bisect.json`.
pub async fn bisect(args: BisectArgs) -> Result<Outcome, CommandError> {
    let _handling = super::interrupts::Handling::take();
    let points = parse_points(&args)?;
    let cells = parse_cells(&args.cells)?;
    let dir = create_folder(args.out.as_deref())?;
    let seed = args.seed.unwrap_or_else(crate::seed::fresh);
    console::errln(&format!(
        "bisect: {} points on the {} axis, {} run(s) of each point tried, seed {seed}, in {}",
        points.len(),
        args.axis.name(),
        args.runs,
        dir.display()
    ));
    let mut record = BisectRecord::new(&args, &points, seed);
    let probe = Probe {
        args: &args,
        points: &points,
        cells: &cells,
        seed,
        dir: &dir,
    };
    let Some(reference) = probe.reference(&mut record).await? else {
        return Ok(Outcome::Interrupted);
    };
    let mut search = Search::new(points.len());
    while let Some(index) = search.next() {
        if super::interrupts::interrupted() {
            console::errln(&format!(
                "bisect: interrupted before point {}/{}: the points tried so far are in {}",
                index + 1,
                points.len(),
                dir.join("bisect.json").display()
            ));
            return Ok(Outcome::Interrupted);
        }
        let (judged, tried) = match probe.run(index).await? {
            Tried::Interrupted => return Ok(Outcome::Interrupted),
            Tried::Failed(why) => (Judged::NotRun, Try::not_run(index, &why)),
            Tried::Ran(verdicts) => {
                let judged = verdicts.against(&reference);
                (judged, Try::ran(index, &verdicts, judged))
            }
        };
        console::errln(&format!(
            "bisect: point {}/{} {}: {}",
            index + 1,
            points.len(),
            points[index],
            tried.describe()
        ));
        record.tried(&dir, tried)?;
        search.record(index, judged);
    }
    let found = search.found();
    record.found(&dir, &found)?;
    console::outln(&conclusion(
        &found,
        &points,
        record.tries(),
        args.runs,
        &dir,
    ));
    Ok(match found {
        Found::First(_) => Outcome::Passed,
        Found::Among { .. } | Found::NoChange => Outcome::Failed,
    })
}

/// One point of the list: what was given, and how `run` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BisectPoint {
    /// As given: `0.4.2`, `fix=./sandbox-agent`.
    pub spec: String,
    /// A registry version rather than a build on disk.
    pub registry: bool,
}

impl std::fmt::Display for BisectPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.spec)
    }
}

/// The points, each a version number or a path (it holds a `/`, after
/// an optional `LABEL=`); at least two.
fn parse_points(args: &BisectArgs) -> Result<Vec<BisectPoint>, CommandError> {
    let mut points = Vec::new();
    for spec in &args.points {
        let registry = !spec.contains('/') && !spec.contains('=');
        if registry {
            crate::cli::parse_version(spec).map_err(|why| {
                CommandError::usage(format!(
                    "bisect point {spec:?}: neither a version number ({why}) nor a path (a path holds a `/`: ./{spec})"
                ))
            })?;
        }
        points.push(BisectPoint {
            spec: spec.clone(),
            registry,
        });
    }
    if points.len() < 2 {
        return Err(CommandError::usage(
            "bisect needs at least two points: the first, whose verdicts the others are compared with, and one more",
        ));
    }
    Ok(points)
}

/// `--cell TARGET/SCENARIO`, each once.
fn parse_cells(given: &[String]) -> Result<Vec<Point>, CommandError> {
    let mut cells: Vec<Point> = Vec::new();
    for spec in given {
        let parsed = spec
            .split_once('/')
            .filter(|(t, s)| !t.is_empty() && !s.is_empty() && !s.contains('/'));
        let Some((target, scenario)) = parsed else {
            return Err(CommandError::usage(format!(
                "--cell {spec:?}: expected TARGET/SCENARIO (e.g. agent/native-continuity)"
            )));
        };
        let cell = Point::new(target, scenario);
        if cells.contains(&cell) {
            return Err(CommandError::usage(format!("--cell {spec} is given twice")));
        }
        cells.push(cell);
    }
    Ok(cells)
}

/// The bisect's folder: `--out`, else `reports/<UTC time>-bisect-<id>`;
/// new or empty, created here.
fn create_folder(out: Option<&Path>) -> Result<PathBuf, CommandError> {
    let dir = match out {
        Some(dir) => dir.to_path_buf(),
        None => crate::report::default_run_dir(
            Path::new("reports"),
            std::time::SystemTime::now(),
            &format!("bisect-{}", super::short_id()),
        ),
    };
    let dir = std::path::absolute(&dir)
        .map_err(|e| CommandError::usage(format!("--out {}: {e}", dir.display())))?;
    let busy = std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some());
    if busy {
        return Err(CommandError::usage(format!(
            "--out {}: the folder is not empty (a bisect writes a folder of its own)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| CommandError::usage(format!("--out {}: {e}", dir.display())))?;
    Ok(dir)
}

/// What trying one point gave.
enum Tried {
    Ran(Verdicts),
    /// The run could not be made or completed (a build that would not
    /// start, a part of continuity's own that failed): why.
    Failed(String),
    /// Ctrl-C: the bisect stops.
    Interrupted,
}

/// Each judged cell's verdict at one point, with its runs' verdicts.
pub(super) struct Verdicts {
    /// The cell (`agent × native-continuity`, `· ts-sdk` on a client
    /// axis), its verdict and each run's.
    pub cells: Vec<(String, Verdict, Vec<Verdict>)>,
    /// The run folder, relative to the bisect's.
    pub run: String,
}

impl Verdicts {
    /// The verdicts of `report`'s cells.
    fn of(report: &Report, run: String) -> Verdicts {
        let cells = report
            .cells
            .iter()
            .map(|cell| {
                let runs = match cell.attempts.is_empty() {
                    true => vec![cell.verdict],
                    false => cell.attempts.iter().map(|a| a.verdict).collect(),
                };
                (cell.point.to_string(), cell.verdict, runs)
            })
            .collect();
        Verdicts { cells, run }
    }

    /// Why these cannot be what other points are compared with: a cell
    /// whose runs disagree or that has no pass or fail.
    fn unjudgeable(&self) -> Option<String> {
        self.cells
            .iter()
            .find(|(_, verdict, _)| !matches!(verdict, Verdict::Pass | Verdict::Fail))
            .map(|(cell, verdict, runs)| {
                format!("{cell} is {} ({})", verdict.as_str(), words(runs))
            })
    }

    /// This point against the first's: changed when a cell's runs agree on
    /// another verdict; else flaky when a cell's runs disagree; else not
    /// judged when a cell is missing or has neither pass nor fail.
    fn against(&self, reference: &Verdicts) -> Judged {
        let mut judged = Judged::Same;
        for (cell, first, _) in &reference.cells {
            let now = self.cells.iter().find(|(c, _, _)| c == cell).map(|c| c.1);
            let this = match now {
                Some(v @ (Verdict::Pass | Verdict::Fail)) if v != *first => return Judged::Changed,
                Some(Verdict::Pass | Verdict::Fail) => Judged::Same,
                Some(Verdict::Flaky) => Judged::Flaky,
                _ => Judged::NotRun,
            };
            judged = match (judged, this) {
                (Judged::Flaky, _) | (_, Judged::Flaky) => Judged::Flaky,
                (Judged::NotRun, _) | (_, Judged::NotRun) => Judged::NotRun,
                _ => Judged::Same,
            };
        }
        judged
    }

    /// `agent × native-continuity: fail fail fail`, each cell.
    pub(super) fn describe(&self) -> String {
        self.cells
            .iter()
            .map(|(cell, _, runs)| format!("{cell}: {}", words(runs)))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Verdicts as words: `pass fail pass`.
pub(super) fn words(verdicts: &[Verdict]) -> String {
    verdicts
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// How each point is run.
struct Probe<'a> {
    args: &'a BisectArgs,
    points: &'a [BisectPoint],
    cells: &'a [Point],
    seed: u64,
    dir: &'a Path,
}

impl Probe<'_> {
    /// The first point's run: the verdicts the others are compared with
    /// (`None`: Ctrl-C), recorded; refused when it gives none.
    async fn reference(&self, record: &mut BisectRecord) -> Result<Option<Verdicts>, CommandError> {
        let first = self.run(0).await.inspect_err(|_| {
            // A bisect refused at its first point leaves no folder behind
            // (the run removed its own; this one is empty then).
            let _ = std::fs::remove_dir(self.dir);
        })?;
        let reference = match first {
            Tried::Ran(verdicts) => verdicts,
            Tried::Interrupted => return Ok(None),
            Tried::Failed(why) => {
                return Err(CommandError::incomplete(format!(
                    "bisect: the first point {} could not be run: {why}",
                    self.points[0]
                )))
            }
        };
        record.tried(self.dir, Try::reference(0, &reference))?;
        console::errln(&format!(
            "bisect: point 1/{} {}: {} (the verdicts the others are compared with)",
            self.points.len(),
            self.points[0],
            reference.describe()
        ));
        if let Some(why) = reference.unjudgeable() {
            return Err(CommandError::incomplete(format!(
                "bisect: the first point {} gives no verdict to compare with: {why} (see {})",
                self.points[0],
                self.dir.join("point-1").display()
            )));
        }
        Ok(Some(reference))
    }

    /// Runs point `index` (`dir/point-N`) and reads its verdicts. The first
    /// point's usage errors are the bisect's (a flag, a cell that does not
    /// exist); a later point's are that point's (its build is not there).
    async fn run(&self, index: usize) -> Result<Tried, CommandError> {
        let folder = format!("point-{}", index + 1);
        let out = self.dir.join(&folder);
        let argv = self.command_line(&self.points[index], &out);
        let parsed =
            Cli::try_parse_from(&argv).map_err(|e| CommandError::usage(format!("bisect: {e}")))?;
        let Command::Run(args) = parsed.command else {
            return Err(CommandError::usage("bisect: not a `run` command line"));
        };
        let given = Given {
            only: self.cells.to_vec(),
            rerun_of: None,
            schedules: Vec::new(),
        };
        let outcome = match super::run_given(*args, given).await {
            Err(e) if index == 0 => return Err(e),
            Err(e) => return Ok(Tried::Failed(e.to_string())),
            Ok(outcome) => outcome,
        };
        if outcome == Outcome::Interrupted {
            return Ok(Tried::Interrupted);
        }
        let report = super::load_report(&out)?;
        if outcome == Outcome::HarnessFailed {
            let verdicts = Verdicts::of(&report, folder);
            return Ok(Tried::Failed(format!(
                "a part of continuity's own failed under its cells ({})",
                verdicts.describe()
            )));
        }
        Ok(Tried::Ran(Verdicts::of(&report, folder)))
    }

    /// `continuity run` of the cells on `point`, `--runs` times each.
    fn command_line(&self, point: &BisectPoint, out: &Path) -> Vec<String> {
        let args = self.args;
        let mut argv: Vec<String> = vec!["continuity".into(), "run".into()];
        let mut flag = |name: &str, value: String| {
            argv.push(format!("--{name}"));
            argv.push(value);
        };
        flag("repeat", args.runs.to_string());
        flag("seed", self.seed.to_string());
        let on_sdk = args.axis == Axis::Sdk;
        let point_flag = match (on_sdk, point.registry) {
            (false, true) => "server-version",
            (false, false) => "server-bin",
            (true, true) => "sdk-version",
            (true, false) => "sdk",
        };
        flag(point_flag, point.spec.clone());
        let mut clients: Vec<String> = args.clients.iter().map(|c| c.name().to_string()).collect();
        if clients.is_empty() && on_sdk {
            // The SDK axis multiplies only the client that hosts the SDK.
            let hosted = crate::report::ClientKind::all()
                .iter()
                .find(|c| c.hosts_sdk());
            clients.extend(hosted.map(|c| c.name().to_string()));
        }
        for client in clients {
            flag("client", client);
        }
        for cell in self.cells {
            flag("target", cell.target.to_string());
            flag("scenario", cell.scenario.clone());
        }
        for agent in &args.agent {
            flag("agent", agent.clone());
        }
        for persist in &args.persist {
            flag("persist", persist.name().to_string());
        }
        let optional = [
            (
                "config",
                args.sources
                    .config
                    .as_ref()
                    .map(|p| p.display().to_string()),
            ),
            (
                "scenarios-dir",
                args.sources
                    .scenarios_dir
                    .as_ref()
                    .map(|p| p.display().to_string()),
            ),
            ("timeout-ms", args.timeout_ms.map(|t| t.to_string())),
            ("jobs", args.jobs.map(|j| j.to_string())),
            ("trace", args.trace.as_ref().map(super::recipe::flag_value)),
            ("out", Some(out.display().to_string())),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                flag(name, value);
            }
        }
        // A target or scenario named by two cells is one flag.
        dedupe_flags(argv)
    }
}

/// `--target X` and `--scenario X` once each (`run` refuses neither, but
/// a cell list naming one target twice would read oddly).
fn dedupe_flags(argv: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut words = argv.into_iter();
    while let Some(word) = words.next() {
        if word == "--target" || word == "--scenario" {
            let Some(value) = words.next() else { break };
            if seen.contains(&(word.clone(), value.clone())) {
                continue;
            }
            seen.push((word.clone(), value.clone()));
            out.push(word);
            out.push(value);
        } else {
            out.push(word);
        }
    }
    out
}

/// The last lines: where the change is, and what it took.
fn conclusion(
    found: &Found,
    points: &[BisectPoint],
    tries: usize,
    runs: u32,
    dir: &Path,
) -> String {
    let n = points.len();
    let name = |i: usize| format!("point {}/{n} {}", i + 1, points[i]);
    let what = match found {
        Found::First(i) => format!(
            "the first point whose verdict differs from point 1's is {}; {} is the last as point 1",
            name(*i),
            name(i - 1)
        ),
        Found::NoChange => format!("no point differs from point 1 up to {}", name(n - 1)),
        Found::Among {
            from,
            to,
            left_out,
            changed,
        } => {
            let flaky: Vec<String> = left_out.iter().map(|i| (i + 1).to_string()).collect();
            let end = match changed {
                true => format!("{} differs", name(*to)),
                false => "no point tried differs".to_string(),
            };
            format!(
                "the first change lies between point {} and point {} (points {} are flaky or could not run; {end})",
                from + 1,
                to + 1,
                flaky.join(", ")
            )
        }
    };
    format!(
        "bisect: {what}\nbisect: {tries} of {n} points tried, {runs} run(s) each; each point's run in {}/point-N, all of them in {}/bisect.json",
        dir.display(),
        dir.display()
    )
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
