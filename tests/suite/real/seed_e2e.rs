//! `--seed` end to end on the real local stack: a fault cell whose toxic
//! acts on half the connections (`reset_peer`, `toxicity = 0.5`, on the
//! gateway hop, a config file's own fault target) makes the same toxic
//! decisions run after run with the same seed, read from each run's trace
//! (the `fault_action` events: what the proxy did to each connection of
//! the cell, in order on that connection), and other decisions with other
//! seeds. A `rerun` of the run, which takes the run's seed, makes them
//! too. (Two connections' actions may interleave either way: which one
//! carries data first is timing, not a draw.)
//! `bench/seed.sh` measures it over 10 runs of each.

use crate::support;

use continuity::exit_codes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use support::{continuity_with, report};

const COIN: &str = r#"[targets.gateway-coin]
fault = { hop = "gateway", toxic = "reset_peer", timeout = 0, toxicity = 0.5, hold_ms = 3000 }
"#;

/// What the fault proxy did in the run's one cell: for each connection
/// (its number within the cell), its `fault_action`s in order, each as
/// `hop toxic action toward`.
fn decisions(out: &Path) -> BTreeMap<u64, Vec<String>> {
    let report = report(out);
    let cell = &report["cells"][0];
    let trace = out.join(cell["trace"].as_str().expect("the cell has a trace"));
    let mut by_conn: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["ev"] != "fault_action" {
            continue;
        }
        let action = format!(
            "{} {} {} {}",
            e["hop"], e["toxic"], e["action"], e["toward"]
        );
        by_conn
            .entry(e["conn"].as_u64().unwrap())
            .or_default()
            .push(action);
    }
    by_conn
}

/// `run --target gateway-coin --scenario native-continuity --seed SEED`.
fn run(config: &Path, seed: &str, out: &Path) {
    let ran = continuity_with(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--target",
            "gateway-coin",
            "--scenario",
            "native-continuity",
            "--seed",
            seed,
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let code = ran.status.code();
    assert!(
        code == Some(exit_codes::OK.into()) || code == Some(exit_codes::FAILED.into()),
        "{ran:?}"
    );
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains(&format!("continuity: seed {seed} ")),
        "the seed is printed"
    );
    assert_eq!(report(out)["run"]["seed"].to_string(), seed);
}

#[test]
fn one_seed_gives_a_fault_cell_the_same_toxic_decisions_and_another_seed_others() {
    // Alone among the stacks: a connection's draw is the seed's, but
    // whether it carries data within the toxic's 3 s (and so shows the
    // draw) is timing, which two other stacks beside it once shifted
    // (connection 1 idle through the window in one run of the same seed).
    let _all = support::every_stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("faults.toml");
    std::fs::write(&config, COIN).unwrap();
    let out = |name: &str| dir.path().join(name);
    run(&config, "4242", &out("a"));
    let first = decisions(&out("a"));
    assert!(!first.is_empty(), "the toxic acted on a connection");
    for actions in first.values() {
        for action in actions {
            assert_eq!(
                action, r#""gateway" "reset_peer" "reset" "downstream""#,
                "{first:?}"
            );
        }
    }
    run(&config, "4242", &out("b"));
    assert_eq!(
        decisions(&out("b")),
        first,
        "the same seed, the same decisions"
    );
    // rerun takes the run's seed.
    let reran = continuity_with(
        &[
            "rerun",
            out("a").to_str().unwrap(),
            // The user gives the config again: a rerun takes no file from a report.
            "--config",
            config.to_str().unwrap(),
            "--out",
            out("rerun").to_str().unwrap(),
        ],
        &[],
    );
    assert!(matches!(reran.status.code(), Some(0 | 1)), "{reran:?}");
    assert_eq!(
        decisions(&out("rerun")),
        first,
        "a rerun, the same decisions"
    );
    // Seeds 1 and 2 reset other connections than 4242 does (each seed's
    // draws are fixed, so these are what they always are: measured with
    // bench/seed.sh).
    for seed in ["1", "2"] {
        let other = out(&format!("seed-{seed}"));
        run(&config, seed, &other);
        assert_ne!(decisions(&other), first, "seed {seed}");
    }
}
