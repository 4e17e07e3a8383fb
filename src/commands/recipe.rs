//! A run's recipe (`run.recipe` in `report.json`): the settings `run`
//! resolved that shape its cells, recorded before any stack starts (a
//! report written on Ctrl-C holds it too), with the digest of every file
//! they came from, so that `continuity rerun` (see [`super::rerun`]) can
//! run the cells again as they ran or refuse to.

use super::{axes::Chosen, CommandError, Given};
use crate::cli::RunArgs;
use crate::config::Config;
use crate::report::{Axis, FileIdentity, Recipe, ScenarioIdentity};
use crate::runner::RunSettings;
use clap::ValueEnum;
use std::path::Path;

/// What the recipe is made of, once `run` resolved it.
pub(super) struct Sources<'a> {
    pub args: &'a RunArgs,
    pub config: Option<&'a Config>,
    pub settings: &'a RunSettings,
    pub chosen: &'a Chosen,
    pub base_url: Option<&'a str>,
    /// The expectations file, wherever it was named (`--expect`, the config).
    pub expect: Option<&'a Path>,
    pub given: &'a Given,
}

/// The recipe of the run `sources` describes.
pub(super) fn record(sources: &Sources<'_>) -> Result<Recipe, CommandError> {
    let Sources { args, .. } = sources;
    let mut recipe = Recipe {
        targets: args
            .targets
            .iter()
            .map(String::as_str)
            .map(Into::into)
            .collect(),
        scenarios: sources
            .settings
            .scenarios
            .iter()
            .map(|s| ScenarioIdentity {
                name: s.name.clone(),
                sha256: s.digest.clone(),
            })
            .collect(),
        scenarios_dir: args
            .sources
            .scenarios_dir
            .as_deref()
            .map(absolute)
            .transpose()?,
        config: sources.config.map(|c| identity(c.path())).transpose()?,
        base_url: sources.base_url.map(crate::secret::display_url),
        token_env: args.token_env.clone(),
        agents: Vec::new(),
        clients: Vec::new(),
        persist: Vec::new(),
        axes: Default::default(),
        hang_grace_ms: Some(sources.settings.hang_grace.map_or(0, crate::clock::millis)),
        rivet_save: flag_value(&args.rivet_save),
        rivet_stop: flag_value(&args.rivet_stop),
        trace: flag_value(&args.trace),
        expect: sources.expect.map(absolute).transpose()?,
        cells: sources.given.only.clone(),
        rerun_of: sources.given.rerun_of.clone(),
    };
    record_axes(&mut recipe, sources.chosen);
    Ok(recipe)
}

/// The values the run chose on each axis (those with a flag of the
/// axis's name: every axis but the server and SDK points, which the
/// report records as `run.points`), from `Axis::ALL`.
pub(super) fn record_axes(recipe: &mut Recipe, chosen: &Chosen) {
    for axis in Axis::ALL {
        if let Some(values) = chosen.values(axis) {
            recipe.set_values(axis, values);
        }
    }
}

/// A value as its flag spells it (`immediate`, `summary`).
pub(super) fn flag_value<T: ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

fn absolute(path: &Path) -> Result<String, CommandError> {
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .map_err(|e| CommandError::usage(format!("{}: {e}", path.display())))
}

/// A file the run read, by absolute path and digest.
fn identity(path: &Path) -> Result<FileIdentity, CommandError> {
    let sha256 = crate::digest::sha256_file(path)
        .map_err(|e| CommandError::usage(format!("{}: cannot read it: {e}", path.display())))?;
    Ok(FileIdentity {
        path: absolute(path)?,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{RivetSaveArg, TraceArg};

    #[test]
    fn a_value_is_spelt_as_its_flag_takes_it() {
        assert_eq!(flag_value(&RivetSaveArg::Deferred), "deferred");
        assert_eq!(flag_value(&TraceArg::Full), "full");
        assert_eq!(
            RivetSaveArg::from_str(&flag_value(&RivetSaveArg::Immediate), false),
            Ok(RivetSaveArg::Immediate)
        );
    }
}
