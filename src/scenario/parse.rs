//! Reading scenario files: serde-only raw tables first (unknown keys are
//! rejected by toml with their line), then a checked [`Scenario`] whose errors
//! name the file, the line of the offending phase, and what was expected.
//!
//! Over 400 lines on purpose: the checker of a scenario (`Checker`) follows
//! the names each step makes and needs from phase to phase and gives every
//! error its file and line, beside the built-in scenarios it checks; the
//! kinds' fields are parsed apart (`parse/kinds.rs`), the tests in
//! `parse/tests.rs`.

mod kinds;

use super::{Label, Phase, Scenario, Step, StepKind, UnknownStep};
use crate::source_line::line_of;
use kinds::{Fields, RawPhase, Turns};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// The scenarios shipped with continuity, used when no scenario folder is given.
const BUILTIN: [(&str, &str); 9] = [
    (
        "native-continuity.toml",
        include_str!("../../scenarios/native-continuity.toml"),
    ),
    (
        "recreate-rehydrate.toml",
        include_str!("../../scenarios/recreate-rehydrate.toml"),
    ),
    (
        "sandbox-reconnect.toml",
        include_str!("../../scenarios/sandbox-reconnect.toml"),
    ),
    (
        "restart-mid-turn.toml",
        include_str!("../../scenarios/restart-mid-turn.toml"),
    ),
    (
        "native-load.toml",
        include_str!("../../scenarios/native-load.toml"),
    ),
    (
        "client-restart.toml",
        include_str!("../../scenarios/client-restart.toml"),
    ),
    (
        "sandbox-provider.toml",
        include_str!("../../scenarios/sandbox-provider.toml"),
    ),
    (
        "long-turn.toml",
        include_str!("../../scenarios/long-turn.toml"),
    ),
    (
        "long-turn-idle.toml",
        include_str!("../../scenarios/long-turn-idle.toml"),
    ),
];

/// A scenario file that could not be read or is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: String,
    /// Phases that decide the verdict; all phases when absent.
    #[serde(rename = "verdict")]
    verdict_phases: Option<Vec<String>>,
    /// Runs only when named with `--scenario`.
    #[serde(default)]
    opt_in: bool,
    /// What the always-on checker lets pass here (`lost_tail`).
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default, rename = "phase")]
    phases: Vec<Spanned<RawPhase>>,
    #[serde(default)]
    cleanup: Vec<Spanned<RawPhase>>,
}

struct Checker<'a> {
    file: &'a Path,
    source: &'a str,
    clients: HashSet<String>,
    sessions: HashSet<String>,
    /// Files, processes and terminals earlier phases made.
    sandbox: HashSet<(Label, String)>,
    /// Named turns seen so far (a cell, so a row's builder can update it through its `Fields`).
    turns: std::cell::RefCell<Turns>,
}

