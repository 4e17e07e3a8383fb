//! [`StackError`]: why the local stack, or one of its components, could not
//! be installed, prepared or started. Each kind keeps its cause as a
//! `#[source]`, so a caller can match the kind and print the whole chain.

use crate::errors::Invalid;
use crate::targets::TargetError;
use std::path::PathBuf;

/// Why a stack step failed; the message is complete on its own.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// A file, folder or system call the stack needs: "cannot write X: …".
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    /// An io error that names its own file.
    #[error(transparent)]
    Read(std::io::Error),
    /// A file of the stack that is not what it should be.
    #[error("{}: {source}", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A file of the stack that could not be serialised.
    #[error(transparent)]
    Serialize(serde_json::Error),
    /// A program the stack runs is missing; the message says how to install it.
    #[error("{0}")]
    NotInstalled(String),
    /// A value the user gave (a version, an agent name) that cannot work.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The folder is busy (another `continuity stack` command holds its
    /// lock), or its lock could not be taken.
    #[error(transparent)]
    Lock(crate::folder_lock::LockError),
    /// A program the stack ran (npm, a health check) reported failure.
    #[error("{0}")]
    Failed(String),
    /// A component started but its target could not be prepared (not ready).
    #[error(transparent)]
    Target(Box<TargetError>),
    /// A component's process could not be started.
    #[error(transparent)]
    Process(#[from] crate::supervise::ProcessError),
    /// The session store the stack provides did not answer.
    #[error(transparent)]
    Persist(#[from] crate::persist::PersistError),
    /// An HTTP client for a health check could not be built.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// The fake model provider real agents talk to did not start.
    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),
    /// The background task that installs a component panicked or was cancelled.
    #[error("install task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// Several stacks started side by side (`--jobs`) and more than one failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<StackError>),
    /// Stacks started side by side came up with different targets: their
    /// cells would not be comparable.
    #[error("the stacks came up with different targets ({first} and {other}): cells would not be comparable")]
    Uneven { first: String, other: String },
    /// The run was cancelled (Ctrl-C) while the stack was starting.
    #[error("interrupted while the stack was starting")]
    Interrupted,
    /// An inner error with what the stack was doing: "sandbox-agent version …: …".
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<StackError>,
    },
}

impl From<TargetError> for StackError {
    fn from(e: TargetError) -> Self {
        StackError::Target(Box::new(e))
    }
}

impl StackError {
    /// For `map_err`: an io error while `doing` something ("cannot create X").
    pub fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> StackError {
        let doing = doing.into();
        move |source| StackError::Io { doing, source }
    }

    /// This error with what the stack was doing when it happened.
    pub fn context(self, context: impl Into<String>) -> StackError {
        StackError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }
}
