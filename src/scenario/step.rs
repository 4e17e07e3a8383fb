//! The step language in one place: what a phase does ([`Step`]), the
//! kinds a scenario file names ([`StepKind`]: the list is the enum's own,
//! strum's `VariantArray`, each name its variant's in snake case, serde's,
//! read through `wire_name`), and what each step names: the client it
//! runs on, the client, session or sandbox label it makes, and the ones
//! earlier phases must have made ([`Step::names`]), which the parser
//! checks and the executor follows. Its matches are exhaustive, so a new
//! step is given each of these here (ARCHITECTURE.md, "A step kind").
//!
//! Over 400 lines on purpose: it is the one file of the step language,
//! so that a new step kind is written in one place rather than four.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::{ProcessExpect, ResumeExpect, SandboxStatus};

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

impl Step {
    /// The step kind scenario files name (a turn is a `prompt`, a timed
    /// restart a `restart`).
    pub(crate) fn kind(&self) -> StepKind {
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
    pub(crate) fn pending(&self) -> String {
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

    /// The client, sessions and sandbox labels it uses and makes. A
    /// reattach may be an application's first step after its restart, so
    /// it makes its client, as `connect` and `start_sandbox` do.
    pub(crate) fn names(&self) -> Names<'_> {
        match self {
            Step::Connect { client }
            | Step::StartSandbox { client }
            | Step::ReattachSandbox { client, .. } => Names::making_client(client),
            Step::CreateSession {
                client, session, ..
            } => Names {
                makes_session: Some(session),
                ..Names::on(client)
            },
            Step::RehydratePrompt {
                client,
                session,
                from,
            } => Names::on(client).session(from).session(session),
            Step::Prompt {
                client, session, ..
            }
            | Step::GetEvents {
                client, session, ..
            }
            | Step::ResumeSession {
                client, session, ..
            }
            | Step::RecoverSession {
                client, session, ..
            }
            | Step::ReplayCheck { client, session }
            | Step::DestroySession { client, session }
            | Step::StartTurn {
                client, session, ..
            } => Names::on(client).session(session),
            Step::Dispose { client }
            | Step::Health { client }
            | Step::Probe { client }
            | Step::DestroySandbox { client }
            | Step::TurnHistory { client, .. }
            | Step::RecoverTurn { client, .. } => Names::on(client),
            Step::Restart
            | Step::Sleep { .. }
            | Step::AwaitTurn { .. }
            | Step::RestartDuringTurn { .. } => Names::default(),
            Step::WriteFile { client, path, .. } => Names::on(client).making(Label::File, path),
            Step::ReadFile { client, path } => Names::on(client).label(Label::File, path),
            Step::SpawnProcess {
                client, process, ..
            } => Names::on(client).making(Label::Process, process),
            Step::ProcessStatus {
                client, process, ..
            } => Names::on(client).label(Label::Process, process),
            Step::TerminalAttach {
                client,
                process,
                terminal,
            } => Names::on(client)
                .label(Label::Process, process)
                .making(Label::Terminal, terminal),
            Step::TerminalSend { terminal, .. } | Step::TerminalExpect { terminal, .. } => {
                Names::default().label(Label::Terminal, terminal)
            }
            Step::TerminalReattach { client, terminal } => {
                Names::on(client).label(Label::Terminal, terminal)
            }
        }
    }
}

/// What a sandbox label names; each is made by one kind of step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Label {
    File,
    Process,
    Terminal,
}

impl Label {
    /// Its word in messages: `file`, `process`, `terminal`.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Label::File => "file",
            Label::Process => "process",
            Label::Terminal => "terminal",
        }
    }

    /// The step that makes a label of this kind.
    pub(crate) fn maker(self) -> StepKind {
        match self {
            Label::File => StepKind::WriteFile,
            Label::Process => StepKind::SpawnProcess,
            Label::Terminal => StepKind::TerminalAttach,
        }
    }
}

/// What a step names: the client it runs on and the sessions and sandbox
/// labels it uses (each made by an earlier phase, checked in this order),
/// and what it makes for the phases after it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Names<'a> {
    /// The client it runs on, connected by an earlier phase.
    pub client: Option<&'a str>,
    /// The sessions it uses, each created by an earlier phase.
    pub sessions: Vec<&'a str>,
    /// The sandbox labels it uses, each made by an earlier phase.
    pub labels: Vec<(Label, &'a str)>,
    /// The client it makes (connects).
    pub makes_client: Option<&'a str>,
    /// The session it makes.
    pub makes_session: Option<&'a str>,
    /// The sandbox label it makes.
    pub makes_label: Option<(Label, &'a str)>,
}

impl<'a> Names<'a> {
    /// A step that runs on `client`.
    fn on(client: &'a str) -> Self {
        Names {
            client: Some(client),
            ..Names::default()
        }
    }

    /// A step that makes (connects) `client`.
    fn making_client(client: &'a str) -> Self {
        Names {
            makes_client: Some(client),
            ..Names::default()
        }
    }

    fn session(mut self, session: &'a str) -> Self {
        self.sessions.push(session);
        self
    }

    fn label(mut self, label: Label, name: &'a str) -> Self {
        self.labels.push((label, name));
        self
    }

    fn making(mut self, label: Label, name: &'a str) -> Self {
        self.makes_label = Some((label, name));
        self
    }
}

/// What `step = "…"` names in a scenario file. The order is the one
/// messages and the docs list them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepKind {
    Connect,
    CreateSession,
    /// A waiting prompt, or with `wait = false` a turn that runs on.
    Prompt,
    RehydratePrompt,
    /// A restart, or with `after_ms` one that lands inside a running turn.
    Restart,
    AwaitTurn,
    TurnHistory,
    RecoverTurn,
    ReplayCheck,
    GetEvents,
    ResumeSession,
    DestroySession,
    Dispose,
    Sleep,
    Health,
    Probe,
    WriteFile,
    ReadFile,
    SpawnProcess,
    ProcessStatus,
    TerminalAttach,
    TerminalSend,
    TerminalExpect,
    TerminalReattach,
    RecoverSession,
    StartSandbox,
    ReattachSandbox,
    DestroySandbox,
}

/// A `step` that names no kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown step {0:?}; expected one of: {names}", names = crate::wire_name::names::<StepKind>())]
pub(crate) struct UnknownStep(pub String);

impl StepKind {
    /// Every kind, in the order messages and the docs list them.
    #[cfg(test)]
    pub(crate) fn all() -> &'static [StepKind] {
        <StepKind as strum::VariantArray>::VARIANTS
    }

    /// The name scenario files and reports use.
    pub(crate) fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }
}

impl FromStr for StepKind {
    type Err = UnknownStep;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        crate::wire_name::parse(name).ok_or_else(|| UnknownStep(name.to_string()))
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
