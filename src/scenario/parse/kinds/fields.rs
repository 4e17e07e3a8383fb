//! Reading one raw phase's step fields into checked values: required
//! labels, relative paths, texts, commands and the `expect` choices, each
//! error naming the step kind and the field.

use super::turns::Turns;
use super::{RawPhase, Texts};
use crate::scenario::ScenarioError;
use crate::scenario::{ProcessExpect, ResumeExpect, SandboxStatus, StepKind};
use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// One phase's fields, with where to point an error, and what the turn
/// steps check against: where in the file it is, whether it is a cleanup
/// step, its deadline and the turns earlier phases started.
pub(in crate::scenario::parse) struct Fields<'a> {
    pub kind: StepKind,
    pub raw: &'a RawPhase,
    pub file: &'a Path,
    pub line: Option<usize>,
    /// Its offset in the file (where a turn it starts is reported).
    pub at: usize,
    pub cleanup: bool,
    pub timeout: Option<Duration>,
    pub turns: &'a RefCell<Turns>,
}

impl Fields<'_> {
    pub(crate) fn fail(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: PathBuf::from(self.file),
            line: self.line,
            message: message.into(),
        }
    }

    /// A field the step cannot do without, trimmed and not empty.
    pub(crate) fn need(
        &self,
        field: &str,
        value: &Option<String>,
    ) -> Result<String, ScenarioError> {
        match value {
            Some(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
            _ => Err(self.fail(format!("step `{}` needs `{field}`", self.kind))),
        }
    }

    /// `turn`, naming a turn an earlier phase awaited (the history steps).
    pub(crate) fn awaited_turn(&self) -> Result<String, ScenarioError> {
        let turn = self.need("turn", &self.raw.turn)?;
        self.turns
            .borrow()
            .check_history(&turn, self.kind.name())
            .map_err(|why| self.fail(why.0))?;
        Ok(turn)
    }

    pub(crate) fn client(&self) -> Result<String, ScenarioError> {
        self.need("client", &self.raw.client)
    }

    pub(crate) fn session(&self) -> Result<String, ScenarioError> {
        self.need("session", &self.raw.session)
    }

    /// `path`, relative and without `..`: files go in the cell's own folder.
    pub(crate) fn path(&self) -> Result<String, ScenarioError> {
        let path = self.need("path", &self.raw.path)?;
        let relative = Path::new(&path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        if !relative {
            return Err(self.fail(format!(
                "path {path:?} must be relative, without `..` (files go in the cell's own sandbox folder)"
            )));
        }
        Ok(path)
    }

    /// `text` as one line (no list, no newline), when set.
    pub(crate) fn one_line(&self) -> Result<Option<String>, ScenarioError> {
        match &self.raw.text {
            None => Ok(None),
            Some(Texts::One(t)) if !t.is_empty() && !t.contains('\n') => Ok(Some(t.clone())),
            Some(_) => Err(self.fail(format!(
                "step `{}` takes one non-empty line of `text` (no list, no newline)",
                self.kind
            ))),
        }
    }

    /// `text` as one non-empty string.
    pub(crate) fn one_text(&self) -> Result<String, ScenarioError> {
        match &self.raw.text {
            Some(Texts::One(t)) if !t.trim().is_empty() => Ok(t.clone()),
            _ => Err(self.fail(format!(
                "step `{}` needs `text`: one non-empty string",
                self.kind
            ))),
        }
    }

    /// A prompt's `text`: a string or a list of non-empty strings.
    pub(crate) fn prompt_texts(&self) -> Result<Vec<String>, ScenarioError> {
        let texts = match &self.raw.text {
            Some(Texts::One(t)) => vec![t.clone()],
            Some(Texts::Many(ts)) => ts.clone(),
            None => Vec::new(),
        };
        if texts.is_empty() || texts.iter().any(|t| t.trim().is_empty()) {
            return Err(
                self.fail("step `prompt` needs `text`: a string or a list of non-empty strings")
            );
        }
        Ok(texts)
    }

    /// `command`: a program, or a list of program and arguments.
    pub(crate) fn command(&self) -> Result<Vec<String>, ScenarioError> {
        let command = match &self.raw.command {
            Some(Texts::One(c)) => vec![c.clone()],
            Some(Texts::Many(cs)) => cs.clone(),
            None => Vec::new(),
        };
        if command.first().is_none_or(|c| c.trim().is_empty()) {
            return Err(self.fail(
                "step `spawn_process` needs `command`: a program, or a list of program and arguments",
            ));
        }
        Ok(command)
    }

    pub(crate) fn process_expect(&self) -> Result<ProcessExpect, ScenarioError> {
        match self.raw.expect.as_deref() {
            None | Some("running") => Ok(ProcessExpect::Running),
            Some("exited") => Ok(ProcessExpect::Exited),
            Some("listed") => Ok(ProcessExpect::Listed),
            Some(other) => Err(self.fail(format!(
                "expect must be \"running\", \"exited\" or \"listed\", got {other:?}"
            ))),
        }
    }

    pub(crate) fn sandbox_status(&self) -> Result<Option<SandboxStatus>, ScenarioError> {
        match self.raw.expect.as_deref() {
            None => Ok(None),
            Some("connected") => Ok(Some(SandboxStatus::Connected)),
            Some("expired") => Ok(Some(SandboxStatus::Expired)),
            Some("no_sandbox") => Ok(Some(SandboxStatus::NoSandbox)),
            Some(other) => Err(self.fail(format!(
                "expect must be \"connected\", \"expired\" or \"no_sandbox\", got {other:?}"
            ))),
        }
    }

    pub(crate) fn resume_expect(&self) -> Result<Option<ResumeExpect>, ScenarioError> {
        match self.raw.expect.as_deref() {
            None => Ok(None),
            Some("same_handle") => Ok(Some(ResumeExpect::SameHandle)),
            Some("recreated") => Ok(Some(ResumeExpect::Recreated)),
            Some(other) => Err(self.fail(format!(
                "expect must be \"same_handle\" or \"recreated\", got {other:?}"
            ))),
        }
    }
}
