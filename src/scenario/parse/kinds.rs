//! The parser's one table of step kinds: the fields a phase may set
//! ([`RawPhase`], read by serde, which refuses any other key with its
//! line), and for each kind a [`Row`]: the fields it takes and how its
//! [`Step`] is built from them. The match is exhaustive, so a new kind is
//! given its row here, and nowhere else in the parser. Its helpers are
//! its own submodules: the readers of a field's value ([`Fields`]) and the
//! checks on named turns ([`Turns`]).

mod fields;
mod turns;

pub(super) use fields::Fields;
pub(super) use turns::Turns;

use super::ScenarioError;
use crate::scenario::{Step, StepKind};
use serde::Deserialize;
use std::time::Duration;

/// `text = "one"` or `text = ["one", "two"]`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Texts {
    One(String),
    Many(Vec<String>),
}

/// One `[[phase]]` or `[[cleanup]]` table as written: every field any
/// kind takes. Which of them a kind takes is its [`Row`]'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPhase {
    pub name: Option<String>,
    pub step: String,
    pub timeout_ms: Option<u64>,
    pub on_failure: Option<String>,
    pub client: Option<String>,
    pub session: Option<String>,
    pub text: Option<Texts>,
    pub from: Option<String>,
    pub cwd: Option<String>,
    pub limit: Option<usize>,
    pub integrity: Option<bool>,
    pub expect: Option<String>,
    pub expect_stop_reason: Option<String>,
    pub ms: Option<u64>,
    pub path: Option<String>,
    pub content: Option<String>,
    pub process: Option<String>,
    pub command: Option<Texts>,
    pub tty: Option<bool>,
    pub terminal: Option<String>,
    pub logs_contain: Option<String>,
    pub wait: Option<bool>,
    pub turn: Option<String>,
    pub after_ms: Option<u64>,
}

impl RawPhase {
    /// The step-specific fields that are set, by name.
    pub(super) fn set_fields(&self) -> Vec<&'static str> {
        let present = [
            ("client", self.client.is_some()),
            ("session", self.session.is_some()),
            ("text", self.text.is_some()),
            ("from", self.from.is_some()),
            ("cwd", self.cwd.is_some()),
            ("limit", self.limit.is_some()),
            ("integrity", self.integrity.is_some()),
            ("expect", self.expect.is_some()),
            ("expect_stop_reason", self.expect_stop_reason.is_some()),
            ("ms", self.ms.is_some()),
            ("path", self.path.is_some()),
            ("content", self.content.is_some()),
            ("process", self.process.is_some()),
            ("command", self.command.is_some()),
            ("tty", self.tty.is_some()),
            ("terminal", self.terminal.is_some()),
            ("logs_contain", self.logs_contain.is_some()),
            ("wait", self.wait.is_some()),
            ("turn", self.turn.is_some()),
            ("after_ms", self.after_ms.is_some()),
        ];
        present
            .iter()
            .filter(|(_, set)| *set)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// How a kind's step is built from its phase's fields.
type Build = fn(&Fields<'_>) -> Result<Step, ScenarioError>;

/// One kind's row of the table.
pub(super) struct Row {
    /// The fields it takes besides `name`, `step`, `timeout_ms` and `on_failure`.
    pub fields: &'static [&'static str],
    pub build: Build,
}

fn row(fields: &'static [&'static str], build: Build) -> Row {
    Row { fields, build }
}

