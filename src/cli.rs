//! The command line: flags as the user typed them (clap), then resolved
//! settings (flags > seed-script environment variables > config file >
//! defaults), then the command.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Tells whether sandbox-agent sessions survive a restart of each component of their stack.
///
/// With no --base-url and no --config, `continuity run` brings up a local
/// stack (sandbox-agent, an nginx gateway, a Rivet persistence layer) on
/// loopback ports, runs every scenario against every restart target, writes
/// the reports and tears the stack down.
#[derive(Parser, Debug)]
#[command(name = "continuity", version, about, long_about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 every cell passed, 1 a cell failed, 2 the run could not be completed, 64 bad usage or config.";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the matrix: every scenario against every restart target.
    Run(Box<RunArgs>),
    /// Check the config file and scenario files without touching the network.
    Validate(Sources),
    /// List the restart targets and scenarios a run would use.
    List(Sources),
    /// Compare two runs cell by cell (e.g. two sandbox-agent versions); exits 1 on a regression.
    Compare {
        /// The baseline: a run folder or its report.json.
        baseline: PathBuf,
        /// The candidate: a run folder or its report.json.
        candidate: PathBuf,
    },
    /// Bring the local stack up or down by hand.
    Stack {
        #[command(subcommand)]
        action: StackAction,
    },
    /// Run the scripted ACP agent on stdio (what the stack's sandbox-agent launches).
    #[command(hide = true)]
    Agent,
    /// Kill what a harness started once its pipe closes (started by the harness itself).
    #[command(hide = true)]
    Keeper {
        #[arg(long)]
        owner: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum StackAction {
    /// Start the local stack and print its base URL and components; stays up until `stack down`.
    Up(StackArgs),
    /// Show whether the local stack's components are running.
    Status(StackArgs),
    /// Stop the local stack.
    Down(StackArgs),
}

#[derive(Args, Debug, Clone)]
pub struct StackArgs {
    /// Folder that holds the stack's state, logs and pid files.
    #[arg(long, value_name = "DIR", default_value = ".continuity-stack")]
    pub dir: PathBuf,
    /// sandbox-agent version from the npm registry.
    #[arg(long, value_name = "VERSION", default_value = crate::stack::sandbox_agent::DEFAULT_VERSION)]
    pub server_version: String,
}

/// Where targets and scenarios come from.
#[derive(Args, Debug, Clone, Default)]
pub struct Sources {
    /// Config file with run defaults and restart targets.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Folder of scenario files (*.toml); the built-in scenarios when absent.
    #[arg(long, value_name = "DIR")]
    pub scenarios_dir: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistArg {
    /// A SQLite file per cell in the run folder: clients of a cell share history.
    Sqlite,
    /// In-memory per client, as the seed script (a second client sees nothing).
    Memory,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RivetSaveArg {
    /// The actor saves after every write (survives a SIGKILL).
    Immediate,
    /// RivetKit's periodic save, about once a second.
    Deferred,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub sources: Sources,
    /// sandbox-agent base URL (e.g. http://127.0.0.1:2468 or https://host/sandbox); the local stack when absent.
    #[arg(long, env = "SA_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the bearer token (never the token itself).
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// Agent to run sessions with.
    #[arg(long, env = "SA_AGENT", value_name = "NAME")]
    pub agent: Option<String>,
    /// Deadline of each phase, in milliseconds (a scenario may override it per phase).
    #[arg(long, env = "SA_TIMEOUT_MS", value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Deadline of the whole run, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub overall_timeout_ms: Option<u64>,
    /// Run every target × scenario cell this many times.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Only these targets (repeatable).
    #[arg(long = "target", value_name = "NAME")]
    pub targets: Vec<String>,
    /// Only these scenarios (repeatable).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Folder for this run's reports and logs [default: reports/<UTC time>-<id>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Session store of each cell.
    #[arg(long, value_enum, value_name = "DRIVER")]
    pub persist: Option<PersistArg>,
    /// sandbox-agent version for the local stack (from the npm registry).
    #[arg(long, value_name = "VERSION", default_value = crate::stack::sandbox_agent::DEFAULT_VERSION)]
    pub server_version: String,
    /// How the local stack's Rivet actor saves session history.
    #[arg(long, value_enum, value_name = "MODE", default_value = "immediate")]
    pub rivet_save: RivetSaveArg,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_agent_command_is_hidden_from_help() {
        let help = Cli::command().render_help().to_string();
        let commands: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(
            commands,
            ["run", "validate", "list", "compare", "stack", "help"]
        );
    }

    #[test]
    fn zero_repeats_and_zero_timeouts_are_refused() {
        assert!(Cli::try_parse_from(["continuity", "run", "--repeat", "0"]).is_err());
        assert!(Cli::try_parse_from(["continuity", "run", "--timeout-ms", "0"]).is_err());
        let ok = Cli::try_parse_from([
            "continuity",
            "run",
            "--repeat",
            "3",
            "--target",
            "agent",
            "--target",
            "gateway",
        ])
        .unwrap();
        let Command::Run(args) = ok.command else {
            panic!()
        };
        assert_eq!(args.repeat, Some(3));
        assert_eq!(args.targets, ["agent", "gateway"]);
    }
}
