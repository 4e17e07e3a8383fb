//! The terminal steps: attach a process's terminal WebSocket, send a line,
//! expect output, reattach after a restart (recording the old socket's fate
//! and any replayed scrollback); and a terminal failure as a signature.

use super::sandbox_steps::TerminalEntry;
use super::{RunningCell, StepFailure, StepResult};
use crate::client::{Terminal, TerminalError};
use crate::diagnose;
use crate::report::detail::{
    Detail, TerminalAttachDetail, TerminalExpectDetail, TerminalReattachDetail, TerminalSendDetail,
};
use crate::report::{Signature, SignatureKind};
use crate::trace::event::{self, Event};
use std::time::{Duration, Instant};

/// The longest a fresh attach watches for replayed output (scrollback),
/// when neither the first line sent nor the server's answer to a ping ends
/// the watch sooner.
const SCROLLBACK_WAIT: Duration = Duration::from_millis(300);
/// Output silence (since the last output) that counts as "nothing more
/// under way" before a reattach, and its bound.
const QUIET_GAP: Duration = Duration::from_millis(150);
const QUIET_BOUND: Duration = Duration::from_secs(1);

impl RunningCell<'_> {
    fn terminal_failure(&self, error: &TerminalError) -> StepFailure {
        StepFailure::new(terminal_signature(error, self.settings.token.as_ref()))
    }

    fn entry(&self, label: &str) -> Result<&TerminalEntry, StepFailure> {
        self.sandbox.terminals.get(label).ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("terminal `{label}` is not attached (its attach failed)"),
            ))
        })
    }

    /// `terminal_attach`: opens the process's terminal WebSocket as `terminal`.
    pub(super) async fn terminal_attach(
        &mut self,
        client: &str,
        process: &str,
        terminal: &str,
    ) -> StepResult {
        let id = self.process_id(process)?;
        let attached = self
            .sandbox_client(client)?
            .attach_terminal(&id)
            .await
            .map_err(|e| self.terminal_failure(&e))?;
        attached
            .wait_ready()
            .await
            .map_err(|e| self.terminal_failure(&e))?;
        let detail = TerminalAttachDetail {
            process_id: id,
            ready: true,
        };
        self.sandbox.terminals.insert(
            terminal.to_string(),
            TerminalEntry {
                terminal: attached,
                mark: 0,
                sent: Vec::new(),
            },
        );
        Ok(detail.to_map())
    }

    /// `terminal_send`: types a line into `terminal`.
    pub(super) async fn terminal_send(&mut self, terminal: &str, text: &str) -> StepResult {
        // Recorded before sending: a `terminal_expect` after a failed
        // send waits for this line, never for an older echo.
        let entry = self.sandbox.terminals.get_mut(terminal).ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("terminal `{terminal}` is not attached (its attach failed)"),
            ))
        })?;
        entry.mark = entry.terminal.mark();
        entry.sent.push(text.to_string());
        let entry = self.entry(terminal)?;
        entry
            .terminal
            .send_line(text)
            .await
            .map_err(|e| self.terminal_failure(&e))?;
        Ok(TerminalSendDetail {
            bytes: text.len() + 1,
        }
        .to_map())
    }

    /// `terminal_expect`: waits for `text` (default: the line last sent).
    pub(super) async fn terminal_expect(
        &mut self,
        terminal: &str,
        text: Option<&str>,
    ) -> StepResult {
        let entry = self.entry(terminal)?;
        let Some(wanted) = text
            .map(str::to_string)
            .or_else(|| entry.sent.last().cloned())
        else {
            return Err(StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("nothing was sent on terminal `{terminal}` to expect back"),
            )));
        };
        let seen = entry
            .terminal
            .expect(&wanted, entry.mark)
            .await
            .map_err(|e| {
                self.terminal_failure(&e)
                    .with("output", entry.terminal.output_since(entry.mark))
            })?;
        Ok(TerminalExpectDetail {
            expected: wanted,
            bytes_seen: seen,
        }
        .to_map())
    }

    /// `terminal_reattach`: records the old socket's end, attaches a new one.
    pub(super) async fn terminal_reattach(&mut self, client: &str, terminal: &str) -> StepResult {
        let entry = self.entry(terminal)?;
        let process_id = entry.terminal.process_id().to_string();
        let mut detail = old_socket(&entry.terminal);
        // Let output already under way land before the new attach, so
        // only a replay can bring the first line to the new socket; a
        // closed socket has nothing under way, and output of a later line
        // after the first one landed cannot pass for it.
        let trace = self.settings.trace.clone();
        if entry.terminal.closed().is_none() && first_line_may_be_under_way(entry) {
            let quiet_from = Instant::now();
            entry.terminal.quiet_for(QUIET_GAP, QUIET_BOUND).await;
            observation_window(&trace, "output quiet on the old socket", quiet_from);
        }
        entry.terminal.close().await;
        let fresh = self
            .sandbox_client(client)?
            .attach_terminal(&process_id)
            .await
            .map_err(|e| self.terminal_failure(&e).with_detail(&detail))?;
        fresh
            .wait_ready()
            .await
            .map_err(|e| self.terminal_failure(&e).with_detail(&detail))?;
        let first_sent = entry.sent.first().cloned();
        let replay_from = Instant::now();
        let (kept, ended) = watch_for_replay(&fresh, first_sent.as_deref()).await;
        observation_window(
            &trace,
            &format!("a replay of earlier output (until {})", ended.says()),
            replay_from,
        );
        let replayed = fresh.output_since(0);
        detail.scrollback_bytes = Some(replayed.len());
        detail.scrollback_kept = Some(kept);
        detail.scrollback_watch_ended = Some(ended.key().into());
        let entry = self.sandbox.terminals.get_mut(terminal).expect("checked");
        entry.terminal = fresh;
        entry.mark = entry.terminal.mark();
        Ok(detail.to_map())
    }
}

