//! The one interface the executor drives a cell's client through: one
//! method per step the scenario language has for a client, each returning
//! a typed outcome (or, for the sandbox and turn families, the typed detail
//! its step builds) that the executor turns into the phase's result.
//! Restarts, sleeps and the collecting of turns stay the executor's.
//!
//! Three clients implement it: continuity's Rust client
//! ([`super::rust_client::RustClient`]), and the real SDK hosted in the
//! Rivet actor ([`super::TsSdkClient`], `--client ts-sdk`) or in a page of
//! Chromium ([`super::BrowserClient`], `--client browser`): the one
//! implementation [`super::SdkClient`] over its host, since the SDK's API
//! is the same wherever it runs. The runner hands a cell its client as a
//! [`super::CellClient`]. A
//! step a client cannot take is a capability it declares
//! ([`ScenarioClient::supports`]), naming the API it lacks: the executor
//! reports that phase `not_applicable` and runs the rest of the cell.
//! Giving a client a step is one method here, in its implementation.

use super::{RunningCell, StepFailure, StepResult};
use crate::diagnose;
use crate::persist::SessionEvent;
use crate::report::detail::{CreateSessionDetail, HealthDetail, ResumeDetail};
use crate::report::SignatureKind;
use crate::scenario::{ProcessExpect, Step, StepKind};
use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// A step the client cannot take: the API whose absence is why, and the
/// call it lacks in a few words (what a cell with no verdict on its
/// restart, and "Where the fix belongs", name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported {
    pub api: &'static str,
    pub call: &'static str,
}

/// A prompt's answer: its stop reason, and what the SDK says of the
/// session handle it used (written into the phase's detail as is).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptAnswer {
    #[serde(skip)]
    pub stop_reason: String,
    /// `cached`, `resumed`, … (the SDK's client only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<Value>,
    /// Whether the actor had to build its client anew (the SDK's client only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_rebuilt: Option<Value>,
}

/// A cell's client, as the executor drives it. `client` names the
/// scenario's client (`a`, `b`, …); `id` a session's id in this cell.
/// Its futures borrow the cell, which is not `Sync` (its restarter), so
/// they are not `Send`: a cell runs on its worker's task, as before.
#[async_trait(?Send)]
pub(super) trait ScenarioClient {
    /// Its name on the client axis: `rust`, `ts-sdk`, `browser`.
    fn name(&self) -> &'static str;

    /// Whether it takes `step`; if not, the API it lacks. (By step, not
    /// kind: a `prompt` that runs on as a turn is a capability of its own.)
    fn supports(&self, step: &Step) -> Result<(), Unsupported>;

