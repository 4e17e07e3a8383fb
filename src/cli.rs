//! The command line: flags as the user typed them (clap), then resolved
//! settings (flags > seed-script environment variables > config file >
//! defaults), then the command.
//!
//! Over 400 lines on purpose: the flags of every command are one clap tree
//! (`Cli`, `Command`, each command's `*Args` and the value parsers they
//! name), read in one place as `--help` shows it, and a new axis adds its
//! flag here (ARCHITECTURE.md, "An axis"); what each command does with them
//! is in `commands/`.

use crate::persist::Store;
use crate::report::Axis;
use crate::runner::ClientKind;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod axis_flags;
pub(crate) use axis_flags::AxisFlags;

/// Tells whether sandbox-agent sessions survive a restart of each component of their stack.
///
/// With no --base-url and no --config, `continuity run` brings up a local
/// stack (sandbox-agent, an nginx gateway, a Rivet persistence layer) on
/// loopback ports, runs every scenario against every restart target, writes
/// the reports and tears the stack down.
#[derive(Parser, Debug)]
#[command(name = "continuity", version, about, long_about, after_help = crate::exit_codes::help())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the matrix: every scenario against every restart target.
    Run(Box<RunArgs>),
    /// Run a finished run again with its exact settings (read from its report.json), or only its cells that did not pass (--failed).
    ///
    /// The targets, scenarios, agents, clients, server and SDK points,
    /// stores, deadlines, seed, repeat and retries are the run's. A
    /// candidate binary or SDK, a config file or a scenario that is gone
    /// or changed since (by its recorded SHA-256), or a report that does
    /// not record what a rerun needs, is refused (exit 64). The new run's
    /// report.json names the run it reran (`run.recipe.rerunOf`).
    Rerun(RerunArgs),
    /// Check the config file and scenario files without touching the network.
    Validate(Sources),
    /// List the restart targets and scenarios a run would use.
    List(Sources),
    /// Find the first of an ordered list of builds (server versions or binaries, SDK versions or packages) where a cell's verdict changes from the first build's.
    ///
    /// Each point tried is one run of the cells, --runs times (runs that
    /// disagree make it flaky: neither as the first point nor changed, and
    /// left out of the search); each try halves the points left, so six
    /// points take at most four tries, the first included. Each point's
    /// run is a run folder under --out (point-N/), and bisect.json records
    /// every try. Exits 0 when it found the first point that differs, 1
    /// when no point differs or the change lies among flaky points, 2 when
    /// the first point cannot be judged or the bisect was interrupted.
    /// `run --bisect-exit` judges one build for `git bisect run` instead.
    Bisect(BisectArgs),
    /// Compare two runs cell by cell (e.g. two sandbox-agent versions), or two points of an axis of one run (--axis); exits 1 on a regression.
    ///
    /// Exits 1 on a regression, and on a cell of the baseline that the
    /// candidate lacks (unless --allow-missing) or a cell either report
    /// holds twice. With --axis, BASELINE is one run and its points of that
    /// axis are compared pair by pair (e.g. the release's SDK and a
    /// candidate's: `compare RUN --axis sdk --from 0.4.2 --to fix`).
    Compare {
        /// The baseline: a run folder or its report.json (with --axis: the run).
        baseline: PathBuf,
        /// The candidate: a run folder or its report.json (not with --axis).
        candidate: Option<PathBuf>,
        /// Accept a candidate that lacks cells of the baseline (e.g. a run filtered with --target).
        #[arg(long)]
        allow_missing: bool,
        /// Compare the points of this axis within one run: every adjacent pair, or --from and --to.
        #[arg(long, value_name = "AXIS", value_parser = axis_parser())]
        axis: Option<Axis>,
        /// With --axis: the point compared from (the baseline), by label [default: each point but the last].
        #[arg(long, value_name = "LABEL", requires = "axis")]
        from: Option<String>,
        /// With --axis: the point compared to (the candidate), by label [default: the point after --from].
        #[arg(long, value_name = "LABEL", requires = "axis")]
        to: Option<String>,
    },
    /// Show a finished run: its matrix, or one cell's timeline as text.
    Show {
        /// The run: its folder or its report.json.
        run: PathBuf,
        /// One cell's timeline: TARGET/SCENARIO (TARGET@SERVER on a server axis), TARGET/SCENARIO/CLIENT on a client axis (CLIENT@SDK on an SDK axis), and #ATTEMPT for a repeated run.
        #[arg(long, value_name = "TARGET/SCENARIO[/CLIENT[@SDK]][#ATTEMPT]")]
        cell: Option<String>,
        /// With --cell: the cell's value on each axis its path does not name.
        #[command(flatten)]
        picks: CellPicks,
    },
    /// Check a finished run again: the always-on checker over its cells' traces (streams, application, store, requests, ground truth), each cell judged again with what it finds; prints the verdicts as `run` does and exits as `run` would. Reads only: works on a merged run, a downloaded artifact, a folder it may not write to.
    Check {
        /// The run: its folder or its report.json.
        run: PathBuf,
        #[command(flatten)]
        gate: GateArgs,
    },
    /// Export a finished run for other tools: --chrome-trace FILE writes its cells, phases, restarts, fault windows and HTTP exchanges as Chrome Trace Event JSON (Perfetto, chrome://tracing).
    Export {
        /// The run: its folder or its report.json.
        run: PathBuf,
        /// Where to write the Chrome Trace Event JSON: a new file (never a link, nor a file of the run).
        #[arg(long, value_name = "FILE", required = true)]
        chrome_trace: PathBuf,
        /// Replace FILE if it exists (a regular file outside the run folder).
        #[arg(long)]
        force: bool,
    },
    /// Merge shard runs (`run --partition`) into one run folder, optionally gating it with --expect.
    Merge(MergeArgs),
    /// Print an expectations file (for --expect) that records a finished run's verdicts.
    Baseline {
        /// A run folder or its report.json.
        run: PathBuf,
        /// Each entry of a cell that did not pass gets `until = DATE`: a quarantine that stops excusing the cell after that day (UTC).
        #[arg(long, value_name = "YYYY-MM-DD", value_parser = crate::report::expect::parse_date)]
        until: Option<jiff::civil::Date>,
        /// With --until: each such entry gets `issue = URL`, where the failure is tracked.
        #[arg(long, value_name = "URL", requires = "until", value_parser = crate::report::expect::check_issue)]
        issue: Option<String>,
    },
    /// Print a shell completion script: `continuity completions bash > /etc/bash_completion.d/continuity`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
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
    /// sandbox-agent version from the npm registry (e.g. 0.4.2).
    #[arg(long, value_name = "VERSION", default_value = crate::stack::sandbox_agent::DEFAULT_VERSION, value_parser = parse_version)]
    pub server_version: String,
}