/// Whether output still under way on the old socket could carry the first
/// line's text, and so pass for a replay on a new socket: unless that text
/// already came back on it, a later line (which does not contain it) was
/// sent, and output arrived after that line (the terminal is past the
/// first: a pty's output comes in order).
fn first_line_may_be_under_way(entry: &TerminalEntry) -> bool {
    under_way(
        &entry.sent,
        &entry.terminal.output_since(0),
        entry.terminal.mark() > entry.mark,
    )
}

/// [`first_line_may_be_under_way`] of the lines `sent`, the old socket's
/// `output`, and whether any came after the last line was sent.
fn under_way(sent: &[String], output: &str, output_after_last: bool) -> bool {
    let Some((first, later)) = sent.split_first() else {
        return false;
    };
    let landed = output.contains(first.as_str());
    let later_differ = !later.is_empty() && !later.iter().any(|l| l.contains(first.as_str()));
    !(landed && later_differ && output_after_last)
}

/// What ended a reattach's watch for a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchEnd {
    FirstLine,
    Pong,
    Closed,
    Bound,
}

impl WatchEnd {
    /// Its value of `scrollbackWatchEnded`.
    fn key(self) -> &'static str {
        match self {
            WatchEnd::FirstLine => "firstLine",
            WatchEnd::Pong => "pong",
            WatchEnd::Closed => "closed",
            WatchEnd::Bound => "bound",
        }
    }

    /// How the trace's observation window says it.
    fn says(self) -> &'static str {
        match self {
            WatchEnd::FirstLine => "the first line sent came back",
            WatchEnd::Pong => "the server answered a ping",
            WatchEnd::Closed => "the socket ended",
            WatchEnd::Bound => "its bound, unanswered",
        }
    }
}

/// Watches a fresh socket for a replay: live output of the last line may
/// still arrive on it, so only the first line ever sent proves one. The
/// watch ends on an answer when it can: that line arriving, or the server
/// answering a ping sent now (every frame it wrote on attach, a replay
/// included, came before the pong); else at the socket's end or at
/// [`SCROLLBACK_WAIT`]. Returns whether the line came and what ended it.
async fn watch_for_replay(fresh: &Terminal, first: Option<&str>) -> (bool, WatchEnd) {
    let by = tokio::time::Instant::now() + SCROLLBACK_WAIT;
    let mut changes = fresh.changes();
    let ping = fresh.ping().await;
    loop {
        if first.is_some_and(|line| fresh.output_since(0).contains(line)) {
            return (true, WatchEnd::FirstLine);
        }
        if ping.is_some_and(|n| fresh.answered(n)) {
            return (false, WatchEnd::Pong);
        }
        if fresh.closed().is_some() {
            return (false, WatchEnd::Closed);
        }
        match tokio::time::timeout_at(by, changes.changed()).await {
            Ok(Ok(())) => {}
            // The bound, or the reader gone without saying why.
            Ok(Err(_)) | Err(_) => return (false, WatchEnd::Bound),
        }
    }
}

