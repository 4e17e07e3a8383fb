//! `continuity rerun RUN [--failed]`: a finished run's cells run again with
//! its exact settings, read from its `report.json` (`run` and its
//! `recipe`): targets, scenarios, agents, clients, server and SDK points,
//! stores, deadlines, seed, repeat and retries. With `--failed`, only the
//! cells that did not pass.
//!
//! A report is data from wherever it was made, never instructions: where
//! to connect, which variable holds the token, the config, scenario and
//! expectations files and the candidate builds come from the user (flags,
//! the environment, the user's config), never from the report, which only
//! says the run had them. A report naming one the user did not give is
//! refused with the flags to pass; one the user gave that differs from
//! what the run recorded (another URL, a file whose SHA-256 differs, a
//! candidate label the run did not have) is refused too (exit 64), before
//! anything starts. No path the report holds is read, run or connected to.
//!
//! Over 400 lines on purpose: the checks of what the user gave against what
//! the report recorded (`check_given`, `check_digests`, `check_files`,
//! `check_candidate`) and the command line rebuilt from the same recipe
//! (`command_line`, `point_flags`) read the same recorded settings, so what
//! is refused and what is run again cannot drift apart.

use super::{CommandError, Given, Outcome};
use crate::cli::{Cli, Command, MessageFormat, RerunArgs, RunArgs};
use crate::console;
use crate::errors::Invalid;
use crate::report::{Axis, AxisPoint, Point, PointSource, Recipe, Report, Verdict};
use crate::untrusted::Untrusted;
use clap::Parser;
use std::path::Path;

/// `continuity rerun`.
pub async fn rerun(args: RerunArgs) -> Result<Outcome, CommandError> {
    let report = super::load_report(&args.run)?;
    let id = Untrusted::new(&report.run.id).terminal();
    let Some(plan) = plan(&report, &args)? else {
        console::errln(&format!(
            "continuity: no cell of run {id} failed: nothing to rerun"
        ));
        return Ok(Outcome::Passed);
    };
    console::errln(&format!(
        "continuity: rerunning {} of run {id}: continuity {}",
        match (args.failed, plan.given.only.len()) {
            (false, 0) => "every cell".to_string(),
            (true, 1) => "the 1 cell that did not pass".to_string(),
            (true, n) => format!("the {n} cells that did not pass"),
            (false, n) => format!("the {n} cells"),
        },
        shell_words(&plan.argv[1..])
    ));
    super::run_given(plan.args, plan.given).await
}

/// What a rerun runs: the command line `run` takes, and the cells.
struct Plan {
    args: RunArgs,
    /// `continuity run …` as the user could type it (without the cells).
    argv: Vec<String>,
    given: Given,
}

/// The rerun of `report`, or `None` when `--failed` finds nothing to
/// rerun; a usage error when the run cannot be run again as it was, or
/// the user has not given (or gave otherwise) what only the user gives.
fn plan(report: &Report, args: &RerunArgs) -> Result<Option<Plan>, CommandError> {
    let run = &report.run;
    let id = Untrusted::new(&run.id).terminal();
    let refuse = |why: String| CommandError::usage(format!("cannot rerun run {id}: {why}"));
    let recipe = run.recipe.as_ref().ok_or_else(|| {
        refuse("its report.json does not record what a rerun needs (`run.recipe`: its agents, clients, stores, config and scenario files; continuity records it since 0.1.0's rerun): run it again with `continuity run` and the flags it had".into())
    })?;
    let seed = run.seed.ok_or_else(|| {
        refuse("its report.json records no single seed (shards merged from runs with different seeds): rerun one of its shards".into())
    })?;
    if run.harness_version != env!("CARGO_PKG_VERSION") {
        console::errln(&format!(
            "warning: run {id} was made by continuity {}, this is {}: built-in targets and scenarios may differ",
            Untrusted::new(&run.harness_version).terminal(),
            env!("CARGO_PKG_VERSION")
        ));
    }
    // An axis this continuity does not know (a report from a later one)
    // would be left out of the command line: the cells would not run as
    // they ran.
    if let Some(name) = recipe
        .axes
        .keys()
        .find(|name| name.parse::<Axis>().is_err())
    {
        return Err(refuse(format!(
            "it ran on an axis this continuity does not know: `{}`",
            Untrusted::new(name).terminal()
        )));
    }
    let refuse_invalid = |e: Invalid| refuse(e.0);
    check_digests(recipe, &run.points).map_err(refuse_invalid)?;
    let candidates = Candidates::given(args, &run.points).map_err(refuse_invalid)?;
    let Some(only) = cells(report, recipe, args.failed) else {
        return Ok(None);
    };
    let argv = command_line(report, recipe, seed, &only, args, &candidates);
    let parsed = Cli::try_parse_from(&argv).map_err(|e| {
        refuse(format!(
            "its settings do not make a command line: {}",
            Untrusted::new(e.to_string().trim()).terminal()
        ))
    })?;
    let Command::Run(run_args) = parsed.command else {
        return Err(refuse(
            "its settings do not make a `run` command line".into(),
        ));
    };
    check_given(recipe, &run.points, &run_args, &candidates).map_err(refuse_invalid)?;
    check_files(recipe, &run.points, &run_args, &candidates).map_err(|e| refuse(e.to_string()))?;
    Ok(Some(Plan {
        args: *run_args,
        argv,
        given: Given {
            only,
            rerun_of: Some(run.id.clone()),
            // Only to compare: the run draws its own from the seed.
            schedules: report
                .cells
                .iter()
                .filter_map(|c| Some((c.point.clone(), c.schedule.clone()?)))
                .collect(),
        },
    }))
}

