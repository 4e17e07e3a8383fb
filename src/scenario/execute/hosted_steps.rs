//! A cell run by the hosted TypeScript SDK (`--client ts-sdk`): the session
//! steps become actions of the cell's `sdkClient` actor, with the phase's
//! name and deadline; restarts and sleeps stay the harness's. Steps the
//! hosted client cannot take (sandbox files, processes and terminals,
//! overlapping turns, the harness's own recovery) are refused before the
//! cell starts, so such a cell is skipped with the step named, never faked.

use super::{rehydrate_text, Cell, StepFailure, StepResult};
use crate::client::hosted::{HostedClient, HostedError, SdkError};
use crate::diagnose;
use crate::report::{Signature, SignatureKind};
use crate::scenario::{ResumeExpect, Scenario, Step};
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

/// The cell's hosted client and which of the scenario's clients it has connected.
pub struct HostedCell {
    pub client: HostedClient,
    pub(super) connected: HashSet<String>,
    /// The running phase's deadline: the actor bounds the SDK call just past it.
    pub(super) deadline: Duration,
}

impl HostedCell {
    pub fn new(client: HostedClient) -> Self {
        Self {
            client,
            connected: HashSet::new(),
            deadline: Duration::from_secs(30),
        }
    }
}

/// The first step of `scenario` the hosted client cannot take: (phase, step kind).
pub fn unsupported_step(scenario: &Scenario) -> Option<(String, &'static str)> {
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
    )
}

/// The signature of a hosted failure: the SDK's own error classified by
/// what it carries (RPC code, HTTP status, its name), or the Rivet path's.
pub fn hosted_signature(error: &HostedError, token: Option<&crate::secret::Secret>) -> Signature {
    let text = diagnose::mask_ids(&crate::secret::redact_known(&crate::secret::redact(
        &error.to_string(),
        token,
    )));
    let mut sig = diagnose::other(SignatureKind::Client, text);
    match error {
        HostedError::Sdk(sdk) => classify_sdk(sdk, &mut sig),
        HostedError::Unreachable { .. } => sig.kind = SignatureKind::Connect,
        HostedError::Actor { status, .. } => {
            sig.kind = SignatureKind::Http;
            sig.http_status = Some(*status);
        }
        HostedError::Protocol { .. } => sig.kind = SignatureKind::Protocol,
    }
    sig
}

fn classify_sdk(sdk: &SdkError, sig: &mut Signature) {
    sig.http_status = sdk.http_status();
    sig.problem_type = sdk
        .problem_type()
        .map(|t| t.rsplit(':').next().unwrap_or(&t).to_string());
    sig.rpc_code = sdk.rpc_code();
    let names: Vec<&str> = sdk.chain().map(|e| e.name.as_str()).collect();
    let text = sdk.describe();
    sig.kind = if sig.rpc_code.is_some() {
        SignatureKind::Rpc
    } else if sig.http_status.is_some() {
        SignatureKind::Http
    } else if names.contains(&"ActorTimeout") {
        SignatureKind::Timeout
    } else if text.contains("health") || text.contains("fetch failed") {
        // The health wait, or fetch itself (refused, reset): the server was not there.
        SignatureKind::Connect
    } else {
        SignatureKind::Client
    };
}

