//! The run's settings from their sources — flags, then the seed script's
//! environment variables, then the config file, then defaults — each checked
//! with a message naming where the bad value came from (`--timeout-ms`,
//! `SA_TIMEOUT_MS`, or the file and line), and the run's [`Redactor`] built
//! from every secret those sources hold.

use super::CommandError;
use crate::cli::RunArgs;
use crate::config::{check_agent_name, check_base_url, Config};
use crate::runner::DEFAULT_AGENT;
use crate::secret::{display_url, Redactor, Secret};
use std::time::Duration;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A seed-script variable, when set to something other than blanks.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `--base-url`, else `SA_BASE_URL`, else the config's `base_url` (checked
/// when the file was read); `None` means the local stack.
pub(super) fn base_url(
    args: &RunArgs,
    config: Option<&Config>,
) -> Result<Option<String>, CommandError> {
    let (text, source) = match (&args.base_url, env_var("SA_BASE_URL")) {
        (Some(flag), _) => (flag.clone(), "--base-url"),
        (None, Some(env)) => (env, "SA_BASE_URL"),
        (None, None) => return Ok(config.and_then(|c| c.run.base_url.clone())),
    };
    check_base_url(&text).map(Some).map_err(|why| {
        CommandError::usage(format!("{source} {:?}: {why}", display_url(text.trim())))
    })
}

/// Every `--agent` (each once), else `SA_AGENT`, else the config's `agent`, else `mock`.
pub(super) fn agents(args: &RunArgs, config: Option<&Config>) -> Result<Vec<String>, CommandError> {
    if args.agent.is_empty() {
        return agent(args, config).map(|a| vec![a]);
    }
    let mut agents: Vec<String> = Vec::new();
    for name in &args.agent {
        check_agent_name(name)
            .map_err(|why| CommandError::usage(format!("--agent {name:?}: {why}")))?;
        if agents.contains(name) {
            return Err(CommandError::usage(format!(
                "--agent {name} is given twice"
            )));
        }
        agents.push(name.clone());
    }
    Ok(agents)
}

/// `SA_AGENT`, else the config's `agent`, else `mock`.
fn agent(args: &RunArgs, config: Option<&Config>) -> Result<String, CommandError> {
    let (name, source) = match (args.agent.first(), std::env::var("SA_AGENT").ok()) {
        (Some(flag), _) => (flag.clone(), "--agent"),
        // An empty SA_AGENT is unset, as in the seed script; blanks are a mistake.
        (None, Some(env)) if !env.is_empty() => (env, "SA_AGENT"),
        _ => {
            return Ok(config
                .and_then(|c| c.run.agent.clone())
                .unwrap_or_else(|| DEFAULT_AGENT.into()))
        }
    };
    check_agent_name(&name)
        .map(|()| name.clone())
        .map_err(|why| CommandError::usage(format!("{source} {name:?}: {why}")))
}

/// `--timeout-ms` (checked by clap), else `SA_TIMEOUT_MS`, else the config's, else 30 s.
pub(super) fn timeout(args: &RunArgs, config: Option<&Config>) -> Result<Duration, CommandError> {
    if let Some(ms) = args.timeout_ms {
        return Ok(Duration::from_millis(ms));
    }
    if let Some(text) = env_var("SA_TIMEOUT_MS") {
        return text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| {
                CommandError::usage(format!(
                    "SA_TIMEOUT_MS={text:?}: expected a positive number of milliseconds, such as 30000"
                ))
            });
    }
    Ok(config
        .and_then(|c| c.run.timeout)
        .unwrap_or(DEFAULT_TIMEOUT))
}

/// The token from the variable `--token-env` or the config's `token_env`
/// names, else `SA_TOKEN`.
pub(super) fn token(
    args: &RunArgs,
    config: Option<&Config>,
) -> Result<Option<Secret>, CommandError> {
    let named = match (
        &args.token_env,
        config.and_then(|c| c.run.token_env.as_ref()),
    ) {
        (Some(name), _) => Some((name.clone(), "--token-env".to_string())),
        (None, Some(name)) => Some((
            name.clone(),
            format!(
                "{}: run.token_env",
                config
                    .map(|c| c.path().display().to_string())
                    .unwrap_or_default()
            ),
        )),
        (None, None) => None,
    };
    match named {
        // A value that cannot be a variable's name may be the token itself,
        // pasted by mistake: it is not shown.
        Some((name, source)) if !looks_like_variable(&name) => Err(CommandError::usage(format!(
            "{source}: expected the name of an environment variable (letters, digits and `_`, e.g. SA_TOKEN), not the token itself"
        ))),
        Some((name, source)) => match std::env::var(&name) {
            Ok(v) if !v.is_empty() => Ok(Some(Secret::new(v))),
            _ => Err(CommandError::usage(format!(
                "{source} {name}: that environment variable is not set"
            ))),
        },
        // The seed script's variable works without naming it.
        None => Ok(env_var("SA_TOKEN").map(Secret::new)),
    }
}

/// `SA_TOKEN`, `my_token_2`: a name a variable can have.
fn looks_like_variable(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every secret the run knows: the token, credentials in any URL it was
/// given (even one about to be refused), what the config marks as secret,
/// and the values of secret-named environment variables (`*_TOKEN`,
/// `*_KEY`…), which restart commands may print.
pub(super) fn redactor(args: &RunArgs, config: Option<&Config>) -> Redactor {
    let mut redactor = Redactor::none();
    if let Ok(Some(token)) = token(args, config) {
        redactor.add(token.expose());
    }
    if let Some(name) = &args.token_env {
        if let Ok(value) = std::env::var(name) {
            redactor.add(&value);
        }
        if !looks_like_variable(name) {
            // Perhaps the token itself, given where its name belongs.
            redactor.add(name);
        }
    }
    for url in [args.base_url.clone(), std::env::var("SA_BASE_URL").ok()]
        .into_iter()
        .flatten()
    {
        redactor.add_url_credentials(&url);
    }
    if let Some(config) = config {
        config.add_secrets(&mut redactor);
    }
    redactor.add_secret_variables(std::env::vars());
    redactor
}

/// `--timings RUN`: the durations a `cost:` partition deals by (none: the
/// built-in estimates). Refused with any other partition, which would
/// ignore it.
pub(super) fn timings(args: &RunArgs) -> Result<crate::runner::cost::Timings, CommandError> {
    let Some(path) = &args.timings else {
        return Ok(Default::default());
    };
    if args
        .partition
        .is_some_and(|p| p.kind != crate::partition::PartitionKind::Cost)
    {
        return Err(CommandError::usage(
            "--timings deals a cost split: give it with --partition cost:K/N",
        ));
    }
    let report =
        super::load_report(path).map_err(|e| CommandError::usage(format!("--timings {e}")))?;
    Ok(crate::runner::cost::Timings::from_report(&report))
}