/// What the run had that only the user gives, against what the user gave
/// (the flags, the environment, the user's config): every flag missing is
/// named at once; a URL or config other than the run's is refused.
fn check_given(
    recipe: &Recipe,
    points: &[AxisPoint],
    run_args: &RunArgs,
    candidates: &Candidates,
) -> Result<(), Invalid> {
    let config = super::load_config(&run_args.sources).map_err(|e| Invalid(e.to_string()))?;
    let user_url =
        super::settings::base_url(run_args, config.as_ref()).map_err(|e| Invalid(e.to_string()))?;
    let token_env = run_args
        .token_env
        .clone()
        .or_else(|| config.as_ref().and_then(|c| c.run.token_env.clone()));
    let shown = |text: &str| Untrusted::new(text).terminal();
    let mut needed: Vec<String> = Vec::new();
    let mut had: Vec<String> = Vec::new();
    if let (Some(url), None) = (&recipe.base_url, &user_url) {
        needed.push("--base-url URL".into());
        had.push(format!("connected to {}", shown(url)));
    }
    if let (Some(name), None) = (&recipe.token_env, &token_env) {
        needed.push("--token-env VAR".into());
        had.push(format!("read its token from ${}", shown(name)));
    }
    let files = [
        (
            "--config FILE",
            recipe.config.as_ref().map(|c| c.path.as_str()),
            run_args.sources.config.is_some(),
            "its config file",
        ),
        (
            "--scenarios-dir DIR",
            recipe.scenarios_dir.as_deref(),
            run_args.sources.scenarios_dir.is_some(),
            "its scenarios from",
        ),
        (
            "--expect FILE",
            recipe.expect.as_deref(),
            run_args.gate.expect.is_some(),
            "its expectations file",
        ),
    ];
    for (flag, recorded, given, what) in files {
        if let (Some(path), false) = (recorded, given) {
            needed.push(flag.into());
            had.push(format!("{what} {}", shown(path)));
        }
    }
    for point in points.iter().filter(|p| p.is_candidate()) {
        if candidates.spec(point).is_none() {
            needed.push(format!(
                "{} {}=PATH",
                candidates::flag(point.axis),
                shown(&point.label)
            ));
            had.push(format!(
                "the {} build `{}`",
                point.axis.title(),
                shown(&point.label)
            ));
        }
    }
    if !needed.is_empty() {
        return Err(Invalid(format!(
            "the run {}; continuity takes none of these from a report (it is data, not instructions): give your own with {}",
            had.join(", "),
            needed.join(" ")
        )));
    }
    let refused = match (&recipe.base_url, &user_url) {
        (None, Some(url)) => format!(
            "it ran on the local stack, and you gave the deployment {} (--base-url, SA_BASE_URL or the config's base_url): unset it to rerun it as it ran",
            shown(&crate::secret::display_url(url))
        ),
        (Some(then), Some(now)) if !same_url(then, now) => format!(
            "it connected to {}, you gave {}: a rerun goes where the run went (give that URL, or run anew with `continuity run`)",
            shown(then),
            shown(&crate::secret::display_url(now))
        ),
        _ if recipe.config.is_none() && run_args.sources.config.is_some() => {
            "it ran without a config file, and you gave one (--config): a rerun runs as the run ran"
                .to_string()
        }
        _ => return Ok(()),
    };
    Err(Invalid(refused))
}

/// Two base URLs name one deployment: the same once credentials and a
/// trailing `/` are left out.
fn same_url(recorded: &str, given: &str) -> bool {
    let plain = |u: &str| {
        crate::secret::display_url(u.trim())
            .trim_end_matches('/')
            .to_string()
    };
    plain(recorded) == plain(given)
}

