//! `continuity.toml`: run defaults and restart targets, read in two stages
//! (raw serde tables in `raw`, checked values in `check`), with every error
//! naming the file, the line, the key and what was expected.
//!
//! ```toml
//! [run]                      # all optional; command-line flags override
//! base_url = "http://127.0.0.1:2468"
//! agent = "mock"
//! timeout_ms = 30000
//! overall_timeout_ms = 900000
//! hang_grace_ms = 2000
//! repeat = 1
//! persist = "sqlite"         # memory | sqlite | postgres | rivet, or a list of them
//! token_env = "SA_TOKEN"     # the variable holding the token; never the token
//! secret_env = ["DEPLOY_KEY"] # more variables whose values are redacted everywhere
//! expect = "ci/expect.toml"  # expectations file, as --expect
//! retries = 0                # as --retries
//! seed = 42                  # as --seed
//! jobs = 1                   # as --jobs: cells of `independent` targets at once
//! headers = { "x-extra" = "v" }
//!
//! [targets.agent]            # targets restart in file order
//! restart = { managed = { command = ["sandbox-agent", "server", "-p", "2468"], env = { XDG_DATA_HOME = "/tmp/x" }, stop_signal = "SIGTERM", grace_ms = 5000 } }
//! # restart = { command = "systemctl restart sandbox-agent", timeout_ms = 30000 }
//! # restart = { signal = "SIGHUP", pid_file = "/run/nginx.pid" }
//! # restart = { http = "http://127.0.0.1:9000/restart", method = "POST", expect_status = 204 }
//! ready = { http = "http://127.0.0.1:2468/v1/health", status = 200 }
//! # ready = { tcp = "127.0.0.1:2468" }   or   ready = { delay_ms = 6000 }   or no `ready`
//! ready_timeout_ms = 30000
//! independent = false        # true: its restarts disturb no other target's cells
//! ```
//!
//! `managed` also takes `cwd` and `log` (where its output goes). Defaults:
//! command timeout 60 s, hook timeout 10 s, grace 5 s, readiness 30 s, http
//! probe status 200 polled every 50 ms (`interval_ms`). Relative paths are
//! relative to the directory the harness runs in.
//!
//! Over 400 lines on purpose: its `//!` above is the reference of the file
//! format; the code is the two-stage read and its errors, the raw tables and
//! checks apart (`raw`, `check`), the tests in `tests.rs`.

mod check;
mod faults;
mod raw;
mod target;
mod values;

#[cfg(test)]
mod tests;

pub(crate) use faults::FaultHops;
pub(crate) use values::{check_agent_name, check_base_url};

