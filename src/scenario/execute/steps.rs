//! What each step kind does: connect, sessions, prompts, restarts, event
//! reads with the integrity check, resume, probes. Each returns the detail
//! for the report, or a failure with its signature.

use super::{expect_stop, rehydrate_text, CellStore, RunningCell, StepFailure, StepResult};
use crate::client::{Client, ClientOptions, CreateSession, Resume};
use crate::diagnose;
use crate::persist::{list_all_events, MemoryDriver, PageRequest, PersistDriver};
use crate::report::detail::{
    CreateSessionDetail, Detail, EventsDetail, HealthDetail, IntegrityDetail, ProbeDetail,
    PromptDetail, RehydrateDetail, RestartDetail, ResumeDetail,
};
use crate::report::SignatureKind;
use crate::scenario::{Phase, ResumeExpect, Step};
use crate::trace::event::{self, Event};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The reconnect design's liveness probe limit: `pwd` within 15 s.
const PROBE_LIMIT_MS: u64 = 15_000;

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

impl RunningCell<'_> {
    pub(super) fn session_id(&self, label: &str) -> String {
        format!("{label}-{}", self.settings.session_suffix)
    }

    pub(super) fn client(&self, name: &str) -> Result<&Arc<Client>, StepFailure> {
        self.clients.get(name).ok_or_else(|| {
            StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!("client `{name}` is not connected"),
            ))
        })
    }

    /// A client of the cell's store (its own in-memory one for `memory`).
    pub(super) fn new_client(&self) -> Result<Client, StepFailure> {
        let store: Arc<dyn PersistDriver> = match &self.settings.store {
            CellStore::Shared(store) => Arc::clone(store),
            CellStore::PerClientMemory => Arc::new(MemoryDriver::default()),
        };
        let mut options = ClientOptions::new(self.settings.base_url.clone(), store);
        options.token = self.settings.token.clone();
        options.headers = self.settings.headers.clone();
        options.trace = self.settings.trace.clone();
        Client::connect(options).map_err(|e| self.fail(&e))
    }

    fn fail(&self, error: &crate::client::ClientError) -> StepFailure {
        StepFailure::new(diagnose::signature(error, self.settings.token.as_ref()))
    }

    /// Runs one phase's step: every step kind is dispatched here.
    pub(super) async fn run_step(&mut self, phase: &Phase) -> StepResult {
        let phase_name = phase.name.as_str();
        let mut detail = Map::new();
        match &phase.step {
            Step::StartTurn {
                client,
                session,
                text,
                turn,
            } => return self.start_turn(client, session, text, turn).await,
            Step::AwaitTurn { turn, deadline } => {
                let deadline = deadline.unwrap_or(self.settings.default_timeout);
                return self.await_turn(turn, deadline).await;
            }
            Step::TurnHistory { client, turn } => return self.turn_history(client, turn).await,
            Step::RestartDuringTurn { after } => {
                return self.restart_during_turn(phase_name, *after).await
            }
            Step::Connect { client } => {
                let connected = self.new_client()?;
                if let Some(old) = self.clients.insert(client.clone(), Arc::new(connected)) {
                    old.dispose().await;
                }
            }
            Step::ReplayCheck { client, session } => {
                return self.replay_check(client, session).await
            }
            Step::CreateSession {
                client,
                session,
                cwd,
            } => {
                let id = self.session_id(session);
                let request = CreateSession {
                    id: Some(id.clone()),
                    agent: self.settings.agent.clone(),
                    session_init: Some(json!({"cwd": cwd, "mcpServers": []})),
                };
                let record = self
                    .client(client)?
                    .create_session(request)
                    .await
                    .map_err(|e| self.fail(&e))?;
                CreateSessionDetail {
                    session_id: id,
                    agent_session_id: record.agent_session_id,
                }
                .write_to(&mut detail);
            }
            Step::Prompt {
                client,
                session,
                texts,
                expect_stop_reason,
            } => {
                let mut stop_reason = None;
                for text in texts {
                    let stop = self.prompt(client, session, text.clone()).await?;
                    expect_stop(expect_stop_reason.as_deref(), &stop)?;
                    stop_reason = Some(stop);
                }
                PromptDetail {
                    stop_reason,
                    prompts: texts.len(),
                }
                .write_to(&mut detail);
            }
            Step::RehydratePrompt {
                client,
                session,
                from,
            } => {
                let prompts = self.transcripts.get(from).cloned().unwrap_or_default();
                let stop = self
                    .prompt(client, session, rehydrate_text(&prompts))
                    .await?;
                RehydrateDetail {
                    stop_reason: stop,
                    rehydrated_prompts: prompts.len(),
                }
                .write_to(&mut detail);
            }
            Step::Restart => return self.restart(phase_name).await,
            Step::GetEvents {
                client,
                session,
                limit,
                integrity,
            } => {
                let id = self.session_id(session);
                let page = PageRequest {
                    cursor: None,
                    limit: Some(*limit),
                };
                let events = self
                    .client(client)?
                    .get_events(&id, page)
                    .await
                    .map_err(|e| self.fail(&e))?;
                EventsDetail {
                    events_observed: events.items.len(),
                }
                .write_to(&mut detail);
                if *integrity {
                    self.check_integrity(client, &id, &mut detail).await?;
                }
            }
            Step::ResumeSession {
                client,
                session,
                expect,
            } => {
                let id = self.session_id(session);
                let resume = self
                    .client(client)?
                    .resume_session(&id)
                    .await
                    .map_err(|e| self.fail(&e))?;
                let mut resumed = ResumeDetail::default();
                let (action, matches) = match &resume {
                    Resume::SameHandle => ("same_handle", *expect != Some(ResumeExpect::Recreated)),
                    Resume::Recreated {
                        replay_events,
                        replay_chars,
                        ..
                    } => {
                        resumed.replay_events = Some(*replay_events);
                        resumed.replay_chars = Some(*replay_chars);
                        ("recreated", *expect != Some(ResumeExpect::SameHandle))
                    }
                };
                resumed.action = action.into();
                resumed.write_to(&mut detail);
                if !matches {
                    return Err(StepFailure::new(diagnose::other(
                        SignatureKind::Client,
                        format!("resumeSession did {action}, which the scenario does not expect"),
                    ))
                    .with_detail(detail));
                }
            }
            Step::DestroySession { client, session } => {
                let id = self.session_id(session);
                self.client(client)?
                    .destroy_session(&id)
                    .await
                    .map_err(|e| self.fail(&e))?;
            }
            Step::Dispose { client } => {
                if let Some(c) = self.clients.remove(client) {
                    c.dispose().await;
                }
            }
            Step::Sleep { duration } => tokio::time::sleep(*duration).await,
            Step::Health { client } => {
                let health = self
                    .client(client)?
                    .health()
                    .await
                    .map_err(|e| self.fail(&e))?;
                HealthDetail { health }.write_to(&mut detail);
            }
            Step::WriteFile {
                client,
                path,
                content,
            } => return self.write_file(client, path, content).await,
            Step::ReadFile { client, path } => return self.read_file(client, path).await,
            Step::SpawnProcess {
                client,
                process,
                command,
                tty,
            } => return self.spawn_process(client, process, command, *tty).await,
            Step::ProcessStatus {
                client,
                process,
                expect,
                logs_contain,
            } => {
                return self
                    .process_status(client, process, *expect, logs_contain.as_deref())
                    .await
            }
            Step::TerminalAttach {
                client,
                process,
                terminal,
            } => return self.terminal_attach(client, process, terminal).await,
            Step::TerminalSend { terminal, text } => {
                return self.terminal_send(terminal, text).await
            }
            Step::TerminalExpect { terminal, text } => {
                return self.terminal_expect(terminal, text.as_deref()).await
            }
            Step::TerminalReattach { client, terminal } => {
                return self.terminal_reattach(client, terminal).await
            }
            Step::RecoverSession {
                client,
                session,
                text,
            } => return self.recover_session(client, session, text).await,
            Step::Probe { client } => {
                let c = self.client(client)?;
                let limit = std::time::Duration::from_millis(PROBE_LIMIT_MS);
                let Ok(probe) =
                    tokio::time::timeout(limit, c.run_process("pwd", PROBE_LIMIT_MS)).await
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
                        ProbeDetail {
                            status: "connected".into(),
                            stdout: Some(result.get("stdout").cloned().unwrap_or(Value::Null)),
                        }
                        .write_to(&mut detail);
                    }
                    Ok(result) => {
                        return Err(StepFailure::new(diagnose::other(
                            SignatureKind::Protocol,
                            format!("pwd did not succeed: {result}"),
                        ))
                        .with_detail(ProbeDetail::failed("error")))
                    }
                    Err(e) => {
                        return Err(self
                            .fail(&e)
                            .with_detail(ProbeDetail::failed(probe_status(&e))))
                    }
                }
            }
        }
        Ok(detail)
    }

    /// Restarts the target for phase `phase` and records the result.
    pub(super) async fn restart(&mut self, phase: &str) -> StepResult {
        self.restart_detail(phase).await.map(|d| d.to_map())
    }

    /// [`Self::restart`]'s typed detail, for steps that add to it.
    pub(super) async fn restart_detail(
        &mut self,
        phase: &str,
    ) -> Result<RestartDetail, StepFailure> {
        let mut clients_renewed = None;
        let trace = &self.settings.trace;
        trace.emit(Event::RestartStart);
        if self.restarter.restarts_clients() && self.hosted.is_none() {
            clients_renewed = Some(self.renew_clients().await?);
        }
        let trace = &self.settings.trace;
        let report = self.restarter.restart(phase).await;
        trace.emit(Event::RestartEnd(event::RestartEnd {
            ok: report.ok,
            action: report.action.clone(),
            restart_ms: report.restart_ms,
            ready_ms: report.ready_ms,
            down: report.down.clone(),
            detail: report.detail.clone(),
        }));
        self.restarted_at = Some(std::time::Instant::now());
        self.restarted_at_ms = Some(crate::provider::now_ms());
        self.restarts.push(report.clone());
        let detail = RestartDetail {
            clients_renewed,
            action: report.action.clone(),
            restart_ms: report.restart_ms,
            ready_ms: report.ready_ms,
        };
        if !report.ok {
            let message = report.detail.unwrap_or_else(|| "restart failed".into());
            return Err(
                StepFailure::new(diagnose::other(SignatureKind::Harness, message))
                    .with_detail(detail.to_map()),
            );
        }
        Ok(detail)
    }

    async fn prompt(
        &mut self,
        client: &str,
        session: &str,
        text: String,
    ) -> Result<String, StepFailure> {
        let id = self.session_id(session);
        self.transcripts
            .entry(session.to_string())
            .or_default()
            .push(text.clone());
        let blocks = vec![json!({"type": "text", "text": text})];
        let outcome = self
            .client(client)?
            .prompt(&id, blocks)
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(outcome.stop_reason)
    }

    /// Every event the clients sharing `reader`'s store wrote must be in that
    /// store once, with `eventIndex` 1..n and no gaps.
    pub(super) async fn check_integrity(
        &self,
        reader: &str,
        id: &str,
        detail: &mut Map<String, Value>,
    ) -> Result<(), StepFailure> {
        let store = Arc::clone(self.client(reader)?.persist());
        // A client the `client` target retired counts under its name: its
        // store died with it when it was its own memory.
        let retired = self
            .retired
            .iter()
            .filter(|(name, c)| name == reader || Arc::ptr_eq(c.persist(), &store))
            .map(|(_, c)| c);
        let writers: Vec<&Arc<Client>> = self
            .clients
            .values()
            .filter(|c| Arc::ptr_eq(c.persist(), &store))
            .chain(retired)
            .collect();
        for client in &writers {
            client.flush().await;
        }
        let events = list_all_events(store.as_ref(), id)
            .await
            .map_err(|e| StepFailure::new(diagnose::other(SignatureKind::Client, e.to_string())))?;
        let stored: u64 = writers.iter().map(|c| c.events_stored(id)).sum();
        let write_failures: Vec<String> =
            writers.iter().flat_map(|c| c.persist_failures()).collect();
        let indexes: BTreeSet<i64> = events.iter().map(|e| e.event_index).collect();
        let duplicates = events.len() - indexes.len();
        let max = indexes.iter().next_back().copied().unwrap_or(0);
        let gaps = (1..=max).filter(|i| !indexes.contains(i)).count();
        let silent = stored.saturating_sub(events.len() as u64) as usize;
        let (writes, how) = super::hosted_data::write_loss(
            silent,
            write_failures.len(),
            write_failures.first().map(String::as_str),
        );
        let lost = silent + write_failures.len();
        let integrity = IntegrityDetail {
            events_never_written: None,
            writes,
            events_total: events.len(),
            events_recorded: stored as usize + write_failures.len(),
            events_lost: lost,
            events_duplicated: duplicates,
            index_gaps: gaps,
        };
        integrity.write_to(detail);
        if integrity.is_clean() {
            return Ok(());
        }
        let message = format!("history has {} events, clients recorded {}: {lost} lost, {duplicates} duplicated, {gaps} index gaps{how}", events.len(), stored as usize + write_failures.len());
        Err(
            StepFailure::new(diagnose::other(SignatureKind::Integrity, message))
                .with_detail(detail.clone()),
        )
    }
}
