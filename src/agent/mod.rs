//! The scripted ACP agent (`continuity agent`): JSON-RPC 2.0 over stdio, one
//! message per line, conformant enough for the SDK's session semantics and
//! with fault knobs for tests.
//!
//! Methods: `initialize` (advertises `loadSession` only when enabled),
//! `session/new` (unique ids), `session/prompt` (one `agent_message_chunk`
//! echoing the prompt's last text block, then `stopReason: end_turn`),
//! `session/load` (when enabled; sessions live in a state file so they outlive
//! the process), `session/cancel` (ends a pending prompt with `cancelled`);
//! anything else is `-32601`.
//!
//! Knobs, from the environment (every prompt) or from a directive in the
//! prompt's last text block (that prompt only):
//! `CONTINUITY_AGENT_DELAY_MS=N` / `[[delay:N]]`, `CONTINUITY_AGENT_FAULT=hang`
//! / `[[hang]]`, `exit:CODE` / `[[exit:CODE]]` (after the chunk, before the
//! answer), `malformed` / `[[malformed]]` (a non-JSON line before the answer).
//! `[[once:KEY]]` makes the prompt's fault and delay apply only the first
//! time KEY is seen: keys seen are lines of `CONTINUITY_AGENT_ONCE_FILE`
//! (default: the state file's path plus `.once`), which outlives agent
//! processes, so a cell fails its first attempt and passes its retry.
//! `CONTINUITY_AGENT_STREAM=K/N` / `[[stream:K/N]]` streams K chunks
//! (`"{turn} chunk i/K"`, the tag from `[[turn:ID]]`) over N ms before the
//! answer, each appended to the sent record (`CONTINUITY_AGENT_SENT`, default
//! the state file's path plus `.sent.jsonl`) once written. Every message
//! of a session the agent writes (updates, and its answers to `session/new`,
//! `session/load` and `session/prompt`) is noted in that record too, just
//! before it is written: its time, session and digest (what the checker's
//! ground truth is).
//! `CONTINUITY_AGENT_LONG=TOTAL/GAP` / `[[long:TOTAL/GAP]]` makes the turn
//! last TOTAL ms with a chunk every GAP ms, or none (`TOTAL/idle`): a turn
//! that outlives a timeout on the path. A tagged turn the agent answers
//! gets an `ended` line in the sent record: its own record that it finished.
//! `CONTINUITY_AGENT_LOAD_SESSION=1` enables `session/load`;
//! `CONTINUITY_AGENT_STATE=FILE` keeps sessions; `CONTINUITY_AGENT_RECORD=FILE`
//! appends every message received, one JSON line each, for tests to read.
//!
//! Over 400 lines on purpose: one `Agent` owns the sessions, their state
//! file, the sent record and the prompts in flight, and every method's
//! answer goes out through the same `send`, which notes a session's
//! message in the record before writing it, so the record stays the
//! checker's ground truth; the knobs are parsed apart (`knobs.rs`).

mod knobs;

pub(crate) use knobs::{Fault, Knobs, Stream};

use agent_client_protocol_schema::v1::{NewSessionRequest, PromptRequest};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::oneshot;

/// Text the agent writes for the `malformed` fault.
pub const MALFORMED_LINE: &str = "this is not a JSON-RPC message {";

/// Sessions kept across agent restarts: id → prompt texts.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Sessions {
    sessions: HashMap<String, Vec<String>>,
}

struct Agent {
    knobs: Knobs,
    state_file: Option<PathBuf>,
    once_file: Option<PathBuf>,
    record_file: Option<PathBuf>,
    /// Every streamed chunk written to stdout, one JSON line each (see [`Agent::stream`]).
    sent_file: Option<PathBuf>,
    sessions: Mutex<Sessions>,
    out: Mutex<std::io::Stdout>,
    /// Prompts waiting for an answer, by agent session id, so `session/cancel` can end them.
    in_flight: Mutex<HashMap<String, oneshot::Sender<()>>>,
}

