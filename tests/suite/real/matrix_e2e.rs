//! The whole matrix from one queue, end to end on the local stack: axes
//! compose (two clients × two server versions), and the run's header
//! covers every cell whatever the axes. These tests need nginx and
//! node/npm, and the npm registry's sandbox-agent 0.4.0 and 0.4.2
//! (`.ci/setup` installs them); without them they fail, loudly.

use crate::support::{cells, ran_to_the_end, report, run_on_the_local_stack};

use serde_json::Value;

fn ms(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {value}"))
}

/// The run's floor and overhead are the sums over all its cells, those of
/// the second client too (the client axis's own join once kept only the
/// first client's).
#[test]
fn a_two_client_runs_timing_covers_all_its_cells() {
    let (_dir, out, run) = run_on_the_local_stack(&[
        "--client",
        "rust",
        "--client",
        "ts-sdk",
        "--target",
        "gateway-reload",
        "--scenario",
        "recreate-rehydrate",
    ]);
    assert!(
        ran_to_the_end(&run),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = report(&out);
    let cells = cells(&report);
    let clients: Vec<&str> = cells
        .iter()
        .map(|c| c["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["rust", "ts-sdk"], "{report}");
    for cell in cells {
        assert!(
            ["pass", "fail"].contains(&cell["verdict"].as_str().unwrap()),
            "the cell ran: {cell}"
        );
        assert!(ms(cell, "floorMs") + ms(cell, "overheadMs") > 0, "{cell}");
    }
    for key in ["floorMs", "overheadMs"] {
        let sum: u64 = cells.iter().map(|c| ms(c, key)).sum();
        assert_eq!(ms(&report["run"], key), sum, "run.{key} over every cell");
    }
    assert_eq!(report["totals"]["cells"], 2);
}

/// `--client rust --client ts-sdk` × `--server-version 0.4.0
/// --server-version 0.4.2`: one run, one stack switching its server, the
/// four points each a cell of its own.
#[test]
fn two_clients_by_two_server_versions_give_all_four_columns() {
    let (_dir, out, run) = run_on_the_local_stack(&[
        "--client",
        "rust",
        "--client",
        "ts-sdk",
        "--server-version",
        "0.4.0",
        "--server-version",
        "0.4.2",
        "--target",
        "agent",
        "--scenario",
        "native-continuity",
        "--timeout-ms",
        "6000",
        "--jobs",
        "1",
    ]);
    assert!(
        ran_to_the_end(&run),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = report(&out);
    let mut points: Vec<(String, String)> = cells(&report)
        .iter()
        .map(|c| {
            assert!(
                ["pass", "fail"].contains(&c["verdict"].as_str().unwrap()),
                "the cell ran: {c}"
            );
            (
                c["client"].as_str().unwrap().to_string(),
                c["serverVersion"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    points.sort();
    let want: Vec<(String, String)> = [
        ("rust", "0.4.0"),
        ("rust", "0.4.2"),
        ("ts-sdk", "0.4.0"),
        ("ts-sdk", "0.4.2"),
    ]
    .iter()
    .map(|(c, v)| (c.to_string(), v.to_string()))
    .collect();
    assert_eq!(points, want, "{report}");
    let server = report["run"]["serverVersion"].as_str().unwrap();
    assert!(
        server.contains("0.4.0") && server.contains("0.4.2"),
        "{server}"
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    for row in [
        "agent · rust @ 0.4.0",
        "agent · ts-sdk @ 0.4.0",
        "agent · rust @ 0.4.2",
        "agent · ts-sdk @ 0.4.2",
    ] {
        assert!(stdout.contains(row), "no row {row}: {stdout}");
    }
    // One stack served both versions: it came up on 0.4.0 and switched once,
    // the worker taking every cell of the point it ran before switching.
    let log = std::fs::read_to_string(out.join("stack/sandbox-agent/sandbox-agent.log")).unwrap();
    let switches: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("continuity: sandbox-agent "))
        .collect();
    assert_eq!(switches.len(), 1, "{switches:?}");
    assert!(
        switches[0].contains("sandbox-agent 0.4.2 ("),
        "{switches:?}"
    );
    assert!(!out.join("stack-2").exists(), "--jobs 1: one stack");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### server 0.4.0 → server 0.4.2"), "{md}");
    assert!(md.contains("## Where the clients disagree"), "{md}");
}
