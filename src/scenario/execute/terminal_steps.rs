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

/// How long a fresh attach waits for replayed output (scrollback) before the
/// next step, when the first line sent has not come back sooner.
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
        // only a replay can bring old lines to the new socket; a closed
        // socket has nothing under way.
        let trace = self.settings.trace.clone();
        if entry.terminal.closed().is_none() {
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
        // Live output of the last line may still arrive on the new
        // socket; only the first line ever sent proves a replay. Once it
        // is there the answer is known; only its absence needs the whole wait.
        let first_sent = entry.sent.first().cloned();
        let replay_from = Instant::now();
        let replay_by = replay_from + SCROLLBACK_WAIT;
        let kept = loop {
            let kept = first_sent
                .as_ref()
                .is_some_and(|first| fresh.output_since(0).contains(first.as_str()));
            if kept || Instant::now() >= replay_by {
                break kept;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        observation_window(&trace, "a replay of earlier output", replay_from);
        let replayed = fresh.output_since(0);
        detail.scrollback_bytes = Some(replayed.len());
        detail.scrollback_kept = Some(kept);
        let entry = self.sandbox.terminals.get_mut(terminal).expect("checked");
        entry.terminal = fresh;
        entry.mark = entry.terminal.mark();
        Ok(detail.to_map())
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
