//! Where every exit code of `continuity` is decided: a command ends with an
//! [`Outcome`] (it ran: passed, failed, cut short) or a [`CommandError`] (it
//! could not run as asked), and each maps to one of the named codes in
//! [`crate::exit_codes`] here and nowhere else.

use crate::config::ConfigError;
use crate::exit_codes;
use crate::report::expect::ExpectError;
use crate::report::FolderError;
use crate::scenario::ScenarioError;
use crate::stack::StackError;

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every cell passed, or `validate`, `list`, `show`… did what was asked.
    Passed,
    /// At least one cell failed or could not run; a regression in `compare`;
    /// a stack component not running in `stack status`.
    Failed,
    /// The run was interrupted: the reports hold what finished.
    Interrupted,
    /// A part of continuity's own (its Postgres, Chromium…) failed under
    /// cells: they are `error`, and the run could not be completed.
    HarnessFailed,
    /// `check`: a trace the run names could not be read (outside the
    /// folder, not a regular file, too large, damaged), so its cell stands
    /// unchecked: the check could not be completed.
    Unchecked,
    /// A second Ctrl-C: everything was killed at once.
    Killed,
    /// A process `continuity` runs as (`agent`, `keeper`) ends with its own status.
    Exited(u8),
}

impl Outcome {
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Outcome::Passed => exit_codes::OK,
            Outcome::Failed => exit_codes::FAILED,
            Outcome::Interrupted | Outcome::HarnessFailed | Outcome::Unchecked => {
                exit_codes::INCOMPLETE
            }
            Outcome::Killed => exit_codes::KILLED,
            Outcome::Exited(code) => code,
        }
    }

    /// `Failed` when `failed`, else `Passed`.
    pub(crate) fn failed_if(failed: bool) -> Outcome {
        if failed {
            Outcome::Failed
        } else {
            Outcome::Passed
        }
    }
}

