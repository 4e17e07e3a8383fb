//! What names one JSON-RPC envelope wherever it is seen: its digest, and
//! the session and ACP server id it belongs to.
//!
//! The same envelope passes through the scripted agent, the fault proxy on
//! each hop, the client, the application and the store. Each of those
//! records its digest rather than its body, so the checker (`continuity
//! check`) can follow an event from hop to hop without any trace keeping
//! a body. The digest is FNV-1a (64 bits) of the envelope's canonical JSON:
//! object keys sorted, no whitespace, an integral number written as an
//! integer. `stack/rivet/ledger.mjs` computes the same digest for the
//! hosted SDK and the browser page (a test holds the two together); it is
//! an identity, not a safeguard against anyone forging one.

use serde_json::Value;
use std::fmt::Write as _;

/// The envelope's digest: 16 lowercase hex digits.
pub fn envelope(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// The digest of an SSE event's `data`, when it is JSON.
pub fn of_data(data: &str) -> Option<String> {
    serde_json::from_str::<Value>(data)
        .ok()
        .map(|v| envelope(&v))
}

/// The agent's session an envelope belongs to: `params.sessionId` (a
/// request or a notification) or `result.sessionId` (`session/new`'s answer).
pub fn session_of(value: &Value) -> Option<String> {
    let id = value
        .get("params")
        .and_then(|p| p.get("sessionId"))
        .or_else(|| value.get("result").and_then(|r| r.get("sessionId")))?;
    id.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

/// The ACP server id in a URL or path: what follows `/v1/acp/`, up to a
/// `/`, `?` or `#` (`sdk-mock-…` in `/sandbox/v1/acp/sdk-mock-…?agent=mock`).
pub fn server_id_of(url: &str) -> Option<String> {
    let (_, tail) = url.split_once("/v1/acp/")?;
    let id = tail.split(['/', '?', '#']).next().unwrap_or_default();
    (!id.is_empty()).then(|| id.to_string())
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

/// The canonical text: keys sorted by their UTF-16 code units (as
/// JavaScript's default sort orders them), strings escaped as
/// `JSON.stringify` escapes them.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => number(n, out),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(key, out);
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// An integer as an integer, whichever way it was written (`1.0` is `1`,
/// as in JavaScript); any other number as Rust's shortest form.
fn number(n: &serde_json::Number, out: &mut String) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
            let _ = write!(out, "{}", f as i64);
        } else {
            let _ = write!(out, "{f}");
        }
    }
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_spacing_do_not_change_the_digest() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2], "x": "t"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":"t","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(envelope(&a), envelope(&b));
        assert_ne!(
            envelope(&a),
            envelope(&json!({"b": 2, "a": {"x": "t", "y": [1, 2]}}))
        );
        assert_eq!(envelope(&a).len(), 16);
    }

    #[test]
    fn the_canonical_text_is_what_json_stringify_writes_of_sorted_keys() {
        let value: Value =
            serde_json::from_str(r#"{"z": 1.0, "a": "q\"\\\n\u0001é", "m": [true, null, -2.5]}"#)
                .unwrap();
        let mut text = String::new();
        canonical(&value, &mut text);
        assert_eq!(text, r#"{"a":"q\"\\\n\u0001é","m":[true,null,-2.5],"z":1}"#);
    }

    #[test]
    fn sessions_and_server_ids_are_read_where_acp_puts_them() {
        let update = json!({"method": "session/update", "params": {"sessionId": "agent-1"}});
        let created = json!({"id": 1, "result": {"sessionId": "agent-2"}});
        assert_eq!(session_of(&update).as_deref(), Some("agent-1"));
        assert_eq!(session_of(&created).as_deref(), Some("agent-2"));
        assert_eq!(session_of(&json!({"id": 1, "result": {}})), None);
        assert_eq!(
            server_id_of("/sandbox/v1/acp/sdk-mock-1?agent=mock").as_deref(),
            Some("sdk-mock-1")
        );
        assert_eq!(server_id_of("http://h/v1/acp/x").as_deref(), Some("x"));
        assert_eq!(server_id_of("/v1/health"), None);
    }
}
