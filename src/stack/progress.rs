//! What a stack coming up tells the person waiting: a line per step, and
//! each install as it starts and ends, so a live view can show it moving
//! (the opencode agent is a ~185 MB download) and a plain one prints a line
//! for each. Installs run on blocking threads; [`blocking_with_notes`] hands
//! their notes over as they come rather than after the install.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// One thing a stack says while it comes up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A step begun or done (`starting Rivet Engine on …`).
    Step(String),
    /// Another continuity is installing the same thing; this one waits for it.
    WaitingForInstall { what: String },
    /// An install starts (first use only): what, and the folder it goes into.
    Installing { what: String, dir: PathBuf },
    /// That install ended, in `took`; `ok` false when it failed (its error
    /// follows as the stack's error or a skipped agent).
    Installed {
        what: String,
        ok: bool,
        took: Duration,
    },
}

impl Note {
    pub(crate) fn step(text: impl Into<String>) -> Note {
        Note::Step(text.into())
    }
}

/// The plain line for each note.
impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Step(text) => f.write_str(text),
            Note::WaitingForInstall { what } => {
                write!(f, "waiting for another install of {what} to finish")
            }
            Note::Installing { what, dir } => write!(
                f,
                "installing {what} (first use only) into {}",
                dir.display()
            ),
            Note::Installed { what, ok, took } => {
                let verb = if *ok {
                    "installed"
                } else {
                    "could not install"
                };
                write!(f, "{verb} {what} in {:.1} s", took.as_secs_f64())
            }
        }
    }
}

/// Where a stack's notes go.
pub(crate) type Progress<'a> = dyn FnMut(Note) + Send + 'a;

/// Runs `work` on tokio's blocking pool, passing each note it makes to
/// `progress` as it is made.
pub(crate) async fn blocking_with_notes<T: Send + 'static>(
    progress: &mut Progress<'_>,
    work: impl FnOnce(&mut dyn FnMut(Note)) -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let (notes, mut received) = tokio::sync::mpsc::unbounded_channel();
    let mut running = tokio::task::spawn_blocking(move || {
        work(&mut |note| {
            let _ = notes.send(note);
        })
    });
    loop {
        tokio::select! {
            Some(note) = received.recv() => progress(note),
            done = &mut running => {
                while let Ok(note) = received.try_recv() {
                    progress(note);
                }
                return done;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn notes_arrive_while_the_work_still_runs() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
        let mut started_tx = Some(started_tx);
        let log = seen.clone();
        let mut sink = move |note: Note| {
            log.lock().unwrap().push(note.to_string());
            if let Some(tx) = started_tx.take() {
                let _ = tx.send(());
            }
        };
        let work = blocking_with_notes(&mut sink, move |note| {
            note(Note::step("first"));
            // Blocks until the test has seen the first note: it must come before the end.
            wait.recv().unwrap();
            note(Note::Installed {
                what: "x@1.0.0".into(),
                ok: true,
                took: Duration::from_millis(1500),
            });
            7
        });
        let checker = async {
            started.await.unwrap();
            assert_eq!(*seen.lock().unwrap(), ["first"]);
            release.send(()).unwrap();
        };
        let (result, ()) = tokio::join!(work, checker);
        assert_eq!(result.unwrap(), 7);
        assert_eq!(
            *seen.lock().unwrap(),
            ["first", "installed x@1.0.0 in 1.5 s"]
        );
    }
}
