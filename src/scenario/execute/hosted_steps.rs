//! A cell run by the hosted TypeScript SDK (`--client ts-sdk`): the session
//! steps become actions of the cell's `sdkClient` actor, with the phase's
//! name and deadline; restarts and sleeps stay the harness's. Steps the
//! hosted client cannot take (sandbox files, processes and terminals,
//! overlapping turns, the harness's own recovery) are refused before the
//! cell starts, so such a cell is skipped with the step named, never faked.

use super::hosted_data::{check_history, copy, hosted_signature, sdk_json};
use super::{expect_stop, rehydrate_text, RunningCell, StepFailure, StepResult};
use crate::client::hosted::{CallKind, HostedClient, HostedError};
use crate::diagnose;
use crate::report::detail::{Detail, PromptDetail, RehydrateDetail, ResumeDetail, StopDetail};
use crate::report::SignatureKind;
use crate::scenario::{Phase, ResumeExpect, Scenario, Step, StepKind};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::time::Duration;

/// How long fetching the SDK's wire records before a restart may take.
const WIRE_BEFORE_RESTART: Duration = Duration::from_secs(2);

/// The cell's hosted client and which of the scenario's clients it has connected.
pub struct HostedCell {
    pub client: HostedClient,
    /// The SDK module the actor imports for this cell's clients (its SDK point).
    pub(super) sdk_module: Option<std::path::PathBuf>,
    pub(super) connected: HashSet<String>,
    /// The running phase's deadline: the actor bounds the SDK call just past it.
    pub(super) deadline: Duration,
    /// The `SessionPersistDriver` the actor builds for the cell's SDK
    /// clients (`stack/rivet/drivers.mjs`); its own state when `None`.
    pub(super) store: Option<Value>,
}

impl HostedCell {
    /// `sdk_module`: the SDK point's module the hosted actor imports (none:
    /// the client's own SDK, as the browser page bundles it).
    pub fn new(client: HostedClient, sdk_module: Option<std::path::PathBuf>) -> Self {
        Self {
            client,
            sdk_module,
            connected: HashSet::new(),
            deadline: Duration::from_secs(30),
            store: None,
        }
    }

    /// Its actions and the SDK's wire written into the cell's `trace`.
    pub(super) fn traced(self, trace: crate::trace::Trace) -> Self {
        Self {
            client: self.client.traced(trace),
            ..self
        }
    }
    /// The cell's SDK clients keep their sessions in `store`.
    pub fn with_store(mut self, store: Option<Value>) -> Self {
        self.store = store;
        self
    }
}

/// The `history` action's events: each one a JSON text, so no hop on the
/// way (the Rivet Engine re-encodes objects with sorted keys) changes the
/// payloads the replay was built from.
fn parse_history(
    out: &Map<String, Value>,
) -> Result<Vec<crate::persist::SessionEvent>, StepFailure> {
    let protocol =
        |message: String| StepFailure::new(diagnose::other(SignatureKind::Protocol, message));
    out.get("events")
        .and_then(Value::as_array)
        .ok_or_else(|| protocol("history: no `events` list".into()))?
        .iter()
        .map(|text| {
            let text = text
                .as_str()
                .ok_or_else(|| protocol("history: an event that is not a JSON text".into()))?;
            serde_json::from_str(text).map_err(|e| protocol(format!("history: {e}")))
        })
        .collect()
}

/// The first step of `scenario` the hosted client cannot take: (phase, step kind).
pub fn unsupported_step(scenario: &Scenario) -> Option<(String, StepKind)> {
    scenario
        .phases
        .iter()
        .chain(&scenario.cleanup)
        .find(|p| !supported(&p.step))
        .map(|p| (p.name.clone(), p.step.kind()))
}

fn supported(step: &Step) -> bool {
    matches!(
        step,
        Step::Connect { .. }
            | Step::CreateSession { .. }
            | Step::Prompt { .. }
            | Step::RehydratePrompt { .. }
            | Step::Restart
            | Step::GetEvents { .. }
            | Step::ResumeSession { .. }
            | Step::DestroySession { .. }
            | Step::Dispose { .. }
            | Step::Sleep { .. }
            | Step::Health { .. }
            | Step::ReplayCheck { .. }
    )
}

