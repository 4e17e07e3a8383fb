//! Scenarios: the phases a cell runs, read from `scenarios/*.toml`, and the
//! executor that runs them under deadlines.
//!
//! A scenario is a list of phases (each one step: connect, create_session,
//! prompt, restart, …) plus cleanup steps that always run and never change the
//! verdict. Parsing is two-stage: serde reads raw tables (unknown keys are
//! errors), then [`parse::parse_scenario`] checks each step's fields and the
//! references between phases, naming the file and line of any mistake.

mod execute;
mod kind;
mod parse;
pub mod sandbox_root;

/// What a [`Restarter`] returns: the restart's record and what failed.
pub use crate::targets::Restarted;
pub use execute::integrity::{recheck, Judged};
pub use execute::{
    hosted_signature, run_cell, run_cell_deferring, run_cell_with, BrowserClient, CellClient,
    CellRun, CellSettings, CellStore, CleanupFence, DeferredCleanup, Restarter, SdkClient,
    TsSdkClient, DEFAULT_HANG_GRACE,
};
pub use kind::{StepKind, UnknownStep};
pub use parse::{builtin_scenarios, load_dir, parse_scenario, ScenarioError};

use std::path::PathBuf;
use std::time::Duration;

/// One scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Where it was read from (`<builtin>/name.toml` for the embedded copies).
    pub file: PathBuf,
    pub phases: Vec<Phase>,
    pub cleanup: Vec<Phase>,
    /// `opt_in = true`: runs only when named with `--scenario` (a slow or
    /// specialised scenario that a plain `continuity run` leaves out).
    pub opt_in: bool,
    /// What the always-on checker lets pass in this scenario (`allow`):
    /// a scenario whose point is a loss says which; everything is checked.
    pub allows: Vec<crate::check::Allowance>,
    /// The SHA-256 of its file's text: what a run records so that `rerun`
    /// can tell a scenario that changed since.
    pub digest: String,
}

/// A named step with its deadline and failure policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub step: Step,
    /// Overrides the run's `--timeout-ms` for this phase.
    pub timeout: Option<Duration>,
    /// Whether the cell goes on after this phase fails.
    pub continue_on_failure: bool,
    /// Whether this phase decides the cell's verdict (the scenario's `verdict` list names it).
    pub decides_verdict: bool,
}