    /// Whether `client` is connected (a cleanup phase of one never connected is not run).
    fn connected(&self, cell: &RunningCell<'_>, client: &str) -> bool;

    /// A phase begins: its name and deadline (the SDK's host bounds its call just past it).
    fn begin_phase(&self, _phase: &str, _deadline: Duration) {}

    /// After a phase given up at its deadline: what the client did
    /// meanwhile (an answer that never came) is fetched into the trace.
    async fn after_timeout(&self, _phase: &str) {}

    /// Before a restart of the target: what would go with it is fetched first.
    async fn before_restart(&self, _phase: &str) {}

    /// The phase's call hung: the client's own waits in it (an await of a
    /// turn, which waits up to its deadline) end now, so the step answers
    /// with what it saw. Whether it ended any: only then is the step worth
    /// a moment more.
    async fn cut_short(&self, _phase: &str) -> bool {
        false
    }

    /// Whether a `client` restart is the executor's to do on this client
    /// (continuity's clients, renewed in the cell); the SDK's is its host's.
    fn renews_on_client_restart(&self) -> bool {
        false
    }

    /// Whether the cleanup's `dispose` phases may begin side by side and
    /// their DELETEs be deferred past the verdict.
    fn defers_disposes(&self) -> bool {
        false
    }

    async fn connect(&self, cell: &mut RunningCell<'_>, client: &str) -> Result<(), StepFailure>;

    async fn create_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        cwd: &str,
    ) -> Result<CreateSessionDetail, StepFailure>;

    async fn prompt(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        text: String,
    ) -> Result<PromptAnswer, StepFailure>;

    /// A page of the session's events and, with `integrity`, the whole
    /// stored history checked: the phase's detail.
    async fn get_events(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
        limit: usize,
        integrity: bool,
    ) -> StepResult;

    async fn resume_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<ResumeDetail, StepFailure>;

    async fn destroy_session(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<(), StepFailure>;

    async fn dispose(&self, cell: &mut RunningCell<'_>, client: &str) -> Result<(), StepFailure>;

    async fn health(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
    ) -> Result<HealthDetail, StepFailure>;

    /// The session's stored history, for `replay_check` to judge.
    async fn replay_history(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        id: &str,
    ) -> Result<Vec<SessionEvent>, StepFailure>;

    async fn probe(&self, _cell: &mut RunningCell<'_>, _client: &str) -> StepResult {
        Err(self.cannot(StepKind::Probe))
    }

    async fn write_file(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _path: &str,
        _content: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::WriteFile))
    }

    async fn read_file(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _path: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::ReadFile))
    }

    async fn spawn_process(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _process: &str,
        _command: &[String],
        _tty: bool,
    ) -> StepResult {
        Err(self.cannot(StepKind::SpawnProcess))
    }

    async fn process_status(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _process: &str,
        _expect: ProcessExpect,
        _logs_contain: Option<&str>,
    ) -> StepResult {
        Err(self.cannot(StepKind::ProcessStatus))
    }

    async fn terminal_attach(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _process: &str,
        _terminal: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::TerminalAttach))
    }

    async fn terminal_send(
        &self,
        _cell: &mut RunningCell<'_>,
        _terminal: &str,
        _text: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::TerminalSend))
    }

    async fn terminal_expect(
        &self,
        _cell: &mut RunningCell<'_>,
        _terminal: &str,
        _text: Option<&str>,
    ) -> StepResult {
        Err(self.cannot(StepKind::TerminalExpect))
    }

    async fn terminal_reattach(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _terminal: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::TerminalReattach))
    }

    /// A prompt that runs on as turn `turn` while other phases run.
    async fn start_turn(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _session: &str,
        _text: &str,
        _turn: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::Prompt))
    }

    /// Collects turn `turn`'s outcome, waiting up to `deadline` for it.
    async fn await_turn(
        &self,
        _cell: &mut RunningCell<'_>,
        _turn: &str,
        _deadline: Duration,
    ) -> StepResult {
        Err(self.cannot(StepKind::AwaitTurn))
    }

    async fn turn_history(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _turn: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::TurnHistory))
    }

    /// What the client holds of awaited turn `turn` for its recovery:
    /// the stored history of its session (read through `client`'s store),
    /// its stream's server id and last event id when the turn began.
    async fn turn_evidence(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _turn: &str,
    ) -> Result<super::recover_turn::TurnEvidence, StepFailure> {
        Err(self.cannot(StepKind::RecoverTurn))
    }

    async fn recover_session(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _session: &str,
        _text: &str,
    ) -> StepResult {
        Err(self.cannot(StepKind::RecoverSession))
    }

    /// `SandboxAgent.start` with the stack's sandbox provider: a new
    /// sandbox, `client` connected to it, its `sandboxId` persisted.
    async fn start_sandbox(&self, _cell: &mut RunningCell<'_>, _client: &str) -> StepResult {
        Err(self.cannot(StepKind::StartSandbox))
    }

    /// `SandboxAgent.start` with the persisted `sandboxId`, then the
    /// `pwd` probe: the status, against the one expected when given.
    async fn reattach_sandbox(
        &self,
        _cell: &mut RunningCell<'_>,
        _client: &str,
        _expect: Option<crate::scenario::SandboxStatus>,
    ) -> StepResult {
        Err(self.cannot(StepKind::ReattachSandbox))
    }

    /// `destroySandbox`: the provider's `destroy`.
    async fn destroy_sandbox(&self, _cell: &mut RunningCell<'_>, _client: &str) -> StepResult {
        Err(self.cannot(StepKind::DestroySandbox))
    }

    /// The cell is over: the clients the scenario left open are closed and
    /// the client's host retired. Returns the faults the host recorded
    /// (unhandled rejections), for the phases they happened in.
    async fn wind_down(&self, _cell: &mut RunningCell<'_>) -> Vec<Value> {
        Vec::new()
    }

    /// A step the executor reached without asking [`Self::supports`]
    /// first: a harness error naming the step, never a panic.
    fn cannot(&self, kind: StepKind) -> StepFailure {
        StepFailure::new(diagnose::other(
            SignatureKind::Harness,
            format!("the {} client cannot take step `{kind}`", self.name()),
        ))
    }
}