/// Why a command could not do what was asked. The message is complete on
/// its own (`main` prefixes `continuity: `); the kind decides the exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// A flag or value that cannot work; the message names it.
    #[error("{0}")]
    Usage(String),
    /// A value that cannot work; the message says why.
    #[error(transparent)]
    Invalid(#[from] crate::errors::Invalid),
    /// The config file (or the seed script's environment) is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A scenario file is wrong.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The expectations file is wrong or names what does not exist.
    #[error(transparent)]
    Expectations(#[from] ExpectError),
    /// The report folder cannot be used (it exists and is not a run folder…).
    #[error(transparent)]
    Folder(#[from] FolderError),
    /// A cell's trace that `show` cannot read.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    /// Shards that `merge` cannot join.
    #[error(transparent)]
    Merge(#[from] crate::report::merge::MergeError),
    /// A stack folder given to `stack` that is busy or holds no stack.
    #[error(transparent)]
    StackFolder(Box<StackError>),
    /// The local stack would not start.
    #[error(transparent)]
    Stack(Box<StackError>),
    /// A restart target of the deployment under test could not be prepared.
    #[error("cannot prepare target: {0}")]
    Target(Box<crate::targets::TargetError>),
    /// The deployment under test did not answer its health check before the run.
    #[error(transparent)]
    Preflight(#[from] crate::runner::RunError),
    /// Something the run needs is unreachable or could not be made; the message says what.
    #[error("{0}")]
    Incomplete(String),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// What a command printed could not be written (a full disk; a reader that
    /// closed stdout, as `| head` does, is not an error).
    #[error("cannot write to stdout: {0}")]
    Stdout(String),
}

impl From<crate::targets::TargetError> for CommandError {
    fn from(e: crate::targets::TargetError) -> Self {
        CommandError::Target(Box::new(e))
    }
}

impl From<crate::targets::UnknownTarget> for CommandError {
    fn from(e: crate::targets::UnknownTarget) -> Self {
        CommandError::usage(e.to_string())
    }
}

impl From<StackError> for CommandError {
    fn from(e: StackError) -> Self {
        CommandError::Stack(Box::new(e))
    }
}

impl CommandError {
    /// A stack folder given to `stack` that cannot be used (busy, unreadable).
    pub(crate) fn stack_folder(e: StackError) -> Self {
        CommandError::StackFolder(Box::new(e))
    }

    pub fn usage(message: impl Into<String>) -> Self {
        CommandError::Usage(message.into())
    }

    pub(crate) fn incomplete(message: impl Into<String>) -> Self {
        CommandError::Incomplete(message.into())
    }

    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CommandError::Usage(_)
            | CommandError::Invalid(_)
            | CommandError::Config(_)
            | CommandError::Scenario(_)
            | CommandError::Expectations(_)
            | CommandError::Folder(_)
            | CommandError::Trace(_)
            | CommandError::Merge(_)
            | CommandError::StackFolder(_) => exit_codes::USAGE,
            CommandError::Stack(_)
            | CommandError::Target(_)
            | CommandError::Preflight(_)
            | CommandError::Incomplete(_)
            | CommandError::Runtime(_)
            | CommandError::Stdout(_) => exit_codes::INCOMPLETE,
        }
    }
}

/// The exit code of a command-line parse that failed: `--help` and
/// `--version` "fail" with what they print, and exit 0.
pub fn parse_error_exit_code(e: &clap::Error) -> u8 {
    if e.use_stderr() {
        exit_codes::USAGE
    } else {
        exit_codes::OK
    }
}

/// The process's exit code for what a command returned, printing its error.
/// A command that passed or failed but whose output was lost exits incomplete.
pub fn exit_code(result: Result<Outcome, CommandError>) -> u8 {
    let code = match result {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => report(&e),
    };
    match crate::console::stdout_error() {
        Some(e) if code < exit_codes::INCOMPLETE => report(&CommandError::Stdout(e)),
        _ => code,
    }
}

/// Prints `e` as `continuity: …` and returns its exit code.
pub fn report(e: &CommandError) -> u8 {
    crate::console::errln(&format!("continuity: {e}"));
    e.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_documented_code() {
        assert_eq!(CommandError::usage("x").exit_code(), exit_codes::USAGE);
        assert_eq!(
            CommandError::incomplete("x").exit_code(),
            exit_codes::INCOMPLETE
        );
        let busy = || {
            StackError::Lock(crate::folder_lock::LockError::Busy {
                dir: "d".into(),
                lock: "d/stack.lock".into(),
                holder: "pid 1 (continuity stack up)".into(),
            })
        };
        assert_eq!(
            CommandError::stack_folder(busy()).exit_code(),
            exit_codes::USAGE
        );
        assert_eq!(
            CommandError::from(busy()).exit_code(),
            exit_codes::INCOMPLETE
        );
        let unreachable = crate::runner::RunError::Unreachable {
            url: "http://127.0.0.1:9/v1/health".into(),
            cause: "connection refused".into(),
        };
        assert_eq!(
            CommandError::from(unreachable).exit_code(),
            exit_codes::INCOMPLETE
        );
        let shards = crate::report::merge::MergeError("two shards hold one cell".into());
        assert_eq!(CommandError::from(shards).exit_code(), exit_codes::USAGE);
        assert_eq!(Outcome::Passed.exit_code(), exit_codes::OK);
        assert_eq!(Outcome::failed_if(true).exit_code(), exit_codes::FAILED);
        assert_eq!(Outcome::Interrupted.exit_code(), exit_codes::INCOMPLETE);
        assert_eq!(Outcome::Killed.exit_code(), exit_codes::KILLED);
    }

    #[test]
    fn the_message_is_the_cause_itself() {
        let e = CommandError::from(StackError::NotInstalled("nginx is not installed".into()));
        assert_eq!(e.to_string(), "nginx is not installed");
    }
}