impl Checker<'_> {
    fn error(
        &self,
        span: Option<std::ops::Range<usize>>,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: self.file.to_path_buf(),
            line: span.map(|s| line_of(self.source, s.start)),
            message: message.into(),
        }
    }

    fn phase(&mut self, raw: &Spanned<RawPhase>, cleanup: bool) -> Result<Phase, ScenarioError> {
        let span = Some(raw.span());
        let p = raw.get_ref();
        let kind = self.step_kind(p, span.clone())?;
        let frame = self.frame(p, cleanup, span.clone())?;
        let f = Fields {
            kind,
            raw: p,
            file: self.file,
            line: span.as_ref().map(|s| line_of(self.source, s.start)),
            at: raw.span().start,
            cleanup,
            timeout: frame.timeout,
            turns: &self.turns,
        };
        let step = (kinds::row_of(kind).build)(&f)?;
        self.check_references(&step, span)?;
        Ok(Phase {
            name: frame.name,
            step,
            timeout: frame.timeout,
            continue_on_failure: frame.continue_on_failure,
            decides_verdict: false,
        })
    }

    /// The step's kind, and no field that kind does not take.
    fn step_kind(
        &self,
        p: &RawPhase,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<StepKind, ScenarioError> {
        let fail = |msg: String| self.error(span.clone(), msg);
        let kind: StepKind = p
            .step
            .parse()
            .map_err(|e: UnknownStep| fail(e.to_string()))?;
        let allowed = kinds::row_of(kind).fields;
        if let Some(field) = p.set_fields().into_iter().find(|f| !allowed.contains(f)) {
            return Err(fail(format!(
                "`{field}` is not a field of step `{}` (it takes: {})",
                p.step,
                if allowed.is_empty() {
                    "nothing else".to_string()
                } else {
                    allowed.join(", ")
                }
            )));
        }
        Ok(kind)
    }

    /// A name every report and message shows (a scenario's, a phase's):
    /// refused when it holds a line break, a control character or a bidi
    /// control, which would forge lines (and workflow commands) in CI logs.
    fn plain_name(
        &self,
        what: &str,
        name: &str,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<(), ScenarioError> {
        match crate::untrusted::first_acting(name) {
            None => Ok(()),
            Some(ch) => Err(self.error(
                span,
                format!(
                    "{what} {:?} holds {}: a name is one line of visible text",
                    crate::untrusted::Untrusted::new(name).terminal(),
                    crate::untrusted::Untrusted::new(&ch.to_string()).terminal()
                ),
            )),
        }
    }

    /// What every phase has whatever its step: a name, what a failure does,
    /// a deadline.
    fn frame(
        &self,
        p: &RawPhase,
        cleanup: bool,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<Frame, ScenarioError> {
        let fail = |msg: String| self.error(span.clone(), msg);
        let name = match (&p.name, cleanup) {
            (Some(n), _) if !n.trim().is_empty() => n.trim().to_string(),
            (_, true) => p.step.clone(),
            _ => return Err(fail(format!("a phase needs a `name` (step `{}`)", p.step))),
        };
        self.plain_name("a phase's `name`", &name, span.clone())?;
        let continue_on_failure = match p.on_failure.as_deref() {
            None | Some("stop") => cleanup,
            Some("continue") => true,
            Some(other) => {
                return Err(fail(format!(
                    "on_failure must be \"stop\" or \"continue\", got {other:?}"
                )))
            }
        };
        let timeout = match p.timeout_ms {
            Some(0) => return Err(fail("timeout_ms must be greater than 0".into())),
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        };
        Ok(Frame {
            name,
            continue_on_failure,
            timeout,
        })
    }

    /// Clients must be connected, sessions created and sandbox labels
    /// made (a file written, a process spawned, a terminal attached) by an
    /// earlier phase; what the step makes is known to the phases after it.
    fn check_references(
        &mut self,
        step: &Step,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<(), ScenarioError> {
        let names = step.names();
        if let Some(client) = names.client.filter(|c| !self.clients.contains(*c)) {
            return Err(self.error(
                span,
                format!("client `{client}` is used before a `connect` step names it"),
            ));
        }
        if let Some(session) = names.sessions.iter().find(|s| !self.sessions.contains(**s)) {
            return Err(self.error(
                span,
                format!("session `{session}` is used before a `create_session` step makes it"),
            ));
        }
        if let Some((label, name)) = names
            .labels
            .iter()
            .find(|(label, name)| !self.sandbox.contains(&(*label, name.to_string())))
        {
            return Err(self.error(
                span,
                format!(
                    "{} `{name}` is used before a `{}` step makes it",
                    label.word(),
                    label.maker()
                ),
            ));
        }
        self.clients.extend(names.makes_client.map(str::to_string));
        self.sessions
            .extend(names.makes_session.map(str::to_string));
        self.sandbox.extend(
            names
                .makes_label
                .map(|(label, name)| (label, name.to_string())),
        );
        Ok(())
    }
}

/// What every phase has whatever its step.
struct Frame {
    name: String,
    continue_on_failure: bool,
    timeout: Option<Duration>,
}

/// A toml error as `file:line: message (in `the line`)`, so the key is always named.
pub(crate) fn toml_error(file: &Path, source: &str, e: &toml::de::Error) -> ScenarioError {
    let line = e.span().map(|s| line_of(source, s.start));
    let text = line
        .and_then(|l| source.lines().nth(l - 1))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    ScenarioError {
        file: file.to_path_buf(),
        line,
        message: match text {
            Some(t) => format!("{} (in `{t}`)", e.message()),
            None => e.message().to_string(),
        },
    }
}

/// Parses and checks one scenario file's text.
pub fn parse_scenario(file: &Path, source: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(source).map_err(|e| toml_error(file, source, &e))?;
    let mut checker = Checker {
        file,
        source,
        clients: HashSet::new(),
        sessions: HashSet::new(),
        sandbox: HashSet::new(),
        turns: Default::default(),
    };
    if raw.name.trim().is_empty() {
        return Err(checker.error(None, "`name` must not be empty"));
    }
    checker.plain_name("the scenario's `name`", &raw.name, None)?;
    if raw.phases.is_empty() {
        return Err(checker.error(None, "a scenario needs at least one [[phase]]"));
    }
    let mut phases = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for raw_phase in &raw.phases {
        let phase = checker.phase(raw_phase, false)?;
        if seen.insert(phase.name.clone(), phases.len()).is_some() {
            return Err(checker.error(
                Some(raw_phase.span()),
                format!("phase name `{}` is used twice", phase.name),
            ));
        }
        phases.push(phase);
    }
    let cleanup = raw
        .cleanup
        .iter()
        .map(|c| checker.phase(c, true))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((turn, offset)) = checker.turns.borrow().never_awaited() {
        return Err(checker.error(
            Some(offset..offset),
            format!("turn `{turn}` is started here but no `await_turn` step collects it"),
        ));
    }
    match &raw.verdict_phases {
        None => phases.iter_mut().for_each(|p| p.decides_verdict = true),
        Some(names) => {
            for name in names {
                match seen.get(name) {
                    Some(&i) => phases[i].decides_verdict = true,
                    None => {
                        let known: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
                        return Err(checker.error(
                            None,
                            format!(
                                "verdict names phase `{name}`, which does not exist (phases: {})",
                                known.join(", ")
                            ),
                        ));
                    }
                }
            }
        }
    }
    let mut allows = Vec::new();
    for name in &raw.allow {
        let allow = name
            .get_ref()
            .parse::<crate::check::Allowance>()
            .map_err(|e| checker.error(Some(name.span()), format!("`allow`: {e}")))?;
        allows.push(allow);
    }
    Ok(Scenario {
        name: raw.name.trim().to_string(),
        description: raw.description.trim().to_string(),
        file: file.to_path_buf(),
        phases,
        cleanup,
        opt_in: raw.opt_in,
        allows,
        digest: crate::digest::sha256_hex(source.as_bytes()),
    })
}

/// The scenarios embedded in the binary.
pub fn builtin_scenarios() -> Vec<Scenario> {
    BUILTIN
        .iter()
        .map(|(name, source)| {
            parse_scenario(&Path::new("<builtin>").join(name), source).unwrap_or_else(|e| {
                panic!("built-in scenario is invalid (a test guards this): {e}")
            })
        })
        .collect()
}

/// Every `*.toml` in a folder, sorted by file name; the first bad file is the error.
pub(crate) fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let unreadable = |e: std::io::Error| ScenarioError {
        file: dir.to_path_buf(),
        line: None,
        message: format!("cannot read: {e}"),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ScenarioError {
            file: dir.to_path_buf(),
            line: None,
            message: "no *.toml scenario files here".into(),
        });
    }
    let mut scenarios: Vec<Scenario> = Vec::new();
    for file in files {
        // A scenario file is a few KiB; 4 MiB is far past any.
        let source = crate::user_file::read_text(&file, 4 << 20).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            message: format!("cannot read: {}", e.why),
        })?;
        let scenario = parse_scenario(&file, &source)?;
        if let Some(other) = scenarios.iter().find(|s| s.name == scenario.name) {
            return Err(ScenarioError {
                file,
                line: None,
                message: format!(
                    "scenario name `{}` is also used by {}",
                    scenario.name,
                    other.file.display()
                ),
            });
        }
        scenarios.push(scenario);
    }
    Ok(scenarios)
}

#[cfg(test)]
mod tests;
