//! The suite's command builder clears what the harness reads: every
//! environment variable `src/` (or a crate under `crates/`) reads by name
//! is cleared by it, under one of its cleared prefixes, or kept on purpose
//! (where things are on this machine). A new variable fails here until the
//! builder knows it.

use crate::support::command::{clears, continuity_command, CLEARED, KEPT};
use std::collections::BTreeSet;
use std::path::Path;

/// Every `"NAME"` that `src/` reads from the environment (`env::var`,
/// `var_os`, the knobs' `var` closure, `env_var`) or spells with one of the
/// harness's own prefixes (the seed script's keys are matched, not read).
fn variables_read_by_src() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src"), root.join("crates")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (before, literal) in literals(&text) {
                let is_name = !literal.is_empty()
                    && literal
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    && literal.starts_with(|c: char| c.is_ascii_uppercase());
                let read = ["var(", "var_os(", "env_var("]
                    .iter()
                    .any(|call| before.trim_end().ends_with(call));
                let ours = ["SA_", "CONTINUITY_", "GITHUB_"]
                    .iter()
                    .any(|p| literal.starts_with(p));
                if is_name && (read || ours) {
                    found.insert(literal.to_string());
                }
            }
        }
    }
    found
}

/// Each string literal of `text` with the text of its line before it.
fn literals(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        let mut offset = 0;
        while let Some(start) = rest.find('"') {
            let after = &rest[start + 1..];
            let Some(len) = after.find('"') else { break };
            out.push((&line[..offset + start], &after[..len]));
            offset += start + len + 2;
            rest = &after[len + 1..];
        }
    }
    out
}

#[test]
fn harness_variables_are_all_cleared() {
    let found = variables_read_by_src();
    for expected in [
        "GITHUB_STEP_SUMMARY",
        "SA_TOKEN",
        "NO_COLOR",
        "CONTINUITY_AGENT_FAULT",
    ] {
        assert!(
            found.contains(expected),
            "the scan of src/ missed {expected}: {found:?}"
        );
    }
    let missed: Vec<&String> = found
        .iter()
        .filter(|name| !clears(name) && !KEPT.contains(&name.as_str()))
        .collect();
    assert!(
        missed.is_empty(),
        "src/ reads {missed:?}, which tests/suite/support/command.rs neither clears nor keeps"
    );
}

#[test]
fn the_builder_removes_every_cleared_variable_and_pins_no_color() {
    let command = continuity_command(["--version"]);
    let envs: Vec<(String, Option<String>)> = command
        .get_envs()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.map(|v| v.to_string_lossy().into_owned()),
            )
        })
        .collect();
    for name in CLEARED {
        let set = envs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let want = if *name == "NO_COLOR" {
            Some(Some("1".to_string()))
        } else {
            Some(None)
        };
        assert_eq!(set, want, "{name}");
    }
    for name in KEPT {
        assert!(!clears(name), "{name} is a location, kept");
    }
}

#[test]
fn no_test_starts_the_binary_but_through_the_builder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let builder = root.join("support/command.rs");
    let mut dirs = vec![root];
    let mut found = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path != builder && path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                // Split so that this file does not find itself.
                let spawn = concat!("Command::new(env!(\"CARGO_BIN_EXE_", "continuity\"))");
                if text.contains(spawn) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "these start continuity with the test's own environment; use support::continuity_command: {found:?}"
    );
}