/// The row of `kind`.
pub(super) fn row_of(kind: StepKind) -> Row {
    match kind {
        StepKind::Connect => row(&["client"], |f| {
            Ok(Step::Connect {
                client: f.client()?,
            })
        }),
        StepKind::CreateSession => row(&["client", "session", "cwd"], |f| {
            Ok(Step::CreateSession {
                client: f.client()?,
                session: f.session()?,
                cwd: f.raw.cwd.clone().unwrap_or_else(|| "/".into()),
            })
        }),
        StepKind::Prompt => row(
            &[
                "client",
                "session",
                "text",
                "expect_stop_reason",
                "wait",
                "turn",
            ],
            prompt,
        ),
        StepKind::RehydratePrompt => row(&["client", "session", "from"], |f| {
            Ok(Step::RehydratePrompt {
                client: f.client()?,
                session: f.session()?,
                from: f.need("from", &f.raw.from)?,
            })
        }),
        StepKind::Restart => row(&["after_ms"], restart),
        StepKind::AwaitTurn => row(&["turn"], await_turn),
        StepKind::TurnHistory => row(&["client", "turn"], |f| {
            let turn = f.awaited_turn()?;
            Ok(Step::TurnHistory {
                client: f.client()?,
                turn,
            })
        }),
        StepKind::RecoverTurn => row(&["client", "turn"], |f| {
            let turn = f.awaited_turn()?;
            Ok(Step::RecoverTurn {
                client: f.client()?,
                turn,
            })
        }),
        StepKind::ReplayCheck => row(&["client", "session"], |f| {
            Ok(Step::ReplayCheck {
                client: f.client()?,
                session: f.session()?,
            })
        }),
        StepKind::GetEvents => row(&["client", "session", "limit", "integrity"], get_events),
        StepKind::ResumeSession => row(&["client", "session", "expect"], |f| {
            Ok(Step::ResumeSession {
                client: f.client()?,
                session: f.session()?,
                expect: f.resume_expect()?,
            })
        }),
        StepKind::DestroySession => row(&["client", "session"], |f| {
            Ok(Step::DestroySession {
                client: f.client()?,
                session: f.session()?,
            })
        }),
        StepKind::Dispose => row(&["client"], |f| {
            Ok(Step::Dispose {
                client: f.client()?,
            })
        }),
        StepKind::Sleep => row(&["ms"], |f| {
            let ms = f.raw.ms.ok_or_else(|| f.fail("step `sleep` needs `ms`"))?;
            Ok(Step::Sleep {
                duration: Duration::from_millis(ms),
            })
        }),
        StepKind::Health => row(&["client"], |f| {
            Ok(Step::Health {
                client: f.client()?,
            })
        }),
        StepKind::Probe => row(&["client"], |f| {
            Ok(Step::Probe {
                client: f.client()?,
            })
        }),
        StepKind::WriteFile => row(&["client", "path", "content"], write_file),
        StepKind::ReadFile => row(&["client", "path"], |f| {
            Ok(Step::ReadFile {
                client: f.client()?,
                path: f.path()?,
            })
        }),
        StepKind::SpawnProcess => row(&["client", "process", "command", "tty"], spawn_process),
        StepKind::ProcessStatus => row(
            &["client", "process", "expect", "logs_contain"],
            process_status,
        ),
        StepKind::TerminalAttach => row(&["client", "process", "terminal"], |f| {
            Ok(Step::TerminalAttach {
                client: f.client()?,
                process: f.need("process", &f.raw.process)?,
                terminal: f.need("terminal", &f.raw.terminal)?,
            })
        }),
        StepKind::TerminalSend => row(&["terminal", "text"], |f| {
            Ok(Step::TerminalSend {
                terminal: f.need("terminal", &f.raw.terminal)?,
                text: f
                    .one_line()?
                    .ok_or_else(|| f.fail("step `terminal_send` needs `text`"))?,
            })
        }),
        StepKind::TerminalExpect => row(&["terminal", "text"], |f| {
            Ok(Step::TerminalExpect {
                terminal: f.need("terminal", &f.raw.terminal)?,
                text: f.one_line()?,
            })
        }),
        StepKind::TerminalReattach => row(&["client", "terminal"], |f| {
            Ok(Step::TerminalReattach {
                client: f.client()?,
                terminal: f.need("terminal", &f.raw.terminal)?,
            })
        }),
        StepKind::RecoverSession => row(&["client", "session", "text"], |f| {
            Ok(Step::RecoverSession {
                client: f.client()?,
                session: f.session()?,
                text: f.one_text()?,
            })
        }),
        StepKind::StartSandbox => row(&["client"], |f| {
            Ok(Step::StartSandbox {
                client: f.client()?,
            })
        }),
        StepKind::ReattachSandbox => row(&["client", "expect"], |f| {
            Ok(Step::ReattachSandbox {
                client: f.client()?,
                expect: f.sandbox_status()?,
            })
        }),
        StepKind::DestroySandbox => row(&["client"], |f| {
            Ok(Step::DestroySandbox {
                client: f.client()?,
            })
        }),
    }
}

/// A waiting prompt, or with `wait = false` (and its `turn`) a turn that
/// runs on while later phases run.
fn prompt(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    let p = f.raw;
    if p.wait != Some(false) && p.turn.is_none() {
        return Ok(Step::Prompt {
            client: f.client()?,
            session: f.session()?,
            texts: f.prompt_texts()?,
            expect_stop_reason: p.expect_stop_reason.clone(),
        });
    }
    f.turns
        .borrow_mut()
        .start_turn(f.at, p, f.cleanup)
        .map_err(|why| f.fail(why.0))?;
    Ok(Step::StartTurn {
        client: f.client()?,
        session: f.session()?,
        text: f.one_text()?,
        turn: f.need("turn", &p.turn)?,
    })
}

/// A restart, or with `after_ms` one that lands inside a running turn.
fn restart(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    let Some(ms) = f.raw.after_ms else {
        return Ok(Step::Restart);
    };
    f.turns
        .borrow()
        .restart_during_turn(f.cleanup)
        .map_err(|why| f.fail(why.0))?;
    Ok(Step::RestartDuringTurn {
        after: Duration::from_millis(ms),
    })
}

fn await_turn(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    let turn = f.need("turn", &f.raw.turn)?;
    f.turns
        .borrow_mut()
        .await_turn(&turn, f.cleanup)
        .map_err(|why| f.fail(why.0))?;
    Ok(Step::AwaitTurn {
        turn,
        deadline: f.timeout,
    })
}

fn get_events(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    Ok(Step::GetEvents {
        client: f.client()?,
        session: f.session()?,
        limit: match f.raw.limit {
            Some(0) => return Err(f.fail("limit must be greater than 0")),
            Some(n) => n,
            None => 20,
        },
        integrity: f.raw.integrity.unwrap_or(false),
    })
}

fn write_file(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    Ok(Step::WriteFile {
        client: f.client()?,
        path: f.path()?,
        content: f
            .raw
            .content
            .clone()
            .ok_or_else(|| f.fail("step `write_file` needs `content`"))?,
    })
}

fn spawn_process(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    let command = f.command()?;
    Ok(Step::SpawnProcess {
        client: f.client()?,
        process: f.need("process", &f.raw.process)?,
        command,
        tty: f.raw.tty.unwrap_or(false),
    })
}

fn process_status(f: &Fields<'_>) -> Result<Step, ScenarioError> {
    Ok(Step::ProcessStatus {
        client: f.client()?,
        process: f.need("process", &f.raw.process)?,
        expect: f.process_expect()?,
        logs_contain: f.raw.logs_contain.clone().filter(|t| !t.is_empty()),
    })
}
