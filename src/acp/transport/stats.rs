//! What one transport's stream and POSTs saw, kept as plain counters for a
//! mid-turn diagnosis: how often the SSE stream opened and with which
//! `Last-Event-ID` it resumed, how each stream ended, and by which path
//! (POST body or stream, and which stream) each request's answer arrived.
//! Recording never changes what the transport does.

use std::collections::VecDeque;

/// Answers and stream endings remembered (the newest ones).
const KEEP: usize = 64;

/// How a request's answer arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub id: String,
    pub method: String,
    /// On the SSE stream (else in the POST's body).
    pub via_stream: bool,
    /// Which stream it came on, counting from 1 (0 for a POST body).
    pub stream_number: u32,
    /// That stream was opened with `Last-Event-ID` (a resumed stream).
    pub resumed_stream: bool,
}

/// A snapshot of [`Transport::stats`](super::Transport::stats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// GETs of the stream that were answered 2xx.
    pub streams_opened: u32,
    /// Of those, the ones sent with `Last-Event-ID`.
    pub streams_resumed: u32,
    /// The last `Last-Event-ID` a GET sent.
    pub last_resume_id: Option<String>,
    /// GETs refused or failed (status or error; a resume names its
    /// `Last-Event-ID`), the newest last.
    pub get_failures: Vec<String>,
    /// How each stream ended: `"ended"` (cleanly) or the error, the newest last.
    pub stream_ends: Vec<String>,
    /// `message` events read from every stream.
    pub events_read: u64,
    /// The error that closed the transport (a failed POST, hostile input).
    pub closed_by: Option<String>,
    pub answers: Vec<Answer>,
}

/// The live record inside the transport's state.
#[derive(Default)]
pub(super) struct Recorder {
    pub stats: StreamStats,
    /// The stream currently read: its number and whether it resumed.
    pub current_stream: (u32, bool),
    /// Where each response id first arrived, until its request takes it.
    pub arrivals: VecDeque<(String, bool, u32, bool)>,
}

impl Recorder {
    pub(super) fn stream_opened(&mut self, resumed_with: Option<&str>) {
        self.stats.streams_opened += 1;
        if let Some(id) = resumed_with {
            self.stats.streams_resumed += 1;
            self.stats.last_resume_id = Some(id.to_string());
        }
        self.current_stream = (self.stats.streams_opened, resumed_with.is_some());
    }

    /// A GET refused or failed; a resume names the `Last-Event-ID` it tried.
    pub(super) fn get_failed(
        &mut self,
        resuming_from: Option<&str>,
        error: &dyn std::fmt::Display,
    ) {
        let why = match resuming_from {
            Some(id) => format!("resuming from Last-Event-ID {id}: {error}"),
            None => error.to_string(),
        };
        push_bounded(&mut self.stats.get_failures, why);
    }

    pub(super) fn stream_ended(&mut self, why: String) {
        push_bounded(&mut self.stats.stream_ends, why);
    }

    pub(super) fn arrived(&mut self, id: &str, from_stream: bool) {
        if self.arrivals.len() >= KEEP {
            self.arrivals.pop_front();
        }
        let (number, resumed) = if from_stream {
            self.current_stream
        } else {
            (0, false)
        };
        self.arrivals
            .push_back((id.to_string(), from_stream, number, resumed));
    }

    /// Moves a response's arrival into the answers, with its request's method.
    pub(super) fn answered(&mut self, id: &str, method: &str) {
        let Some(at) = self.arrivals.iter().position(|a| a.0 == id) else {
            return;
        };
        let Some((id, via_stream, stream_number, resumed_stream)) = self.arrivals.remove(at) else {
            return;
        };
        if self.stats.answers.len() >= KEEP {
            self.stats.answers.remove(0);
        }
        self.stats.answers.push(Answer {
            id,
            method: method.to_string(),
            via_stream,
            stream_number,
            resumed_stream,
        });
    }
}

fn push_bounded(list: &mut Vec<String>, item: String) {
    if list.len() >= KEEP {
        list.remove(0);
    }
    list.push(item);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_names_the_stream_it_came_on() {
        let mut r = Recorder::default();
        r.stream_opened(None);
        r.stream_ended("connection reset".into());
        r.get_failed(Some("40"), &"HTTP 400");
        assert_eq!(
            r.stats.get_failures,
            ["resuming from Last-Event-ID 40: HTTP 400"]
        );
        r.stream_opened(Some("41"));
        r.arrived("7", true);
        r.arrived("8", false);
        r.answered("7", "session/prompt");
        r.answered("8", "session/new");
        r.answered("9", "session/new");
        assert_eq!(r.stats.streams_resumed, 1);
        assert_eq!(r.stats.last_resume_id.as_deref(), Some("41"));
        assert_eq!(
            r.stats.answers,
            vec![
                Answer {
                    id: "7".into(),
                    method: "session/prompt".into(),
                    via_stream: true,
                    stream_number: 2,
                    resumed_stream: true
                },
                Answer {
                    id: "8".into(),
                    method: "session/new".into(),
                    via_stream: false,
                    stream_number: 0,
                    resumed_stream: false
                }
            ]
        );
    }
}