/// What a phase does. `client` names a client connected by an earlier
/// `connect`; `session` is a label the cell turns into a unique session id.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Connect {
        client: String,
    },
    CreateSession {
        client: String,
        session: String,
        cwd: String,
    },
    /// One or more prompts, sent one after another.
    Prompt {
        client: String,
        session: String,
        texts: Vec<String>,
        expect_stop_reason: Option<String>,
    },
    /// A prompt on `session` carrying the user prompts sent earlier on `from`,
    /// as the seed script's recreate-and-rehydrate fallback builds it.
    RehydratePrompt {
        client: String,
        session: String,
        from: String,
    },
    Restart,
    GetEvents {
        client: String,
        session: String,
        limit: usize,
        integrity: bool,
    },
    ResumeSession {
        client: String,
        session: String,
        expect: Option<ResumeExpect>,
    },
    DestroySession {
        client: String,
        session: String,
    },
    Dispose {
        client: String,
    },
    Sleep {
        duration: Duration,
    },
    /// `GET /v1/health`.
    Health {
        client: String,
    },
    /// `pwd` through `/v1/processes/run`: the reconnect design's liveness probe.
    Probe {
        client: String,
    },
    /// `PUT /v1/fs/file`: `path` is relative to the cell's sandbox folder.
    WriteFile {
        client: String,
        path: String,
        content: String,
    },
    /// `GET /v1/fs/file`, compared with what the cell wrote there.
    ReadFile {
        client: String,
        path: String,
    },
    /// `POST /v1/processes`: a long-running command, `process` its label.
    SpawnProcess {
        client: String,
        process: String,
        command: Vec<String>,
        tty: bool,
    },
    /// `GET /v1/processes/{id}` (+ list, logs): is it still there, in the expected state?
    ProcessStatus {
        client: String,
        process: String,
        expect: ProcessExpect,
        logs_contain: Option<String>,
    },
    /// Opens the process's terminal WebSocket as `terminal`.
    TerminalAttach {
        client: String,
        process: String,
        terminal: String,
    },
    /// Types a line into `terminal`.
    TerminalSend {
        terminal: String,
        text: String,
    },
    /// Waits for `text` (default: the last line sent) in the output after the last send.
    TerminalExpect {
        terminal: String,
        text: Option<String>,
    },
    /// Records how the old socket of `terminal` ended, then attaches a new one
    /// to the same process under the same label.
    TerminalReattach {
        client: String,
        terminal: String,
    },
    /// `prompt` with `wait = false`: the prompt is sent and runs on as turn
    /// `turn` while later phases run; an `await_turn` collects its outcome.
    StartTurn {
        client: String,
        session: String,
        text: String,
        turn: String,
    },
    /// Waits for a started turn's outcome until `deadline` (the phase's
    /// `timeout_ms`, else the run's): completed, failed, or lost.
    AwaitTurn {
        turn: String,
        deadline: Option<Duration>,
    },
    /// The streamed chunks of an awaited turn against what the agent sent:
    /// each stored once, in order, with `eventIndex` contiguous.
    TurnHistory {
        client: String,
        turn: String,
    },
    /// After an awaited turn: did the agent finish it (its own record), and
    /// can the client still find its result (the history, a stream
    /// re-attached with the `Last-Event-ID` it last had)?
    RecoverTurn {
        client: String,
        turn: String,
    },
    /// The replay the session's restore sent (the first prompt after the
    /// restart) against the SDK's documented cut of the stored history:
    /// the newest `replayMaxEvents` (50) events, stopped before
    /// `replayMaxChars` (12000) with `[history truncated]`.
    ReplayCheck {
        client: String,
        session: String,
    },
    /// `restart` with `after_ms`: starts that long after the latest started
    /// turn did (at once when it is later already), while the turn runs.
    RestartDuringTurn {
        after: Duration,
    },
    /// The recovering client: prompt the old handle; on a lost server id
    /// (HTTP 400) open a new one with `?agent=`, `session/load` (or
    /// `session/resume`) the agent session, and prompt there.
    RecoverSession {
        client: String,
        session: String,
        text: String,
    },
    /// `SandboxAgent.start({ sandbox })` with the stack's own provider: a
    /// new sandbox (its own server), `client` connected to it, and its
    /// `sandboxId` persisted where the application keeps its state.
    StartSandbox {
        client: String,
    },
    /// The application (re)attaches `client` to its persisted sandbox:
    /// `SandboxAgent.start({ sandbox, sandboxId })`, then the reconnect
    /// design's `pwd` probe; the status is `connected`, `expired` or
    /// `no_sandbox` (nothing persisted).
    ReattachSandbox {
        client: String,
        expect: Option<SandboxStatus>,
    },
    /// `destroySandbox()`: the provider's `destroy`, the client disposed.
    DestroySandbox {
        client: String,
    },
}

/// The reconnect design's statuses of a reattach (the seed's route).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxStatus {
    Connected,
    Expired,
    NoSandbox,
}

impl SandboxStatus {
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }
}

/// What `process_status` expects of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessExpect {
    Running,
    Exited,
    /// Only that the server still knows it.
    Listed,
}

/// What `resume_session` is expected to do, when a scenario pins it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeExpect {
    SameHandle,
    Recreated,
}

