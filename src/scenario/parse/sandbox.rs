//! Checking the sandbox-state steps (files, processes, terminals): that each
//! label is made by an earlier phase before it is used.

use super::{Checker, ScenarioError};
use crate::scenario::Step;
use std::ops::Range;

impl Checker<'_> {
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
