//! The `continuity` command line.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Tells whether sandbox-agent sessions survive a restart of each component of their stack.
#[derive(Parser, Debug)]
#[command(name = "continuity", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the scripted ACP agent on stdio (what the stack's sandbox-agent launches).
    #[command(hide = true)]
    Agent,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("continuity: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Agent => {
            ExitCode::from(runtime.block_on(continuity::agent::run()).clamp(0, 255) as u8)
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
}
