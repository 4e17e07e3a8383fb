//! Who a target is: one of the local stack's built-in targets or a
//! deployment's own (a config file's `[targets.NAME]`), and the one rule
//! that picks a run's targets (those named with `--target`, else the
//! default ones).

use super::builtin::BuiltinTarget;
use std::fmt;

/// A target a deployment or config file names itself: never one of the
/// built-in targets, even when it has a built-in one's name (a
/// deployment's `gateway` is not continuity's nginx).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct OwnTarget(String);

impl OwnTarget {
    pub(crate) fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    pub(crate) fn name(&self) -> &str {
        &self.0
    }
}

/// Which target: a built-in one or a deployment's own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum TargetId {
    Builtin(BuiltinTarget),
    Own(OwnTarget),
}

impl TargetId {
    /// Its name, as `--target` and the report write it.
    pub(crate) fn name(&self) -> &str {
        match self {
            TargetId::Builtin(b) => b.name(),
            TargetId::Own(own) => own.name(),
        }
    }

    /// The built-in target it is, if it is one.
    pub(crate) fn builtin(&self) -> Option<BuiltinTarget> {
        match self {
            TargetId::Builtin(b) => Some(*b),
            TargetId::Own(_) => None,
        }
    }

    /// Whether a run without `--target` has its cells: a deployment's
    /// own targets always, a built-in one when it is in the default matrix.
    pub(crate) fn runs_by_default(&self) -> bool {
        self.builtin().is_none_or(BuiltinTarget::in_default_matrix)
    }
}

#[cfg(test)]
impl TargetId {
    /// The built-in target of this name, else a deployment's own: how
    /// tests name a cell's target.
    pub(crate) fn of_name(name: &str) -> TargetId {
        match BuiltinTarget::from_name(name) {
            Some(builtin) => builtin.into(),
            None => OwnTarget::new(name).into(),
        }
    }
}

impl From<BuiltinTarget> for TargetId {
    fn from(b: BuiltinTarget) -> Self {
        TargetId::Builtin(b)
    }
}

impl From<OwnTarget> for TargetId {
    fn from(own: OwnTarget) -> Self {
        TargetId::Own(own)
    }
}

impl PartialEq<BuiltinTarget> for TargetId {
    fn eq(&self, other: &BuiltinTarget) -> bool {
        self.builtin() == Some(*other)
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The targets a run has: those named with `--target`, or, when it names
/// none, the default ones. The one place a run's targets are chosen.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Selection {
    named: Vec<String>,
}

/// `--target` named a target the run does not know.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown target `{name}` (known: {})", .known.join(", "))]
pub(crate) struct UnknownTarget {
    pub name: String,
    pub known: Vec<String>,
}

impl Selection {
    /// The selection `--target` makes (`named` empty: the defaults).
    pub(crate) fn named(named: &[String]) -> Self {
        Self {
            named: named.to_vec(),
        }
    }

    /// Whether the run has `id`'s cells.
    pub(crate) fn includes(&self, id: &TargetId) -> bool {
        match self.named.is_empty() {
            true => id.runs_by_default(),
            false => self.named.iter().any(|n| n == id.name()),
        }
    }

    /// Of the `known` targets (each identified by `id`), those the run
    /// has, in their order; a name `--target` gives that none of them has
    /// is refused.
    pub(crate) fn pick<T>(
        &self,
        known: Vec<T>,
        id: impl Fn(&T) -> &TargetId,
    ) -> Result<Vec<T>, UnknownTarget> {
        if let Some(name) = self
            .named
            .iter()
            .find(|n| !known.iter().any(|k| id(k).name() == n.as_str()))
        {
            return Err(UnknownTarget {
                name: name.clone(),
                known: known.iter().map(|k| id(k).name().to_string()).collect(),
            });
        }
        Ok(known.into_iter().filter(|k| self.includes(id(k))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Vec<TargetId> {
        vec![
            BuiltinTarget::Agent.into(),
            BuiltinTarget::Client.into(),
            BuiltinTarget::GatewayReset.into(),
            BuiltinTarget::AgentDown.into(),
            OwnTarget::new("slow-db").into(),
        ]
    }

    fn names(ids: &[TargetId]) -> Vec<&str> {
        ids.iter().map(TargetId::name).collect()
    }

    #[test]
    fn no_target_named_picks_the_defaults_and_a_deployments_own() {
        let picked = Selection::default().pick(ids(), |t| t).unwrap();
        assert_eq!(names(&picked), ["agent", "gateway-reset", "slow-db"]);
    }

    #[test]
    fn named_targets_are_picked_opt_in_or_not_and_an_unknown_one_is_refused() {
        let named = ["client".to_string(), "agent-down".to_string()];
        let picked = Selection::named(&named).pick(ids(), |t| t).unwrap();
        assert_eq!(names(&picked), ["client", "agent-down"]);
        let error = Selection::named(&["nope".to_string()])
            .pick(ids(), |t| t)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown target `nope` (known: agent, client, gateway-reset, agent-down, slow-db)"
        );
    }

    #[test]
    fn an_own_target_with_a_builtin_name_is_not_the_builtin_one() {
        let own: TargetId = OwnTarget::new("gateway").into();
        assert_eq!(own.name(), "gateway");
        assert!(own != BuiltinTarget::Gateway);
        assert_eq!(own.builtin(), None);
        let builtin: TargetId = BuiltinTarget::Gateway.into();
        assert!(builtin == BuiltinTarget::Gateway);
    }
}
