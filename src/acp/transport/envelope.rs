//! Envelope and body helpers of the transport: results and typed RPC errors,
//! response ids, the bounded de-duplication set, bounded body reads.

use super::{RpcResponse, MAX_ENVELOPE_BYTES, SEEN_RESPONSE_IDS};
use crate::acp::error::AcpError;
use futures_util::StreamExt;
use serde_json::{Map, Value};
use std::collections::{HashSet, VecDeque};

/// Turns a response envelope into its result or a typed RPC error.
pub(super) fn rpc_result(id: String, envelope: Value) -> Result<RpcResponse, AcpError> {
    if let Some(error) = envelope.get("error") {
        let code = error.get("code").and_then(Value::as_i64);
        let message = error.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(AcpError::Rpc {
                code,
                message: message.to_string(),
                data: error.get("data").cloned(),
            }),
            _ => Err(AcpError::Malformed {
                detail: format!("error member without integer code and string message: {error}"),
            }),
        };
    }
    match envelope.get("result") {
        Some(result) => Ok(RpcResponse {
            id,
            result: result.clone(),
        }),
        None => Err(AcpError::Malformed {
            detail: "response has neither result nor error".into(),
        }),
    }
}

/// The id of a response envelope (no `method`, has `result` or `error`), as a string.
pub(super) fn response_id(envelope: &Map<String, Value>) -> Option<String> {
    if envelope.contains_key("method") {
        return None;
    }
    if !envelope.contains_key("result") && !envelope.contains_key("error") {
        return None;
    }
    match envelope.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

pub(super) fn remember(
    set: &mut HashSet<String>,
    order: &mut VecDeque<String>,
    id: String,
) -> bool {
    if !set.insert(id.clone()) {
        return false;
    }
    order.push_back(id);
    if order.len() > SEEN_RESPONSE_IDS {
        if let Some(oldest) = order.pop_front() {
            set.remove(&oldest);
        }
    }
    true
}

/// Reads a body up to [`MAX_ENVELOPE_BYTES`]; `Ok(None)` as soon as it is
/// larger (or says it will be), without reading the rest. The buffer never
/// grows past the limit, so a hostile body costs at most the limit once.
pub(crate) async fn read_bounded(
    response: reqwest::Response,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_ENVELOPE_BYTES as u64)
    {
        return Ok(None);
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        let needed = body.len() + chunk.len();
        if needed > MAX_ENVELOPE_BYTES {
            return Ok(None);
        }
        if needed > body.capacity() {
            let grown = (body.capacity() * 2).clamp(needed, MAX_ENVELOPE_BYTES);
            body.reserve_exact(grown - body.len());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// Foreign text cut for a message, redacted first (a cut secret would not be
/// recognised later).
pub(super) fn truncate(text: &str) -> String {
    const MAX: usize = 200;
    let text = &crate::secret::redact_known(text);
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// JavaScript's `encodeURIComponent`, which the SDK applies to the server id and query.
pub(super) fn urlencode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'!'
            | b'~'
            | b'*'
            | b'\''
            | b'('
            | b')' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}
