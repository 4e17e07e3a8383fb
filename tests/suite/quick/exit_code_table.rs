//! The exit codes a user is told of are the codes `continuity` has: the
//! README's table and `--help` list every code of `exit_codes::ALL`, and
//! nothing else.

use crate::support::continuity_with;
use continuity::exit_codes;

fn documented_codes() -> Vec<u8> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("## Exit codes")
        .nth(1)
        .expect("the README has an exit-code section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|line| {
            line.strip_prefix("| ")?
                .split(" |")
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect()
}

#[test]
fn the_readme_and_help_list_every_exit_code_and_only_those() {
    let codes: Vec<u8> = exit_codes::ALL.iter().map(|(code, _)| *code).collect();
    assert_eq!(documented_codes(), codes, "README.md#exit-codes");
    let help = continuity_with(&["--help"], &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    let listed = help
        .split("Exit codes:")
        .nth(1)
        .expect("--help lists exit codes");
    let listed: Vec<u8> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(listed, codes, "{help}");
    // An SDK that npm cannot install is not a usage error (#30): the table says so.
    let incomplete = exit_codes::ALL
        .iter()
        .find(|(c, _)| *c == exit_codes::INCOMPLETE)
        .unwrap();
    assert!(incomplete.1.contains("SDK install"), "{incomplete:?}");
}
