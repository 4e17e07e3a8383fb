//! A streamed turn's chunks: how the history's copies compare with the
//! scripted agent's record of what it sent (`CONTINUITY_AGENT_SENT`), as
//! counts of chunks sent, stored, duplicated, missing and out of order.

use crate::report::detail::ChunkDetail;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// `i` of a `"{tag} chunk i/K"` agent_message_chunk.
pub(super) fn chunk_seq(payload: &Value, tag: &str) -> Option<u32> {
    let update = payload.get("params")?.get("update")?;
    if update.get("sessionUpdate")?.as_str()? != "agent_message_chunk" {
        return None;
    }
    let text = update.get("content")?.get("text")?.as_str()?;
    let rest = text.strip_prefix(tag)?.strip_prefix(" chunk ")?;
    rest.split('/').next()?.parse().ok()
}

/// How many chunks the agent's record says it sent in the sessions of
/// `history` (stored events, each with its JSON-RPC `payload`) that no
/// stored event holds: chunks a client dropped before any write reached
/// its store (a page reloaded while the SDK still queued them), which a
/// tally of the store's own writes cannot see. `None` when it cannot tell:
/// an event without its payload, or no readable record (counting those as
/// "nothing missing" would be a check that cannot fail).
pub(super) fn never_stored(history: &[Value], sent_log: &Path) -> Option<usize> {
    if history.iter().any(|e| e.get("payload").is_none()) {
        return None;
    }
    let sessions: BTreeSet<&str> = history
        .iter()
        .filter_map(|e| e.get("payload")?.get("params")?.get("sessionId")?.as_str())
        .collect();
    let stored: BTreeSet<(String, &str, u64)> = history
        .iter()
        .filter_map(|e| {
            let params = e.get("payload")?.get("params")?;
            let session = params.get("sessionId")?.as_str()?;
            let update = params.get("update")?;
            if update.get("sessionUpdate")?.as_str()? != "agent_message_chunk" {
                return None;
            }
            let text = update.get("content")?.get("text")?.as_str()?;
            let (tag, rest) = text.rsplit_once(" chunk ")?;
            let seq = rest.split('/').next()?.parse().ok()?;
            Some((tag.to_string(), session, seq))
        })
        .collect();
    let text = std::fs::read_to_string(sent_log).ok()?;
    let sent: BTreeSet<(String, String, u64)> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let session = v.get("session")?.as_str()?;
            sessions.contains(session).then(|| {
                Some((
                    v.get("turn")?.as_str()?.to_string(),
                    session.to_string(),
                    v.get("seq")?.as_u64()?,
                ))
            })?
        })
        .collect();
    let missing = sent
        .iter()
        .filter(|(tag, session, seq)| !stored.contains(&(tag.clone(), session.as_str(), *seq)))
        .count();
    Some(missing)
}

