//! The step kinds a scenario file can name: the one table of their names
//! and of the fields each takes. Parsing (which fields a phase may set),
//! the executor (the `step` of each phase result) and the docs check
//! (`scenarios/README.md`'s step table) all read it.

use std::fmt;
use std::str::FromStr;

/// What `step = "…"` names in a scenario file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
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
#[error("unknown step {0:?}; expected one of: {names}", names = StepKind::names().join(", "))]
pub struct UnknownStep(pub String);

impl StepKind {
    /// Every kind, in the order messages and the docs list them.
    pub const ALL: [StepKind; 28] = [
        StepKind::Connect,
        StepKind::CreateSession,
        StepKind::Prompt,
        StepKind::RehydratePrompt,
        StepKind::Restart,
        StepKind::AwaitTurn,
        StepKind::TurnHistory,
        StepKind::RecoverTurn,
        StepKind::ReplayCheck,
        StepKind::GetEvents,
        StepKind::ResumeSession,
        StepKind::DestroySession,
        StepKind::Dispose,
        StepKind::Sleep,
        StepKind::Health,
        StepKind::Probe,
        StepKind::WriteFile,
        StepKind::ReadFile,
        StepKind::SpawnProcess,
        StepKind::ProcessStatus,
        StepKind::TerminalAttach,
        StepKind::TerminalSend,
        StepKind::TerminalExpect,
        StepKind::TerminalReattach,
        StepKind::RecoverSession,
        StepKind::StartSandbox,
        StepKind::ReattachSandbox,
        StepKind::DestroySandbox,
    ];

    /// The name scenario files and reports use.
    pub fn name(self) -> &'static str {
        self.entry().0
    }

    /// The fields the kind takes besides `name`, `step`, `timeout_ms` and `on_failure`.
    pub fn fields(self) -> &'static [&'static str] {
        self.entry().1
    }

    /// Every kind's name, in [`StepKind::ALL`] order.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|k| k.name()).collect()
    }

    fn entry(self) -> (&'static str, &'static [&'static str]) {
        match self {
            StepKind::Connect => ("connect", &["client"]),
            StepKind::CreateSession => ("create_session", &["client", "session", "cwd"]),
            StepKind::Prompt => (
                "prompt",
                &[
                    "client",
                    "session",
                    "text",
                    "expect_stop_reason",
                    "wait",
                    "turn",
                ],
            ),
            StepKind::RehydratePrompt => ("rehydrate_prompt", &["client", "session", "from"]),
            StepKind::Restart => ("restart", &["after_ms"]),
            StepKind::AwaitTurn => ("await_turn", &["turn"]),
            StepKind::TurnHistory => ("turn_history", &["client", "turn"]),
            StepKind::RecoverTurn => ("recover_turn", &["client", "turn"]),
            StepKind::ReplayCheck => ("replay_check", &["client", "session"]),
            StepKind::GetEvents => ("get_events", &["client", "session", "limit", "integrity"]),
            StepKind::ResumeSession => ("resume_session", &["client", "session", "expect"]),
            StepKind::DestroySession => ("destroy_session", &["client", "session"]),
            StepKind::Dispose => ("dispose", &["client"]),
            StepKind::Sleep => ("sleep", &["ms"]),
            StepKind::Health => ("health", &["client"]),
            StepKind::Probe => ("probe", &["client"]),
            StepKind::WriteFile => ("write_file", &["client", "path", "content"]),
            StepKind::ReadFile => ("read_file", &["client", "path"]),
            StepKind::SpawnProcess => ("spawn_process", &["client", "process", "command", "tty"]),
            StepKind::ProcessStatus => (
                "process_status",
                &["client", "process", "expect", "logs_contain"],
            ),
            StepKind::TerminalAttach => ("terminal_attach", &["client", "process", "terminal"]),
            StepKind::TerminalSend => ("terminal_send", &["terminal", "text"]),
            StepKind::TerminalExpect => ("terminal_expect", &["terminal", "text"]),
            StepKind::TerminalReattach => ("terminal_reattach", &["client", "terminal"]),
            StepKind::RecoverSession => ("recover_session", &["client", "session", "text"]),
            StepKind::StartSandbox => ("start_sandbox", &["client"]),
            StepKind::ReattachSandbox => ("reattach_sandbox", &["client", "expect"]),
            StepKind::DestroySandbox => ("destroy_sandbox", &["client"]),
        }
    }
}

impl FromStr for StepKind {
    type Err = UnknownStep;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| UnknownStep(name.to_string()))
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::StepKind;
    use std::collections::{BTreeSet, HashSet};

    #[test]
    fn every_kind_is_listed_once_and_parses_back_from_its_name() {
        let names: HashSet<&str> = StepKind::names().into_iter().collect();
        assert_eq!(names.len(), StepKind::ALL.len());
        for kind in StepKind::ALL {
            assert_eq!(kind.name().parse::<StepKind>(), Ok(kind));
        }
        let e = "Prompt".parse::<StepKind>().unwrap_err().to_string();
        assert!(
            e.starts_with(
                "unknown step \"Prompt\"; expected one of: connect, create_session, prompt,"
            ),
            "{e}"
        );
    }

    /// The step table of `scenarios/README.md` lists every kind once, with
    /// exactly the fields the parser accepts for it.
    #[test]
    fn the_scenario_readme_documents_every_kind_with_its_fields() {
        let readme = include_str!("../../scenarios/README.md");
        let all_fields: BTreeSet<&str> = StepKind::ALL
            .iter()
            .flat_map(|k| k.fields().iter().copied())
            .collect();
        let rows: Vec<(String, BTreeSet<String>)> = readme
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let step = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
                step.parse::<StepKind>().ok()?;
                let fields = cells
                    .get(2)?
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .filter_map(|quoted| quoted.split([' ', '=']).next())
                    .filter(|word| all_fields.contains(word))
                    .map(str::to_string)
                    .collect();
                Some((step.to_string(), fields))
            })
            .collect();
        let mut documented: Vec<&str> = rows.iter().map(|(s, _)| s.as_str()).collect();
        documented.sort();
        let mut expected = StepKind::names();
        expected.sort();
        assert_eq!(documented, expected, "every step kind has one row");
        for (step, fields) in &rows {
            let kind: StepKind = step.parse().unwrap();
            let takes: BTreeSet<String> = kind.fields().iter().map(|f| f.to_string()).collect();
            assert_eq!(fields, &takes, "the fields documented for `{step}`");
        }
    }
}
