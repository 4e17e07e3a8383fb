//! Two of the executor's three clients: the real SDK hosted in the cell's
//! `sdkClient` actor ([`TsSdkClient`], `--client ts-sdk`) or in a page of
//! Chromium ([`BrowserClient`], `--client browser`). Both are
//! [`SdkClient`] over their host ([`SdkHost`]: where the actions are
//! answered), so each step is written once. Each step the SDK takes
//! becomes one typed action ([`SdkAction`]) with the phase's name and
//! deadline; its answer comes back typed ([`crate::client::sdk_action`]).
//! Its turns, sandbox and terminal steps are in `sdk_client/steps.rs`, its
//! sandbox provider's in `sdk_client/provider.rs`; the one step the SDK
//! has no call for (`recover_session`) is declared unsupported, naming
//! the call, and reported not applicable.
//! Giving it a step: its action in `stack/rivet/sdk-client.mjs` and
//! `stack/browser/page.mjs`, a variant of [`SdkAction`], one method here
//! and its line in [`unsupported`]'s list of the steps it takes (a step
//! not listed is not applicable for the SDK, never a harness error).
//!
//! Over 400 lines on purpose: it is the one `ScenarioClient` of both SDK
//! hosts (the actor and the browser page), one method per step, each turning
//! its step into an `SdkAction`, beside the one list of the steps the SDK
//! takes (`unsupported`) that the methods must agree with; the turns,
//! sandbox and terminal steps and the provider are already apart
//! (`sdk_client/`).

mod provider;
mod steps;

use super::driver::{PromptAnswer, ScenarioClient, Unsupported};
use super::hosted_data::{check_history, copy, hosted_signature, sdk_json};
use super::{RunningCell, StepFailure, StepResult};
use crate::client::browser::BrowserPage;
use crate::client::hosted::{ActorHost, CallKind, HostedClient, HostedError, SdkHost};
use crate::client::sdk_action::{self, answer, SdkAction};
use crate::diagnose;
use crate::persist::SessionEvent;
use crate::report::detail::{CreateSessionDetail, HealthDetail, ResumeDetail};
use crate::report::SignatureKind;
use crate::scenario::{ProcessExpect, Step};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;
use steps::HostedTurn;

/// How long fetching the SDK's wire records before a restart may take.
const WIRE_BEFORE_RESTART: Duration = Duration::from_secs(2);

/// The call [`NO_RECOVERY`] names, in a few words.
const NO_RECOVERY_CALL: &str = "session/load on a new server id";
/// What sandbox-agent 0.4.2's SDK has no call for: the steps it cannot take.
const NO_RECOVERY: &str = "sandbox-agent SDK 0.4.2 has no call to session/load an agent session on a new server id: rawSendSessionMethod rewrites params.sessionId to the session it has bound, and its live connection to a lost server id is never replaced";

/// The cell's SDK client hosted by `H` (the actor or the page) and which
/// of the scenario's clients it has connected. `SdkClient<ActorHost>` is
/// `--client ts-sdk` ([`TsSdkClient`]), `SdkClient<BrowserPage>` is
/// `--client browser` ([`BrowserClient`]): the SDK's API, and so each of
/// its steps, is the same wherever it runs, and is written once, here.
pub(crate) struct SdkClient<H> {
    pub client: HostedClient<H>,
    /// The SDK module the actor imports for this cell's clients (its SDK point).
    pub(super) sdk_module: Option<std::path::PathBuf>,
    pub(super) connected: Mutex<HashSet<String>>,
    /// The running phase and its deadline: the actor bounds the SDK call just past it.
    running: Mutex<(String, Duration)>,
    /// The turns the SDK's host runs, by name.
    turns: Mutex<HashMap<String, HostedTurn>>,
    /// Each terminal's process, as attached: a reattach names it, since a
    /// host restarted with the target (the Rivet app) has forgotten it.
    terminals: Mutex<HashMap<String, String>>,
    /// The `SessionPersistDriver` the actor builds for the cell's SDK
    /// clients (`stack/rivet/drivers.mjs`); its own state when `None`.
    pub(super) store: Option<Value>,
}