/// Waits until the agent's record shows the turn's last chunk, or stops
/// growing for [`QUIET`] (the agent died or was cancelled): chunks the agent
/// sends after a cut count as sent even when nobody reads them.
pub(super) async fn agent_turn_over(log: &Path, tag: &str) {
    let mut last = (0, Instant::now());
    loop {
        let (count, of, sender) = sent_progress(log, tag);
        if of.is_some_and(|of| count >= of) {
            return;
        }
        // The process that sent its chunks is gone (killed, its server
        // restarted): no chunk can come any more, nothing to wait for.
        if sender.is_some_and(|pid| !alive(pid)) {
            return;
        }
        if count != last.0 {
            last = (count, Instant::now());
        } else if last.1.elapsed() >= QUIET {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How long a turn's sent record may stand still before it counts as over.
const QUIET: Duration = Duration::from_secs(1);

/// Whether process `pid` still runs (a zombie does not: it sends nothing).
fn alive(pid: i32) -> bool {
    crate::supervise::owner::state_of(pid).is_some_and(|state| !matches!(state, 'Z' | 'X'))
}

/// How many chunks of `tag` the record holds, and of how many (all of
/// them once the agent recorded the turn's end), and the pid of the
/// process that sent the last one, when the record says.
fn sent_progress(log: &Path, tag: &str) -> (usize, Option<usize>, Option<i32>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let (ends, mine): (Vec<Value>, Vec<Value>) = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("turn").and_then(Value::as_str) == Some(tag))
        .partition(|v| v.get("ended").is_some());
    if !ends.is_empty() {
        return (mine.len(), Some(mine.len()), None);
    }
    let last = mine.last();
    let of = last
        .and_then(|v| v.get("of"))
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let pid = last
        .and_then(|v| v.get("pid"))
        .and_then(Value::as_u64)
        .and_then(|pid| i32::try_from(pid).ok());
    (mine.len(), of, pid)
}

/// The stop reason the agent's record says it answered turn `tag` with,
/// once it did: the agent's own word that it finished the turn.
pub(super) fn turn_ended(path: &Path, tag: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("turn").and_then(Value::as_str) == Some(tag))
        .find_map(|v| v.get("ended")?.as_str().map(str::to_string))
}

/// Where a turn's end stands in a list of envelopes (a history's
/// payloads, a replayed stream): its last chunk (the agent's `echo:` of
/// the prompt, which carries the turn's tag) and the answer after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct TurnEnd {
    pub last_chunk: bool,
    /// The `stopReason` of the first answer after that chunk.
    pub result: Option<String>,
}

pub(super) fn turn_end_in(envelopes: &[Value], tag: &str) -> TurnEnd {
    let marker = format!("[[turn:{tag}]]");
    let mut end = TurnEnd::default();
    for envelope in envelopes {
        if !end.last_chunk {
            end.last_chunk = echo_text(envelope).is_some_and(|t| t.contains(&marker));
            continue;
        }
        let stop = envelope.get("result").and_then(|r| r.get("stopReason"));
        if let Some(stop) = stop.and_then(Value::as_str) {
            end.result = Some(stop.to_string());
            break;
        }
    }
    end
}

/// The text of the agent's `echo: …` chunk, the last of a turn.
fn echo_text(envelope: &Value) -> Option<&str> {
    let update = envelope.get("params")?.get("update")?;
    if update.get("sessionUpdate")?.as_str()? != "agent_message_chunk" {
        return None;
    }
    let text = update.get("content")?.get("text")?.as_str()?;
    text.starts_with("echo: ").then_some(text)
}

/// The sequence numbers the agent's sent record holds for `tag`.
pub(super) fn sent_chunks(path: &Path, tag: &str) -> BTreeSet<u32> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("turn").and_then(Value::as_str) == Some(tag))
        .filter_map(|v| v.get("seq").and_then(Value::as_u64))
        .filter_map(|s| u32::try_from(s).ok())
        .collect()
}

/// The integrity figures of one turn's chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChunkFigures {
    /// What the agent's record says it sent; `None` without a record.
    sent: Option<usize>,
    stored: usize,
    duplicated: usize,
    missing: usize,
    out_of_order: usize,
}

impl ChunkFigures {
    /// `stored` in eventIndex order. The agent streams 1, 2, 3…, so every
    /// number up to the highest one sent or stored was sent.
    pub(super) fn judge(stored: &[u32], sent: Option<&BTreeSet<u32>>) -> Self {
        let distinct: BTreeSet<u32> = stored.iter().copied().collect();
        let highest = distinct
            .last()
            .copied()
            .max(sent.and_then(|s| s.last().copied()))
            .unwrap_or(0);
        ChunkFigures {
            sent: sent.map(|s| s.len().max(highest as usize)),
            stored: stored.len(),
            duplicated: stored.len() - distinct.len(),
            missing: (1..=highest).filter(|i| !distinct.contains(i)).count(),
            out_of_order: stored.windows(2).filter(|w| w[1] < w[0]).count(),
        }
    }

    pub(super) fn is_clean(&self) -> bool {
        self.duplicated == 0 && self.missing == 0 && self.out_of_order == 0
    }

