//! The `continuity` command line: parse, dispatch, exit with a documented code.

use clap::Parser;
use continuity::cli::{Cli, Command, StackAction};
use continuity::commands::{self, CommandError, Outcome};
use continuity::console;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            let code = commands::parse_error_exit_code(&e);
            // A command line that does not parse cannot judge a build either.
            let bisect_exit = std::env::args_os().any(|a| a == "--bisect-exit");
            return ExitCode::from(match bisect_exit {
                true => continuity::exit_codes::for_git_bisect(code),
                false => code,
            });
        }
    };
    let bisect_exit = matches!(&cli.command, Command::Run(args) if args.bisect_exit);
    install_panic_hook();
    continuity::supervise::print_warnings_with(console::errln);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return ExitCode::from(commands::report(&CommandError::Runtime(e))),
    };
    // From here to the last instruction a stopping signal is handled (the
    // scripted agent and the keeper keep the default: they are children).
    let listens = !matches!(
        cli.command,
        Command::Agent | Command::Keeper { .. } | Command::Completions { .. }
    );
    let interrupted = match bisect_exit {
        true => continuity::exit_codes::for_git_bisect(continuity::exit_codes::INCOMPLETE),
        false => continuity::exit_codes::INCOMPLETE,
    };
    let outcome = runtime.block_on(async {
        if listens {
            commands::interrupts::listen(interrupted);
        }
        dispatch(cli.command).await
    });
    // The command's keeper (if it had one) finished with its run; this is
    // for what a panic or an early error left.
    continuity::supervise::kill_all_groups();
    let code = commands::exit_code(outcome);
    ExitCode::from(match bisect_exit {
        true => continuity::exit_codes::for_git_bisect(code),
        false => code,
    })
}

/// Whatever happens, no child process group outlives the harness: a
/// panic kills them all and clears the live area before it is reported.
fn install_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        continuity::supervise::kill_all_groups();
        console::live::clear();
        default_hook(info);
    }));
}

/// Runs the parsed command to its outcome.
async fn dispatch(command: Command) -> Result<Outcome, CommandError> {
    match command {
        Command::Agent => Ok(Outcome::Exited(
            continuity::agent::run().await.clamp(0, 255) as u8,
        )),
        // Blocks this thread on its pipe: nothing else runs in a keeper.
        Command::Keeper { owner } => Ok(Outcome::Exited(
            continuity::supervise::keeper::run(&owner) as u8,
        )),
        Command::Run(args) => commands::run(*args).await,
        Command::Rerun(args) => commands::rerun(args).await,
        Command::Bisect(args) => commands::bisect(args).await,
        Command::Validate(sources) => commands::validate(&sources).map(|out| {
            console::out(&out);
            Outcome::Passed
        }),
        Command::List(sources) => commands::list(&sources).map(|out| {
            console::out(&out);
            Outcome::Passed
        }),
        Command::Compare {
            baseline,
            candidate,
            allow_missing,
            axis,
            from,
            to,
        } => compare(&baseline, candidate, allow_missing, axis, from, to),
        Command::Merge(args) => commands::merge(args),
        Command::Check { run, gate } => commands::check(&run, &gate),
        Command::Export {
            run,
            chrome_trace,
            force,
        } => commands::export_chrome_trace(&run, &chrome_trace, force).map(|line| {
            console::errln(&line);
            Outcome::Passed
        }),
        Command::Baseline { run, until, issue } => {
            commands::baseline(&run, until, issue).map(|out| {
                console::out(&out);
                Outcome::Passed
            })
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "continuity", &mut script);
            console::out(&String::from_utf8_lossy(&script));
            Ok(Outcome::Passed)
        }
        Command::Show { run, cell, picks } => {
            commands::show(&run, cell.as_deref(), &picks.0).map(|out| {
                console::out(&out);
                Outcome::Passed
            })
        }
        Command::Stack { action } => match action {
            StackAction::Up(args) => commands::stack_up(args).await,
            StackAction::Status(args) => commands::stack_status(args),
            StackAction::Down(args) => commands::stack_down(args).await,
        },
    }
}

/// `compare`: two runs, or the points of one axis within one run.
fn compare(
    baseline: &std::path::Path,
    candidate: Option<std::path::PathBuf>,
    allow_missing: bool,
    axis: Option<continuity::report::Axis>,
    from: Option<String>,
    to: Option<String>,
) -> Result<Outcome, CommandError> {
    match (candidate, axis) {
        (Some(candidate), None) => commands::compare(baseline, &candidate, allow_missing),
        (None, Some(axis)) => commands::compare_within(
            baseline,
            axis,
            from.as_deref(),
            to.as_deref(),
            allow_missing,
        ),
        (Some(_), Some(_)) => Err(commands::CommandError::usage(
            "compare --axis compares points within one run: give one run, not two",
        )),
        (None, None) => Err(commands::CommandError::usage(
            "compare needs the candidate run too, or --axis AXIS to compare points within one run",
        )),
    }
}