use crate::persist::Store;
use crate::secret::{is_secret_name, Redactor};
use crate::source_line::line_of;
use crate::targets::{OwnTarget, Readiness, RestartAction, Target, DEFAULT_COMMAND_TIMEOUT};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `[run]` table: defaults the command line may override.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunDefaults {
    pub base_url: Option<String>,
    pub agent: Option<String>,
    pub timeout: Option<Duration>,
    pub overall_timeout: Option<Duration>,
    /// `hang_grace_ms` (`--hang-grace-ms`): zero waits every deadline out.
    pub hang_grace: Option<Duration>,
    pub repeat: Option<u32>,
    /// `persist`: one store or several (the persistence axis); empty when unset.
    pub persist: Vec<Store>,
    /// The name of the environment variable that holds the bearer token.
    pub token_env: Option<String>,
    /// Variables whose values are secret, beyond the secret-named ones.
    pub secret_env: Vec<String>,
    /// Extra request headers, in file order.
    pub headers: Vec<(String, String)>,
    /// The expectations file (`--expect`), relative to the working directory.
    pub expect: Option<PathBuf>,
    /// `--retries`.
    pub retries: Option<u32>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--jobs`: how many cells of `independent` targets run at once (default 1).
    pub jobs: Option<u32>,
    /// `--server-bin`: candidate sandbox-agent binaries, `[LABEL=]PATH`
    /// each, paths relative to the working directory.
    pub server_bin: Vec<String>,
    /// `--sdk`: candidate SDKs, `[LABEL=]PATH[,PATH…]` each.
    pub sdk: Vec<String>,
}

/// One `[targets.NAME]` table, checked; [`Config::targets`] turns it into a [`Target`].
#[derive(Debug, Clone, PartialEq)]
struct TargetEntry {
    name: String,
    action: RestartAction,
    readiness: Readiness,
    ready_timeout: Duration,
    independent: bool,
    /// A fault target's table, to point at when its hop is unknown.
    hop_span: Option<std::ops::Range<usize>>,
}

impl TargetEntry {
    fn to_target(&self) -> Target {
        Target::new(
            OwnTarget::new(&self.name),
            self.action.clone(),
            self.readiness.clone(),
        )
        .with_ready_timeout(self.ready_timeout)
        .with_independent(self.independent)
    }
}

/// A checked `continuity.toml`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    path: PathBuf,
    pub run: RunDefaults,
    targets: Vec<TargetEntry>,
    /// `[faults]`: the fault proxies a deployment's cells run through.
    pub faults: Option<FaultHops>,
}

/// Why a config file (or the seed script's environment) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {reason}", .path.display())]
    Read { path: PathBuf, reason: String },
    /// toml's own message, which shows the line, column and a snippet.
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Syntax {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error("{}:{line}: `{key}`{}: {expected}", .path.display(), .value.as_ref().map(|v| format!(" = {v}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: usize,
        key: String,
        value: Option<String>,
        expected: String,
    },
    #[error("{}:{line}: `{key}`: the token never goes in the file; put it in an environment variable and name that variable with `token_env`", .path.display())]
    Token {
        path: PathBuf,
        line: usize,
        key: String,
    },
    #[error("environment variable {var}={value:?}: {expected}")]
    Env {
        var: String,
        value: String,
        expected: String,
    },
}

/// The largest config file read (a hand-written TOML file is a few KiB).
const MAX_CONFIG_BYTES: u64 = 4 << 20;

impl Config {
    /// Reads and checks `path`.
    pub(crate) fn load(path: &Path) -> Result<Config, ConfigError> {
        let text =
            crate::user_file::read_text(path, MAX_CONFIG_BYTES).map_err(|e| ConfigError::Read {
                path: path.to_path_buf(),
                reason: e.why.to_string(),
            })?;
        Config::parse(path, &text)
    }

    /// Checks `text`; `path` is only used to name the file in errors.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let syntax = |e: toml::de::Error| ConfigError::Syntax {
            path: path.to_path_buf(),
            line: e.span().map(|s| line_of(text, s.start)),
            message: with_suggestion(e.to_string().trim_end()),
        };
        // A token is refused by name before serde calls it an unknown field.
        let document = toml::de::DeTable::parse(text).map_err(syntax)?;
        if let Some((key, offset)) = find_token_key(document.get_ref(), "") {
            return Err(ConfigError::Token {
                path: path.to_path_buf(),
                line: line_of(text, offset),
                key,
            });
        }
        let raw: raw::RawConfig = toml::from_str(text).map_err(syntax)?;
        let checked = check::Checked::try_from(raw).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: line_of(text, e.span.start),
            key: e.key,
            value: e.value,
            expected: e.expected,
        })?;
        Ok(Config {
            path: path.to_path_buf(),
            run: checked.run,
            targets: checked.targets,
            faults: checked.faults,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Fresh (not yet prepared) targets, in file order.
    pub(crate) fn targets(&self) -> Vec<Target> {
        self.targets.iter().map(TargetEntry::to_target).collect()
    }

    /// Adds every value the file marks as secret to `redactor`: the values
    /// of the variables `secret_env` names, secret-named headers
    /// (`x-api-key`) and managed-process variables (`DEPLOY_TOKEN`), the
    /// value after a secret-named flag of a managed command (`--token X`,
    /// `--password=X`), and the credentials of every URL.
    pub(crate) fn add_secrets(&self, redactor: &mut Redactor) {
        for name in &self.run.secret_env {
            if let Ok(value) = std::env::var(name) {
                redactor.add(&value);
            }
        }
        for (name, value) in &self.run.headers {
            if is_secret_name(name) {
                redactor.add(value);
            }
        }
        if let Some(url) = &self.run.base_url {
            redactor.add_url_credentials(url);
        }
        for target in &self.targets {
            match &target.action {
                RestartAction::Managed(spec) => {
                    for (name, value) in &spec.env {
                        if is_secret_name(name) {
                            redactor.add(value);
                        }
                    }
                    let mut after_secret_flag = false;
                    for arg in &spec.args {
                        if after_secret_flag {
                            redactor.add(arg);
                        }
                        let flag = arg.trim_start_matches('-');
                        after_secret_flag = arg.starts_with('-') && is_secret_name(flag);
                        if let Some((flag, value)) = arg.split_once('=') {
                            if arg.starts_with('-') && is_secret_name(flag.trim_start_matches('-'))
                            {
                                redactor.add(value);
                            }
                        }
                    }
                }
                RestartAction::Http { url, .. } => redactor.add_url_credentials(url),
                RestartAction::Command { .. }
                | RestartAction::Signal { .. }
                | RestartAction::Clients
                | RestartAction::LeftDown(_)
                | RestartAction::Fault(_)
                | RestartAction::Timeout(_)
                | RestartAction::Nemesis(_) => {}
            }
            match &target.readiness {
                Readiness::Http { url, .. } | Readiness::HttpPost { url, .. } => {
                    redactor.add_url_credentials(url)
                }
                _ => {}
            }
        }
    }

    /// The file's fault targets, by name: on the local stack (no base
    /// URL) they join its own, on its hops.
    pub(crate) fn fault_targets(&self) -> Vec<(OwnTarget, crate::targets::FaultAction)> {
        self.targets
            .iter()
            .filter_map(|t| match &t.action {
                RestartAction::Fault(f) => Some((OwnTarget::new(&t.name), f.clone())),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn target_names(&self) -> Vec<&str> {
        self.targets.iter().map(|t| t.name.as_str()).collect()
    }
}

/// The seed script's knobs as a target named `command`: `SA_RESTART_CMD`
/// run by the shell, then `sleep SA_RESTART_WAIT_SEC` (default 6). A run
/// on a deployment then probes the server's health too
/// ([`crate::targets::Target::with_default_probe`]), so `0` is no longer
/// "judge the session at once". `None` when `SA_RESTART_CMD` is unset or blank.
pub(crate) fn from_seed_env<I, K, V>(vars: I) -> Result<Option<Target>, ConfigError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut command = None;
    let mut wait = None;
    for (key, value) in vars {
        match key.as_ref() {
            "SA_RESTART_CMD" => command = Some(value.as_ref().to_string()),
            "SA_RESTART_WAIT_SEC" => wait = Some(value.as_ref().to_string()),
            _ => {}
        }
    }
    let Some(command) = command.filter(|c| !c.trim().is_empty()) else {
        return Ok(None);
    };
    let wait = match wait.as_deref().map(str::trim).filter(|w| !w.is_empty()) {
        None => Duration::from_secs(6),
        Some(text) => text
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| ConfigError::Env {
                var: "SA_RESTART_WAIT_SEC".into(),
                value: text.to_string(),
                expected: "expected a number of seconds, such as 6 or 0.5".into(),
            })?,
    };
    let readiness = if wait.is_zero() {
        Readiness::None
    } else {
        Readiness::Delay { duration: wait }
    };
    Ok(Some(Target::new(
        OwnTarget::new("command"),
        RestartAction::Command {
            command,
            timeout: DEFAULT_COMMAND_TIMEOUT,
        },
        readiness,
    )))
}

/// The first key named `token` anywhere in the document, as a dotted path
/// with the offset of the key.
fn find_token_key(table: &toml::de::DeTable<'_>, prefix: &str) -> Option<(String, usize)> {
    for (key, value) in table.iter() {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        if key.get_ref().eq_ignore_ascii_case("token") {
            return Some((path, key.span().start));
        }
        if let Some(found) = find_token_in_value(value.get_ref(), &path) {
            return Some(found);
        }
    }
    None
}

fn find_token_in_value(value: &toml::de::DeValue<'_>, path: &str) -> Option<(String, usize)> {
    match value {
        toml::de::DeValue::Table(table) => find_token_key(table, path),
        toml::de::DeValue::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find_token_in_value(item.get_ref(), &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// Appends "did you mean `x`?" to toml's unknown-field message when one of
/// the expected keys is a near miss of the one written.
fn with_suggestion(message: &str) -> String {
    let Some(rest) = message.split("unknown field `").nth(1) else {
        return message.to_string();
    };
    let Some((given, expected)) = rest.split_once('`') else {
        return message.to_string();
    };
    let best = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|candidate| (edit_distance(given, candidate), candidate))
        .min();
    match best {
        Some((distance, candidate)) if distance <= 2.max(given.len() / 3) => {
            format!("{message}\nhelp: did you mean `{candidate}`?")
        }
        _ => message.to_string(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}