/// `--server-version`: a published version number only (see
/// [`crate::stack::npm::check_version`]).
pub(crate) fn parse_version(text: &str) -> Result<String, crate::errors::Invalid> {
    crate::stack::npm::check_version(text).map(|()| text.to_string())
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

/// How a run is judged: expectations, fixed and flaky cells.
#[derive(Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Judge cells against this expectations file (known results): exit 0 when every cell is as expected.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// With --expect, a cell that passes against an expected failure does not fail the run.
    #[arg(long)]
    pub allow_fixed: bool,
    /// Whether a flaky cell (attempts disagree) counts as passed (with a warning) or failed.
    #[arg(long, value_enum, value_name = "RESULT", default_value = "pass")]
    pub flaky_result: FlakyResultArg,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlakyResultArg {
    #[default]
    Pass,
    Fail,
}

impl From<FlakyResultArg> for crate::report::FlakyResult {
    fn from(arg: FlakyResultArg) -> Self {
        match arg {
            FlakyResultArg::Pass => crate::report::FlakyResult::Pass,
            FlakyResultArg::Fail => crate::report::FlakyResult::Fail,
        }
    }
}

/// What `run` writes on stdout while it goes.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MessageFormat {
    /// Progress on stderr, the tables on stdout.
    #[default]
    Human,
    /// One JSON object per line on stdout (run-started, cell-started, cell-finished, run-finished); the tables on stderr.
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct RerunArgs {
    /// The finished run: its folder or its report.json.
    pub run: PathBuf,
    /// Only the cells that did not pass (fail, error, flaky, interrupted); skipped cells are not rerun.
    #[arg(long)]
    pub failed: bool,
    /// Folder for the rerun's reports and logs [default: reports/<UTC time>-<id>]; must be empty or new.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Reuse a non-empty --out folder (an earlier run's files in it are removed first).
    #[arg(long)]
    pub force: bool,
    /// Run cells on N workers, as `run --jobs` [default: as `run`].
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    /// `json`: one JSON object per line on stdout while the run goes, as `run --message-format json`.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "human")]
    pub message_format: MessageFormat,
    /// The run's config file and scenarios folder, when it had them: yours, checked against the SHA-256 the run recorded (never the report's paths).
    #[command(flatten)]
    pub sources: Sources,
    /// The deployment, when the run had one (SA_BASE_URL and your config's base_url count too): it must be the URL the run recorded; the report's is never used.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The variable that holds your token, when the run read one from a variable: yours to name (the report's name is never read).
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// Your expectations file, when the run was judged against one.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Your build of the run's candidate server LABEL (repeatable): it must hold what the run ran (its recorded SHA-256).
    #[arg(long = "server-bin", value_name = "LABEL=PATH")]
    pub server_bins: Vec<String>,
    /// Your packages of the run's candidate SDK LABEL (repeatable), checked as --server-bin is.
    #[arg(long = "sdk", value_name = "LABEL=PATH[,PATH…]")]
    pub sdks: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct BisectArgs {
    /// The axis the points lie on: `server` or `sdk` (the hosted client's, --client ts-sdk by default there).
    #[arg(long, value_name = "AXIS", value_parser = bisect_axis())]
    pub axis: Axis,
    /// The points, in order: a version number (from the npm registry) or [LABEL=]PATH, a build: a sandbox-agent binary on the server axis (as --server-bin), an SDK package folder or tarball on the sdk axis, further packages after commas (as --sdk). A path holds a `/` (./sandbox-agent).
    #[arg(value_name = "POINT", required = true, num_args = 2..)]
    pub points: Vec<String>,
    /// A cell judged at each point, TARGET/SCENARIO (repeatable): the first point's verdicts are what the others are compared with.
    #[arg(long = "cell", value_name = "TARGET/SCENARIO", required = true)]
    pub cells: Vec<String>,
    /// How many times each point tried is run; runs that disagree make the point flaky.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Folder for each point's run (point-N/) and bisect.json [default: reports/<UTC time>-bisect-<id>]; must be empty or new.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The seed of every point's runs [default: drawn once and printed].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Which client runs the cells (repeatable), as `run --client` [default: rust; ts-sdk on the sdk axis].
    #[arg(long = "client", value_enum, value_name = "CLIENT")]
    pub clients: Vec<ClientKind>,
    /// Agent to run sessions with (repeatable), as `run --agent`.
    #[arg(long = "agent", value_name = "NAME")]
    pub agent: Vec<String>,
    /// Session store of each cell (repeatable), as `run --persist`.
    #[arg(long, value_name = "DRIVER", value_parser = store_parser())]
    pub persist: Vec<Store>,
    #[command(flatten)]
    pub sources: Sources,
    /// Deadline of each phase, in milliseconds, as `run --timeout-ms`.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Workers (local stacks) of each point's run, as `run --jobs`.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    /// What each cell's trace.jsonl keeps, as `run --trace`.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub trace: Option<TraceArg>,
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Folder for the merged run (must not hold a report yet).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The shard runs: run folders or their report.json.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub gate: GateArgs,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RivetSaveArg {
    /// The actor saves after every write (survives a SIGKILL).
    Immediate,
    /// RivetKit's periodic save, about once a second.
    Deferred,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RivetStopArg {
    /// SIGKILL: the runner crashes (what a persist driver must survive).
    Kill,
    /// SIGTERM: RivetKit shuts down within its grace period, actors sleep.
    Graceful,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub sources: Sources,
    /// sandbox-agent base URL (e.g. http://127.0.0.1:2468 or https://host/sandbox; also SA_BASE_URL); the local stack when absent.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the bearer token (never the token itself).
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// Agent to run sessions with (also SA_AGENT) [default: mock]; on the local stack one of mock, opencode, claude, codex, repeatable for an agent axis (real agents install into the cache on first use).
    #[arg(long = "agent", value_name = "NAME")]
    pub agent: Vec<String>,
    /// Deadline of each phase, in milliseconds (also SA_TIMEOUT_MS; a scenario may override it per phase) [default: 30000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Deadline of the whole run, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub overall_timeout_ms: Option<u64>,
    /// How long a pending call may have nothing in flight that could settle it (no request awaiting an answer, no open stream, no retry by the client) before its phase ends as `hung` instead of waiting out its deadline [default: 2000]; 0 waits every deadline out.
    #[arg(long, value_name = "MS")]
    pub hang_grace_ms: Option<u64>,
    /// Run every target × scenario cell this many times; attempts that disagree make the cell flaky.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Run a failed attempt again up to N times; a pass on retry makes the cell flaky.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub retries: Option<u32>,
    /// Every random choice of the run (the fault proxies' toxicity draws, jitter, slicer cuts) derives from this seed; the same seed gives each cell the same toxic decisions [default: drawn, printed and stored in report.json].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Exit as `git bisect run` reads it: 0 as expected, 1 not, 125 when the run could not judge the build (a stack or candidate that would not start, bad usage), so that continuity can judge each commit of a `git bisect run`.
    #[arg(long)]
    pub bisect_exit: bool,
    /// Run one shard of the matrix: count:K/N or hash:K/N (as cargo-nextest), or cost:K/N (dealt by expected duration, see --timings); merge shards with `continuity merge`.
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(crate::partition::Partition))]
    pub partition: Option<crate::partition::Partition>,
    /// With --partition cost:K/N: a previous run (its folder or report.json, e.g. the last merged run) whose cell durations the split is dealt by; cells it lacks get built-in estimates.
    #[arg(long, value_name = "RUN", requires = "partition")]
    pub timings: Option<PathBuf>,
    /// Run cells on N workers, each with a local stack of its own [default: the number of CPUs, at least 2]; with --base-url or --config, see the config's `jobs` and `independent`.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    #[command(flatten)]
    pub gate: GateArgs,
    /// `json`: one JSON object per line on stdout while the run goes (the tables go to stderr).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "human")]
    pub message_format: MessageFormat,
    /// Only these targets (repeatable).
    #[arg(long = "target", value_name = "NAME")]
    pub targets: Vec<String>,
    /// Only these scenarios (repeatable).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Folder for this run's reports and logs [default: reports/<UTC time>-<id>]; must be empty or new.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Reuse a non-empty --out folder: an earlier run's reports, session stores and logs in it are removed first.
    #[arg(long)]
    pub force: bool,
    /// Session store of each cell; repeat it for a persistence axis (every cell once per store) [default: the local stack's Rivet actor, else sqlite].
    #[arg(long, value_name = "DRIVER", value_parser = store_parser())]
    pub persist: Vec<Store>,
    /// sandbox-agent version for the local stack (from the npm registry, e.g. 0.4.0); repeat it for a version axis: every version installed first, each stack switching its server between them, one matrix [default: 0.4.2, unless --server-bin alone names the servers].
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub server_version: Vec<String>,
    /// A sandbox-agent binary the local stack runs instead of the registry's (a candidate build, e.g. target/release/sandbox-agent): one more point of the server axis beside the --server-version ones, labelled LABEL or by the version it reports (repeatable; also `server_bin` in the config's [run]).
    #[arg(long = "server-bin", value_name = "[LABEL=]PATH")]
    pub server_bins: Vec<String>,
    /// How the local stack's Rivet actor saves session history.
    #[arg(long, value_enum, value_name = "MODE", default_value = "immediate")]
    pub rivet_save: RivetSaveArg,
    /// How the `rivet` target stops the local stack's RivetKit runner (with `--client ts-sdk`, the process that holds the live SDK client).
    #[arg(long, value_enum, value_name = "HOW", default_value = "kill")]
    pub rivet_stop: RivetStopArg,
    /// What each cell's trace.jsonl keeps: nothing, every exchange and envelope without bodies, or with bodies cut at 4 KB.
    #[arg(long, value_enum, value_name = "LEVEL", default_value = "summary")]
    pub trace: TraceArg,
    /// Which client runs the scenarios (repeatable for a client axis): `rust`, continuity's SDK-faithful client, or `ts-sdk`, the real npm sandbox-agent SDK hosted in a RivetKit actor of the local stack [default: rust].
    #[arg(long = "client", value_name = "CLIENT", value_parser = client_parser())]
    pub clients: Vec<ClientKind>,
    /// The sandbox-agent TypeScript SDK version the `ts-sdk` client runs (from the npm registry); repeat it, or add --sdk, for an SDK axis [default: 0.4.2, pinned, unless --sdk alone names the SDKs].
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub sdk_version: Vec<String>,
    /// A candidate SDK for the `ts-sdk` client: the folder of a built `sandbox-agent` package or a tarball from `npm pack`; further paths (comma-separated) replace the SDK's dependencies of the same name (e.g. acp-http-client). One more point of the SDK axis, labelled LABEL or by the package's version (repeatable; also `sdk` in the config's [run]).
    #[arg(long = "sdk", value_name = "[LABEL=]PATH[,PATH…]")]
    pub sdks: Vec<String>,
    /// The flag of each axis not written out above, made from `Axis::ALL`.
    #[command(flatten)]
    pub axis_flags: AxisFlags,
}

/// The axes whose `run` flags are fields of [`RunArgs`], each with its
/// own parser and help; every other axis gets the flag [`AxisFlags`]
/// makes.
const AXES_WITH_OWN_FLAGS: [Axis; 5] = [
    Axis::Server,
    Axis::Agent,
    Axis::Client,
    Axis::Sdk,
    Axis::Persist,
];

/// `bisect --axis`: the points of a bisect are builds, on the server or
/// the SDK axis.
fn bisect_axis() -> impl clap::builder::TypedValueParser<Value = Axis> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["server", "sdk"]).map(|axis| match axis.as_str() {
        "sdk" => Axis::Sdk,
        _ => Axis::Server,
    })
}

