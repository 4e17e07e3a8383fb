use super::*;
use crate::partition::Partition;
use crate::runner::{AgentPoint, Axes, ClientKind, Matrix, SdkPoint, ServerPoint, Shard};
use std::collections::BTreeMap;

/// The matrix a release gates on: five targets × five scenarios × four
/// agents × two clients × two server versions, 400 cells.
fn gate_matrix(shard: Option<Shard<'_>>) -> Matrix {
    let scenarios: Vec<_> = crate::scenario::builtin_scenarios()
        .into_iter()
        .take(5)
        .collect();
    assert_eq!(scenarios.len(), 5);
    let agents = ["mock", "opencode", "claude", "codex"].map(|name| AgentPoint {
        name: name.into(),
        real: name != "mock",
    });
    let axes = Axes {
        agents: agents.into(),
        clients: vec![ClientKind::Rust, ClientKind::TsSdk],
        servers: vec![
            ServerPoint::registry("0.4.0"),
            ServerPoint::registry("0.4.2"),
        ],
        sdks: vec![SdkPoint::registry("0.4.2")],
        ..super::super::tests::axes()
    };
    let targets = [
        "agent",
        "gateway",
        "gateway-reload",
        "rivet",
        "rivet-engine",
    ]
    .map(crate::targets::TargetId::of_name)
    .into();
    Matrix::build(targets, &scenarios, axes, shard)
}

/// A stand-in for a hash: spreads the heavy cells over the matrix
/// independently of the axes and of the built-in estimates.
fn scatter(point: &Point) -> u64 {
    point
        .to_string()
        .bytes()
        .fold(17u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

/// A previous run of the matrix with skewed durations: the ts-sdk cells
/// several times the rust ones, one cell in 16 waiting out a 60 s
/// deadline, the rest 0.5–4.5 s.
fn skewed_report(matrix: &Matrix) -> Report {
    let template = crate::report::fixture::report().cells[0].clone();
    let mut report = crate::report::fixture::report();
    report.cells = matrix
        .cells
        .iter()
        .map(|planned| {
            let h = scatter(&planned.named);
            let mut ms = 500 + h % 4_000;
            if planned.named.client().is(ClientKind::TsSdk) {
                ms += 6_700;
            }
            if h.is_multiple_of(16) {
                ms = 60_000 + h % 2_000;
            }
            let mut cell = template.clone();
            cell.point = planned.named.clone();
            cell.duration_ms = ms;
            cell
        })
        .collect();
    report
}

/// Each shard's cells and its total of the report's durations.
fn split(kind: &str, timings: &Timings, truth: &Timings) -> Vec<(Vec<Point>, u64)> {
    (1..=4)
        .map(|k| {
            let partition: Partition = format!("{kind}:{k}/4").parse().unwrap();
            let shard = Shard {
                partition: &partition,
                timings,
            };
            let m = gate_matrix(Some(shard));
            let total = m
                .cells
                .iter()
                .map(|c| truth.expected_ms(&c.point, &c.named))
                .sum();
            (m.cells.into_iter().map(|c| c.named).collect(), total)
        })
        .collect()
}

fn slowest_over_mean(shards: &[(Vec<Point>, u64)]) -> f64 {
    let loads: Vec<f64> = shards.iter().map(|(_, ms)| *ms as f64).collect();
    let mean = loads.iter().sum::<f64>() / loads.len() as f64;
    loads.iter().cloned().fold(0.0, f64::max) / mean
}

#[test]
fn cost_shards_of_a_skewed_run_are_within_15_percent_and_cover_the_matrix_once() {
    let full = gate_matrix(None);
    assert_eq!(full.cells.len(), 400);
    let truth = Timings::from_report(&skewed_report(&full));
    assert_eq!(truth.by_point.len(), 400, "every cell's point is its own");

    let shards = split("cost", &truth, &truth);
    let ratio = slowest_over_mean(&shards);
    assert!(ratio <= 1.15, "slowest / mean {ratio:.3}");
    let mut held: BTreeMap<Point, usize> = BTreeMap::new();
    for point in shards.iter().flat_map(|(cells, _)| cells) {
        *held.entry(point.clone()).or_default() += 1;
    }
    assert_eq!(held.len(), 400, "the shards' union is the matrix");
    assert!(held.values().all(|n| *n == 1), "every cell in one shard");

    // The same run dealt round-robin by name: one client per shard, the
    // ts-sdk shards far the slowest (what issue 35 measured).
    let count = slowest_over_mean(&split("count", &truth, &truth));
    assert!(count > 1.15, "count: {count:.3}");
    // And by the built-in estimates alone: the durations were read.
    let blind = slowest_over_mean(&split("cost", &Timings::default(), &truth));
    assert!(blind > ratio, "estimates {blind:.3}, timings {ratio:.3}");
}

#[test]
fn without_timings_the_estimates_balance_the_gate_matrix() {
    let none = Timings::default();
    let mut estimated = Timings::default();
    for c in gate_matrix(None).cells {
        estimated
            .by_point
            .insert(c.named.clone(), estimate_ms(&c.point));
    }
    let ratio = slowest_over_mean(&split("cost", &none, &estimated));
    assert!(ratio <= 1.02, "{ratio:.3}");
}

#[test]
fn the_estimate_adds_one_weight_per_coordinate() {
    let mut point = crate::runner::matrix::tests::point("rivet", "0.4.2");
    assert_eq!(estimate_ms(&point), 9_000);
    point.client = ClientKind::TsSdk;
    point.agent = "opencode".into();
    point.real_agent = true;
    point.scenario = "sandbox-reconnect".into();
    assert_eq!(estimate_ms(&point), 9_000 + 6_700 + 5_700 + 450);
    // A fault target: its hold; a target and a real agent the table lacks.
    point = crate::runner::matrix::tests::point("gateway-partition", "0.4.2");
    assert_eq!(estimate_ms(&point), 3_000 + 700);
    point.target = crate::targets::TargetId::of_name("my-db");
    point.agent = "aider".into();
    point.real_agent = true;
    assert_eq!(estimate_ms(&point), OTHER_TARGET_MS + OTHER_REAL_AGENT_MS);
}

/// docs/ci.md quotes every weight, with its source: the same figure.
#[test]
fn the_docs_quote_the_weights_table() {
    let docs = include_str!("../../../docs/ci.md");
    for w in WEIGHTS {
        let coordinate = format!("{:?}", w.coordinate).to_lowercase();
        let row = format!(
            "| {coordinate} | `{}` | {} s |",
            w.value,
            w.ms as f64 / 1000.0
        );
        assert!(docs.contains(&row), "docs/ci.md lacks {row}");
    }
}
