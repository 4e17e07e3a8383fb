//! The three model APIs the real agents speak, as the fake provider answers
//! them: which API a request path names, the last user text in a request
//! body, and the streamed (SSE) or plain JSON reply for each API.

use serde_json::{json, Value};

/// A model API, chosen by the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Api {
    /// OpenAI chat completions: `POST /v1/chat/completions` (opencode).
    ChatCompletions,
    /// OpenAI Responses: `POST /v1/responses` (codex).
    Responses,
    /// Anthropic Messages: `POST /v1/messages` (Claude Code).
    Messages,
    /// Anthropic token counting: `POST /v1/messages/count_tokens`.
    CountTokens,
    /// `GET /v1/models`.
    Models,
}

impl Api {
    /// The API `method` + `path` names, if any (everything else is a 404).
    pub(crate) fn of(method: &str, path: &str) -> Option<Api> {
        match (method, path) {
            ("POST", "/v1/chat/completions") => Some(Api::ChatCompletions),
            ("POST", "/v1/responses") => Some(Api::Responses),
            ("POST", "/v1/messages") => Some(Api::Messages),
            ("POST", "/v1/messages/count_tokens") => Some(Api::CountTokens),
            ("GET", "/v1/models") => Some(Api::Models),
            _ => None,
        }
    }

    /// Whether a call of this API is a model turn (a count or a listing is not).
    pub(crate) fn is_model_call(self) -> bool {
        matches!(self, Api::ChatCompletions | Api::Responses | Api::Messages)
    }
}

/// Every user text in the request, oldest first: `messages` (chat,
/// Anthropic) or `input` (Responses). Claude Code puts `<system-reminder>`
/// blocks before the user's own words; those are not user text.
pub(crate) fn user_texts(body: &Value) -> Vec<String> {
    let items = match body.get("messages").or_else(|| body.get("input")) {
        Some(Value::String(text)) => return vec![text.clone()],
        Some(Value::Array(items)) => items,
        _ => return Vec::new(),
    };
    let mut texts = Vec::new();
    for item in items {
        if item.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        match item.get("content") {
            Some(Value::String(text)) => texts.push(text.clone()),
            Some(Value::Array(parts)) => {
                let own: Vec<&str> = parts
                    .iter()
                    .filter(|p| {
                        matches!(
                            p.get("type").and_then(Value::as_str),
                            Some("text" | "input_text")
                        )
                    })
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .filter(|t| !t.starts_with("<system-reminder>"))
                    .collect();
                if let Some(last) = own.last() {
                    texts.push(last.to_string());
                }
            }
            _ => {}
        }
    }
    texts
}

/// The deterministic reply: `FAKE-REPLY <n>: <last user text>`.
pub(crate) fn reply_text(n: u64, last_user: &str) -> String {
    let words: String = last_user.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = words.chars().take(80).collect();
    format!("FAKE-REPLY {n}: {short}")
}

/// A reply body and its content type.
pub(crate) struct Reply {
    pub content_type: &'static str,
    pub body: String,
}

fn json_reply(value: Value) -> Reply {
    Reply {
        content_type: "application/json",
        body: value.to_string(),
    }
}

fn sse_data(out: &mut String, value: &Value) {
    out.push_str("data: ");
    out.push_str(&value.to_string());
    out.push_str("\n\n");
}

fn sse_event(out: &mut String, kind: &str, mut value: Value) {
    value["type"] = json!(kind);
    out.push_str(&format!("event: {kind}\ndata: {value}\n\n"));
}

/// The answer to one call of `api` whose request was `body`.
pub(crate) fn reply(api: Api, n: u64, body: &Value, text: &str) -> Reply {
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    match api {
        Api::Models => json_reply(json!({"object": "list", "data": [
            {"id": "fake-model", "object": "model", "created": 0, "owned_by": "continuity"}]})),
        Api::CountTokens => json_reply(json!({"input_tokens": 10})),
        Api::ChatCompletions => chat(n, &model, text, stream),
        Api::Responses => responses(n, &model, text, stream),
        Api::Messages => messages(n, &model, text, stream),
    }
}