impl Cell<'_> {
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
            .call(
                action,
                Value::Object(args),
                timeout.max(Duration::from_secs(30)),
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
    pub(super) async fn run_hosted_step(&mut self, phase: &str, step: &Step) -> StepResult {
        let mut detail = Map::new();
        let base = |client: &str| -> Map<String, Value> {
            let mut m = Map::new();
            m.insert("phase".into(), phase.into());
            m.insert("client".into(), client.into());
            m
        };
        match step {
            Step::Restart | Step::Sleep { .. } => return self.run_step(step).await,
            Step::Connect { client } => {
                let mut args = base(client);
                args.insert("baseUrl".into(), self.settings.base_url.clone().into());
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
                for text in texts {
                    let stop = self
                        .hosted_prompt(phase, client, session, text.clone(), &mut detail)
                        .await?;
                    if let Some(expected) = expect_stop_reason.as_deref().filter(|e| *e != stop) {
                        return Err(StepFailure::new(diagnose::other(
                            SignatureKind::Protocol,
                            format!("stopReason {stop}, expected {expected}"),
                        ))
                        .with("stopReason", stop));
                    }
                    detail.insert("stopReason".into(), stop.into());
                }
                detail.insert("prompts".into(), texts.len().into());
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
                detail.insert("stopReason".into(), stop.into());
                detail.insert("rehydratedPrompts".into(), prompts.len().into());
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
                    check_history(&out, &mut detail)?;
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
                detail.insert("action".into(), action.clone().into());
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

    /// What the actor app recorded as unhandled rejections during this cell.
    pub(super) async fn hosted_faults(&self) -> Vec<Value> {
        let Some(hosted) = self.hosted.as_ref() else {
            return Vec::new();
        };
        match hosted
            .client
            .call("faults", json!({"phase": "faults"}), Duration::from_secs(5))
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

    /// Destroys the cell's actor (its SDK clients closed first): one cell,
    /// one actor, none left behind on the runner.
    pub(super) async fn retire_hosted(&self) {
        if let Some(hosted) = self.hosted.as_ref() {
            let _ = hosted
                .client
                .call("retire", json!({"phase": "retire"}), Duration::from_secs(5))
                .await;
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

/// Puts each unhandled rejection (or uncaught exception) the actor app
/// recorded into the detail of the phase it happened in
/// (`unhandledRejections`), or of the last phase when it came after them.
pub(super) fn attach_faults(faults: &[Value], results: &mut [crate::report::PhaseResult]) {
    for fault in faults {
        let phase = fault.get("phase").and_then(Value::as_str).unwrap_or("");
        let at = results
            .iter()
            .position(|r| r.name == phase)
            .or(results.len().checked_sub(1));
        let Some(at) = at else { continue };
        let error = fault.get("error").cloned().unwrap_or(Value::Null);
        let entry = json!({
            "kind": fault.get("kind").cloned().unwrap_or(Value::Null),
            "phase": phase,
            "name": error.get("name").cloned().unwrap_or(Value::Null),
            "message": diagnose::mask_ids(&crate::secret::redact_known(
                error.get("message").and_then(Value::as_str).unwrap_or(""),
            )),
            "status": error.get("status").cloned().unwrap_or(Value::Null),
            "problemType": error.get("problem").and_then(|p| p.get("type")).cloned().unwrap_or(Value::Null),
        });
        let list = results[at]
            .detail
            .entry("unhandledRejections")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(entry);
        }
    }
}

/// The stored history against what the SDK asked the store to keep: each
/// event once, `eventIndex` 1..n with no gaps.
fn check_history(
    out: &Map<String, Value>,
    detail: &mut Map<String, Value>,
) -> Result<(), StepFailure> {
    let history = out
        .get("history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let recorded = out.get("recorded").and_then(Value::as_u64).unwrap_or(0) as usize;
    let indexes: BTreeSet<i64> = history
        .iter()
        .filter_map(|e| e.get("eventIndex").and_then(Value::as_f64))
        .map(|i| i as i64)
        .collect();
    let ids: BTreeSet<&str> = history
        .iter()
        .filter_map(|e| e.get("id").and_then(Value::as_str))
        .collect();
    let duplicates = history.len() - indexes.len();
    let max = indexes.iter().next_back().copied().unwrap_or(0);
    let gaps = (1..=max).filter(|i| !indexes.contains(i)).count();
    // Both counts live in the actor's state: a lost save loses the count
    // too, so what this catches is a hole in the middle (gaps) or a write
    // the store dropped while the SDK went on.
    let lost = recorded.saturating_sub(ids.len());
    detail.insert("eventsTotal".into(), history.len().into());
    detail.insert("eventsRecorded".into(), recorded.into());
    detail.insert("eventsLost".into(), lost.into());
    detail.insert("eventsDuplicated".into(), duplicates.into());
    detail.insert("indexGaps".into(), gaps.into());
    if duplicates == 0 && gaps == 0 && lost == 0 {
        return Ok(());
    }
    Err(StepFailure::new(diagnose::other(
        SignatureKind::Integrity,
        format!(
            "history has {} events, the SDK stored {recorded}: {lost} lost, {duplicates} duplicated, {gaps} index gaps",
            history.len()
        ),
    ))
    .with_detail(detail.clone()))
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = from.get(*key) {
            to.insert((*key).into(), v.clone());
        }
    }
}

fn sdk_json(sdk: &SdkError) -> Value {
    let mut chain = Vec::new();
    for e in sdk.chain() {
        let mut m = Map::new();
        m.insert("name".into(), e.name.clone().into());
        m.insert(
            "message".into(),
            diagnose::mask_ids(&crate::secret::redact_known(&e.message)).into(),
        );
        if let Some(s) = e.status {
            m.insert("status".into(), s.into());
        }
        if let Some(p) = &e.problem {
            m.insert("problem".into(), p.clone());
        }
        if let Some(c) = &e.code {
            m.insert("code".into(), c.clone());
        }
        chain.push(Value::Object(m));
    }
    Value::Array(chain)
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
            ["write_file", "probe", "spawn_process"].contains(&kind),
            "{kind}"
        );
        assert!(unsupported_step(find("restart-mid-turn")).is_some());
    }

    #[test]
    fn the_sdks_400_is_an_http_signature_and_its_timeout_a_timeout() {
        let sdk = |v: Value| HostedError::Sdk(serde_json::from_value(v).unwrap());
        let http = hosted_signature(
            &sdk(
                json!({"name": "AcpHttpError", "message": "Bad Request", "status": 400,
                "problem": {"type": "urn:sandbox-agent:error:invalid_request"}}),
            ),
            None,
        );
        assert_eq!(
            (http.kind, http.http_status, http.problem_type.as_deref()),
            (SignatureKind::Http, Some(400), Some("invalid_request"))
        );
        let timeout = hosted_signature(
            &sdk(
                json!({"name": "ActorTimeout", "message": "promptSameHandleAfterRestart: no answer within 5000 ms"}),
            ),
            None,
        );
        assert_eq!(timeout.kind, SignatureKind::Timeout);
        let closed = hosted_signature(
            &sdk(json!({"name": "Error", "message": "ACP client is closed"})),
            None,
        );
        assert_eq!(closed.kind, SignatureKind::Client);
    }

    #[test]
    fn a_history_with_a_gap_or_a_lost_event_fails_integrity() {
        let out = |history: Value, recorded: u64| -> Map<String, Value> {
            json!({"history": history, "recorded": recorded})
                .as_object()
                .cloned()
                .unwrap()
        };
        let mut d = Map::new();
        let whole = out(
            json!([{"id": "a", "eventIndex": 1}, {"id": "b", "eventIndex": 2}]),
            2,
        );
        assert!(check_history(&whole, &mut d).is_ok());
        let gap = out(
            json!([{"id": "a", "eventIndex": 1}, {"id": "c", "eventIndex": 3}]),
            2,
        );
        assert!(check_history(&gap, &mut d).is_err());
        let lost = out(json!([{"id": "a", "eventIndex": 1}]), 2);
        let failure = check_history(&lost, &mut d).unwrap_err();
        assert_eq!(failure.signature.kind, SignatureKind::Integrity);
        assert_eq!(d["eventsLost"], 1);
    }
}
