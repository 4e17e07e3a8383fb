//! The command probe: runs a program until it exits 0 (Postgres's
//! `pg_isready`), one attempt at a time on a beat, each bounded and killed
//! with its group when it overruns, so a probe never leaves a process.

use super::{probe_event, GaveUp, Seen};
use crate::trace::Trace;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long one run of the probe's program may take.
const ATTEMPT: Duration = Duration::from_secs(3);
/// How much of the program's output a failed attempt keeps.
const KEEP_CHARS: usize = 300;

/// `command pg_isready -h 127.0.0.1 -p 5432`: the program's file name and its arguments.
pub(super) fn describe(program: &Path, args: &[String]) -> String {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.display().to_string());
    std::iter::once(format!("command {name}"))
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) struct CommandProbe<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub interval: Duration,
    pub trace: &'a Trace,
}

impl CommandProbe<'_> {
    /// Polls until the program exits 0; only a program that cannot be
    /// started at all gives up early (waiting will not make it appear).
    pub(super) async fn poll(
        &self,
        last_error: &mut String,
        attempts: &mut u32,
    ) -> Result<(), GaveUp> {
        let mut beat = tokio::time::interval(self.interval);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let label = describe(self.program, self.args);
        loop {
            beat.tick().await;
            *attempts += 1;
            let began = Instant::now();
            let outcome = self.attempt().await;
            let seen = match &outcome {
                Ok(()) => Seen::Connected,
                Err(Failure::Unstartable(e) | Failure::Failed(e)) => Seen::Error(e),
            };
            probe_event(self.trace, *attempts, &label, began.elapsed(), seen);
            match outcome {
                Ok(()) => return Ok(()),
                Err(Failure::Unstartable(e)) => return Err(GaveUp::Unstartable(e)),
                Err(Failure::Failed(e)) => *last_error = e,
            }
        }
    }

    async fn attempt(&self) -> Result<(), Failure> {
        let child = tokio::process::Command::new(self.program)
            .args(self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                Failure::Unstartable(format!("cannot run {}: {e}", self.program.display()))
            })?;
        match tokio::time::timeout(ATTEMPT, child.wait_with_output()).await {
            // Dropping the future kills the child (kill_on_drop).
            Err(_) => Err(Failure::Failed(format!(
                "{} did not answer within {} s",
                describe(self.program, &[]),
                ATTEMPT.as_secs()
            ))),
            Ok(Err(e)) => Err(Failure::Failed(format!("waiting for the probe: {e}"))),
            Ok(Ok(out)) if out.status.success() => Ok(()),
            Ok(Ok(out)) => {
                let text = String::from_utf8_lossy(&out.stdout).to_string()
                    + &String::from_utf8_lossy(&out.stderr);
                let text: String = text.trim().chars().take(KEEP_CHARS).collect();
                Err(Failure::Failed(format!("{} ({})", text, out.status)))
            }
        }
    }
}

enum Failure {
    Unstartable(String),
    Failed(String),
}