/// The real SDK hosted in the cell's `sdkClient` actor: `--client ts-sdk`.
pub(crate) type TsSdkClient = SdkClient<ActorHost>;
/// The real SDK bundled into a page of Chromium: `--client browser`.
pub(crate) type BrowserClient = SdkClient<BrowserPage>;

impl<H: SdkHost> SdkClient<H> {
    /// `sdk_module`: the SDK point's module the hosted actor imports (none:
    /// the client's own SDK, as the browser page bundles it).
    pub(crate) fn new(client: HostedClient<H>, sdk_module: Option<std::path::PathBuf>) -> Self {
        Self {
            client,
            sdk_module,
            connected: Mutex::new(HashSet::new()),
            running: Mutex::new((String::new(), Duration::from_secs(30))),
            turns: Mutex::new(HashMap::new()),
            terminals: Mutex::new(HashMap::new()),
            store: None,
        }
    }

    /// Its actions and the SDK's wire written into the cell's `trace`;
    /// `watching`: what its host has in flight too, while a call is
    /// pending, for the hang detector.
    pub(super) fn traced(self, trace: crate::trace::Trace, watching: bool) -> Self {
        Self {
            client: self.client.traced(trace).watching(watching),
            ..self
        }
    }

    /// The cell's SDK clients keep their sessions in `store`.
    pub(crate) fn with_store(mut self, store: Option<Value>) -> Self {
        self.store = store;
        self
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, HashMap<String, HostedTurn>> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn terminals(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.terminals.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn running(&self) -> (String, Duration) {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(super) fn connected_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.connected.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn phase(&self) -> String {
        self.running().0
    }

    /// `act`, its answer read as `T`: one that does not read fails the
    /// step, naming the action (the host is continuity's own part).
    pub(super) async fn act_as<T: for<'de> serde::Deserialize<'de> + Default>(
        &self,
        cell: &RunningCell<'_>,
        action: SdkAction,
    ) -> Result<T, StepFailure> {
        let name = action.name();
        let out = self.act(cell, action).await?;
        unreadable(name, answer(&out))
    }

    /// Calls `action` for the running phase, waiting for the host as long
    /// as the phase's own deadline lets it.
    pub(super) async fn act(
        &self,
        cell: &RunningCell<'_>,
        action: SdkAction,
    ) -> Result<Map<String, Value>, StepFailure> {
        let (_, timeout) = self.running();
        let patience = timeout.max(Duration::from_secs(30));
        self.client
            .call_as(CallKind::Scenario, &action, patience, Some(timeout))
            .await
            .map_err(|e| {
                StepFailure::new(hosted_signature(&e, cell.settings.token.as_ref())).with(
                    "sdkError",
                    match &e {
                        HostedError::Sdk(sdk) => sdk_json(sdk),
                        other => Value::String(other.to_string()),
                    },
                )
            })
    }
}

/// The `history` action's events: each one a JSON text, so no hop on the
/// way (the Rivet Engine re-encodes objects with sorted keys) changes the
/// payloads the replay was built from.
fn parse_history(out: &Map<String, Value>) -> Result<Vec<SessionEvent>, StepFailure> {
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

/// An answer of the SDK's host that does not read as `T`: a failure of
/// the step that names the action and what did not read.
pub(super) fn unreadable<T>(
    action: &str,
    read: Result<T, serde_json::Error>,
) -> Result<T, StepFailure> {
    read.map_err(|e| {
        StepFailure::new(diagnose::other(
            SignatureKind::Client,
            format!("the SDK host's answer to {action} does not read: {e}"),
        ))
    })
}

/// The call [`NO_ACTION`] names, in a few words.
const NO_ACTION_CALL: &str = "an action of continuity's SDK hosts";
/// Why the SDK's client cannot take a step it has not been given yet.
const NO_ACTION: &str =
    "continuity's hosts of the SDK (the actor, the page) have no action for this step yet";

/// What the SDK cannot do for `step`, if anything: the call it lacks. The
/// steps it takes are listed, so a new step is not applicable for the
/// SDK's clients until it is given its action here (not a harness error).
pub(super) fn unsupported(step: &Step) -> Option<Unsupported> {
    match step {
        Step::RecoverSession { .. } => Some(Unsupported {
            api: NO_RECOVERY,
            call: NO_RECOVERY_CALL,
        }),
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
        | Step::Probe { .. }
        | Step::WriteFile { .. }
        | Step::ReadFile { .. }
        | Step::SpawnProcess { .. }
        | Step::ProcessStatus { .. }
        | Step::TerminalAttach { .. }
        | Step::TerminalSend { .. }
        | Step::TerminalExpect { .. }
        | Step::TerminalReattach { .. }
        | Step::StartTurn { .. }
        | Step::AwaitTurn { .. }
        | Step::TurnHistory { .. }
        | Step::RecoverTurn { .. }
        | Step::ReplayCheck { .. }
        | Step::RestartDuringTurn { .. }
        | Step::StartSandbox { .. }
        | Step::ReattachSandbox { .. }
        | Step::DestroySandbox { .. } => None,
        // Every step is listed today; this arm is a step added since.
        #[allow(unreachable_patterns)]
        _ => Some(Unsupported {
            api: NO_ACTION,
            call: NO_ACTION_CALL,
        }),
    }
}

#[async_trait(?Send)]
impl<H: SdkHost> ScenarioClient for SdkClient<H> {
    fn name(&self) -> &'static str {
        H::KIND.name()
    }

    fn supports(&self, step: &Step) -> Result<(), Unsupported> {
        unsupported(step).map_or(Ok(()), Err)
    }

    fn connected(&self, _cell: &RunningCell<'_>, client: &str) -> bool {
        self.connected_set().contains(client)
    }

    fn begin_phase(&self, phase: &str, deadline: Duration) {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) = (phase.to_string(), deadline);
    }

    async fn after_timeout(&self, phase: &str) {
        self.client.drain_wire(phase, super::WIRE_DRAIN_BOUND).await;
    }

    async fn before_restart(&self, phase: &str) {
        self.client.drain_wire(phase, WIRE_BEFORE_RESTART).await;
    }

    async fn cut_short(&self, phase: &str) -> bool {
        let cut = SdkAction::CutWaits {
            phase: phase.into(),
        };
        let asked = self.client.call(&cut, super::hang::CUT_BOUND);
        match tokio::time::timeout(super::hang::CUT_BOUND, asked).await {
            Ok(Ok(out)) => out.get("cut").and_then(Value::as_u64).unwrap_or(0) > 0,
            _ => false,
        }
    }

    async fn connect(&self, cell: &mut RunningCell<'_>, client: &str) -> Result<(), StepFailure> {
        let headers = &cell.settings.headers;
        let action = SdkAction::Connect {
            phase: self.phase(),
            client: client.into(),
            base_url: cell.settings.base_url.clone(),
            sdk: self.sdk_module.as_ref().map(|m| m.display().to_string()),
            persist: self.store.clone(),
            headers: (!headers.is_empty()).then(|| {
                headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect()
            }),
            headers_timeout_ms: cell.settings.headers_timeout.map(crate::clock::millis),
        };
        self.act(cell, action).await?;
        self.connected_set().insert(client.to_string());
        Ok(())
    }

    async fn create_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        cwd: &str,
    ) -> Result<CreateSessionDetail, StepFailure> {
        let action = SdkAction::CreateSession {
            phase: self.phase(),
            client: client.into(),
            id: id.into(),
            agent: cell.settings.agent.clone(),
            cwd: cwd.into(),
        };
        let created: sdk_action::Created = self.act_as(cell, action).await?;
        let text = |v: Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
        Ok(CreateSessionDetail {
            session_id: text(created.session_id).unwrap_or_default(),
            agent_session_id: text(created.agent_session_id).unwrap_or_default(),
        })
    }

    async fn prompt(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        text: String,
    ) -> Result<PromptAnswer, StepFailure> {
        let action = SdkAction::Prompt {
            phase: self.phase(),
            client: client.into(),
            id: id.into(),
            text,
        };
        let prompted: sdk_action::Prompted = self.act_as(cell, action).await?;
        Ok(PromptAnswer {
            stop_reason: prompted
                .stop_reason
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            handle: prompted.handle,
            client_rebuilt: prompted.client_rebuilt,
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
        let action = SdkAction::GetEvents {
            phase: self.phase(),
            client: client.into(),
            id: id.into(),
            limit,
        };
        let out = self.act(cell, action).await?;
        let mut detail = Map::new();
        copy(&out, &mut detail, &["eventsObserved"]);
        if integrity {
            let sent = cell.settings.agent_sent_log.as_deref();
            check_history(&out, sent, limit, &mut detail)?;
        }
        Ok(detail)
    }

    async fn resume_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<ResumeDetail, StepFailure> {
        let action = SdkAction::ResumeSession {
            phase: self.phase(),
            client: client.into(),
            id: id.into(),
        };
        let resumed: sdk_action::Resumed = self.act_as(cell, action).await?;
        let action = resumed.action.as_ref().and_then(Value::as_str);
        Ok(ResumeDetail {
            action: action.unwrap_or("?").to_string(),
            ..ResumeDetail::default()
        })
    }

    async fn destroy_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<(), StepFailure> {
        let action = SdkAction::DestroySession {
            phase: self.phase(),
            client: client.into(),
            id: id.into(),
        };
        self.act(cell, action).await.map(drop)
    }

    async fn dispose(&self, cell: &mut RunningCell<'_>, client: &str) -> Result<(), StepFailure> {
        if !self.connected_set().remove(client) {
            return Ok(());
        }
        let action = SdkAction::Dispose {
            phase: self.phase(),
            client: client.into(),
        };
        self.act(cell, action).await.map(drop)
    }

    async fn health(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
    ) -> Result<HealthDetail, StepFailure> {
        let action = SdkAction::Health {
            phase: self.phase(),
            client: client.into(),
        };
        let healthy: sdk_action::Healthy = self.act_as(cell, action).await?;
        Ok(HealthDetail {
            health: healthy.health.unwrap_or(Value::Null),
        })
    }

    async fn replay_history(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<Vec<SessionEvent>, StepFailure> {
        let action = SdkAction::History {
            phase: self.phase(),
            client: client.into(),
            id: id.into(),
        };
        parse_history(&self.act(cell, action).await?)
    }

    async fn probe(&self, cell: &mut RunningCell<'_>, client: &str) -> StepResult {
        self.sdk_probe(cell, client).await
    }

    async fn write_file(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        path: &str,
        content: &str,
    ) -> StepResult {
        self.sdk_write_file(cell, client, path, content).await
    }

    async fn read_file(&self, cell: &mut RunningCell<'_>, client: &str, path: &str) -> StepResult {
        self.sdk_read_file(cell, client, path).await
    }

    async fn spawn_process(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        command: &[String],
        tty: bool,
    ) -> StepResult {
        self.sdk_spawn_process(cell, client, process, command, tty)
            .await
    }

    async fn process_status(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        expect: ProcessExpect,
        logs_contain: Option<&str>,
    ) -> StepResult {
        self.sdk_process_status(cell, client, process, expect, logs_contain)
            .await
    }

    async fn terminal_attach(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        process: &str,
        terminal: &str,
    ) -> StepResult {
        self.sdk_terminal_attach(cell, client, process, terminal)
            .await
    }

    async fn terminal_send(
        &self,
        cell: &mut RunningCell<'_>,
        terminal: &str,
        text: &str,
    ) -> StepResult {
        let action = SdkAction::TerminalSend {
            phase: self.phase(),
            terminal: terminal.into(),
            text: text.into(),
        };
        self.sdk_terminal(cell, action).await
    }

    async fn terminal_expect(
        &self,
        cell: &mut RunningCell<'_>,
        terminal: &str,
        text: Option<&str>,
    ) -> StepResult {
        let action = SdkAction::TerminalExpect {
            phase: self.phase(),
            terminal: terminal.into(),
            text: text.map(str::to_string),
            wait_ms: crate::clock::millis(self.running().1),
        };
        self.sdk_terminal(cell, action).await
    }

    async fn terminal_reattach(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        terminal: &str,
    ) -> StepResult {
        self.sdk_terminal_reattach(cell, client, terminal).await
    }

    async fn start_turn(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        session: &str,
        text: &str,
        turn: &str,
    ) -> StepResult {
        self.sdk_start_turn(cell, client, session, text, turn).await
    }

    async fn await_turn(
        &self,
        cell: &mut RunningCell<'_>,
        turn: &str,
        deadline: Duration,
    ) -> StepResult {
        self.sdk_await_turn(cell, turn, deadline).await
    }

    async fn turn_history(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        turn: &str,
    ) -> StepResult {
        self.sdk_turn_history(cell, client, turn).await
    }

    async fn start_sandbox(&self, cell: &mut RunningCell<'_>, client: &str) -> StepResult {
        self.sdk_start_sandbox(cell, client).await
    }

    async fn reattach_sandbox(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        expect: Option<crate::scenario::SandboxStatus>,
    ) -> StepResult {
        self.sdk_reattach_sandbox(cell, client, expect).await
    }

    async fn destroy_sandbox(&self, cell: &mut RunningCell<'_>, client: &str) -> StepResult {
        self.sdk_destroy_sandbox(cell, client).await
    }

    async fn turn_evidence(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        turn: &str,
    ) -> Result<super::recover_turn::TurnEvidence, StepFailure> {
        self.sdk_turn_evidence(cell, client, turn).await
    }

    /// Disposes every SDK client the scenario left open, then destroys the
    /// cell's actor (one cell, one actor, none left behind on the runner).
    async fn wind_down(&self, cell: &mut RunningCell<'_>) -> Vec<Value> {
        let left: Vec<String> = self.connected_set().drain().collect();
        let dispose = async {
            for client in left {
                let action = SdkAction::Dispose {
                    phase: "dispose".into(),
                    client,
                };
                let _ = self.act(cell, action).await;
            }
        };
        let _ = tokio::time::timeout(super::DISPOSE_BOUND, dispose).await;
        let retire = SdkAction::Retire {
            phase: "retire".into(),
        };
        let retired = self.client.call(&retire, Duration::from_secs(5));
        match tokio::time::timeout(super::DISPOSE_BOUND, retired).await {
            // Cleanup after the verdict: an answer that does not read adds no fault.
            Ok(Ok(out)) => answer::<sdk_action::Retired>(&out)
                .map(|r| r.faults)
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in scenario's step is the SDK's to take but the
    /// recovering client's `session/load`, which names the call it lacks.
    #[test]
    fn only_recover_session_is_declared_unsupported_with_the_call_missing() {
        let all = crate::scenario::builtin_scenarios();
        let missing = |name: &str| -> Vec<Unsupported> {
            let s = all.iter().find(|s| s.name == name).unwrap();
            s.phases
                .iter()
                .chain(&s.cleanup)
                .filter_map(|p| unsupported(&p.step))
                .collect()
        };
        for name in [
            "native-continuity",
            "recreate-rehydrate",
            "sandbox-reconnect",
            "restart-mid-turn",
            "client-restart",
            "long-turn",
            "long-turn-idle",
        ] {
            assert!(missing(name).is_empty(), "{name}: {:?}", missing(name));
        }
        assert_eq!(
            missing("native-load"),
            vec![Unsupported {
                api: NO_RECOVERY,
                call: NO_RECOVERY_CALL
            }]
        );
        assert!(NO_RECOVERY.starts_with("sandbox-agent SDK 0.4.2 has no call to"));
    }
}