/// `--client`: every client, named and explained by [`ClientKind`].
fn client_parser() -> impl clap::builder::TypedValueParser<Value = ClientKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let named = ClientKind::all()
        .iter()
        .map(|kind| PossibleValue::new(kind.name()).help(kind.help()));
    PossibleValuesParser::new(named).try_map(|name| name.parse::<ClientKind>())
}

/// `--persist`: every store, named and explained by [`Store`].
fn store_parser() -> impl clap::builder::TypedValueParser<Value = Store> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let named = Store::all()
        .iter()
        .map(|store| PossibleValue::new(store.name()).help(store.help()));
    PossibleValuesParser::new(named).try_map(|name| name.parse::<Store>())
}

/// `compare --axis`: every axis, named as [`Axis::name`] spells it, with
/// what gives it its points.
/// `show --cell`'s flags beside the path: one per axis the path does not
/// name ([`crate::report::terminal::named_in_cell_path`]), called as the
/// axis (`--persist sqlite`, `--agent codex`), each the cell's value on
/// it. Built from `Axis::ALL`, so a new axis has its flag here unasked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellPicks(pub Vec<crate::report::AxisValue>);

impl CellPicks {
    /// The axes picked by a flag, in the order `show` names them (the
    /// store before the agent, as it always has: `report.json`'s order
    /// reversed).
    pub(crate) fn axes() -> impl Iterator<Item = Axis> {
        Axis::ALL
            .into_iter()
            .rev()
            .filter(|axis| !crate::report::terminal::named_in_cell_path(*axis))
    }
}

