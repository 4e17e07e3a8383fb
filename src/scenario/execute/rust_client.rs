//! continuity's own client (`--client rust`) behind the executor's client
//! interface: it takes every step. Its connections, turns, files,
//! processes and terminals live in the cell (the cleanup, the deferred
//! DELETEs and the sandbox teardown read them); the sandbox, terminal,
//! turn, recovery and replay steps are in their own modules, called from here.

use super::driver::{PromptAnswer, ScenarioClient, Unsupported};
use super::{RunningCell, StepFailure, StepResult};
use crate::client::{CreateSession, Resume};
use crate::diagnose;
use crate::persist::{PageRequest, SessionEvent};
use crate::report::detail::{CreateSessionDetail, Detail, EventsDetail, HealthDetail};
use crate::report::detail::{ProbeDetail, ResumeDetail};
use crate::report::SignatureKind;
use crate::scenario::{ProcessExpect, Step};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The reconnect design's liveness probe limit: `pwd` within 15 s.
const PROBE_LIMIT_MS: u64 = 15_000;

/// What continuity's client has no counterpart of: the provider steps.
/// The call [`NO_PROVIDER`] names, in a few words.
const NO_PROVIDER_CALL: &str = "SandboxAgent.start({ sandbox, sandboxId })";
const NO_PROVIDER: &str = "continuity's Rust client has no SandboxProvider: SandboxAgent.start({ sandbox, sandboxId }) and destroySandbox are the TypeScript SDK's";

/// continuity's SDK-faithful Rust client.
pub(super) struct RustClient;

/// The seed's statuses for a failed probe: `expired` when the sandbox (or
/// its process API) is gone (404/410), `no_sandbox` when nothing answers,
/// `error` for anything else.
fn probe_status(error: &crate::client::ClientError) -> &'static str {
    use crate::acp::AcpError;
    use crate::client::ClientError;
    match error {
        ClientError::Acp(AcpError::Http {
            status: 404 | 410, ..
        }) => "expired",
        ClientError::Acp(AcpError::Connect { .. }) => "no_sandbox",
        _ => "error",
    }
}

