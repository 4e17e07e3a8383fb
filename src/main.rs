//! The `continuity` command line: parse, dispatch, exit with a documented code.

use clap::Parser;
use continuity::cli::{Cli, Command, StackAction};
use continuity::{commands, exit_codes};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit_codes::USAGE
            } else {
                exit_codes::OK
            });
        }
    };
    // Whatever happens, no child process group outlives the harness.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        continuity::stack::process::kill_all_groups();
        default_hook(info);
    }));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("continuity: cannot start the async runtime: {e}");
            return ExitCode::from(exit_codes::INCOMPLETE);
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Agent => Ok(continuity::agent::run().await.clamp(0, 255) as u8),
            // Blocks this thread on its pipe: nothing else runs in a keeper.
            Command::Keeper { owner } => Ok(continuity::stack::keeper::run(&owner) as u8),
            Command::Run(args) => commands::run(*args).await,
            Command::Validate(sources) => commands::validate(&sources).map(|out| {
                print!("{out}");
                exit_codes::OK
            }),
            Command::List(sources) => commands::list(&sources).map(|out| {
                print!("{out}");
                exit_codes::OK
            }),
            Command::Compare {
                baseline,
                candidate,
            } => commands::compare(&baseline, &candidate),
            Command::Stack { action } => match action {
                StackAction::Up(args) => commands::stack_up(args).await,
                StackAction::Status(args) => commands::stack_status(args),
                StackAction::Down(args) => commands::stack_down(args).await,
            },
        }
    });
    continuity::stack::process::kill_all_groups();
    continuity::stack::keeper::finish();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("continuity: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
