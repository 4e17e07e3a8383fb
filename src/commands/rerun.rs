//! `continuity rerun RUN [--failed]`: a finished run's cells run again with
//! its exact settings, read from its `report.json` (`run` and its
//! `recipe`): targets, scenarios, agents, clients, server and SDK points,
//! stores, deadlines, seed, repeat and retries. With `--failed`, only the
//! cells that did not pass. What cannot be run again as it was is refused
//! (exit 64) before anything starts: a report that does not record what a
//! rerun needs, a candidate binary or SDK, config file or scenario that is
//! gone or has changed since (by its recorded SHA-256).

use super::{CommandError, Given, Outcome};
use crate::cli::{Cli, Command, MessageFormat, RerunArgs, RunArgs};
use crate::console;
use crate::report::{Axis, AxisPoint, Point, PointSource, Recipe, Report, Verdict};
use clap::Parser;
use std::path::Path;

/// `continuity rerun`.
pub async fn rerun(args: RerunArgs) -> Result<Outcome, CommandError> {
    let report = super::load_report(&args.run)?;
    let Some(plan) = plan(&report, &args)? else {
        console::errln(&format!(
            "continuity: no cell of run {} failed: nothing to rerun",
            report.run.id
        ));
        return Ok(Outcome::Passed);
    };
    console::errln(&format!(
        "continuity: rerunning {} of run {}: continuity {}",
        match (args.failed, plan.given.only.len()) {
            (false, 0) => "every cell".to_string(),
            (true, 1) => "the 1 cell that did not pass".to_string(),
            (true, n) => format!("the {n} cells that did not pass"),
            (false, n) => format!("the {n} cells"),
        },
        report.run.id,
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
/// rerun; a usage error when the run cannot be run again as it was.
fn plan(report: &Report, args: &RerunArgs) -> Result<Option<Plan>, CommandError> {
    let run = &report.run;
    let refuse = |why: String| CommandError::usage(format!("cannot rerun run {}: {why}", run.id));
    let recipe = run.recipe.as_ref().ok_or_else(|| {
        refuse("its report.json does not record what a rerun needs (`run.recipe`: its agents, clients, stores, config and scenario files; continuity records it since 0.1.0's rerun): run it again with `continuity run` and the flags it had".into())
    })?;
    let seed = run.seed.ok_or_else(|| {
        refuse("its report.json records no single seed (shards merged from runs with different seeds): rerun one of its shards".into())
    })?;
    if run.harness_version != env!("CARGO_PKG_VERSION") {
        console::errln(&format!(
            "warning: run {} was made by continuity {}, this is {}: built-in targets and scenarios may differ",
            run.id,
            run.harness_version,
            env!("CARGO_PKG_VERSION")
        ));
    }
    check_files(recipe, &run.points).map_err(|e| refuse(e.to_string()))?;
    if recipe.base_url.is_none() && std::env::var_os("SA_BASE_URL").is_some_and(|v| !v.is_empty()) {
        return Err(refuse(
            "it ran on the local stack, and SA_BASE_URL is set (a rerun would go there): unset it"
                .into(),
        ));
    }
    let Some(only) = cells(report, recipe, args.failed) else {
        return Ok(None);
    };
    let argv = command_line(report, recipe, seed, &only, args);
    let parsed = Cli::try_parse_from(&argv)
        .map_err(|e| refuse(format!("its settings do not make a command line: {e}")))?;
    let Command::Run(run_args) = parsed.command else {
        return Err(refuse(
            "its settings do not make a `run` command line".into(),
        ));
    };
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

/// The cells to run again: every cell (empty) unless the run held only
/// some of the matrix's (a shard, a filtered rerun); with `failed`, those
/// that did not pass (`None`: there are none). A skipped cell (a missing
/// program) is not one that failed.
fn cells(report: &Report, recipe: &Recipe, failed: bool) -> Option<Vec<Point>> {
    if failed {
        let failing: Vec<Point> = report
            .cells
            .iter()
            .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::Skipped))
            .map(|c| c.point.clone())
            .collect();
        return (!failing.is_empty()).then_some(failing);
    }
    Some(match report.run.partition {
        Some(_) => report.cells.iter().map(|c| c.point.clone()).collect(),
        None => recipe.cells.clone(),
    })
}

/// Why a file the run read cannot be trusted to be what it ran.
#[derive(Debug, thiserror::Error)]
enum Drift {
    #[error("its scenarios do not load: {0}")]
    Scenarios(#[from] crate::scenario::ScenarioError),
    #[error("its scenario `{0}` is gone")]
    ScenarioGone(String),
    #[error("its scenario `{name}` ({file}) has changed since it ran")]
    ScenarioChanged { name: String, file: String },
    #[error("{what} ({paths}) has no recorded digest (a report written before digests were): its build cannot be told from another")]
    NoDigest { what: String, paths: String },
    #[error("{what} ({path}) cannot be read: {why}")]
    Unreadable {
        what: String,
        path: String,
        why: String,
    },
    #[error("{what} ({path}) has changed since it ran (sha256 {} then, {} now)", short(.then), short(.now))]
    Changed {
        what: String,
        path: String,
        then: String,
        now: String,
    },
}

/// Each file the run read is still there and unchanged: every candidate
/// point's (by its recorded digest), the config file, every scenario.
fn check_files(recipe: &Recipe, points: &[AxisPoint]) -> Result<(), Drift> {
    for point in points.iter().filter(|p| p.is_candidate()) {
        check_candidate(point)?;
    }
    if let Some(config) = &recipe.config {
        check_digest(Path::new(&config.path), &config.sha256, "its config file")?;
    }
    let loaded = match &recipe.scenarios_dir {
        Some(dir) => crate::scenario::load_dir(Path::new(dir))?,
        None => crate::scenario::builtin_scenarios(),
    };
    for recorded in &recipe.scenarios {
        match loaded.iter().find(|s| s.name == recorded.name) {
            None => return Err(Drift::ScenarioGone(recorded.name.clone())),
            Some(now) if now.digest != recorded.sha256 => {
                return Err(Drift::ScenarioChanged {
                    name: recorded.name.clone(),
                    file: now.file.display().to_string(),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A candidate binary or SDK still holds what the run ran.
fn check_candidate(point: &AxisPoint) -> Result<(), Drift> {
    let what = format!("the {} point `{}`", point.axis.title(), point.label);
    let paths = point.paths.join(",");
    let Some(recorded) = &point.sha256 else {
        return Err(Drift::NoDigest { what, paths });
    };
    let unreadable = |why: String| Drift::Unreadable {
        what: what.clone(),
        path: paths.clone(),
        why,
    };
    let now = match point.source {
        PointSource::Binary => {
            let path = Path::new(point.paths.first().map(String::as_str).unwrap_or_default());
            return check_digest(path, recorded, &what);
        }
        PointSource::Package => {
            let files: Vec<std::path::PathBuf> = point.paths.iter().map(Into::into).collect();
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
            path: paths,
            then: recorded.clone(),
            now,
        }),
    }
}

/// `path` is there and its bytes have the digest `recorded`.
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

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// `continuity run …` with the run's settings: every value explicit, so
/// neither the environment nor the config's defaults change it; the
/// targets and scenarios narrowed to the cells' when only some run.
fn command_line(
    report: &Report,
    recipe: &Recipe,
    seed: u64,
    only: &[Point],
    args: &RerunArgs,
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
    flag("rivet-save", recipe.rivet_save.clone());
    flag("rivet-stop", recipe.rivet_stop.clone());
    for (name, values) in [
        ("agent", &recipe.agents),
        ("client", &recipe.clients),
        ("persist", &recipe.persist),
    ] {
        for value in values {
            flag(name, value.clone());
        }
    }
    let (targets, scenarios) = match only.is_empty() {
        true => (recipe.targets.clone(), run.scenarios.clone()),
        false => (
            unique(only.iter().map(|p| &p.target)),
            unique(only.iter().map(|p| &p.scenario)),
        ),
    };
    for target in targets {
        flag("target", target);
    }
    for scenario in scenarios {
        flag("scenario", scenario);
    }
    for (name, value) in point_flags(&run.points) {
        flag(name, value);
    }
    let files = [
        ("config", recipe.config.as_ref().map(|c| c.path.clone())),
        ("scenarios-dir", recipe.scenarios_dir.clone()),
        ("base-url", recipe.base_url.clone()),
        ("token-env", recipe.token_env.clone()),
        ("expect", recipe.expect.clone()),
        ("out", args.out.as_ref().map(|o| o.display().to_string())),
        ("jobs", args.jobs.map(|j| j.to_string())),
    ];
    for (name, value) in files {
        if let Some(value) = value {
            flag(name, value);
        }
    }
    if args.message_format == MessageFormat::Json {
        flag("message-format", "json".into());
    }
    if recipe.expect.is_some() && run.allow_fixed {
        argv.push("--allow-fixed".into());
    }
    if args.force {
        argv.push("--force".into());
    }
    argv
}

/// The flags that give the run's server and SDK points: a release by
/// its version, a candidate as `LABEL=PATHS`.
fn point_flags(points: &[AxisPoint]) -> Vec<(&'static str, String)> {
    points
        .iter()
        .map(|point| {
            let (registry, candidate) = match point.axis {
                Axis::Sdk => ("sdk-version", "sdk"),
                _ => ("server-version", "server-bin"),
            };
            match point.source {
                PointSource::Registry => (registry, point.label.clone()),
                _ => (
                    candidate,
                    format!("{}={}", point.label, point.paths.join(",")),
                ),
            }
        })
        .collect()
}

/// Each value once, in first-seen order.
fn unique<'a>(values: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(v) {
            out.push(v.clone());
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