/// Runs the agent on stdin/stdout until stdin closes; returns the exit code.
pub async fn run() -> i32 {
    let knobs = match Knobs::from_env() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("continuity agent: {e}");
            return i32::from(crate::exit_codes::USAGE);
        }
    };
    let state_file = std::env::var_os("CONTINUITY_AGENT_STATE").map(PathBuf::from);
    let sessions = state_file
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let once_file = std::env::var_os("CONTINUITY_AGENT_ONCE_FILE")
        .map(PathBuf::from)
        .or_else(|| {
            state_file.as_ref().map(|p| {
                let mut name = p.as_os_str().to_owned();
                name.push(".once");
                PathBuf::from(name)
            })
        });
    let sent_file = std::env::var_os("CONTINUITY_AGENT_SENT")
        .map(PathBuf::from)
        .or_else(|| state_file.as_ref().map(|p| sent_record_path(p)));
    let agent = Arc::new(Agent {
        sent_file,
        knobs,
        once_file,
        state_file,
        record_file: std::env::var_os("CONTINUITY_AGENT_RECORD").map(PathBuf::from),
        sessions: Mutex::new(sessions),
        out: Mutex::new(std::io::stdout()),
        in_flight: Mutex::new(HashMap::new()),
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => continue,
            Ok(Some(line)) => {
                let agent = Arc::clone(&agent);
                agent.record(&line);
                tokio::spawn(async move { agent.handle_line(&line).await });
            }
            Ok(None) => return 0,
            Err(e) => {
                eprintln!("continuity agent: stdin: {e}");
                return 1;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Agent {
    fn record(&self, line: &str) {
        let Some(path) = &self.record_file else {
            return;
        };
        let entry =
            serde_json::from_str::<Value>(line).unwrap_or_else(|_| json!({"unparsed": line}));
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{entry}");
        }
    }

    fn send(&self, message: &Value) {
        self.send_noted(message, None, None);
    }

    /// Writes `message`, after noting it in the sent record when it belongs
    /// to a session (its own `sessionId`, else `session`): a line with its
    /// digest, which the checker holds against what the server, the client
    /// and the store saw. Noted before it is written, so a kill between
    /// the two can only make it look lost, never make a delivered message
    /// look invented. `answers` names the request a response answers.
    fn send_noted(&self, message: &Value, session: Option<&str>, answers: Option<&str>) {
        let session = crate::trace::digest::session_of(message).or(session.map(str::to_string));
        if let (Some(session), Some(path)) = (session, &self.sent_file) {
            let mut line = json!({
                "at": epoch_ms(),
                "session": session,
                "digest": crate::trace::digest::envelope(message),
            });
            if let Some(method) = message.get("method") {
                line["method"] = method.clone();
            }
            if let Some(id) = message.get("id").filter(|id| !id.is_null()) {
                line["rpcId"] = id.clone();
            }
            if let Some(answers) = answers {
                line["answers"] = answers.into();
            }
            append_line(path, &line);
        }
        let mut out = lock(&self.out);
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    /// A response to `id`, a request of `session` for `method`.
    fn reply_for(&self, id: &Value, result: Value, session: &str, method: &str) {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send_noted(&message, Some(session), Some(method));
    }

    fn send_raw(&self, line: &str) {
        let mut out = lock(&self.out);
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn reply(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn reply_error(&self, id: &Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    fn save(&self) {
        let Some(path) = &self.state_file else { return };
        let bytes = serde_json::to_vec(&*lock(&self.sessions)).unwrap_or_default();
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, bytes).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    async fn handle_line(&self, line: &str) {
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                self.send(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {e}")}}));
                return;
            }
        };
        let id = message.get("id").cloned().filter(|id| !id.is_null());
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            ("session/cancel", _) => self.cancel(&params),
            (_, None) => {} // other notifications and stray responses
            ("initialize", Some(id)) => self.reply(
                &id,
                json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": self.knobs.load_session},
                    "authMethods": [],
                    "agentInfo": {"name": "continuity-agent", "version": env!("CARGO_PKG_VERSION")},
                }),
            ),
            ("session/new", Some(id)) => {
                match serde_json::from_value::<NewSessionRequest>(params) {
                    Ok(_) => {
                        let session_id = format!("agent-{}", uuid::Uuid::new_v4());
                        lock(&self.sessions)
                            .sessions
                            .insert(session_id.clone(), Vec::new());
                        self.save();
                        self.reply(&id, json!({"sessionId": session_id}));
                    }
                    Err(e) => self.reply_error(&id, -32602, &format!("Invalid params: {e}")),
                }
            }
            ("session/load", Some(id)) if self.knobs.load_session => self.load(&id, &params),
            ("session/prompt", Some(id)) => self.prompt(&id, params).await,
            (other, Some(id)) => self.reply_error(
                &id,
                crate::acp::METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
            ),
        }
    }

    fn cancel(&self, params: &Value) {
        if let Some(session) = params.get("sessionId").and_then(Value::as_str) {
            if let Some(waiter) = lock(&self.in_flight).remove(session) {
                let _ = waiter.send(());
            }
        }
    }

    fn load(&self, id: &Value, params: &Value) {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let history = lock(&self.sessions).sessions.get(session).cloned();
        let Some(history) = history else {
            return self.reply_error(
                id,
                -32002,
                &format!("Resource not found: session {session}"),
            );
        };
        for text in history {
            for kind in ["user_message_chunk", "agent_message_chunk"] {
                self.send(&session_update(session, kind, &text));
            }
        }
        self.reply_for(id, json!({}), session, "session/load");
    }

    async fn prompt(&self, id: &Value, params: Value) {
        let request: PromptRequest = match serde_json::from_value(params.clone()) {
            Ok(r) => r,
            Err(e) => return self.reply_error(id, -32602, &format!("Invalid params: {e}")),
        };
        let session = request.session_id.0.to_string();
        let text = last_text_block(&params);
        {
            let mut sessions = lock(&self.sessions);
            let Some(history) = sessions.sessions.get_mut(&session) else {
                drop(sessions);
                return self.reply_error(
                    id,
                    -32002,
                    &format!("Resource not found: session {session}"),
                );
            };
            history.push(text.clone());
        }
        self.save();
        let turn = self.first_time_only(self.knobs.for_prompt(&text));
        let (cancel_tx, cancel_rx) = oneshot::channel();
        lock(&self.in_flight).insert(session.clone(), cancel_tx);
        let cancelled = tokio::select! {
            _ = cancel_rx => true,
            _ = self.play_turn(&session, &turn) => false,
        };
        lock(&self.in_flight).remove(&session);
        if cancelled {
            return self.reply_for(
                id,
                json!({"stopReason": "cancelled"}),
                &session,
                "session/prompt",
            );
        }
        self.send(&session_update(
            &session,
            "agent_message_chunk",
            &format!("echo: {text}"),
        ));
        match turn.fault {
            Some(Fault::Exit(code)) => std::process::exit(code),
            Some(Fault::Malformed) => self.send_raw(MALFORMED_LINE),
            _ => {}
        }
        self.record_end(&session, &turn, "end_turn");
        self.reply_for(
            id,
            json!({"stopReason": "end_turn"}),
            &session,
            "session/prompt",
        );
    }

    /// The turn's delay or hang, its streamed chunks, then its long part:
    /// chunks every gap, or silence, until its length is up.
    async fn play_turn(&self, session: &str, turn: &Knobs) {
        play(turn).await;
        let tag = turn.turn.as_deref().unwrap_or("stream");
        if let Some(stream) = turn.stream {
            self.stream(session, tag, stream).await;
        }
        if let Some(long) = turn.long {
            match long.stream() {
                Some(stream) => self.stream(session, tag, stream).await,
                None => tokio::time::sleep(std::time::Duration::from_millis(long.total_ms)).await,
            }
        }
    }

    /// The agent's own record that it finished a tagged turn (written just
    /// before its answer), beside its chunks in the sent record: a turn whose answer
    /// never reached the client was still finished by the agent.
    fn record_end(&self, session: &str, turn: &Knobs, stop_reason: &str) {
        let (Some(tag), Some(path)) = (turn.turn.as_deref(), &self.sent_file) else {
            return;
        };
        let line = json!({"turn": tag, "session": session, "ended": stop_reason});
        append_line(path, &line);
    }
}

/// The wall clock in Unix milliseconds: the harness maps the record's
/// times onto each cell's clock.
fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// Appends one JSON line to `path` (the sent record), best effort.
fn append_line(path: &std::path::Path, line: &Value) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

impl Agent {
    /// A `[[once:KEY]]` turn misbehaves only if KEY was never seen; the key
    /// is recorded before the fault plays, so an `exit` fault still counts.
    fn first_time_only(&self, mut turn: Knobs) -> Knobs {
        let (Some(key), Some(file)) = (turn.once.clone(), self.once_file.as_ref()) else {
            return turn;
        };
        let seen = std::fs::read_to_string(file).unwrap_or_default();
        if seen.lines().any(|line| line == key) {
            turn.fault = None;
            turn.delay_ms = 0;
            turn.long = None;
            return turn;
        }
        let recorded = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| writeln!(f, "{key}").and_then(|()| f.sync_all()));
        if let Err(e) = recorded {
            eprintln!(
                "continuity agent: cannot record once key in {}: {e}",
                file.display()
            );
        }
        turn
    }
}

/// Where the sent record goes when `CONTINUITY_AGENT_SENT` is not set: beside the state file.
pub(crate) fn sent_record_path(state_file: &std::path::Path) -> PathBuf {
    let mut name = state_file.as_os_str().to_owned();
    name.push(".sent.jsonl");
    PathBuf::from(name)
}

impl Agent {
    /// K chunks `"{tag} chunk i/K"`, one every N/K ms (`[[stream:K/N]]`,
    /// or a long turn's). Each is appended to the sent record after it is
    /// written to stdout, so the harness can tell what the agent sent from
    /// what the history holds, even when the process is killed mid-turn.
    async fn stream(&self, session: &str, tag: &str, stream: Stream) {
        let gap = std::time::Duration::from_millis(stream.over_ms / u64::from(stream.chunks));
        for seq in 1..=stream.chunks {
            tokio::time::sleep(gap).await;
            let text = format!("{tag} chunk {seq}/{}", stream.chunks);
            self.send(&session_update(session, "agent_message_chunk", &text));
            if let Some(path) = &self.sent_file {
                // Its pid: a reader waiting for the turn's last chunk stops
                // waiting once the process that would send it is gone.
                let line = json!({"turn": tag, "session": session, "seq": seq,
                    "of": stream.chunks, "pid": std::process::id()});
                append_line(path, &line);
            }
        }
    }
}

/// Waits out a turn's delay, or forever when it hangs.
async fn play(turn: &Knobs) {
    if turn.delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(turn.delay_ms)).await;
    }
    if turn.fault == Some(Fault::Hang) {
        std::future::pending::<()>().await;
    }
}

fn session_update(session: &str, kind: &str, text: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session, "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}},
    })
}

/// The user's own words: replay text, when present, is the first block, never the last.
fn last_text_block(params: &Value) -> String {
    params
        .get("prompt")
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks.iter().rev().find_map(|b| {
                (b.get("type")?.as_str()? == "text")
                    .then(|| b.get("text")?.as_str())
                    .flatten()
            })
        })
        .unwrap_or_default()
        .to_string()
}
