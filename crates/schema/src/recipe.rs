//! What a run records so that `continuity rerun` can run its cells again
//! as they ran (`run.recipe` in `report.json`): the settings `run`
//! resolved that shape cells and that `run` does not hold already (its
//! deadlines, repeat, retries, seed, flaky result and the server and SDK
//! points with their digests are there), with the identity of each file
//! they came from. Additive to schema v2: a report without it (written
//! before it was recorded) cannot be rerun, and says so.

use super::{Axis, Point};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A run's settings as `rerun` needs them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recipe {
    /// `--target` as given: empty for the run's default targets.
    #[serde(default)]
    pub targets: Vec<crate::TargetName>,
    /// Every scenario the run ran, with the digest of its file's text.
    pub scenarios: Vec<ScenarioIdentity>,
    /// `--scenarios-dir`, absolute; `None`: the built-in scenarios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenarios_dir: Option<String>,
    /// The config file, absolute, with its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<FileIdentity>,
    /// The deployment's base URL without credentials; `None`: the local stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `--token-env`: the name of the variable that held the token (never the token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// The agents, as resolved (flags, `SA_AGENT`, the config, `mock`).
    pub agents: Vec<String>,
    /// The clients, as resolved (`rust` when none was given).
    pub clients: Vec<String>,
    /// The stores chosen (`--persist`, the config's); empty: the stack's
    /// default (its Rivet actor, else SQLite).
    #[serde(default)]
    pub persist: Vec<String>,
    /// The values chosen on each axis that has no field of its own here
    /// (an axis added since these were written; the server and SDK points
    /// are `run.points`), by the axis's name, each as its flag (`--AXIS`)
    /// takes it; absent when there is none. See [`Recipe::values`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub axes: BTreeMap<String, Vec<String>>,
    /// `--hang-grace-ms` as resolved (0: every phase waited its deadline
    /// out); absent in reports written before hangs were diagnosed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang_grace_ms: Option<u64>,
    /// `--rivet-save`, `--rivet-stop`, `--trace`, as their flags spell them.
    pub rivet_save: String,
    pub rivet_stop: String,
    pub trace: String,
    /// The expectations file the run was judged against, absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Only these cells of the matrix ran (`rerun --failed`, `bisect`);
    /// empty: every cell of it (or of its shard, `run.partition`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<Point>,
    /// The id of the run this one ran again (`continuity rerun`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
}

impl Recipe {
    /// The values the run chose on `axis`, as its flag (`--AXIS`) takes
    /// them: the agents, clients and stores in their own fields, any
    /// other axis in [`Recipe::axes`] (none for the server and SDK points).
    pub fn values(&self, axis: Axis) -> &[String] {
        match axis {
            Axis::Agent => &self.agents,
            Axis::Client => &self.clients,
            Axis::Persist => &self.persist,
            other => self.axes.get(other.name()).map_or(&[], Vec::as_slice),
        }
    }

    /// Records `values` as the run's on `axis` (see [`Recipe::values`]).
    pub fn set_values(&mut self, axis: Axis, values: Vec<String>) {
        match axis {
            Axis::Agent => self.agents = values,
            Axis::Client => self.clients = values,
            Axis::Persist => self.persist = values,
            other if values.is_empty() => {
                self.axes.remove(other.name());
            }
            other => {
                self.axes.insert(other.name().to_string(), values);
            }
        }
    }
}

/// A scenario by name and the SHA-256 of its file's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioIdentity {
    pub name: String,
    pub sha256: String,
}

/// A file by absolute path and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    pub path: String,
    pub sha256: String,
}