fn chat(n: u64, model: &str, text: &str, stream: bool) -> Reply {
    let id = format!("chatcmpl-fake-{n}");
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    if !stream {
        return json_reply(
            json!({"id": id, "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage}),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut out = String::new();
    sse_data(
        &mut out,
        &chunk(json!({"role": "assistant", "content": ""}), Value::Null),
    );
    // Several deltas, as a real stream has: clients must concatenate them.
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(12) {
        let piece: String = piece.iter().collect();
        sse_data(&mut out, &chunk(json!({"content": piece}), Value::Null));
    }
    sse_data(&mut out, &chunk(json!({}), json!("stop")));
    sse_data(
        &mut out,
        &json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": usage}),
    );
    out.push_str("data: [DONE]\n\n");
    Reply {
        content_type: "text/event-stream",
        body: out,
    }
}

fn responses(n: u64, model: &str, text: &str, stream: bool) -> Reply {
    let id = format!("resp_fake_{n}");
    let msg = format!("msg_fake_{n}");
    let item = json!({"id": msg, "type": "message", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let response = |status: &str, output: Value| {
        json!({"id": id, "object": "response", "created_at": 0, "status": status, "model": model,
            "output": output,
            "usage": if status == "completed" { json!({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}) } else { Value::Null }})
    };
    if !stream {
        return json_reply(response("completed", json!([item])));
    }
    let mut out = String::new();
    let mut seq = 0;
    let mut ev = |out: &mut String, kind: &str, mut value: Value| {
        value["sequence_number"] = json!(seq);
        seq += 1;
        sse_event(out, kind, value);
    };
    let mut in_progress = item.clone();
    in_progress["status"] = json!("in_progress");
    in_progress["content"] = json!([]);
    let part = |t: &str| json!({"type": "output_text", "text": t, "annotations": []});
    ev(
        &mut out,
        "response.created",
        json!({"response": response("in_progress", json!([]))}),
    );
    ev(
        &mut out,
        "response.in_progress",
        json!({"response": response("in_progress", json!([]))}),
    );
    ev(
        &mut out,
        "response.output_item.added",
        json!({"output_index": 0, "item": in_progress}),
    );
    ev(
        &mut out,
        "response.content_part.added",
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "part": part("")}),
    );
    ev(
        &mut out,
        "response.output_text.delta",
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "delta": text}),
    );
    ev(
        &mut out,
        "response.output_text.done",
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "text": text}),
    );
    ev(
        &mut out,
        "response.content_part.done",
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "part": part(text)}),
    );
    ev(
        &mut out,
        "response.output_item.done",
        json!({"output_index": 0, "item": item}),
    );
    ev(
        &mut out,
        "response.completed",
        json!({"response": response("completed", json!([item]))}),
    );
    Reply {
        content_type: "text/event-stream",
        body: out,
    }
}

fn messages(n: u64, model: &str, text: &str, stream: bool) -> Reply {
    let id = format!("msg_fake_{n}");
    if !stream {
        return json_reply(
            json!({"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}}),
        );
    }
    let mut out = String::new();
    sse_event(
        &mut out,
        "message_start",
        json!({"message": {"id": id, "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    sse_event(
        &mut out,
        "content_block_start",
        json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    sse_event(
        &mut out,
        "content_block_delta",
        json!({"index": 0, "delta": {"type": "text_delta", "text": text}}),
    );
    sse_event(&mut out, "content_block_stop", json!({"index": 0}));
    sse_event(
        &mut out,
        "message_delta",
        json!({"delta": {"stop_reason": "end_turn", "stop_sequence": null},
        "usage": {"output_tokens": 5}}),
    );
    sse_event(&mut out, "message_stop", json!({}));
    Reply {
        content_type: "text/event-stream",
        body: out,
    }
}
