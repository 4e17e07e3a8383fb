//! What each command does: resolve settings (flags > seed-script environment
//! > config file > defaults), run, render, and pick the exit code.

use crate::cli::{PersistArg, RivetSaveArg, RunArgs, Sources};
use crate::config::{from_seed_env, Config, PersistKind};
use crate::exit_codes;
use crate::report::{self, LogFile, Report, Verdict};
use crate::runner::{self, PersistChoice, RunEvent, RunPlan};
use crate::scenario::{builtin_scenarios, load_dir, Scenario};
use crate::secret::Secret;
use crate::stack::local::{LocalStack, StackOptions};
use crate::targets::Target;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

mod progress;
mod stack;

use progress::{print_progress, spawn_signal_handler, wait_true};
pub use stack::{stack_down, stack_status, stack_up};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_OVERALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const DEFAULT_AGENT: &str = "mock";

/// A message for the user and the exit code that goes with it.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        code: exit_codes::USAGE,
        message: message.into(),
    }
}

fn incomplete(message: impl Into<String>) -> Failure {
    Failure {
        code: exit_codes::INCOMPLETE,
        message: message.into(),
    }
}

/// Scenarios from `--scenarios-dir`, or the built-in ones.
pub fn load_scenarios(sources: &Sources) -> Result<Vec<Scenario>, Failure> {
    match &sources.scenarios_dir {
        Some(dir) => load_dir(dir).map_err(|e| usage(e.to_string())),
        None => Ok(builtin_scenarios()),
    }
}

fn load_config(sources: &Sources) -> Result<Option<Config>, Failure> {
    sources
        .config
        .as_deref()
        .map(Config::load)
        .transpose()
        .map_err(|e| usage(e.to_string()))
}

/// Targets from the config file plus `SA_RESTART_CMD`, in that order.
fn configured_targets(config: Option<&Config>) -> Result<Vec<Target>, Failure> {
    let mut targets = config.map(Config::targets).unwrap_or_default();
    if let Some(seed) = from_seed_env(std::env::vars()).map_err(|e| usage(e.to_string()))? {
        if targets.iter().any(|t| t.name == seed.name) {
            return Err(usage(format!(
                "SA_RESTART_CMD defines target `{}`, which the config file defines too",
                seed.name
            )));
        }
        targets.push(seed);
    }
    Ok(targets)
}

