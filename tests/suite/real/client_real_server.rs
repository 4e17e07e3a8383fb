//! The client layer against the real sandbox-agent 0.4.2 server.

use crate::support::{text, Server};
use continuity::acp::AcpError;
use continuity::client::{
    Client, ClientError, ClientOptions, CreateSession, Resume, REPLAY_PREFIX,
};
use continuity::persist::{list_all_events, MemoryDriver, PersistDriver, Sender, SqliteDriver};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn client(server: &Server, persist: Arc<dyn PersistDriver>) -> Client {
    Client::connect(ClientOptions::new(server.base_url(), persist)).unwrap()
}

fn create(id: &str) -> CreateSession {
    CreateSession {
        id: Some(id.into()),
        agent: "mock".into(),
        session_init: Some(json!({"cwd": "/", "mcpServers": []})),
    }
}

fn assert_http_400_invalid_request(error: &ClientError) {
    match error {
        ClientError::Acp(AcpError::Http {
            status: 400,
            problem: Some(p),
        }) => {
            assert_eq!(
                p.type_.as_deref(),
                Some("urn:sandbox-agent:error:invalid_request"),
                "{error}"
            );
            assert!(
                p.detail.as_deref().unwrap_or("").contains("agent"),
                "{error}"
            );
        }
        other => panic!("expected HTTP 400 invalid_request, got {other:?}"),
    }
}