/// A wait of the harness's own choosing, in the trace (and in the overhead):
/// how long the reattach watched for `what`.
fn observation_window(trace: &crate::trace::Trace, what: &str, from: Instant) {
    trace.emit(Event::Window(event::Window {
        what: what.into(),
        ms: crate::clock::millis(from.elapsed()),
    }));
}

fn old_socket(old: &Terminal) -> TerminalReattachDetail {
    match old.closed() {
        Some(close) => TerminalReattachDetail {
            old_socket: "closed".into(),
            old_close_code: Some(close.code),
            old_close_clean: Some(close.clean),
            old_close_reason: Some(close.reason),
            ..TerminalReattachDetail::default()
        },
        None => TerminalReattachDetail {
            old_socket: "open".into(),
            ..TerminalReattachDetail::default()
        },
    }
}

/// A terminal failure as a signature: the close code leads the message.
pub(crate) fn terminal_signature(
    error: &TerminalError,
    token: Option<&crate::secret::Secret>,
) -> Signature {
    let message = crate::secret::redact(&error.to_string(), token);
    let mut signature = diagnose::other(SignatureKind::StreamClosed, message);
    match error {
        TerminalError::Refused {
            status,
            problem_type,
            ..
        } => {
            signature.kind = SignatureKind::Http;
            signature.http_status = Some(*status);
            signature.problem_type = problem_type.clone();
        }
        TerminalError::Connect(_) => signature.kind = SignatureKind::Connect,
        TerminalError::Protocol(_) => signature.kind = SignatureKind::Protocol,
        TerminalError::Closed(_) | TerminalError::Exited(_) => {}
    }
    signature
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::CloseInfo;

    /// The quiet wait before a reattach is skipped only when the first
    /// line came back, a later different line was sent, and output came
    /// after it; any other case may still carry the first line.
    #[test]
    fn only_output_that_may_carry_the_first_line_is_waited_for() {
        let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let two = lines(&["first", "second"]);
        let out = "first\r\nfirst\r\nsecond\r\n";
        assert!(!under_way(&two, out, true));
        assert!(
            under_way(&two, out, false),
            "nothing after the last line yet"
        );
        assert!(
            under_way(&two, "second\r\n", true),
            "the first never came back"
        );
        assert!(
            under_way(&lines(&["first"]), out, true),
            "the first is the last"
        );
        let repeats = lines(&["first", "the first again"]);
        assert!(under_way(&repeats, out, true), "a later line carries it");
        assert!(!under_way(&[], "", false), "nothing sent");
    }

    #[test]
    fn terminal_failures_become_signatures_led_by_what_a_user_searches_for() {
        let refused = terminal_signature(
            &TerminalError::Refused {
                status: 401,
                problem_type: Some("token_invalid".into()),
                detail: Some("token invalid".into()),
            },
            None,
        );
        assert_eq!(
            (
                refused.kind,
                refused.http_status,
                refused.problem_type.as_deref()
            ),
            (SignatureKind::Http, Some(401), Some("token_invalid"))
        );
        assert!(refused.message.starts_with("ws upgrade refused: HTTP 401"));
        let dropped = terminal_signature(
            &TerminalError::Closed(CloseInfo {
                code: 1006,
                reason: "reset".into(),
                clean: false,
            }),
            None,
        );
        assert_eq!(dropped.kind, SignatureKind::StreamClosed);
        assert_eq!(dropped.message, "ws close 1006 (reset)");
        assert_eq!(dropped.short(), "ws close 1006", "the table shows the code");
        let bad = terminal_signature(&TerminalError::Protocol("x".into()), None);
        assert_eq!(bad.kind, SignatureKind::Protocol);
    }
}
