//! The fake provider over real HTTP: each wire format streamed and plain,
//! the echo, the 404, and the call log (memory and file).

use super::*;
use serde_json::json;

async fn started() -> (FakeProvider, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let provider = FakeProvider::start(&dir.path().join("provider.jsonl"))
        .await
        .unwrap();
    (provider, dir)
}

async fn post(provider: &FakeProvider, path: &str, body: Value) -> (u16, String, String) {
    let response = crate::http::client_builder()
        .build()
        .unwrap()
        .post(format!("{}{path}", provider.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

/// The `data:` payloads of an SSE body, as JSON (the `[DONE]` marker excluded).
fn sse_payloads(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn chat_completions_stream_the_echo_in_deltas_and_end_with_done() {
    let (provider, _dir) = started().await;
    let (status, kind, body) = post(
        &provider,
        "/v1/chat/completions",
        json!({
        "model": "fake-model", "stream": true,
        "messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": "first turn"},
                     {"role": "assistant", "content": "FAKE-REPLY 0: first turn"},
                     {"role": "user", "content": [{"type": "text", "text": "second   turn"}]}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(kind, "text/event-stream");
    assert!(body.trim_end().ends_with("data: [DONE]"));
    let text: String = sse_payloads(&body)
        .iter()
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(text, "FAKE-REPLY 1: second turn");
    assert!(
        sse_payloads(&body).len() > 3,
        "the reply comes in several chunks"
    );
    let calls = provider.calls().all();
    assert_eq!(calls[0].user_texts, ["first turn", "second   turn"]);
    assert_eq!(calls[0].api, Some(Api::ChatCompletions));
}

#[tokio::test]
async fn chat_completions_without_stream_answer_one_json_object() {
    let (provider, _dir) = started().await;
    let (status, kind, body) = post(
        &provider,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    let value: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        value["choices"][0]["message"]["content"],
        "FAKE-REPLY 1: hello"
    );
}

#[tokio::test]
async fn responses_stream_typed_events_ending_in_completed() {
    let (provider, _dir) = started().await;
    let (status, _, body) = post(
        &provider,
        "/v1/responses",
        json!({
        "model": "fake-model", "stream": true,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "codex turn"}]}]}),
    )
    .await;
    assert_eq!(status, 200);
    let events = sse_payloads(&body);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    let delta = events
        .iter()
        .find(|e| e["type"] == "response.output_text.delta")
        .unwrap();
    assert_eq!(delta["delta"], "FAKE-REPLY 1: codex turn");
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(
        numbers.windows(2).all(|w| w[1] == w[0] + 1),
        "sequence numbers count up"
    );
    // Each SSE event names its type on an `event:` line too.
    assert!(body.contains("event: response.completed\n"));
}

#[tokio::test]
async fn anthropic_messages_stream_from_message_start_to_message_stop_without_reminders() {
    let (provider, _dir) = started().await;
    let (status, _, body) = post(
        &provider,
        "/v1/messages",
        json!({
        "model": "claude-fake", "stream": true,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>context</system-reminder>"},
            {"type": "text", "text": "claude turn"}]}]}),
    )
    .await;
    assert_eq!(status, 200);
    let events = sse_payloads(&body);
    assert_eq!(events.first().unwrap()["type"], "message_start");
    assert_eq!(events.last().unwrap()["type"], "message_stop");
    let delta = events
        .iter()
        .find(|e| e["type"] == "content_block_delta")
        .unwrap();
    assert_eq!(delta["delta"]["text"], "FAKE-REPLY 1: claude turn");
}

#[tokio::test]
async fn anything_else_is_a_404_and_is_logged_as_such() {
    let (provider, _dir) = started().await;
    let (status, _, _) = post(&provider, "/v1/completions", json!({})).await;
    assert_eq!(status, 404);
    let get = crate::http::client_builder()
        .build()
        .unwrap()
        .get(format!("{}/npm/@opencode-ai%2fplugin", provider.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 404);
    let calls = provider.calls().all();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.status == 404 && c.api.is_none()));
    assert!(provider.calls().model_calls_since(0).is_empty());
}

#[tokio::test]
async fn the_log_file_holds_one_line_per_call_and_stop_closes_the_port() {
    let (mut provider, dir) = started().await;
    post(
        &provider,
        "/v1/messages",
        json!({"messages": [{"role": "user", "content": "a"}]}),
    )
    .await;
    post(&provider, "/v1/responses", json!({"input": "b"})).await;
    let text = std::fs::read_to_string(dir.path().join("provider.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["user_texts"], json!(["b"]));
    assert_eq!(lines[1]["reply"], "FAKE-REPLY 2: b");
    let url = provider.base_url();
    provider.stop().await;
    assert!(crate::http::client_builder()
        .build()
        .unwrap()
        .get(format!("{url}/v1/models"))
        .send()
        .await
        .is_err());
}