    pub(super) fn detail(&self) -> ChunkDetail {
        ChunkDetail {
            chunks_sent: self.sent,
            chunks_stored: self.stored,
            chunks_duplicated: self.duplicated,
            chunks_missing: self.missing,
            chunks_out_of_order: self.out_of_order,
        }
    }

    pub(super) fn describe(&self) -> String {
        let sent = self
            .sent
            .map_or("an unknown number of".to_string(), |s| s.to_string());
        format!(
            "agent sent {sent} chunks, history holds {}: {} duplicated, {} missing, {} out of order",
            self.stored, self.duplicated, self.missing, self.out_of_order
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(text: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})
    }

    #[test]
    fn a_turns_end_is_its_tagged_echo_and_the_answer_after_it() {
        let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "end_turn"}});
        let earlier = json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}});
        let echo = chunk("echo: work [[long:3000/idle]] [[turn:t-1]]");
        let whole = [
            earlier.clone(),
            chunk("t-1 chunk 1/2"),
            echo.clone(),
            answer,
        ];
        assert_eq!(
            turn_end_in(&whole, "t-1"),
            TurnEnd {
                last_chunk: true,
                result: Some("end_turn".into())
            }
        );
        // An answer before the echo is another turn's; the echo alone is the end without its answer.
        let cut = [earlier, echo];
        assert_eq!(
            turn_end_in(&cut, "t-1"),
            TurnEnd {
                last_chunk: true,
                result: None
            }
        );
        assert_eq!(turn_end_in(&whole, "t-2"), TurnEnd::default());
    }

    #[test]
    fn chunk_figures_count_what_the_history_lost_or_doubled() {
        let sent: BTreeSet<u32> = (1..=6).collect();
        let clean = ChunkFigures::judge(&[1, 2, 3, 4, 5, 6], Some(&sent));
        assert!(clean.is_clean(), "{clean:?}");
        assert_eq!(clean.sent, Some(6));
        let cut = ChunkFigures::judge(&[1, 2, 3, 3, 5], Some(&sent));
        assert_eq!(
            (cut.duplicated, cut.missing, cut.out_of_order),
            (1, 2, 0),
            "4 and 6 missing, 3 twice"
        );
        assert_eq!(ChunkFigures::judge(&[2, 1], None).out_of_order, 1);
        assert_eq!(ChunkFigures::judge(&[2, 1], None).sent, None);
        assert!(cut
            .describe()
            .contains("agent sent 6 chunks, history holds 5"));
    }

    /// A turn cut short: once the process that sent its chunks is gone no
    /// chunk can come, and the wait for the rest ends at once (it waited
    /// the record's quiet second after every agent kill or server
    /// restart); while it runs, the wait goes on.
    #[tokio::test]
    async fn the_wait_for_a_turns_last_chunk_ends_when_its_sender_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sent.jsonl");
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        gone.wait().unwrap();
        let line = |pid: u32| {
            format!(
                "{}\n",
                json!({"turn": "t", "session": "s", "seq": 3, "of": 20, "pid": pid})
            )
        };
        std::fs::write(&log, line(gone_pid)).unwrap();
        assert_eq!(
            sent_progress(&log, "t"),
            (1, Some(20), Some(gone_pid as i32))
        );
        let cut = tokio::time::timeout(QUIET / 2, agent_turn_over(&log, "t")).await;
        assert!(cut.is_ok(), "the wait outlived its sender");
        std::fs::write(&log, line(std::process::id())).unwrap();
        let running = tokio::time::timeout(QUIET / 2, agent_turn_over(&log, "t")).await;
        assert!(running.is_err(), "its sender runs: the rest may still come");
    }

    #[test]
    fn only_the_turns_own_chunks_count() {
        let chunk = |text: &str| json!({"method": "session/update", "params": {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}});
        assert_eq!(chunk_seq(&chunk("long-x chunk 3/20"), "long-x"), Some(3));
        assert_eq!(chunk_seq(&chunk("long-xy chunk 3/20"), "long-x"), None);
        assert_eq!(chunk_seq(&chunk("echo: hi"), "long-x"), None);
    }
}