/// Each SHA-256 the report records is 64 hex digits: anything else (a
/// report edited by hand or made to break a reader) is refused by name.
fn check_digests(recipe: &Recipe, points: &[AxisPoint]) -> Result<(), Invalid> {
    let recorded = points
        .iter()
        .filter_map(|p| {
            p.sha256
                .as_deref()
                .map(|d| (format!("the {} point `{}`", p.axis.title(), p.label), d))
        })
        .chain(
            recipe
                .config
                .iter()
                .map(|c| ("its config file".to_string(), c.sha256.as_str())),
        )
        .chain(
            recipe
                .scenarios
                .iter()
                .map(|s| (format!("its scenario `{}`", s.name), s.sha256.as_str())),
        );
    for (what, digest) in recorded {
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Invalid(format!(
                "the digest of {} is {}, not a SHA-256 (64 hex digits)",
                Untrusted::new(&what).terminal(),
                Untrusted::new(&format!("{digest:?}")).terminal()
            )));
        }
    }
    Ok(())
}

/// A rerun's `chaos` cells draw their schedules again, from the recorded
/// seed and this run's own settings (never from the report, which only
/// says what ran); a schedule that comes out otherwise would not run the
/// same faults, and the rerun is refused before any cell runs.
pub(super) fn check_schedules(
    recorded: &[(Point, crate::report::Schedule)],
    matrix: &crate::runner::Matrix,
    seed: u64,
) -> Result<(), CommandError> {
    for cell in &matrix.cells {
        let Some((_, was)) = recorded.iter().find(|(point, _)| *point == cell.named) else {
            continue;
        };
        let drawn = crate::targets::chaos::draw(
            cell.point.schedule_seed(seed),
            cell.point.persist == crate::report::Store::Postgres,
        );
        if drawn != *was {
            return Err(CommandError::usage(format!(
                "cannot rerun cell {}: its schedule of faults, drawn again from seed {seed} and these settings, is not the one it ran (recorded: {}; drawn: {})",
                crate::untrusted::Untrusted::new(&cell.named.to_string()).terminal(),
                crate::untrusted::Untrusted::new(&was.describe()).terminal(),
                drawn.describe()
            )));
        }
    }
    Ok(())
}

/// The candidate builds the user gave the rerun (`--server-bin LABEL=PATH`,
/// `--sdk LABEL=PATH[,PATH…]`), each for a candidate point of the run by
/// its label.
struct Candidates {
    /// (axis, label, the spec as `run` takes it).
    given: Vec<(Axis, String, String)>,
}

impl Candidates {
    fn given(args: &RerunArgs, points: &[AxisPoint]) -> Result<Candidates, Invalid> {
        let mut given = Vec::new();
        let specs = args
            .server_bins
            .iter()
            .map(|s| (Axis::Server, s))
            .chain(args.sdks.iter().map(|s| (Axis::Sdk, s)));
        for (axis, spec) in specs {
            let flag = candidates::flag(axis);
            let Some((label, paths)) = spec.split_once('=').filter(|(_, p)| !p.trim().is_empty())
            else {
                return Err(Invalid(format!(
                    "{flag} {spec:?}: a rerun names each build by the run's label: {flag} LABEL=PATH"
                )));
            };
            let known = points
                .iter()
                .any(|p| p.axis == axis && p.is_candidate() && p.label == label);
            if !known {
                let labels: Vec<String> = points
                    .iter()
                    .filter(|p| p.axis == axis && p.is_candidate())
                    .map(|p| Untrusted::new(&p.label).terminal())
                    .collect();
                return Err(Invalid(format!(
                    "{flag} {spec}: the run has no {} build labelled {label:?} (its builds: {})",
                    axis.title(),
                    match labels.is_empty() {
                        true => "none".to_string(),
                        false => labels.join(", "),
                    }
                )));
            }
            if given
                .iter()
                .any(|(a, l, _): &(Axis, String, String)| *a == axis && l == label)
            {
                return Err(Invalid(format!("{flag} {label}=… is given twice")));
            }
            given.push((axis, label.to_string(), format!("{label}={paths}")));
        }
        Ok(Candidates { given })
    }

    /// The user's spec for the run's candidate `point`.
    fn spec(&self, point: &AxisPoint) -> Option<&str> {
        self.given
            .iter()
            .find(|(axis, label, _)| *axis == point.axis && *label == point.label)
            .map(|(_, _, spec)| spec.as_str())
    }
}

