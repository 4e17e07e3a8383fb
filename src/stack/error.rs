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
    /// A helper program the stack runs for its output (esbuild, node,
    /// node-gyp, npm) could not run, or did not finish: `what` names it.
    #[error("{what}: {source}")]
    Helper {
        what: String,
        #[source]
        source: crate::supervise::helper::HelperError,
    },
    /// A helper program answered, but not with the JSON it should have.
    #[error("{what} answered no JSON: {source}")]
    NoJson {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// The stack's Postgres would not create the stores' database.
    #[error(
        "Postgres on 127.0.0.1:{port}: cannot create database {database}: {}",
        crate::errors::error_chain(.source)
    )]
    CreateDatabase {
        port: u16,
        database: &'static str,
        #[source]
        source: tokio_postgres::Error,
    },
    /// A real agent's npm package could not be installed: `summary` is the
    /// install error's first line and npm's error codes.
    #[error("cannot install {spec}: {summary}")]
    AgentInstall {
        spec: String,
        summary: String,
        #[source]
        source: Box<StackError>,
    },
    /// A hop's fault proxy could not start.
    #[error(transparent)]
    Proxy(#[from] crate::faults::ProxyError),
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
    pub(crate) fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> StackError {
        let doing = doing.into();
        move |source| StackError::Io { doing, source }
    }

    /// This error with what the stack was doing when it happened.
    pub(crate) fn context(self, context: impl Into<String>) -> StackError {
        StackError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each error built from another keeps it as its `#[source]`, and its
    //! message is, word for word, the one its `format!` used to build.
    use super::*;
    use crate::errors::error_chain;
    use crate::supervise::helper::HelperError;
    use std::error::Error as _;
    use std::time::Duration;

    /// The message is complete on its own: the whole chain adds nothing.
    fn says_it_all(e: &StackError) -> String {
        assert_eq!(error_chain(e), e.to_string());
        e.to_string()
    }

    #[test]
    fn a_helper_that_did_not_run_is_its_source() {
        let cause = || HelperError::TimedOut(Duration::from_secs(60));
        let e = StackError::Helper {
            what: "node-gyp".into(),
            source: cause(),
        };
        assert_eq!(says_it_all(&e), format!("node-gyp: {}", cause()));
        assert_eq!(
            e.to_string(),
            "node-gyp: it did not finish within 60 s (killed with everything it started)"
        );
        let source = e.source().and_then(|s| s.downcast_ref::<HelperError>());
        assert!(matches!(source, Some(HelperError::TimedOut(_))), "{e:?}");
    }

    #[test]
    fn an_answer_that_is_no_json_is_its_source() {
        let cause = || serde_json::from_slice::<serde_json::Value>(b"node: oops").unwrap_err();
        let dir = std::path::Path::new("/cache/sdk");
        let e = StackError::NoJson {
            what: format!("node's check of the SDK in {}", dir.display()),
            source: cause(),
        };
        assert_eq!(
            says_it_all(&e),
            format!(
                "node's check of the SDK in {} answered no JSON: {}",
                dir.display(),
                cause()
            )
        );
        assert!(e.source().unwrap().is::<serde_json::Error>());
    }

    #[tokio::test]
    async fn a_database_postgres_would_not_create_keeps_the_driver_s_error() {
        // Nothing listens on port 1: the driver's own error, with its cause.
        let cause = tokio_postgres::connect(
            "host=127.0.0.1 port=1 user=continuity dbname=postgres connect_timeout=5",
            tokio_postgres::NoTls,
        )
        .await
        .err()
        .expect("nothing listens on 127.0.0.1:1");
        let before = format!(
            "Postgres on 127.0.0.1:{}: cannot create database {}: {}",
            1,
            crate::stack::postgres::DATABASE,
            error_chain(&cause)
        );
        let e = StackError::CreateDatabase {
            port: 1,
            database: crate::stack::postgres::DATABASE,
            source: cause,
        };
        assert_eq!(says_it_all(&e), before);
        assert!(e.source().unwrap().is::<tokio_postgres::Error>());
    }

    #[test]
    fn an_agent_install_says_its_summary_and_keeps_the_whole_error() {
        let npm = "npm install in /cache/npm/x failed (exit status: 1):\nnpm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope";
        let e = StackError::AgentInstall {
            spec: "nope@1.0.0".into(),
            summary: "npm install in /cache/npm/x failed (exit status: 1): npm error code E404"
                .into(),
            source: Box::new(StackError::Failed(npm.into())),
        };
        assert_eq!(
            e.to_string(),
            "cannot install nope@1.0.0: npm install in /cache/npm/x failed (exit status: 1): npm error code E404"
        );
        assert_eq!(e.source().map(ToString::to_string).as_deref(), Some(npm));
    }

    #[test]
    fn a_proxy_that_would_not_start_is_the_proxy_s_error() {
        let error = crate::faults::FaultProxy::start(
            crate::faults::LocalHop::Agent.into(),
            ([10, 0, 0, 1], 0).into(),
            ([127, 0, 0, 1], 1).into(),
        )
        .err()
        .expect("a proxy off loopback is refused");
        let before = error.to_string();
        let e = StackError::from(error);
        assert_eq!(says_it_all(&e), before);
        assert!(matches!(
            e,
            StackError::Proxy(crate::faults::ProxyError::NotLoopback { .. })
        ));
    }
}
