//! The replay text a resumed session prepends to its next prompt, byte for
//! byte as `buildReplayText` in `sandbox-agent@0.4.2` builds it.

use crate::persist::SessionEvent;
use serde_json::{Map, Value};

/// The first line of every replay text.
pub const REPLAY_PREFIX: &str = "Previous session history is replayed below as JSON-RPC envelopes. Use it as context before responding to the latest user prompt.\n";

/// Builds the replay text from the newest events, or `None` when there are none.
///
/// Lengths are counted in UTF-16 code units, as JavaScript's `String.length`
/// does, so truncation falls where the SDK's does for any text. Two JSON
/// details differ from `JSON.stringify` and never occur in ACP envelopes:
/// JavaScript prints integer-like object keys first, and `1.0` as `1`.
pub(crate) fn build_replay_text(events: &[SessionEvent], max_chars: usize) -> Option<String> {
    if events.is_empty() {
        return None;
    }
    let mut text = String::from(REPLAY_PREFIX);
    let mut length = js_length(&text);
    for event in events {
        let mut line = Map::new();
        line.insert("createdAt".into(), Value::from(event.created_at));
        line.insert("sender".into(), Value::from(event.sender.as_str()));
        line.insert("payload".into(), event.payload.clone());
        let line = Value::Object(line).to_string();
        let line_length = js_length(&line);
        if length + line_length + 1 > max_chars {
            text.push_str("\n[history truncated]");
            break;
        }
        text.push_str(&line);
        text.push('\n');
        length += line_length + 1;
    }
    Some(text)
}

fn js_length(text: &str) -> usize {
    text.encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Fixture {
        sdk_version: String,
        cases: Vec<Case>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Case {
        name: String,
        max_chars: usize,
        events: Vec<SessionEvent>,
        expected: Option<String>,
    }

    /// Cases produced by running the published SDK's own `buildReplayText`
    /// (see `tests/fixtures/replay/generate.mjs`).
    #[test]
    fn matches_the_sdk_byte_for_byte() {
        let fixture: Fixture =
            serde_json::from_str(include_str!("../../tests/fixtures/replay/cases.json")).unwrap();
        assert_eq!(fixture.sdk_version, "0.4.2");
        assert!(fixture.cases.len() >= 8, "fixture lost its cases");
        for case in fixture.cases {
            let actual = build_replay_text(&case.events, case.max_chars);
            assert_eq!(actual, case.expected, "case {}", case.name);
        }
    }
}