#[async_trait(?Send)]
impl ScenarioClient for RustClient {
    fn name(&self) -> &'static str {
        crate::client::ClientKind::Rust.name()
    }

    fn supports(&self, step: &Step) -> Result<(), Unsupported> {
        match step {
            Step::StartSandbox { .. }
            | Step::ReattachSandbox { .. }
            | Step::DestroySandbox { .. } => Err(Unsupported {
                api: NO_PROVIDER,
                call: NO_PROVIDER_CALL,
            }),
            _ => Ok(()),
        }
    }

    fn connected(&self, cell: &RunningCell<'_>, client: &str) -> bool {
        cell.clients.contains_key(client)
    }

    fn renews_on_client_restart(&self) -> bool {
        true
    }

    fn defers_disposes(&self) -> bool {
        true
    }

    async fn connect(&self, cell: &mut RunningCell<'_>, client: &str) -> Result<(), StepFailure> {
        let connected = cell.new_client()?;
        if let Some(old) = cell.clients.insert(client.into(), Arc::new(connected)) {
            old.dispose().await;
        }
        Ok(())
    }

    async fn create_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        cwd: &str,
    ) -> Result<CreateSessionDetail, StepFailure> {
        let request = CreateSession {
            id: Some(id.to_string()),
            agent: cell.settings.agent.clone(),
            session_init: Some(json!({"cwd": cwd, "mcpServers": []})),
        };
        let record = cell
            .client(client)?
            .create_session(request)
            .await
            .map_err(|e| cell.fail(&e))?;
        Ok(CreateSessionDetail {
            session_id: id.to_string(),
            agent_session_id: record.agent_session_id,
        })
    }

    async fn prompt(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        text: String,
    ) -> Result<PromptAnswer, StepFailure> {
        let blocks = vec![json!({"type": "text", "text": text})];
        let outcome = cell
            .client(client)?
            .prompt(id, blocks)
            .await
            .map_err(|e| cell.fail(&e))?;
        Ok(PromptAnswer {
            stop_reason: outcome.stop_reason,
            ..PromptAnswer::default()
        })
    }

    async fn get_events(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        limit: usize,
        integrity: bool,
    ) -> StepResult {
        let mut detail = Map::new();
        let page = PageRequest {
            cursor: None,
            limit: Some(limit),
        };
        let events = cell
            .client(client)?
            .get_events(id, page)
            .await
            .map_err(|e| cell.fail(&e))?;
        EventsDetail {
            events_observed: events.items.len(),
        }
        .write_to(&mut detail);
        if integrity {
            cell.check_integrity(client, id, &mut detail).await?;
        }
        Ok(detail)
    }

    async fn resume_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<ResumeDetail, StepFailure> {
        let resume = cell
            .client(client)?
            .resume_session(id)
            .await
            .map_err(|e| cell.fail(&e))?;
        Ok(match resume {
            Resume::SameHandle => ResumeDetail {
                action: "same_handle".into(),
                ..ResumeDetail::default()
            },
            Resume::Recreated {
                replay_events,
                replay_chars,
                ..
            } => ResumeDetail {
                replay_events: Some(replay_events),
                replay_chars: Some(replay_chars),
                action: "recreated".into(),
            },
        })
    }

    async fn destroy_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<(), StepFailure> {
        cell.client(client)?
            .destroy_session(id)
            .await
            .map_err(|e| cell.fail(&e))?;
        Ok(())
    }

    async fn dispose(&self, cell: &mut RunningCell<'_>, client: &str) -> Result<(), StepFailure> {
        if let Some(c) = cell.clients.remove(client) {
            c.dispose().await;
        }
        Ok(())
    }

    async fn health(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
    ) -> Result<HealthDetail, StepFailure> {
        let health = cell
            .client(client)?
            .health()
            .await
            .map_err(|e| cell.fail(&e))?;
        Ok(HealthDetail { health })
    }

    async fn replay_history(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<Vec<SessionEvent>, StepFailure> {
        cell.stored_history(client, id).await
    }

    async fn probe(&self, cell: &mut RunningCell<'_>, client: &str) -> StepResult {
        let c = cell.client(client)?;
        let limit = std::time::Duration::from_millis(PROBE_LIMIT_MS);
        let Ok(probe) = tokio::time::timeout(limit, c.run_process("pwd", PROBE_LIMIT_MS)).await
        else {
            // Nothing answered within the reconnect design's limit.
            return Err(StepFailure::new(diagnose::timeout(
                PROBE_LIMIT_MS,
                "POST /v1/processes/run pwd",
            ))
            .with_detail(ProbeDetail::failed("no_sandbox")));
        };
        match probe {
            Ok(result) if result.get("exitCode").and_then(Value::as_i64) == Some(0) => {
                Ok(ProbeDetail {
                    status: "connected".into(),
                    stdout: Some(result.get("stdout").cloned().unwrap_or(Value::Null)),
                }
                .to_map())
            }
            Ok(result) => Err(StepFailure::new(diagnose::other(
                SignatureKind::Protocol,
                format!("pwd did not succeed: {result}"),
            ))
            .with_detail(ProbeDetail::failed("error"))),
            Err(e) => Err(cell
                .fail(&e)
                .with_detail(ProbeDetail::failed(probe_status(&e)))),
        }
    }

    async fn write_file(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        path: &str,
        content: &str,
    ) -> StepResult {
        cell.write_file(client, path, content).await
    }

    async fn read_file(&self, cell: &mut RunningCell<'_>, client: &str, path: &str) -> StepResult {
        cell.read_file(client, path).await
    }

    async fn spawn_process(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        command: &[String],
        tty: bool,
    ) -> StepResult {
        cell.spawn_process(client, process, command, tty).await
    }

    async fn process_status(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        expect: ProcessExpect,
        logs_contain: Option<&str>,
    ) -> StepResult {
        cell.process_status(client, process, expect, logs_contain)
            .await
    }

    async fn terminal_attach(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        terminal: &str,
    ) -> StepResult {
        cell.terminal_attach(client, process, terminal).await
    }

    async fn terminal_send(
        &self,
        cell: &mut RunningCell<'_>,
        terminal: &str,
        text: &str,
    ) -> StepResult {
        cell.terminal_send(terminal, text).await
    }

    async fn terminal_expect(
        &self,
        cell: &mut RunningCell<'_>,
        terminal: &str,
        text: Option<&str>,
    ) -> StepResult {
        cell.terminal_expect(terminal, text).await
    }

    async fn terminal_reattach(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        terminal: &str,
    ) -> StepResult {
        cell.terminal_reattach(client, terminal).await
    }

    async fn start_turn(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        session: &str,
        text: &str,
        turn: &str,
    ) -> StepResult {
        cell.start_turn(client, session, text, turn).await
    }

    async fn await_turn(
        &self,
        cell: &mut RunningCell<'_>,
        turn: &str,
        deadline: std::time::Duration,
    ) -> StepResult {
        cell.await_turn(turn, deadline).await
    }

    async fn turn_history(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        turn: &str,
    ) -> StepResult {
        cell.turn_history(client, turn).await
    }

    async fn turn_evidence(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        turn: &str,
    ) -> Result<super::recover_turn::TurnEvidence, StepFailure> {
        cell.turn_evidence(client, turn).await
    }

    async fn recover_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        session: &str,
        text: &str,
    ) -> StepResult {
        cell.recover_session(client, session, text).await
    }
}
