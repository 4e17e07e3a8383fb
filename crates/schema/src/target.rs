//! A restart target as a report names it ([`TargetName`]): a cell's
//! `target`, the run's `targets`, an event's `target`. Which target a
//! name stands for (one of the local stack's built-in targets, or a
//! deployment's own of the same name) is the harness's to say, when it
//! runs one (`targets::TargetId`, above the schema); a report from
//! elsewhere keeps the name as written, and it reaches an output only
//! through the sanitiser, as any report text does.

use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;

/// A restart target's name, as `report.json` writes it: a plain string on
/// the wire, a type of its own in code, so a cell's target is never
/// confused with its scenario or an axis value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TargetName(String);

impl TargetName {
    pub fn new(name: impl Into<String>) -> TargetName {
        TargetName(name.into())
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for TargetName {
    fn from(name: &str) -> TargetName {
        TargetName::new(name)
    }
}

impl From<String> for TargetName {
    fn from(name: String) -> TargetName {
        TargetName(name)
    }
}

impl AsRef<str> for TargetName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Read as the text it is (a renderer sanitises it, a glob matches it),
/// never made from text but on purpose ([`TargetName::new`], `From`).
impl std::ops::Deref for TargetName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// A map keyed by target names is looked up by a `&str`.
impl Borrow<str> for TargetName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for TargetName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for TargetName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::TargetName;

    #[test]
    fn a_target_name_is_a_plain_string_on_the_wire() {
        let name = TargetName::from("gateway-reset");
        assert_eq!(serde_json::to_string(&name).unwrap(), r#""gateway-reset""#);
        let back: TargetName = serde_json::from_str(r#""my-own""#).unwrap();
        assert_eq!(back, "my-own");
        assert_eq!(format!("[{back:<8}]"), "[my-own  ]");
    }
}