impl Step {
    /// The step kind scenario files name (a turn is a `prompt`, a timed
    /// restart a `restart`).
    pub fn kind(&self) -> StepKind {
        match self {
            Step::Connect { .. } => StepKind::Connect,
            Step::CreateSession { .. } => StepKind::CreateSession,
            Step::Prompt { .. } => StepKind::Prompt,
            Step::RehydratePrompt { .. } => StepKind::RehydratePrompt,
            Step::Restart => StepKind::Restart,
            Step::GetEvents { .. } => StepKind::GetEvents,
            Step::ResumeSession { .. } => StepKind::ResumeSession,
            Step::DestroySession { .. } => StepKind::DestroySession,
            Step::Dispose { .. } => StepKind::Dispose,
            Step::Sleep { .. } => StepKind::Sleep,
            Step::Health { .. } => StepKind::Health,
            Step::Probe { .. } => StepKind::Probe,
            Step::WriteFile { .. } => StepKind::WriteFile,
            Step::ReadFile { .. } => StepKind::ReadFile,
            Step::SpawnProcess { .. } => StepKind::SpawnProcess,
            Step::ProcessStatus { .. } => StepKind::ProcessStatus,
            Step::TerminalAttach { .. } => StepKind::TerminalAttach,
            Step::TerminalSend { .. } => StepKind::TerminalSend,
            Step::TerminalExpect { .. } => StepKind::TerminalExpect,
            Step::TerminalReattach { .. } => StepKind::TerminalReattach,
            Step::StartTurn { .. } => StepKind::Prompt,
            Step::AwaitTurn { .. } => StepKind::AwaitTurn,
            Step::TurnHistory { .. } => StepKind::TurnHistory,
            Step::RecoverTurn { .. } => StepKind::RecoverTurn,
            Step::ReplayCheck { .. } => StepKind::ReplayCheck,
            Step::RestartDuringTurn { .. } => StepKind::Restart,
            Step::RecoverSession { .. } => StepKind::RecoverSession,
            Step::StartSandbox { .. } => StepKind::StartSandbox,
            Step::ReattachSandbox { .. } => StepKind::ReattachSandbox,
            Step::DestroySandbox { .. } => StepKind::DestroySandbox,
        }
    }

    /// What a timed-out phase was waiting for, in words.
    pub fn pending(&self) -> String {
        match self {
            Step::Connect { client } => format!("connecting client {client}"),
            Step::CreateSession {
                client, session, ..
            } => {
                format!("session/new for {session} on client {client} (no response)")
            }
            Step::Prompt {
                client, session, ..
            }
            | Step::RehydratePrompt {
                client, session, ..
            } => {
                format!("session/prompt on {session} via client {client} (no response)")
            }
            Step::Restart => "the target's restart and readiness".into(),
            Step::GetEvents { session, .. } => {
                format!("listing events of {session} from the persist store")
            }
            Step::ResumeSession {
                client, session, ..
            } => format!("resumeSession {session} on client {client}"),
            Step::DestroySession { session, .. } => format!("destroySession {session}"),
            Step::Dispose { client } => format!("disposing client {client}"),
            Step::Sleep { .. } => "sleeping".into(),
            Step::Health { .. } => "GET /v1/health".into(),
            Step::Probe { .. } => "POST /v1/processes/run pwd".into(),
            Step::WriteFile { path, .. } => format!("PUT /v1/fs/file {path}"),
            Step::ReadFile { path, .. } => format!("GET /v1/fs/file {path}"),
            Step::SpawnProcess { process, .. } => format!("POST /v1/processes for {process}"),
            Step::ProcessStatus { process, .. } => format!("GET /v1/processes for {process}"),
            Step::TerminalAttach { terminal, .. } | Step::TerminalReattach { terminal, .. } => {
                format!("the WebSocket upgrade of terminal {terminal}")
            }
            Step::TerminalSend { terminal, .. } => format!("sending to terminal {terminal}"),
            Step::TerminalExpect { terminal, text } => format!(
                "output {:?} on terminal {terminal}",
                text.as_deref().unwrap_or("(the line sent)")
            ),
            Step::StartTurn {
                client, session, ..
            } => format!("sending session/prompt on {session} via client {client}"),
            Step::AwaitTurn { turn, .. } => format!("the outcome of turn {turn}"),
            Step::TurnHistory { turn, .. } => format!("reading the history of turn {turn}"),
            Step::RecoverTurn { turn, .. } => {
                format!(
                    "looking for the result of turn {turn} in the history and a re-attached stream"
                )
            }
            Step::ReplayCheck { session, .. } => {
                format!("reading the history of {session} for its replay")
            }
            Step::RestartDuringTurn { .. } => "the target's restart and readiness".into(),
            Step::RecoverSession { session, .. } => {
                format!("recovering {session}: new server id, session/load, prompt")
            }
            Step::StartSandbox { client } => {
                format!("SandboxAgent.start with the provider for client {client}")
            }
            Step::ReattachSandbox { client, .. } => format!(
                "SandboxAgent.start with the persisted sandboxId for client {client}, then its pwd probe"
            ),
            Step::DestroySandbox { client } => format!("destroySandbox of client {client}"),
        }
    }
}