#[tokio::test]
async fn create_and_prompt_returns_end_turn_and_records_the_agent_chunk() {
    let server = Server::start().await;
    let persist: Arc<dyn PersistDriver> = Arc::new(MemoryDriver::default());
    let sdk = client(&server, Arc::clone(&persist));
    let record = sdk.create_session(create("s-1")).await.unwrap();
    assert_eq!(record.agent, "mock");
    assert!(record.agent_session_id.starts_with("agent-"), "{record:?}");

    let outcome = sdk.prompt("s-1", text("Return only PRE-OK")).await.unwrap();
    assert_eq!(outcome.stop_reason, "end_turn");

    let events = list_all_events(persist.as_ref(), "s-1").await.unwrap();
    let indexes: Vec<i64> = events.iter().map(|e| e.event_index).collect();
    assert_eq!(indexes, (1..=events.len() as i64).collect::<Vec<_>>());
    let chunk = events
        .iter()
        .find(|e| e.payload["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .expect("the agent's chunk was recorded");
    assert_eq!(chunk.sender, Sender::Agent);
    assert_eq!(
        chunk.payload["params"]["update"]["content"]["text"],
        "echo: Return only PRE-OK"
    );
    assert!(events
        .iter()
        .all(|e| e.connection_id == record.last_connection_id));
    // session/new out, its result in, the prompt out, the chunk in, the stop reason in.
    let senders: Vec<Sender> = events.iter().map(|e| e.sender).collect();
    use Sender::{Agent, Client as C};
    assert_eq!(senders, vec![C, Agent, C, Agent, Agent]);
    sdk.dispose().await;
}

#[tokio::test]
async fn events_persist_in_both_drivers_and_a_second_client_on_the_same_sqlite_file_sees_them() {
    let server = Server::start().await;
    let memory: Arc<dyn PersistDriver> = Arc::new(MemoryDriver::default());
    let sdk = client(&server, Arc::clone(&memory));
    sdk.create_session(create("m")).await.unwrap();
    sdk.prompt("m", text("one")).await.unwrap();
    assert_eq!(
        sdk.get_events("m", Default::default())
            .await
            .unwrap()
            .items
            .len(),
        5
    );
    sdk.dispose().await;

    let db = server.dir.path().join("persist.db");
    let sdk1 = client(&server, Arc::new(SqliteDriver::open(&db).unwrap()));
    sdk1.create_session(create("q")).await.unwrap();
    sdk1.prompt("q", text("first")).await.unwrap();
    sdk1.prompt("q", text("second")).await.unwrap();
    let sdk2 = client(&server, Arc::new(SqliteDriver::open(&db).unwrap()));
    let seen = sdk2
        .get_events("q", Default::default())
        .await
        .unwrap()
        .items;
    let written = sdk1
        .get_events("q", Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(seen.len(), 8);
    assert_eq!(seen, written);
    let indexes: Vec<i64> = seen.iter().map(|e| e.event_index).collect();
    assert_eq!(indexes, (1..=8).collect::<Vec<_>>());
    let prompts: Vec<&str> = seen
        .iter()
        .filter(|e| e.payload["method"] == "session/prompt")
        .map(|e| e.payload["params"]["prompt"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, vec!["first", "second"]);
    sdk1.dispose().await;
    sdk2.dispose().await;
}

#[tokio::test]
async fn after_a_server_restart_the_same_handle_fails_fast_with_http_400_and_resume_is_a_no_op() {
    let mut server = Server::start().await;
    let db = server.dir.path().join("persist.db");
    let sdk1 = client(&server, Arc::new(SqliteDriver::open(&db).unwrap()));
    sdk1.create_session(create("native")).await.unwrap();
    sdk1.prompt("native", text("Return only PRE-OK"))
        .await
        .unwrap();

    server.restart().await;

    let started = Instant::now();
    let error = sdk1
        .prompt("native", text("Return only SAME-HANDLE-OK"))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    eprintln!("same-handle prompt after restart failed in {elapsed:?}: {error}");
    assert_http_400_invalid_request(&error);
    assert!(elapsed < Duration::from_millis(1000), "took {elapsed:?}");

    // The SDK's resume sees its own (dead) live connection and returns the same handle.
    assert_eq!(
        sdk1.resume_session("native").await.unwrap(),
        Resume::SameHandle
    );
    let started = Instant::now();
    let error = sdk1
        .prompt("native", text("Return only POST-RESUME-OK"))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(1000), "took {elapsed:?}");
    match &error {
        ClientError::Acp(AcpError::Closed { cause: Some(cause) }) => {
            assert!(
                matches!(**cause, AcpError::Http { status: 400, .. }),
                "{error}"
            )
        }
        other => panic!("expected 'ACP client is closed' after the 400, got {other:?}"),
    }
    assert!(
        error.to_string().starts_with("ACP client is closed"),
        "{error}"
    );
    // The agent never saw the post-restart prompts.
    assert_eq!(server.agent_prompts().len(), 1);
    sdk1.dispose().await;
}

#[tokio::test]
async fn resume_on_a_fresh_client_recreates_the_session_and_replays_history_into_the_next_prompt() {
    let mut server = Server::start().await;
    let db = server.dir.path().join("persist.db");
    let sdk1 = client(&server, Arc::new(SqliteDriver::open(&db).unwrap()));
    let before = sdk1.create_session(create("resumable")).await.unwrap();
    sdk1.prompt(
        "resumable",
        text("Nonce marker: NATIVE-RESTART-REPRO. Reply short."),
    )
    .await
    .unwrap();
    sdk1.prompt("resumable", text("Acknowledge restart test in one line."))
        .await
        .unwrap();

    server.restart().await;

    let persist = Arc::new(SqliteDriver::open(&db).unwrap());
    let sdk2 = client(&server, persist.clone());
    let resume = sdk2.resume_session("resumable").await.unwrap();
    let Resume::Recreated {
        agent_session_id,
        replay_events,
        ..
    } = resume
    else {
        panic!("a fresh client must recreate, got {resume:?}");
    };
    assert_ne!(agent_session_id, before.agent_session_id);
    // session/new out and in, then per prompt: out, chunk, stop reason.
    assert_eq!(replay_events, 8);
    let record = persist.get_session("resumable").await.unwrap().unwrap();
    assert_eq!(record.agent_session_id, agent_session_id);
    assert_ne!(record.last_connection_id, before.last_connection_id);

    let outcome = sdk2.prompt("resumable", text("Continue.")).await.unwrap();
    assert_eq!(outcome.stop_reason, "end_turn");
    let prompts = server.agent_prompts();
    let last = prompts.last().unwrap();
    assert_eq!(last.len(), 2, "replay block + the prompt: {last:?}");
    assert!(last[0].starts_with(REPLAY_PREFIX), "{}", last[0]);
    assert!(last[0].contains("NATIVE-RESTART-REPRO"));
    assert!(last[0].contains("Acknowledge restart test in one line."));
    assert_eq!(last[1], "Continue.");
    // Only the first prompt after resume carries the replay.
    sdk2.prompt("resumable", text("Again.")).await.unwrap();
    assert_eq!(
        server.agent_prompts().last().unwrap(),
        &vec!["Again.".to_string()]
    );
    // The history continues the same numbering.
    let events = list_all_events(persist.as_ref(), "resumable")
        .await
        .unwrap();
    let indexes: Vec<i64> = events.iter().map(|e| e.event_index).collect();
    assert_eq!(indexes, (1..=events.len() as i64).collect::<Vec<_>>());
    sdk1.dispose().await;
    sdk2.dispose().await;
}

#[tokio::test]
async fn a_hanging_agent_is_cut_by_the_callers_deadline() {
    let server = Server::start().await;
    let sdk = client(&server, Arc::new(MemoryDriver::default()));
    sdk.create_session(create("h")).await.unwrap();
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_millis(700),
        sdk.prompt("h", text("[[hang]]")),
    )
    .await;
    assert!(
        outcome.is_err(),
        "a hanging agent must not answer: {outcome:?}"
    );
    // The agent never answers: any bound well short of forever shows the
    // deadline ended it; a tight one (it was 900 ms) only measures the
    // machine's load.
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection is still usable: the agent answers the next prompt.
    let next = tokio::time::timeout(Duration::from_secs(10), sdk.prompt("h", text("after"))).await;
    assert_eq!(next.expect("answered").unwrap().stop_reason, "end_turn");
    sdk.dispose().await;
}

#[tokio::test]
async fn an_agent_exiting_mid_turn_is_an_error_not_a_hang() {
    let server = Server::start().await;
    let sdk = client(&server, Arc::new(MemoryDriver::default()));
    sdk.create_session(create("x")).await.unwrap();
    let started = Instant::now();
    let outcome =
        tokio::time::timeout(Duration::from_secs(10), sdk.prompt("x", text("[[exit:3]]")))
            .await
            .expect("an exiting agent must not hang the prompt");
    let error = outcome.unwrap_err();
    eprintln!(
        "exit mid-turn surfaced after {:?} as: {error}",
        started.elapsed()
    );
    assert!(
        matches!(
            error,
            ClientError::Acp(AcpError::AgentExited { code: Some(3) })
        ),
        "{error:?}"
    );
    sdk.dispose().await;
}
