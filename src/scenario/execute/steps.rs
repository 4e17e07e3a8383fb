//! What each step kind does: connect, sessions, prompts, restarts, event
//! reads with the integrity check, resume, probes. Each returns the detail
//! for the report, or a failure with its signature.
//!
//! Over 400 lines on purpose: `run_step` is the one dispatch from a step
//! kind to what it does (the step-kind recipe's line here), and the session
//! steps beside it share the running cell's clients and sessions; sandbox,
//! terminal, turn and recovery steps are apart.

use super::driver::{PromptAnswer, ScenarioClient};
use super::{expect_stop, rehydrate_text, CellStore, RunningCell, StepFailure, StepResult};
use crate::client::{Client, ClientOptions};
use crate::diagnose;
use crate::persist::{list_all_events, MemoryDriver, PersistDriver};
use crate::report::detail::{
    Detail, IntegrityDetail, PromptDetail, RehydrateDetail, RestartDetail, ResumeDetail, StopDetail,
};
use crate::report::SignatureKind;
use crate::scenario::{Phase, ResumeExpect, Step};
use crate::trace::event::{self, Event};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

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
        options.headers_timeout = self.settings.headers_timeout;
        options.trace = self.settings.trace.clone();
        Client::connect(options).map_err(|e| self.fail(&e))
    }

    pub(super) fn fail(&self, error: &crate::client::ClientError) -> StepFailure {
        StepFailure::new(diagnose::signature(error, self.settings.token.as_ref()))
    }

    /// Runs one phase's step through the cell's client: restarts, sleeps
    /// and the collecting of turns are the executor's, every other step
    /// the client's (a step it does not support never gets here). The
    /// match is exhaustive, so a new step is given its place here.
    pub(super) async fn run_step(&mut self, phase: &Phase) -> StepResult {
        let client = Arc::clone(&self.client);
        let phase_name = phase.name.as_str();
        match &phase.step {
            Step::Restart => {
                // A restart may take the client's host with it (the rivet
                // target): what its log holds is fetched before that. A
                // fault that kills no process leaves it where it is.
                if !self.restarter.leaves_processes_running() {
                    client.before_restart(phase_name).await;
                }
                self.restart(phase_name).await
            }
            Step::RestartDuringTurn { after } => self.restart_during_turn(phase_name, *after).await,
            Step::Sleep { duration } => {
                tokio::time::sleep(*duration).await;
                Ok(Map::new())
            }
            Step::AwaitTurn { turn, deadline } => {
                let deadline = deadline.unwrap_or(self.settings.default_timeout);
                client.await_turn(self, turn, deadline).await
            }
            step @ (Step::Connect { .. }
            | Step::CreateSession { .. }
            | Step::Prompt { .. }
            | Step::RehydratePrompt { .. }
            | Step::GetEvents { .. }
            | Step::ResumeSession { .. }
            | Step::DestroySession { .. }
            | Step::Dispose { .. }
            | Step::Health { .. }
            | Step::ReplayCheck { .. }) => self.session_step(&*client, step).await,
            Step::StartSandbox { client: name } => client.start_sandbox(self, name).await,
            Step::ReattachSandbox {
                client: name,
                expect,
            } => client.reattach_sandbox(self, name, *expect).await,
            Step::DestroySandbox { client: name } => client.destroy_sandbox(self, name).await,
            step @ (Step::Probe { .. }
            | Step::WriteFile { .. }
            | Step::ReadFile { .. }
            | Step::SpawnProcess { .. }
            | Step::ProcessStatus { .. }
            | Step::TerminalAttach { .. }
            | Step::TerminalSend { .. }
            | Step::TerminalExpect { .. }
            | Step::TerminalReattach { .. }
            | Step::StartTurn { .. }
            | Step::TurnHistory { .. }
            | Step::RecoverTurn { .. }
            | Step::RecoverSession { .. }) => self.sandbox_step(&*client, step).await,
        }
    }

    /// The session family: connect, sessions, prompts, events, resume, health.
    async fn session_step(&mut self, client: &dyn ScenarioClient, step: &Step) -> StepResult {
        let mut detail = Map::new();
        match step {
            Step::Connect { client: name } => client.connect(self, name).await?,
            Step::CreateSession {
                client: name,
                session,
                cwd,
            } => {
                let id = self.session_id(session);
                let created = client.create_session(self, name, &id, cwd).await?;
                created.write_to(&mut detail);
            }
            Step::Prompt {
                client: name,
                session,
                texts,
                expect_stop_reason,
            } => {
                let expect = expect_stop_reason.as_deref();
                return self.prompts(client, name, session, texts, expect).await;
            }
            Step::RehydratePrompt {
                client: name,
                session,
                from,
            } => {
                let prompts = self.transcripts.get(from).cloned().unwrap_or_default();
                let text = rehydrate_text(&prompts);
                let answer = self.send_prompt(client, name, session, text).await?;
                answer.write_to(&mut detail);
                RehydrateDetail {
                    stop_reason: answer.stop_reason,
                    rehydrated_prompts: prompts.len(),
                }
                .write_to(&mut detail);
            }
            Step::GetEvents {
                client: name,
                session,
                limit,
                integrity,
            } => {
                let id = self.session_id(session);
                return client.get_events(self, name, &id, *limit, *integrity).await;
            }
            Step::ResumeSession {
                client: name,
                session,
                expect,
            } => {
                let id = self.session_id(session);
                let resumed = client.resume_session(self, name, &id).await?;
                return expect_resume(resumed, *expect);
            }
            Step::DestroySession {
                client: name,
                session,
            } => {
                let id = self.session_id(session);
                client.destroy_session(self, name, &id).await?;
            }
            Step::Dispose { client: name } => client.dispose(self, name).await?,
            Step::Health { client: name } => client.health(self, name).await?.write_to(&mut detail),
            Step::ReplayCheck {
                client: name,
                session,
            } => return self.replay_check(client, name, session).await,
            other => return Err(client.cannot(other.kind())),
        }
        Ok(detail)
    }

    /// The sandbox family (files, processes, terminals, the probe), the
    /// turns that run on and the recovering client's step.
    async fn sandbox_step(&mut self, client: &dyn ScenarioClient, step: &Step) -> StepResult {
        match step {
            Step::Probe { client: name } => client.probe(self, name).await,
            Step::WriteFile {
                client: name,
                path,
                content,
            } => client.write_file(self, name, path, content).await,
            Step::ReadFile { client: name, path } => client.read_file(self, name, path).await,
            Step::SpawnProcess {
                client: name,
                process,
                command,
                tty,
            } => {
                client
                    .spawn_process(self, name, process, command, *tty)
                    .await
            }
            Step::ProcessStatus {
                client: name,
                process,
                expect,
                logs_contain,
            } => {
                let logs = logs_contain.as_deref();
                client
                    .process_status(self, name, process, *expect, logs)
                    .await
            }
            Step::TerminalAttach {
                client: name,
                process,
                terminal,
            } => client.terminal_attach(self, name, process, terminal).await,
            Step::TerminalSend { terminal, text } => {
                client.terminal_send(self, terminal, text).await
            }
            Step::TerminalExpect { terminal, text } => {
                client
                    .terminal_expect(self, terminal, text.as_deref())
                    .await
            }
            Step::TerminalReattach {
                client: name,
                terminal,
            } => client.terminal_reattach(self, name, terminal).await,
            Step::StartTurn {
                client: name,
                session,
                text,
                turn,
            } => client.start_turn(self, name, session, text, turn).await,
            Step::TurnHistory { client: name, turn } => client.turn_history(self, name, turn).await,
            Step::RecoverTurn { client: name, turn } => {
                let evidence = client.turn_evidence(self, name, turn).await?;
                self.recover_turn(turn, evidence).await
            }
            Step::RecoverSession {
                client: name,
                session,
                text,
            } => client.recover_session(self, name, session, text).await,
            other => Err(client.cannot(other.kind())),
        }
    }

    /// `prompt`: each text in turn, each stop reason against the one expected.
    async fn prompts(
        &mut self,
        client: &dyn ScenarioClient,
        name: &str,
        session: &str,
        texts: &[String],
        expect: Option<&str>,
    ) -> StepResult {
        let mut detail = Map::new();
        let mut stop_reason = None;
        for text in texts {
            let answer = self
                .send_prompt(client, name, session, text.clone())
                .await?;
            answer.write_to(&mut detail);
            expect_stop(expect, &answer.stop_reason)?;
            // Written now: the next prompt's own keys come after it.
            StopDetail {
                stop_reason: answer.stop_reason.clone(),
            }
            .write_to(&mut detail);
            stop_reason = Some(answer.stop_reason);
        }
        PromptDetail {
            stop_reason,
            prompts: texts.len(),
        }
        .write_to(&mut detail);
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
        if self.restarter.restarts_clients() && self.client.renews_on_client_restart() {
            clients_renewed = Some(self.renew_clients().await?);
        }
        let trace = &self.settings.trace;
        let crate::targets::Restarted {
            record: report,
            failure,
        } = self.restarter.restart(phase).await;
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
            let signature = diagnose::restart_failed(
                &report,
                failure.as_ref(),
                self.restarter
                    .own_part_brought_back(failure.as_ref().and_then(|f| f.component())),
            );
            return Err(StepFailure::new(signature).with_detail(detail.to_map()));
        }
        Ok(detail)
    }

    /// One prompt of the session's transcript (kept for `rehydrate_prompt`).
    async fn send_prompt(
        &mut self,
        client: &dyn ScenarioClient,
        name: &str,
        session: &str,
        text: String,
    ) -> Result<PromptAnswer, StepFailure> {
        let id = self.session_id(session);
        self.transcripts
            .entry(session.to_string())
            .or_default()
            .push(text.clone());
        client.prompt(self, name, &id, text).await
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
            0,
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

/// A resume's action against the one the scenario expects, if any.
fn expect_resume(resumed: ResumeDetail, expect: Option<ResumeExpect>) -> StepResult {
    let matches = match expect {
        Some(ResumeExpect::SameHandle) => resumed.action == "same_handle",
        Some(ResumeExpect::Recreated) => resumed.action == "recreated",
        None => true,
    };
    if matches {
        return Ok(resumed.to_map());
    }
    Err(StepFailure::new(diagnose::other(
        SignatureKind::Client,
        format!(
            "resumeSession did {}, which the scenario does not expect",
            resumed.action
        ),
    ))
    .with_detail(resumed))
}
