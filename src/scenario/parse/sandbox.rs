//! Checking the sandbox-state steps (files, processes, terminals): their
//! fields, and that each label is made by an earlier phase before it is used.

use super::{Checker, RawPhase, ScenarioError, Texts};
use crate::scenario::{ProcessExpect, Step};
use std::ops::Range;
use std::path::{Component, Path};

impl Checker<'_> {
    pub(super) fn sandbox_step(
        &self,
        kind: &str,
        p: &RawPhase,
        span: Option<Range<usize>>,
    ) -> Result<Step, ScenarioError> {
        let fail = |msg: String| self.error(span.clone(), msg);
        let need = |field: &str, value: &Option<String>| -> Result<String, ScenarioError> {
            match value {
                Some(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
                _ => Err(fail(format!("step `{kind}` needs `{field}`"))),
            }
        };
        let client = || need("client", &p.client);
        let path = || -> Result<String, ScenarioError> {
            let path = need("path", &p.path)?;
            let relative = Path::new(&path)
                .components()
                .all(|c| matches!(c, Component::Normal(_)));
            if !relative {
                return Err(fail(format!(
                    "path {path:?} must be relative, without `..` (files go in the cell's own sandbox folder)"
                )));
            }
            Ok(path)
        };
        let one_text = || -> Result<Option<String>, ScenarioError> {
            match &p.text {
                None => Ok(None),
                Some(Texts::One(t)) if !t.is_empty() && !t.contains('\n') => Ok(Some(t.clone())),
                Some(_) => Err(fail(format!(
                    "step `{kind}` takes one non-empty line of `text` (no list, no newline)"
                ))),
            }
        };
        Ok(match kind {
            "write_file" => Step::WriteFile {
                client: client()?,
                path: path()?,
                content: p
                    .content
                    .clone()
                    .ok_or_else(|| fail("step `write_file` needs `content`".into()))?,
            },
            "read_file" => Step::ReadFile {
                client: client()?,
                path: path()?,
            },
            "spawn_process" => {
                let command = match &p.command {
                    Some(Texts::One(c)) => vec![c.clone()],
                    Some(Texts::Many(cs)) => cs.clone(),
                    None => Vec::new(),
                };
                if command.first().is_none_or(|c| c.trim().is_empty()) {
                    return Err(fail(
                        "step `spawn_process` needs `command`: a program, or a list of program and arguments"
                            .into(),
                    ));
                }
                Step::SpawnProcess {
                    client: client()?,
                    process: need("process", &p.process)?,
                    command,
                    tty: p.tty.unwrap_or(false),
                }
            }
            "process_status" => Step::ProcessStatus {
                client: client()?,
                process: need("process", &p.process)?,
                expect: match p.expect.as_deref() {
                    None | Some("running") => ProcessExpect::Running,
                    Some("exited") => ProcessExpect::Exited,
                    Some("listed") => ProcessExpect::Listed,
                    Some(other) => {
                        return Err(fail(format!(
                            "expect must be \"running\", \"exited\" or \"listed\", got {other:?}"
                        )))
                    }
                },
                logs_contain: p.logs_contain.clone().filter(|t| !t.is_empty()),
            },
            "terminal_attach" => Step::TerminalAttach {
                client: client()?,
                process: need("process", &p.process)?,
                terminal: need("terminal", &p.terminal)?,
            },
            "terminal_send" => Step::TerminalSend {
                terminal: need("terminal", &p.terminal)?,
                text: one_text()?
                    .ok_or_else(|| fail("step `terminal_send` needs `text`".into()))?,
            },
            "terminal_expect" => Step::TerminalExpect {
                terminal: need("terminal", &p.terminal)?,
                text: one_text()?,
            },
            "terminal_reattach" => Step::TerminalReattach {
                client: client()?,
                terminal: need("terminal", &p.terminal)?,
            },
            other => unreachable!("step {other} was checked against STEP_FIELDS"),
        })
    }

    /// Labels are made by `write_file`, `spawn_process`, `terminal_attach`;
    /// using one before that (or a client before `connect`) is an error.
    pub(super) fn check_sandbox(
        &mut self,
        step: &Step,
        span: Option<Range<usize>>,
    ) -> Result<(), ScenarioError> {
        let (client, made, used): (Option<&String>, Option<String>, Vec<(&str, &String)>) =
            match step {
                Step::WriteFile { client, path, .. } => {
                    (Some(client), Some(key("file", path)), vec![])
                }
                Step::ReadFile { client, path } => (Some(client), None, vec![("file", path)]),
                Step::SpawnProcess {
                    client, process, ..
                } => (Some(client), Some(key("process", process)), vec![]),
                Step::ProcessStatus {
                    client, process, ..
                } => (Some(client), None, vec![("process", process)]),
                Step::TerminalAttach {
                    client,
                    process,
                    terminal,
                } => (
                    Some(client),
                    Some(key("terminal", terminal)),
                    vec![("process", process)],
                ),
                Step::TerminalSend { terminal, .. } | Step::TerminalExpect { terminal, .. } => {
                    (None, None, vec![("terminal", terminal)])
                }
                Step::TerminalReattach { client, terminal } => {
                    (Some(client), None, vec![("terminal", terminal)])
                }
                _ => (None, None, vec![]),
            };
        if let Some(client) = client.filter(|c| !self.clients.contains(*c)) {
            return Err(self.error(
                span,
                format!("client `{client}` is used before a `connect` step names it"),
            ));
        }
        for (kind, label) in used {
            if !self.sandbox.contains(&key(kind, label)) {
                let maker = match kind {
                    "file" => "write_file",
                    "process" => "spawn_process",
                    _ => "terminal_attach",
                };
                return Err(self.error(
                    span,
                    format!("{kind} `{label}` is used before a `{maker}` step makes it"),
                ));
            }
        }
        if let Some(made) = made {
            self.sandbox.insert(made);
        }
        Ok(())
    }
}

fn key(kind: &str, label: &str) -> String {
    format!("{kind}:{label}")
}
