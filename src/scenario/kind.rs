//! The step kinds a scenario file can name: the one table of their names
//! and of the fields each takes. Parsing (which fields a phase may set),
//! the executor (the `step` of each phase result) and the docs check
//! (`scenarios/README.md`'s step table) all read it. The list is the
//! enum's own (strum's `VariantArray`) and each name its variant's in
//! snake case (serde's, read through `wire_name`), as for the built-in
//! targets: a new kind is one variant and its fields, spelled nowhere else.

use std::fmt;
use std::str::FromStr;

/// What `step = "…"` names in a scenario file. The order is the one
/// messages and the docs list them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
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
#[error("unknown step {0:?}; expected one of: {names}", names = crate::wire_name::names::<StepKind>())]
pub struct UnknownStep(pub String);

impl StepKind {
    /// Every kind, in the order messages and the docs list them.
    pub fn all() -> &'static [StepKind] {
        <StepKind as strum::VariantArray>::VARIANTS
    }

    /// The name scenario files and reports use.
    pub fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// The fields the kind takes besides `name`, `step`, `timeout_ms` and `on_failure`.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            StepKind::Connect => &["client"],
            StepKind::CreateSession => &["client", "session", "cwd"],
            StepKind::Prompt => &[
                "client",
                "session",
                "text",
                "expect_stop_reason",
                "wait",
                "turn",
            ],
            StepKind::RehydratePrompt => &["client", "session", "from"],
            StepKind::Restart => &["after_ms"],
            StepKind::AwaitTurn => &["turn"],
            StepKind::TurnHistory => &["client", "turn"],
            StepKind::RecoverTurn => &["client", "turn"],
            StepKind::ReplayCheck => &["client", "session"],
            StepKind::GetEvents => &["client", "session", "limit", "integrity"],
            StepKind::ResumeSession => &["client", "session", "expect"],
            StepKind::DestroySession => &["client", "session"],
            StepKind::Dispose => &["client"],
            StepKind::Sleep => &["ms"],
            StepKind::Health => &["client"],
            StepKind::Probe => &["client"],
            StepKind::WriteFile => &["client", "path", "content"],
            StepKind::ReadFile => &["client", "path"],
            StepKind::SpawnProcess => &["client", "process", "command", "tty"],
            StepKind::ProcessStatus => &["client", "process", "expect", "logs_contain"],
            StepKind::TerminalAttach => &["client", "process", "terminal"],
            StepKind::TerminalSend => &["terminal", "text"],
            StepKind::TerminalExpect => &["terminal", "text"],
            StepKind::TerminalReattach => &["client", "terminal"],
            StepKind::RecoverSession => &["client", "session", "text"],
            StepKind::StartSandbox => &["client"],
            StepKind::ReattachSandbox => &["client", "expect"],
            StepKind::DestroySandbox => &["client"],
        }
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
mod tests {
    use super::StepKind;
    use std::collections::{BTreeSet, HashSet};

    #[test]
    fn every_kind_is_listed_once_and_parses_back_from_its_name() {
        let names: HashSet<&str> = StepKind::all().iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), StepKind::all().len());
        for &kind in StepKind::all() {
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
        let all_fields: BTreeSet<&str> = StepKind::all()
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
        let mut expected: Vec<&str> = StepKind::all().iter().map(|k| k.name()).collect();
        expected.sort();
        assert_eq!(documented, expected, "every step kind has one row");
        for (step, fields) in &rows {
            let kind: StepKind = step.parse().unwrap();
            let takes: BTreeSet<String> = kind.fields().iter().map(|f| f.to_string()).collect();
            assert_eq!(fields, &takes, "the fields documented for `{step}`");
        }
    }
}