/// The flags of a candidate build.
mod candidates {
    use crate::report::Axis;

    pub(super) fn flag(axis: Axis) -> &'static str {
        match axis {
            Axis::Sdk => "--sdk",
            _ => "--server-bin",
        }
    }
}

/// The cells to run again: every cell (empty) unless the run held only
/// some of the matrix's (a shard, a filtered rerun); with `failed`, those
/// that did not pass (`None`: there are none). A skipped cell (a missing
/// program) is not one that failed, nor is a cell with no verdict on its
/// restart (`not_applicable`: its client lacks a call; it would again).
fn cells(report: &Report, recipe: &Recipe, failed: bool) -> Option<Vec<Point>> {
    if failed {
        let failing: Vec<Point> = report
            .cells
            .iter()
            .filter(|c| {
                !matches!(
                    c.verdict,
                    Verdict::Pass | Verdict::Skipped | Verdict::NotApplicable
                )
            })
            .map(|c| c.point.clone())
            .collect();
        return (!failing.is_empty()).then_some(failing);
    }
    Some(match report.run.partition {
        Some(_) => report.cells.iter().map(|c| c.point.clone()).collect(),
        None => recipe.cells.clone(),
    })
}

/// Each file the user gave is what the run read: every candidate build
/// (by its recorded digest), the config file, every scenario (from the
/// user's `--scenarios-dir`, or the built-in ones).
fn check_files(
    recipe: &Recipe,
    points: &[AxisPoint],
    run_args: &RunArgs,
    candidates: &Candidates,
) -> Result<(), Drift> {
    for point in points.iter().filter(|p| p.is_candidate()) {
        if let Some(spec) = candidates.spec(point) {
            check_candidate(point, spec)?;
        }
    }
    if let (Some(recorded), Some(given)) = (&recipe.config, &run_args.sources.config) {
        check_digest(given, &recorded.sha256, "the config file")?;
    }
    let loaded = match &run_args.sources.scenarios_dir {
        Some(dir) => crate::scenario::load_dir(dir)?,
        None => crate::scenario::builtin_scenarios(),
    };
    for recorded in &recipe.scenarios {
        match loaded.iter().find(|s| s.name == recorded.name) {
            None => return Err(Drift::ScenarioGone(shown(&recorded.name))),
            Some(now) if now.digest != recorded.sha256 => {
                return Err(Drift::ScenarioChanged {
                    name: shown(&recorded.name),
                    file: now.file.display().to_string(),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Report text for a message: escaped.
fn shown(text: &str) -> String {
    Untrusted::new(text).terminal()
}

/// Why a file the user gave is not what the run read.
#[derive(Debug, thiserror::Error)]
enum Drift {
    #[error("the scenarios do not load: {0}")]
    Scenarios(#[from] crate::scenario::ScenarioError),
    #[error("its scenario `{0}` is not among the scenarios given")]
    ScenarioGone(String),
    #[error("its scenario `{name}` ({file}) is not the one it ran (its file has changed)")]
    ScenarioChanged { name: String, file: String },
    #[error("{what} has no recorded digest (a report written before digests were): your build cannot be told from the one it ran")]
    NoDigest { what: String },
    #[error("{what} ({path}) cannot be read: {why}")]
    Unreadable {
        what: String,
        path: String,
        why: String,
    },
    #[error("{what} ({path}) is not what the run ran (sha256 {} then, {} now)", short(.then), short(.now))]
    Changed {
        what: String,
        path: String,
        then: String,
        now: String,
    },
}

/// The user's build for a candidate point holds what the run ran.
fn check_candidate(point: &AxisPoint, spec: &str) -> Result<(), Drift> {
    let what = format!("the {} build `{}`", point.axis.title(), shown(&point.label));
    let paths = spec.split_once('=').map_or(spec, |(_, p)| p);
    let Some(recorded) = &point.sha256 else {
        return Err(Drift::NoDigest { what });
    };
    let unreadable = |why: String| Drift::Unreadable {
        what: what.clone(),
        path: paths.to_string(),
        why,
    };
    let now = match point.source {
        PointSource::Binary => return check_digest(Path::new(paths), recorded, &what),
        PointSource::Package => {
            let files: Vec<std::path::PathBuf> = paths
                .split(',')
                .map(|p| std::path::absolute(p.trim()).unwrap_or_else(|_| p.trim().into()))
                .collect();
            let packages = crate::stack::sdk::read_candidate(&files)
                .map_err(|(path, why)| unreadable(format!("{}: {why}", path.display())))?;
            crate::stack::sdk::content_digest(&packages).map_err(|e| unreadable(e.to_string()))?
        }
        PointSource::Registry => return Ok(()),
    };
    match &now == recorded {
        true => Ok(()),
        false => Err(Drift::Changed {
            what,
            path: paths.to_string(),
            then: recorded.clone(),
            now,
        }),
    }
}

/// `path` is a regular file whose bytes have the digest `recorded`.
fn check_digest(path: &Path, recorded: &str, what: &str) -> Result<(), Drift> {
    let now = crate::digest::sha256_file(path).map_err(|e| Drift::Unreadable {
        what: what.into(),
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    match now == recorded {
        true => Ok(()),
        false => Err(Drift::Changed {
            what: what.into(),
            path: path.display().to_string(),
            then: recorded.into(),
            now,
        }),
    }
}

/// A digest's first 12 characters (a recorded one is checked to be hex).
fn short(digest: &str) -> String {
    digest.chars().take(12).collect()
}

/// `continuity run …` with the run's settings: every value explicit, so
/// neither the environment nor the config's defaults change it; the
/// targets and scenarios narrowed to the cells' when only some run. What
/// only the user gives (URL, token variable, files, builds) is the user's.
fn command_line(
    report: &Report,
    recipe: &Recipe,
    seed: u64,
    only: &[Point],
    args: &RerunArgs,
    candidates: &Candidates,
) -> Vec<String> {
    let run = &report.run;
    let mut argv: Vec<String> = vec!["continuity".into(), "run".into()];
    let mut flag = |name: &str, value: String| {
        argv.push(format!("--{name}"));
        argv.push(value);
    };
    flag("seed", seed.to_string());
    flag("timeout-ms", run.timeout_ms.to_string());
    flag("overall-timeout-ms", run.overall_timeout_ms.to_string());
    flag("repeat", run.repeat.to_string());
    flag("retries", run.retries.to_string());
    flag(
        "flaky-result",
        crate::wire_name::of(&run.flaky_result).to_string(),
    );
    flag("trace", recipe.trace.clone());
    if let Some(grace) = recipe.hang_grace_ms {
        flag("hang-grace-ms", grace.to_string());
    }
    flag("rivet-save", recipe.rivet_save.clone());
    flag("rivet-stop", recipe.rivet_stop.clone());
    for axis in Axis::ALL {
        for value in recipe.values(axis) {
            flag(axis.name(), value.clone());
        }
    }
    let (targets, scenarios) = match only.is_empty() {
        true => (recipe.targets.clone(), run.scenarios.clone()),
        false => (
            unique(only.iter().map(|p| p.target.clone())),
            unique(only.iter().map(|p| p.scenario.clone())),
        ),
    };
    for target in targets {
        flag("target", target.to_string());
    }
    for scenario in scenarios {
        flag("scenario", scenario);
    }
    for (name, value) in point_flags(&run.points, candidates) {
        flag(name, value);
    }
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let users = [
        ("config", path(&args.sources.config)),
        ("scenarios-dir", path(&args.sources.scenarios_dir)),
        ("base-url", args.base_url.clone()),
        ("token-env", args.token_env.clone()),
        ("expect", path(&args.expect)),
        ("out", path(&args.out)),
        ("jobs", args.jobs.map(|j| j.to_string())),
    ];
    for (name, value) in users {
        if let Some(value) = value {
            flag(name, value);
        }
    }
    if args.message_format == MessageFormat::Json {
        flag("message-format", "json".into());
    }
    if args.expect.is_some() && run.allow_fixed {
        argv.push("--allow-fixed".into());
    }
    if args.force {
        argv.push("--force".into());
    }
    argv
}

/// The flags that give the run's server and SDK points: a release by
/// its version, a candidate by the user's build for its label.
fn point_flags(points: &[AxisPoint], candidates: &Candidates) -> Vec<(&'static str, String)> {
    points
        .iter()
        .filter_map(|point| {
            let (registry, candidate) = match point.axis {
                Axis::Sdk => ("sdk-version", "sdk"),
                _ => ("server-version", "server-bin"),
            };
            match point.source {
                PointSource::Registry => Some((registry, point.label.clone())),
                _ => candidates
                    .spec(point)
                    .map(|spec| (candidate, spec.to_string())),
            }
        })
        .collect()
}

/// Each value once, in first-seen order.
fn unique<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A command line as a shell would take it back: a word with anything
/// but letters, digits and `-_./=,:@+` is single-quoted.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@+".contains(c));
            match plain {
                true => w.clone(),
                false => format!("'{}'", w.replace('\'', r"'\''")),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[path = "rerun_tests.rs"]
mod tests;
