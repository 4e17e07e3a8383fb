//! The one way the suite runs the built `continuity` binary: with none of
//! the variables that change what the harness does. A test run inside
//! GitHub Actions must not append to the job summary, one started from a
//! seed script's shell must not pick up its `SA_*` knobs, and one started
//! by a run must not inherit its scripted agent's faults. What a test needs
//! it sets itself, after the builder.

use std::ffi::OsStr;
use std::process::{Command, Output};

/// Variables the harness (or a program it starts) reads, removed from every
/// test's command. `harness_variables_are_all_cleared` checks that every
/// name `src/` reads is here, under a cleared prefix, or in [`KEPT`].
pub const CLEARED: &[&str] = &[
    // The seed script's knobs (any other `SA_*` goes too, by prefix).
    "SA_AGENT",
    "SA_BASE_URL",
    "SA_RESTART_CMD",
    "SA_RESTART_WAIT_SEC",
    "SA_TIMEOUT_MS",
    "SA_TOKEN",
    // GitHub Actions: the job summary and annotations.
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    // npm and node behave differently under CI.
    "CI",
    // Terminal shape and colour of what is printed.
    "COLUMNS",
    "LINES",
    "TERM",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "NO_COLOR",
    // The scripted agent's fault knobs and files, the owner tag and cell
    // name a run gives its children, the Rivet actor's save mode.
    "CONTINUITY_AGENT_DELAY_MS",
    "CONTINUITY_AGENT_FAULT",
    "CONTINUITY_AGENT_LOAD_SESSION",
    "CONTINUITY_AGENT_ONCE_FILE",
    "CONTINUITY_AGENT_OWNER",
    "CONTINUITY_AGENT_RECORD",
    "CONTINUITY_AGENT_SENT",
    "CONTINUITY_AGENT_STATE",
    "CONTINUITY_AGENT_STREAM",
    "CONTINUITY_CELL",
    "CONTINUITY_OWNER",
    "CONTINUITY_RIVET_SAVE",
    "CONTINUITY_RIVET_SAVE_INTERVAL_MS",
];

/// Families removed whole, whatever the parent's environment holds.
pub const CLEARED_PREFIXES: &[&str] = &["SA_", "GITHUB_", "CONTINUITY_"];

/// Where things are on this machine, not what the harness does: kept, so
/// the suite uses the machine's cache, nginx and tools.
pub const KEPT: &[&str] = &[
    "CONTINUITY_CACHE_DIR",
    "CONTINUITY_NGINX",
    "HOME",
    "PATH",
    "XDG_CACHE_HOME",
];

/// Whether the builder removes (or pins) `name` from a test's command.
pub fn clears(name: &str) -> bool {
    !KEPT.contains(&name)
        && (CLEARED.contains(&name)
            || CLEARED_PREFIXES.iter().any(|p| name.starts_with(p))
            || continuity::secret::is_secret_name(name))
}

/// `continuity ARGS` with every variable of [`CLEARED`] removed, and
/// whatever else of this process's environment [`clears`] (the prefixes,
/// secret-named variables, which the harness redacts), and `NO_COLOR=1`.
pub fn continuity_command<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(env!("CARGO_BIN_EXE_continuity"));
    command.args(args);
    for name in CLEARED {
        command.env_remove(name);
    }
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(clears) {
            command.env_remove(&name);
        }
    }
    command.env("NO_COLOR", "1");
    command
}

/// [`continuity_command`] with `env` set, run to completion.
pub fn continuity_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = continuity_command(args);
    command.envs(env.iter().copied());
    command.output().unwrap()
}