impl clap::FromArgMatches for CellPicks {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let picks = CellPicks::axes().filter_map(|axis| {
            let value = matches.get_one::<String>(axis.name())?;
            Some(crate::report::AxisValue::parse(axis, value))
        });
        Ok(CellPicks(picks.collect()))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = CellPicks::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for CellPicks {
    fn augment_args(command: clap::Command) -> clap::Command {
        CellPicks::axes().fold(command, |command, axis| {
            let word = axis.column();
            let names = match axis.known_names() {
                Some(names) => format!(" ({})", names.join(", ")),
                None => String::new(),
            };
            command.arg(
                clap::Arg::new(axis.name())
                    .long(axis.name())
                    .value_name(word.to_uppercase())
                    .requires("cell")
                    .help(format!(
                        "With --cell on {} axis: the cell of this {word}{names}",
                        a_or_an(word)
                    )),
            )
        })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        CellPicks::augment_args(command)
    }
}

/// `an agent axis`, `a store axis`.
fn a_or_an(word: &str) -> String {
    match word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        true => format!("an {word}"),
        false => format!("a {word}"),
    }
}

fn axis_parser() -> impl clap::builder::TypedValueParser<Value = Axis> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let named = Axis::ALL.map(|axis| PossibleValue::new(axis.name()).help(axis.about()));
    PossibleValuesParser::new(named).try_map(|name| name.parse::<Axis>())
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceArg {
    /// No trace files (waits still name what they saw).
    Off,
    /// HTTP exchanges, SSE events, JSON-RPC envelopes, waits, phases; no bodies.
    Summary,
    /// As summary, with JSON-RPC bodies cut at 4 KB.
    Full,
}

