//! Which process a fault acts on, and the proof that it is the stack's own
//! before any signal: never a name, never a bare pid. A process is found
//! either by the record its stack keeps of what it started (`stack.json`:
//! pid and start time, for sandbox-agent, the Rivet Engine and runner), or
//! by the pid file the program writes itself (nginx's master, Postgres's
//! postmaster). Either way it is pinned with a pidfd and then proven ours:
//! its start time is the recorded one, or it carries the run's owner tag,
//! or it runs in the component's folder. A process already gone, or a pid
//! file naming another process, is an error: the fault cannot take.

use crate::supervise::owner::{self, Pinned};
use std::path::PathBuf;
use std::sync::Arc;

/// A stack's record of a component's process: its pid and its start time
/// (clock ticks since boot), as the process was started.
pub(crate) trait Recorded: Send + Sync {
    /// The process recorded now, if one is.
    fn recorded(&self) -> Option<(u32, Option<u64>)>;
}

/// Where a fault finds its process.
#[derive(Clone)]
pub(crate) enum ProcessOf {
    /// What the stack recorded when it started the process.
    Recorded {
        /// For messages: `the sandbox-agent server (stack.json's agent)`.
        what: String,
        record: Arc<dyn Recorded>,
    },
    /// The pid in a file the program writes, proven ours by the run's
    /// owner tag in its environment or its working folder inside `folder`.
    PidFile {
        what: String,
        path: PathBuf,
        folder: PathBuf,
        owner: Option<String>,
    },
}

/// Why a fault found no process of ours to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotOurs {
    #[error("{what}: no process is recorded (it is not running)")]
    NoRecord { what: String },
    #[error("{what}: pid file {}: {reason}", .path.display())]
    PidFile {
        what: String,
        path: PathBuf,
        reason: String,
    },
    #[error("{what}: process {pid} is gone")]
    Gone { what: String, pid: i32 },
    #[error("{what}: process {pid} is not the one the stack started ({why})")]
    Foreign { what: String, pid: i32, why: String },
}

impl ProcessOf {
    /// For messages and `continuity list`.
    pub(crate) fn what(&self) -> &str {
        match self {
            ProcessOf::Recorded { what, .. } | ProcessOf::PidFile { what, .. } => what,
        }
    }

    /// The process, pinned and proven ours.
    pub(crate) fn proven(&self) -> Result<Pinned, NotOurs> {
        match self {
            ProcessOf::Recorded { what, record } => {
                let (pid, started) = record
                    .recorded()
                    .ok_or_else(|| NotOurs::NoRecord { what: what.clone() })?;
                let pid = pid as i32;
                let pinned = pin(what, pid)?;
                let Some(started) = started else {
                    return Err(NotOurs::Foreign {
                        what: what.clone(),
                        pid,
                        why: "no start time was recorded to prove it".into(),
                    });
                };
                match pinned.started_at(started) {
                    true => Ok(pinned),
                    false => Err(NotOurs::Foreign {
                        what: what.clone(),
                        pid,
                        why: format!(
                            "it started at tick {}, the recorded process at tick {started}",
                            owner::start_time(pid).map_or("?".into(), |t| t.to_string())
                        ),
                    }),
                }
            }
            ProcessOf::PidFile {
                what,
                path,
                folder,
                owner: tag,
            } => {
                let pid = pid_in(path).map_err(|e| NotOurs::PidFile {
                    what: what.clone(),
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let pinned = pin(what, pid)?;
                let tagged = tag.as_deref().is_some_and(|tag| pinned.owned_by(tag));
                match tagged || pinned.runs_in(folder) {
                    true => Ok(pinned),
                    false => Err(NotOurs::Foreign {
                        what: what.clone(),
                        pid,
                        why: format!(
                            "named in {}, it carries no owner tag of this run and runs outside {}",
                            path.display(),
                            folder.display()
                        ),
                    }),
                }
            }
        }
    }
}

/// Why a pid file names no process.
#[derive(Debug, thiserror::Error)]
enum NoPid {
    #[error("{0}")]
    Unreadable(#[from] std::io::Error),
    #[error("expected a process id, found {found:?}")]
    NotAPid { found: String },
}

/// The pid a pid file holds (one positive number, blanks around it).
fn pid_in(path: &std::path::Path) -> Result<i32, NoPid> {
    let text = std::fs::read_to_string(path)?;
    match text.trim().parse::<i32>() {
        Ok(pid) if pid > 0 => Ok(pid),
        _ => Err(NoPid::NotAPid {
            found: text.trim().chars().take(40).collect(),
        }),
    }
}

/// Pins `pid`, or says it is gone.
fn pin(what: &str, pid: i32) -> Result<Pinned, NotOurs> {
    let gone = || NotOurs::Gone {
        what: what.to_string(),
        pid,
    };
    let pinned = Pinned::open(pid).ok_or_else(gone)?;
    match pinned.running() {
        true => Ok(pinned),
        false => Err(gone()),
    }
}

impl PartialEq for ProcessOf {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ProcessOf::Recorded { record: a, .. }, ProcessOf::Recorded { record: b, .. }) => {
                Arc::ptr_eq(a, b)
            }
            (
                ProcessOf::PidFile {
                    path: a,
                    folder: fa,
                    owner: oa,
                    ..
                },
                ProcessOf::PidFile {
                    path: b,
                    folder: fb,
                    owner: ob,
                    ..
                },
            ) => a == b && fa == fb && oa == ob,
            _ => false,
        }
    }
}

