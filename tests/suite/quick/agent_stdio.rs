//! The scripted agent on its own: JSON-RPC over stdio, as sandbox-agent drives it.

use crate::support::{assert_exit, continuity_command};
use continuity::exit_codes;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Duration;

struct Agent {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Agent {
    fn start(dir: &Path, env: &[(&str, &str)]) -> Agent {
        let mut child = continuity_command(["agent"])
            .env("CONTINUITY_AGENT_STATE", dir.join("state.json"))
            .env("CONTINUITY_AGENT_RECORD", dir.join("record.jsonl"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Agent {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }

    fn message(&mut self) -> Value {
        let line = self.line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.message();
            if m["id"] == id {
                return m;
            }
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

#[test]
fn it_speaks_enough_acp_for_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Agent::start(dir.path(), &[]);
    let init = agent.request(0, "initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], false);

    let a = agent.request(1, "session/new", json!({"cwd": "/", "mcpServers": []}))["result"]
        ["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let b = agent.request(2, "session/new", json!({"cwd": "/", "mcpServers": []}))["result"]
        ["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(a, b, "session ids are unique");

    agent.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt(&a, "hello")}));
    let chunk = agent.message();
    assert_eq!(chunk["method"], "session/update");
    assert_eq!(
        chunk["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    assert_eq!(chunk["params"]["update"]["content"]["text"], "echo: hello");
    assert_eq!(agent.message()["result"]["stopReason"], "end_turn");

    assert_eq!(
        agent.request(4, "session/load", json!({"sessionId": a}))["error"]["code"],
        -32601,
        "load is off by default"
    );
    assert_eq!(
        agent.request(5, "teleport", json!({}))["error"]["code"],
        -32601
    );
    assert_eq!(
        agent.request(6, "session/new", json!({"nope": 1}))["error"]["code"],
        -32602
    );

    // Every message received is recorded, in order.
    let record = std::fs::read_to_string(dir.path().join("record.jsonl")).unwrap();
    let methods: Vec<String> = record
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["method"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "session/new",
            "session/new",
            "session/prompt",
            "session/load",
            "teleport",
            "session/new"
        ]
    );
}

#[test]
fn sessions_survive_an_agent_restart_when_load_is_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("CONTINUITY_AGENT_LOAD_SESSION", "1")];
    let session = {
        let mut agent = Agent::start(dir.path(), &env);
        assert_eq!(
            agent.request(0, "initialize", json!({"protocolVersion": 1}))["result"]
                ["agentCapabilities"]["loadSession"],
            true
        );
        let s = agent.request(1, "session/new", json!({"cwd": "/", "mcpServers": []}))["result"]
            ["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            agent.request(2, "session/prompt", prompt(&s, "remember me"))["result"]["stopReason"],
            "end_turn"
        );
        s
    };
    let mut agent = Agent::start(dir.path(), &env);
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {"sessionId": session, "cwd": "/", "mcpServers": []}}));
    let replayed: Vec<Value> = (0..2).map(|_| agent.message()).collect();
    assert_eq!(
        replayed[0]["params"]["update"]["sessionUpdate"],
        "user_message_chunk"
    );
    assert_eq!(
        replayed[0]["params"]["update"]["content"]["text"],
        "remember me"
    );
    assert_eq!(agent.message()["result"], json!({}));
    assert_eq!(
        agent.request(2, "session/load", json!({"sessionId": "agent-unknown"}))["error"]["code"],
        -32002
    );
}

#[test]
fn fault_knobs_hang_exit_and_write_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Agent::start(dir.path(), &[]);
    let s = agent.request(1, "session/new", json!({"cwd": "/", "mcpServers": []}))["result"]
        ["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // malformed: a non-JSON line before the answer.
    agent.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt(&s, "[[malformed]]")}));
    assert_eq!(agent.message()["method"], "session/update");
    assert_eq!(agent.line(), continuity::agent::MALFORMED_LINE);
    assert_eq!(agent.message()["result"]["stopReason"], "end_turn");

    // hang: no answer until session/cancel, which ends the turn as cancelled.
    agent.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt(&s, "[[hang]]")}));
    std::thread::sleep(Duration::from_millis(200));
    agent.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": s}}));
    assert_eq!(
        agent.message(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "cancelled"}})
    );

    // exit mid-turn, with the code asked for.
    agent.send(json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": prompt(&s, "[[exit:7]]")}));
    assert_eq!(agent.message()["method"], "session/update");
    assert_eq!(agent.child.wait().unwrap().code(), Some(7));
}

#[test]
fn a_bad_knob_in_the_environment_is_a_clear_error() {
    let output = continuity_command(["agent"])
        .env("CONTINUITY_AGENT_FAULT", "explode")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, exit_codes::USAGE);
    assert!(String::from_utf8_lossy(&output.stderr).contains("CONTINUITY_AGENT_FAULT"));
}

/// `[[long:TOTAL/GAP]]`: the turn lasts its length, a chunk every gap (or
/// none when idle), and the agent records that it ended the turn.
#[test]
fn a_long_turn_lasts_its_length_and_the_agent_records_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Agent::start(dir.path(), &[]);
    let session = agent.request(1, "session/new", json!({"cwd": "/", "mcpServers": []}))["result"]
        ["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    for (n, (knob, chunks)) in [("[[long:600/200]]", 3), ("[[long:600/idle]]", 0)]
        .into_iter()
        .enumerate()
    {
        let tag = format!("t{n}");
        let started = std::time::Instant::now();
        let id = 10 + n as i64;
        agent.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": prompt(&session, &format!("work {knob} [[turn:{tag}]]"))}),
        );
        let mut seen = Vec::new();
        let answer = loop {
            let m = agent.message();
            if m["id"] == id {
                break m;
            }
            seen.push(
                m["params"]["update"]["content"]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        };
        assert!(started.elapsed() >= Duration::from_millis(600), "{knob}");
        assert_eq!(answer["result"]["stopReason"], "end_turn");
        let streamed: Vec<&String> = seen.iter().filter(|t| t.starts_with(&tag)).collect();
        assert_eq!(streamed.len(), chunks, "{knob}: {seen:?}");
        let sent = std::fs::read_to_string(dir.path().join("state.json.sent.jsonl")).unwrap();
        let ended: Vec<Value> = sent
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["turn"] == tag.as_str() && v.get("ended").is_some())
            .collect();
        assert_eq!(ended.len(), 1, "{sent}");
        assert_eq!(ended[0]["ended"], "end_turn");
    }
}