impl From<TraceArg> for crate::trace::TraceLevel {
    fn from(arg: TraceArg) -> Self {
        match arg {
            TraceArg::Off => Self::Off,
            TraceArg::Summary => Self::Summary,
            TraceArg::Full => Self::Full,
        }
    }
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
            [
                "run",
                "rerun",
                "validate",
                "list",
                "bisect",
                "compare",
                "show",
                "check",
                "export",
                "merge",
                "baseline",
                "completions",
                "stack",
                "help"
            ]
        );
    }

    #[test]
    fn server_versions_are_version_numbers_only() {
        for ok in ["0.4.2", "10.0.0-rc.1", "1.2.3+build.5", "0.5.0-beta"] {
            assert_eq!(parse_version(ok).as_deref(), Ok(ok));
        }
        for bad in [
            "../../etc",
            "latest",
            "1.2",
            "1.2.3.4",
            "1.2.3 || 2",
            "1.2.3-",
            "1.2.x",
            "",
            "1.2.3-a/b",
            "01.2.3/../x",
        ] {
            assert!(parse_version(bad).is_err(), "{bad:?} accepted");
        }
        for command in [["run", "--server-version"], ["stack", "up"]] {
            let mut argv = vec!["continuity"];
            argv.extend(command);
            if command[0] == "stack" {
                argv.push("--server-version");
            }
            argv.push("../../etc");
            let e = Cli::try_parse_from(&argv).unwrap_err();
            assert!(e.to_string().contains("--server-version"), "{e}");
        }
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
        assert_eq!(args.trace, TraceArg::Summary, "summary by default");
        let off = Cli::try_parse_from(["continuity", "run", "--trace", "off"]).unwrap();
        let Command::Run(args) = off.command else {
            panic!()
        };
        assert_eq!(
            crate::trace::TraceLevel::from(args.trace),
            crate::trace::TraceLevel::Off
        );
        assert!(Cli::try_parse_from(["continuity", "run", "--trace", "all"]).is_err());
    }
}