impl RunningCell<'_> {
    fn hosted(&self) -> &HostedCell {
        self.hosted
            .as_ref()
            .expect("only hosted cells run hosted steps")
    }

    /// Calls `action` for the phase that runs `step`, waiting for the actor
    /// as long as the step's own deadline lets it.
    async fn act(
        &self,
        action: &str,
        mut args: Map<String, Value>,
    ) -> Result<Map<String, Value>, StepFailure> {
        let timeout = self.hosted().deadline;
        args.insert("timeoutMs".into(), (timeout.as_millis() as u64).into());
        self.hosted()
            .client
            .call_as(
                CallKind::Scenario,
                action,
                Value::Object(args),
                timeout.max(Duration::from_secs(30)),
                Some(timeout),
            )
            .await
            .map_err(|e| {
                StepFailure::new(hosted_signature(&e, self.settings.token.as_ref())).with(
                    "sdkError",
                    match &e {
                        HostedError::Sdk(sdk) => sdk_json(sdk),
                        other => Value::String(other.to_string()),
                    },
                )
            })
    }

    /// Runs a step through the hosted SDK client.
    pub(super) async fn run_hosted_step(&mut self, running: &Phase) -> StepResult {
        let (phase, step) = (running.name.as_str(), &running.step);
        let mut detail = Map::new();
        let base = |client: &str| -> Map<String, Value> {
            let mut m = Map::new();
            m.insert("phase".into(), phase.into());
            m.insert("client".into(), client.into());
            m
        };
        match step {
            Step::Restart => {
                // A restart may take the actor's process with it (the rivet
                // target): what its log holds is fetched before that.
                self.hosted()
                    .client
                    .drain_wire(phase, WIRE_BEFORE_RESTART)
                    .await;
                return self.run_step(running).await;
            }
            Step::Sleep { .. } => return self.run_step(running).await,
            Step::Connect { client } => {
                let mut args = base(client);
                args.insert("baseUrl".into(), self.settings.base_url.clone().into());
                if let Some(module) = &self.hosted().sdk_module {
                    args.insert("sdk".into(), module.display().to_string().into());
                }
                if let Some(store) = &self.hosted().store {
                    args.insert("persist".into(), store.clone());
                }
                if !self.settings.headers.is_empty() {
                    let headers: Map<String, Value> = self
                        .settings
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect();
                    args.insert("headers".into(), Value::Object(headers));
                }
                self.act("connect", args).await?;
                self.hosted
                    .as_mut()
                    .expect("hosted")
                    .connected
                    .insert(client.clone());
            }
            Step::CreateSession {
                client,
                session,
                cwd,
            } => {
                let mut args = base(client);
                args.insert("id".into(), self.session_id(session).into());
                args.insert("agent".into(), self.settings.agent.clone().into());
                args.insert("cwd".into(), cwd.clone().into());
                let out = self.act("createSession", args).await?;
                copy(&out, &mut detail, &["sessionId", "agentSessionId"]);
            }
            Step::Prompt {
                client,
                session,
                texts,
                expect_stop_reason,
            } => {
                let mut stop_reason = None;
                for text in texts {
                    let stop = self
                        .hosted_prompt(phase, client, session, text.clone(), &mut detail)
                        .await?;
                    expect_stop(expect_stop_reason.as_deref(), &stop)?;
                    // Written now: the next prompt's own keys come after it.
                    StopDetail {
                        stop_reason: stop.clone(),
                    }
                    .write_to(&mut detail);
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
                    .hosted_prompt(
                        phase,
                        client,
                        session,
                        rehydrate_text(&prompts),
                        &mut detail,
                    )
                    .await?;
                RehydrateDetail {
                    stop_reason: stop,
                    rehydrated_prompts: prompts.len(),
                }
                .write_to(&mut detail);
            }
            Step::GetEvents {
                client,
                session,
                limit,
                integrity,
            } => {
                let mut args = base(client);
                args.insert("id".into(), self.session_id(session).into());
                args.insert("limit".into(), (*limit).into());
                let out = self.act("getEvents", args).await?;
                copy(&out, &mut detail, &["eventsObserved"]);
                if *integrity {
                    let sent = self.settings.agent_sent_log.as_deref();
                    check_history(&out, sent, *limit, &mut detail)?;
                }
            }
            Step::ResumeSession {
                client,
                session,
                expect,
            } => {
                let mut args = base(client);
                args.insert("id".into(), self.session_id(session).into());
                let out = self.act("resumeSession", args).await?;
                let action = out
                    .get("action")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string();
                ResumeDetail {
                    action: action.clone(),
                    ..ResumeDetail::default()
                }
                .write_to(&mut detail);
                let matches = match expect {
                    Some(ResumeExpect::SameHandle) => action == "same_handle",
                    Some(ResumeExpect::Recreated) => action == "recreated",
                    None => true,
                };
                if !matches {
                    return Err(StepFailure::new(diagnose::other(
                        SignatureKind::Client,
                        format!("resumeSession did {action}, which the scenario does not expect"),
                    ))
                    .with_detail(detail));
                }
            }
            Step::DestroySession { client, session } => {
                let mut args = base(client);
                args.insert("id".into(), self.session_id(session).into());
                self.act("destroySession", args).await?;
            }
            Step::Dispose { client } => {
                let connected = self
                    .hosted
                    .as_mut()
                    .expect("hosted")
                    .connected
                    .remove(client);
                if connected {
                    self.act("dispose", base(client)).await?;
                }
            }
            Step::Health { client } => {
                let out = self.act("health", base(client)).await?;
                copy(&out, &mut detail, &["health"]);
            }
            Step::ReplayCheck { client, session } => {
                let mut args = base(client);
                args.insert("id".into(), self.session_id(session).into());
                let out = self.act("history", args).await?;
                let events = parse_history(&out)?;
                return super::client_restart::judge_replay(
                    &events,
                    crate::client::DEFAULT_REPLAY_MAX_EVENTS,
                    crate::client::DEFAULT_REPLAY_MAX_CHARS,
                );
            }
            other => {
                return Err(StepFailure::new(diagnose::other(
                    SignatureKind::Harness,
                    format!("the ts-sdk client cannot run step `{}`", other.kind()),
                )))
            }
        }
        Ok(detail)
    }

    async fn hosted_prompt(
        &mut self,
        phase: &str,
        client: &str,
        session: &str,
        text: String,
        detail: &mut Map<String, Value>,
    ) -> Result<String, StepFailure> {
        self.transcripts
            .entry(session.to_string())
            .or_default()
            .push(text.clone());
        let args = json!({
            "phase": phase,
            "client": client,
            "id": self.session_id(session),
            "text": text,
        });
        let Value::Object(args) = args else {
            unreachable!("json! of an object")
        };
        let out = self.act("prompt", args).await?;
        copy(&out, detail, &["handle", "clientRebuilt"]);
        Ok(out
            .get("stopReason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string())
    }

    /// Whether `client` was connected through the hosted SDK (cleanup runs only for those).
    pub(super) fn hosted_connected(&self, client: &str) -> bool {
        self.hosted
            .as_ref()
            .is_some_and(|h| h.connected.contains(client))
    }

    /// Destroys the cell's actor (its SDK clients closed first): one cell,
    /// one actor, none left behind on the runner. Returns what the actor
    /// app recorded as unhandled rejections during the cell.
    pub(super) async fn retire_hosted(&self) -> Vec<Value> {
        let Some(hosted) = self.hosted.as_ref() else {
            return Vec::new();
        };
        match hosted
            .client
            .call("retire", json!({"phase": "retire"}), Duration::from_secs(5))
            .await
        {
            Ok(out) => out
                .get("faults")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Disposes every hosted SDK client the scenario left open.
    pub(super) async fn dispose_hosted(&mut self) {
        let Some(hosted) = self.hosted.as_mut() else {
            return;
        };
        let left: Vec<String> = hosted.connected.drain().collect();
        for client in left {
            let _ = self
                .act(
                    "dispose",
                    json!({"phase": "dispose", "client": client})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                )
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_and_turn_steps_are_named_as_unsupported() {
        let all = crate::scenario::builtin_scenarios();
        let find = |name: &str| all.iter().find(|s| s.name == name).unwrap();
        assert_eq!(unsupported_step(find("native-continuity")), None);
        assert_eq!(unsupported_step(find("recreate-rehydrate")), None);
        let (_, kind) = unsupported_step(find("sandbox-reconnect")).expect("sandbox steps");
        assert!(
            ["write_file", "probe", "spawn_process"].contains(&kind.name()),
            "{kind}"
        );
        assert!(unsupported_step(find("restart-mid-turn")).is_some());
    }
}
