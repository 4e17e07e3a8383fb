//! `run`'s flag of each axis that has none written out in
//! [`super::RunArgs`]: `--AXIS VALUE`, repeatable, made from `Axis::ALL`,
//! so a new axis has its flag (and `--help` its line) without an edit to
//! the command line. The axes whose flags take a type or a source of
//! their own (a version, a candidate build, a client, a store) keep them
//! written out, as [`AXES_WITH_OWN_FLAGS`] lists beside them.

use super::AXES_WITH_OWN_FLAGS;
use crate::report::Axis;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

/// The values given to each made flag, by axis, in the order typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AxisFlags(Vec<(Axis, Vec<String>)>);

impl AxisFlags {
    /// The axes with a made flag, in `report.json`'s order.
    pub(crate) fn axes() -> impl Iterator<Item = Axis> {
        Axis::ALL
            .into_iter()
            .filter(|axis| !AXES_WITH_OWN_FLAGS.contains(axis))
    }

    /// Flags as if `values` were given (a test's).
    #[cfg(test)]
    pub(crate) fn given(values: Vec<(Axis, Vec<String>)>) -> AxisFlags {
        AxisFlags(values)
    }

    /// What `--AXIS` was given, in order; empty when it was not (or the
    /// axis's flag is one of [`AXES_WITH_OWN_FLAGS`]).
    pub(crate) fn values(&self, axis: Axis) -> &[String] {
        self.0
            .iter()
            .find(|(given, _)| *given == axis)
            .map_or(&[], |(_, values)| values.as_slice())
    }

    /// The flags of `axes` on `command`: called as the axis (what `rerun`
    /// gives a recorded axis's values back to), a value one of the axis's
    /// names when they are a fixed set ([`Axis::known_names`]).
    fn augment(command: Command, axes: impl Iterator<Item = Axis>) -> Command {
        axes.fold(command, |command, axis| {
            let word = axis.column();
            let mut arg = Arg::new(axis.name())
                .long(axis.name())
                .value_name(word.to_uppercase())
                .action(ArgAction::Append)
                .help(format!(
                    "{} Repeat it for {} axis: every cell once per {word}.",
                    axis.about(),
                    super::a_or_an(word)
                ));
            if let Some(names) = axis.known_names() {
                arg = arg.value_parser(names);
            }
            command.arg(arg)
        })
    }

    fn of(matches: &ArgMatches, axes: impl Iterator<Item = Axis>) -> AxisFlags {
        let given = axes.filter_map(|axis| {
            let values = matches.get_many::<String>(axis.name())?;
            Some((axis, values.cloned().collect()))
        });
        AxisFlags(given.collect())
    }
}

impl FromArgMatches for AxisFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(AxisFlags::of(matches, AxisFlags::axes()))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = AxisFlags::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for AxisFlags {
    fn augment_args(command: Command) -> Command {
        AxisFlags::augment(command, AxisFlags::axes())
    }

    fn augment_args_for_update(command: Command) -> Command {
        AxisFlags::augment_args(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Today every axis has a flag of its own: `run` gets no made flag,
    /// so its `--help` is what it was.
    #[test]
    fn todays_axes_keep_their_own_flags() {
        assert_eq!(AxisFlags::axes().count(), 0);
        let command = AxisFlags::augment_args(Command::new("run"));
        assert_eq!(command.get_arguments().count(), 0);
    }

    /// A made flag, on a label axis and on one of a fixed set of names
    /// (made here for two axes that have their own flags in `run`): called
    /// as the axis, repeatable, its values in order, its help from the
    /// axis, an unknown name refused with the names it takes.
    #[test]
    fn a_made_flag_is_called_as_its_axis_and_takes_its_values_in_order() {
        let axes = || [Axis::Agent, Axis::Persist].into_iter();
        let command = || AxisFlags::augment(Command::new("run"), axes());
        let matches = command()
            .try_get_matches_from(["run", "--agent", "b", "--persist", "sqlite", "--agent", "a"])
            .unwrap();
        let flags = AxisFlags::of(&matches, axes());
        assert_eq!(flags.values(Axis::Agent), ["b", "a"]);
        assert_eq!(flags.values(Axis::Persist), ["sqlite"]);
        assert!(flags.values(Axis::Client).is_empty());
        let none = AxisFlags::of(&command().get_matches_from(["run"]), axes());
        assert_eq!(none, AxisFlags::default());

        let agent = command()
            .get_arguments()
            .find(|arg| arg.get_id() == "agent")
            .unwrap()
            .get_help()
            .unwrap()
            .to_string();
        assert_eq!(
            agent,
            "The agents (`--agent`). Repeat it for an agent axis: every cell once per agent."
        );
        let refused = command()
            .try_get_matches_from(["run", "--persist", "mysql"])
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("invalid value 'mysql' for '--persist <STORE>'")
                && refused.contains("[possible values: memory, sqlite"),
            "{refused}"
        );
    }
}
