//! `continuity completions SHELL`: a script for each shell clap knows,
//! naming the subcommands' flags; an unknown shell is a usage error.

use crate::support::{assert_exit, continuity_with};
use continuity::exit_codes;
use std::process::Output;

fn stdout(run: &Output) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_continuity()"),
        ("zsh", "#compdef continuity"),
        ("fish", "complete -c continuity"),
    ] {
        let run = continuity_with(&["completions", shell], &[]);
        assert_exit(&run, exit_codes::OK);
        let script = stdout(&run);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("partition"),
            "{shell} completes run's flags"
        );
    }
    assert_exit(
        &continuity_with(&["completions", "tcsh"], &[]),
        exit_codes::USAGE,
    );
}