/// Keeps the named items, in their order; an unknown name is a usage error naming the known ones.
fn select<T>(
    items: Vec<T>,
    wanted: &[String],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> Result<Vec<T>, Failure> {
    if wanted.is_empty() {
        return Ok(items);
    }
    for w in wanted {
        if !items.iter().any(|i| name(i) == w) {
            let known: Vec<&str> = items.iter().map(&name).collect();
            return Err(usage(format!(
                "unknown {what} `{w}` (known: {})",
                known.join(", ")
            )));
        }
    }
    Ok(items
        .into_iter()
        .filter(|i| wanted.iter().any(|w| w == name(i)))
        .collect())
}

/// `continuity validate`: parses everything, touches nothing.
pub fn validate(sources: &Sources) -> Result<String, Failure> {
    let config = load_config(sources)?;
    let scenarios = load_scenarios(sources)?;
    let targets = configured_targets(config.as_ref())?;
    let mut out = String::new();
    if let Some(c) = &config {
        out.push_str(&format!(
            "{}: ok ({} targets)\n",
            c.path().display(),
            targets.len()
        ));
    }
    for s in &scenarios {
        out.push_str(&format!(
            "{}: ok ({}, {} phases)\n",
            s.file.display(),
            s.name,
            s.phases.len()
        ));
    }
    Ok(out)
}

/// `continuity list`: targets and scenarios.
pub fn list(sources: &Sources) -> Result<String, Failure> {
    let config = load_config(sources)?;
    let scenarios = load_scenarios(sources)?;
    let targets = configured_targets(config.as_ref())?;
    let mut out = String::from("targets:\n");
    if targets.is_empty() {
        for (name, what) in crate::stack::local::TARGETS {
            out.push_str(&format!("  {name:<14} local stack: {what}\n"));
        }
    }
    for t in &targets {
        out.push_str(&format!("  {:<14} {}\n", t.name, t.describe()));
    }
    out.push_str("scenarios:\n");
    for s in &scenarios {
        let phases: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
        out.push_str(&format!(
            "  {:<20} {}\n  {:<20} phases: {}\n",
            s.name,
            s.description,
            "",
            phases.join(" → ")
        ));
    }
    Ok(out)
}

/// Reads a run's report: a run folder or the report.json itself.
fn load_report(path: &Path) -> Result<Report, Failure> {
    let file = if path.is_dir() {
        path.join("report.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let report: Report = serde_json::from_str(&text)
        .map_err(|e| usage(format!("{}: not a continuity report: {e}", file.display())))?;
    if report.schema != report::SCHEMA_ID {
        return Err(usage(format!(
            "{}: schema {:?}, expected {}",
            file.display(),
            report.schema,
            report::SCHEMA_ID
        )));
    }
    Ok(report)
}

/// `continuity compare`: cell by cell; a regression exits 1.
pub fn compare(baseline: &Path, candidate: &Path) -> Result<u8, Failure> {
    let (baseline, candidate) = (load_report(baseline)?, load_report(candidate)?);
    let rows = report::compare::compare(&baseline, &candidate);
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    print!(
        "{}",
        report::compare::render_comparison(&baseline, &candidate, &rows, color)
    );
    Ok(if report::compare::has_regressions(&rows) {
        exit_codes::FAILED
    } else {
        exit_codes::OK
    })
}

fn token_from(args: &RunArgs, config: Option<&Config>) -> Result<Option<Secret>, Failure> {
    let name = args
        .token_env
        .clone()
        .or_else(|| config.and_then(|c| c.run.token_env.clone()));
    match name {
        Some(name) => match std::env::var(&name) {
            Ok(v) if !v.is_empty() => Ok(Some(Secret::new(v))),
            _ => Err(usage(format!(
                "--token-env {name}: that environment variable is not set"
            ))),
        },
        // The seed script's variable works without naming it.
        None => Ok(std::env::var("SA_TOKEN")
            .ok()
            .filter(|v| !v.is_empty())
            .map(Secret::new)),
    }
}

fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// `continuity run`.
pub async fn run(args: RunArgs) -> Result<u8, Failure> {
    let config = load_config(&args.sources)?;
    let scenarios = select(
        load_scenarios(&args.sources)?,
        &args.scenarios,
        |s| s.name.as_str(),
        "scenario",
    )?;
    let run_defaults = config.as_ref().map(|c| c.run.clone()).unwrap_or_default();
    let token = token_from(&args, config.as_ref())?;
    let base_url = args.base_url.clone().or(run_defaults.base_url.clone());
    let id = short_id();
    let run_dir = args
        .out
        .clone()
        .unwrap_or_else(|| report::default_run_dir(Path::new("reports"), SystemTime::now(), &id));
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| usage(format!("cannot create {}: {e}", run_dir.display())))?;
    // Components run in folders of their own: a relative path would point elsewhere.
    let run_dir =
        std::path::absolute(&run_dir).map_err(|e| usage(format!("{}: {e}", run_dir.display())))?;
    let persist = match args.persist.map(|p| match p {
        PersistArg::Sqlite => PersistKind::Sqlite,
        PersistArg::Memory => PersistKind::Memory,
    }) {
        Some(p) => Some(p),
        None => run_defaults.persist,
    };
    let mut plan = RunPlan {
        id: id.clone(),
        base_url: String::new(),
        token,
        headers: run_defaults.headers.clone(),
        agent: args
            .agent
            .clone()
            .or(run_defaults.agent.clone())
            .unwrap_or_else(|| DEFAULT_AGENT.into()),
        timeout: args
            .timeout_ms
            .map(Duration::from_millis)
            .or(run_defaults.timeout)
            .unwrap_or(DEFAULT_TIMEOUT),
        overall_timeout: args
            .overall_timeout_ms
            .map(Duration::from_millis)
            .or(run_defaults.overall_timeout)
            .unwrap_or(DEFAULT_OVERALL_TIMEOUT),
        repeat: args.repeat.or(run_defaults.repeat).unwrap_or(1),
        persist: match persist {
            Some(PersistKind::Memory) => PersistChoice::Memory,
            _ => PersistChoice::Sqlite,
        },
        persist_factory: None,
        targets: Vec::new(),
        skipped_targets: Vec::new(),
        scenarios,
        run_dir: run_dir.clone(),
        server_version: None,
        logs: Vec::new(),
    };
    let (cancel_tx, cancel_rx) = watch::channel(false);
    spawn_signal_handler(cancel_tx);
    // Everything this run starts carries its owner tag, and a keeper kills
    // it all should the harness die without cleaning up (SIGKILL, a crash).
    let owner_tag = crate::stack::owner::new_tag(&run_dir);
    crate::stack::owner::adopt(&owner_tag);
    crate::stack::keeper::start(&owner_tag).map_err(incomplete)?;

    let mut stack = None;
    match base_url {
        Some(url) => {
            plan.base_url = url.trim_end_matches('/').to_string();
            let targets = configured_targets(config.as_ref())?;
            if targets.is_empty() {
                return Err(usage("no restart targets: give --config with [targets.NAME] tables, or set SA_RESTART_CMD (without --base-url, continuity runs its own local stack)"));
            }
            plan.targets = select(targets, &args.targets, |t| t.name.as_str(), "target")?;
            for target in &mut plan.targets {
                if let Err(e) = target.prepare().await {
                    return Err(incomplete(format!("cannot prepare target: {e}")));
                }
            }
            runner::preflight(&plan.base_url, plan.token.as_ref())
                .await
                .map_err(|e| incomplete(e.to_string()))?;
        }
        None => {
            if config
                .as_ref()
                .is_some_and(|c| !c.target_names().is_empty())
            {
                return Err(usage("the config file defines targets but no base_url: set [run] base_url or --base-url"));
            }
            let options = StackOptions {
                run_dir: run_dir.join("stack"),
                server_version: args.server_version.clone(),
                agent_program: std::env::current_exe()
                    .map_err(|e| incomplete(format!("cannot find the continuity binary: {e}")))?,
                only: args.targets.clone(),
                rivet_save: match args.rivet_save {
                    RivetSaveArg::Immediate => crate::stack::rivet::SaveMode::Immediate,
                    RivetSaveArg::Deferred => crate::stack::rivet::SaveMode::Deferred,
                },
            };
            for name in &args.targets {
                if !crate::stack::local::TARGETS.iter().any(|(n, _)| n == name) {
                    let known: Vec<&str> = crate::stack::local::TARGETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect();
                    return Err(usage(format!(
                        "unknown target `{name}` (known: {})",
                        known.join(", ")
                    )));
                }
            }
            // stack.json before the first component starts: `stack down --dir
            // RUN/stack` finds whatever a dead harness and keeper left.
            std::fs::create_dir_all(&options.run_dir)
                .and_then(|()| {
                    crate::stack::state::begin_journal(&options.run_dir, &owner_tag)
                        .map_err(std::io::Error::other)
                })
                .map_err(|e| incomplete(e.to_string()))?;
            let mut progress = |line: &str| eprintln!("stack: {line}");
            let mut up = tokio::select! {
                up = LocalStack::up(options, &mut progress) => up.map_err(incomplete)?,
                _ = wait_true(cancel_rx.clone()) => return Err(incomplete("interrupted while the stack was starting")),
            };
            plan.base_url = up.base_url.clone();
            plan.targets = std::mem::take(&mut up.targets);
            plan.skipped_targets = std::mem::take(&mut up.skipped);
            plan.server_version = up.server_version.clone();
            plan.logs = up.logs(&run_dir);
            if let Some(factory) = up.persist_factory.clone() {
                if persist.is_none() {
                    plan.persist = PersistChoice::Custom("rivet".into());
                    plan.persist_factory = Some(factory);
                }
            }
            stack = Some(up);
        }
    }

    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut on_event = move |event: RunEvent| print_progress(&event, color);
    let report = runner::run(&mut plan, cancel_rx.clone(), &mut on_event).await;
    for target in &mut plan.targets {
        target.shutdown().await;
    }
    if let Some(mut stack) = stack {
        stack.down().await;
    }
    crate::stack::state::end_journal();
    finish(&report, &run_dir)
}

fn finish(report: &Report, run_dir: &Path) -> Result<u8, Failure> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let files = report::write_report_dir(run_dir, report, color).map_err(|e| {
        incomplete(format!(
            "cannot write the report into {}: {e}",
            run_dir.display()
        ))
    })?;
    println!("{}", files.stdout);
    eprintln!(
        "reports: {} ({}, {}, {}, {})",
        files.dir.display(),
        name(&files.json),
        name(&files.text),
        name(&files.markdown),
        name(&files.junit)
    );
    if report.run.interrupted {
        eprintln!("the run was interrupted: the report holds the cells that finished and the one it cut short (`interrupted`)");
        return Ok(exit_codes::INCOMPLETE);
    }
    if report.cells.iter().all(|c| c.verdict == Verdict::Pass) && !report.cells.is_empty() {
        Ok(exit_codes::OK)
    } else {
        Ok(exit_codes::FAILED)
    }
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The run folder's logs, relative to the report folder when inside it.
pub fn relative_logs(run_dir: &Path, logs: &[(String, PathBuf)]) -> Vec<LogFile> {
    logs.iter()
        .map(|(name, path)| LogFile {
            name: name.clone(),
            path: path
                .strip_prefix(run_dir)
                .unwrap_or(path)
                .display()
                .to_string(),
        })
        .collect()
}