impl std::fmt::Debug for ProcessOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.what())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A record that names whatever the test says.
    pub(crate) struct Fixed(pub Option<(u32, Option<u64>)>);

    impl Recorded for Fixed {
        fn recorded(&self) -> Option<(u32, Option<u64>)> {
            self.0
        }
    }

    /// A `sleep` leading its own group, killed when dropped.
    pub(crate) struct Sleeper(pub std::process::Child);

    impl Sleeper {
        pub(crate) fn start(cwd: &std::path::Path) -> Sleeper {
            Sleeper::running(cwd, "sleep 300 & sleep 300 & wait")
        }

        /// A shell running `script` that has two children by the time it returns.
        pub(crate) fn running(cwd: &std::path::Path, script: &str) -> Sleeper {
            let child = std::process::Command::new("sh")
                .args(["-c", script])
                .current_dir(cwd)
                .process_group(0)
                .spawn()
                .unwrap();
            let pid = child.id() as i32;
            let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while crate::supervise::group_members(pid).len() < 3 {
                assert!(
                    std::time::Instant::now() < until,
                    "the sleepers never started"
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Sleeper(child)
        }

        pub(crate) fn pid(&self) -> i32 {
            self.0.id() as i32
        }

        pub(crate) fn recorded(&self) -> ProcessOf {
            let started = owner::start_time(self.pid());
            ProcessOf::Recorded {
                what: "the sleeper".into(),
                record: Arc::new(Fixed(Some((self.pid() as u32, started)))),
            }
        }
    }

    impl Drop for Sleeper {
        fn drop(&mut self) {
            crate::supervise::kill_group(self.pid());
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_recorded_process_is_proven_by_its_start_time() {
        let dir = tempfile::tempdir().unwrap();
        let sleeper = Sleeper::start(dir.path());
        assert_eq!(sleeper.recorded().proven().unwrap().pid(), sleeper.pid());
        // The same pid with another start time: the number names another process.
        let other = ProcessOf::Recorded {
            what: "the sleeper".into(),
            record: Arc::new(Fixed(Some((sleeper.pid() as u32, Some(1))))),
        };
        let e = other.proven().err().unwrap();
        assert!(matches!(e, NotOurs::Foreign { .. }), "{e}");
        let none = ProcessOf::Recorded {
            what: "the sleeper".into(),
            record: Arc::new(Fixed(None)),
        };
        assert!(matches!(none.proven(), Err(NotOurs::NoRecord { .. })));
    }

    #[test]
    fn a_pid_file_must_name_a_live_process_of_ours() {
        let dir = tempfile::tempdir().unwrap();
        let sleeper = Sleeper::start(dir.path());
        let path = dir.path().join("x.pid");
        let of = ProcessOf::PidFile {
            what: "x".into(),
            path: path.clone(),
            folder: dir.path().to_path_buf(),
            owner: None,
        };
        assert!(matches!(of.proven(), Err(NotOurs::PidFile { .. })));
        std::fs::write(&path, format!("{}\n", sleeper.pid())).unwrap();
        assert_eq!(of.proven().unwrap().pid(), sleeper.pid());
        // A process of someone else's: this test's own parent runs elsewhere.
        let elsewhere = tempfile::tempdir().unwrap();
        let foreign = Sleeper::start(elsewhere.path());
        std::fs::write(&path, format!("{}\n", foreign.pid())).unwrap();
        let e = of.proven().err().unwrap();
        assert!(matches!(e, NotOurs::Foreign { .. }), "{e}");
        assert!(e.to_string().contains("runs outside"), "{e}");
        // Gone.
        let pid = sleeper.pid();
        drop(sleeper);
        std::fs::write(&path, format!("{pid}\n")).unwrap();
        assert!(matches!(of.proven(), Err(NotOurs::Gone { .. })));
    }
}
