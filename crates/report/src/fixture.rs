//! A hand-made report for the renderer tests: two targets (agent, gateway),
//! two scenarios, and one of each interesting shape: a failed cell with an
//! HTTP 400 and a closed-client failure, an errored cell whose restart timed
//! out, a passing cell and a skipped one. Times are fixed so snapshots hold.

use serde_json::{json, Map, Value};

use super::model::*;

fn detail(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn phase(name: &str, step: &str, outcome: Outcome, ms: u64) -> PhaseResult {
    PhaseResult {
        name: name.to_string(),
        step: step.to_string(),
        decides_verdict: false,
        cleanup: false,
        outcome,
        ok: outcome == Outcome::Ok,
        duration_ms: ms,
        deadline_ms: 60_000,
        detail: Map::new(),
        signature: None,
    }
}

fn verdict_phase(name: &str, outcome: Outcome, ms: u64) -> PhaseResult {
    PhaseResult {
        decides_verdict: true,
        ..phase(name, "prompt", outcome, ms)
    }
}

fn cleanup(name: &str, step: &str) -> PhaseResult {
    PhaseResult {
        cleanup: true,
        ..phase(name, step, Outcome::Ok, 12)
    }
}

fn with_detail(mut p: PhaseResult, d: Value) -> PhaseResult {
    p.detail = detail(d);
    p
}

fn failed(mut p: PhaseResult, sig: Signature) -> PhaseResult {
    p.signature = Some(sig);
    p
}

fn sig(kind: SignatureKind, message: &str) -> Signature {
    Signature {
        integrity: None,
        kind,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: message.to_string(),
        pending: None,
        cause: None,
        observed: None,
        fault: None,
        component: None,
    }
}

fn restart_timing(restart_ms: u64, ready_ms: Option<u64>, ok: bool) -> RestartResult {
    RestartResult {
        phase: "restart".to_string(),
        action: "command".to_string(),
        ok,
        restart_ms,
        ready_ms,
        down: None,
        detail: (!ok).then(|| "readiness probe GET /v1/health never answered 200".to_string()),
    }
}

fn closed_client() -> Signature {
    sig(SignatureKind::Client, "ACP client is closed")
}

fn native_agent() -> Cell {
    let http_400 = Signature {
        http_status: Some(400),
        problem_type: Some("invalid_request".to_string()),
        ..sig(
            SignatureKind::Http,
            "invalid request: unknown session native-1",
        )
    };
    Cell {
        checked: None,
        point: Point::new("agent".to_string(), "native-continuity".to_string()),
        pass_rate: None,
        attempts: Vec::new(),
        expectation: None,
        attempt: 1,
        verdict: Verdict::Fail,
        failure_boundary: Some("promptSameHandleAfterRestart".to_string()),
        reason: None,
        duration_ms: 4_210,
        phases: vec![
            phase("createSession", "create_session", Outcome::Ok, 310),
            with_detail(
                phase("promptBeforeRestart", "prompt", Outcome::Ok, 820),
                json!({"stopReason": "end_turn"}),
            ),
            phase("restart", "restart", Outcome::Ok, 1_540),
            failed(
                verdict_phase("promptSameHandleAfterRestart", Outcome::Fail, 95),
                http_400,
            ),
            with_detail(
                phase("getEvents", "get_events", Outcome::Ok, 40),
                json!({"eventsObserved": 6}),
            ),
            phase("resumeSession", "resume_session", Outcome::Ok, 260),
            failed(
                verdict_phase("promptAfterResume", Outcome::Fail, 3),
                closed_client(),
            ),
            cleanup("destroySession", "destroy_session"),
        ],
        trace: None,
        restarts: vec![restart_timing(1_200, Some(340), true)],
        timing: None,
        turn: None,
        schedule: None,
    }
}

fn native_gateway() -> Cell {
    let timeout = Signature {
        pending: Some("GET /v1/health".to_string()),
        ..sig(SignatureKind::Timeout, "gateway not ready within 30000 ms")
    };
    let mut restart = failed(
        phase("restart", "restart", Outcome::Timeout, 30_000),
        timeout,
    );
    restart.deadline_ms = 30_000;
    Cell {
        checked: None,
        point: Point::new("gateway".to_string(), "native-continuity".to_string()),
        pass_rate: None,
        attempts: Vec::new(),
        expectation: None,
        attempt: 1,
        verdict: Verdict::Error,
        failure_boundary: None,
        reason: Some("restart of gateway: not ready within 30000 ms".to_string()),
        duration_ms: 31_400,
        phases: vec![
            phase("createSession", "create_session", Outcome::Ok, 290),
            with_detail(
                phase("promptBeforeRestart", "prompt", Outcome::Ok, 790),
                json!({"stopReason": "end_turn"}),
            ),
            restart,
            verdict_phase("promptSameHandleAfterRestart", Outcome::NotRun, 0),
            phase("getEvents", "get_events", Outcome::NotRun, 0),
            phase("resumeSession", "resume_session", Outcome::NotRun, 0),
            verdict_phase("promptAfterResume", Outcome::NotRun, 0),
            cleanup("destroySession", "destroy_session"),
        ],
        trace: None,
        restarts: vec![restart_timing(180, None, false)],
        timing: None,
        turn: None,
        schedule: None,
    }
}

fn rehydrate_agent() -> Cell {
    Cell {
        checked: None,
        point: Point::new("agent".to_string(), "recreate-rehydrate".to_string()),
        pass_rate: None,
        attempts: Vec::new(),
        expectation: None,
        attempt: 1,
        verdict: Verdict::Pass,
        failure_boundary: None,
        reason: None,
        duration_ms: 3_900,
        phases: vec![
            phase("seedPrompts", "prompt", Outcome::Ok, 1_610),
            phase("restart", "restart", Outcome::Ok, 1_480),
            phase("createAfter", "create_session", Outcome::Ok, 300),
            with_detail(
                verdict_phase("promptRehydrate", Outcome::Ok, 480),
                json!({"stopReason": "end_turn", "replayed": true}),
            ),
            cleanup("destroySession", "destroy_session"),
        ],
        trace: None,
        restarts: vec![restart_timing(1_150, Some(330), true)],
        timing: None,
        turn: None,
        schedule: None,
    }
}

fn rehydrate_gateway() -> Cell {
    Cell {
        checked: None,
        point: Point::new("gateway".to_string(), "recreate-rehydrate".to_string()),
        pass_rate: None,
        attempts: Vec::new(),
        expectation: None,
        attempt: 1,
        verdict: Verdict::Skipped,
        failure_boundary: None,
        reason: Some("gateway did not recover in an earlier cell".to_string()),
        duration_ms: 0,
        phases: Vec::new(),
        trace: None,
        restarts: Vec::new(),
        timing: None,
        turn: None,
        schedule: None,
    }
}

pub fn report() -> Report {
    let cells = vec![
        native_agent(),
        native_gateway(),
        rehydrate_agent(),
        rehydrate_gateway(),
    ];
    Report {
        schema: SCHEMA_ID.to_string(),
        run: RunInfo {
            timing: None,
            id: "20261129T120102Z-ab12cd".to_string(),
            harness_version: "0.1.0".to_string(),
            started_at: "2026-11-29T12:01:02Z".to_string(),
            finished_at: "2026-11-29T12:01:41Z".to_string(),
            duration_ms: 39_510,
            base_url: "http://127.0.0.1:2468".to_string(),
            agent: "mock".to_string(),
            server_version: Some("0.4.2".to_string()),
            timeout_ms: 60_000,
            overall_timeout_ms: 600_000,
            repeat: 1,
            persist: "memory".to_string(),
            client_stores: Vec::new(),
            targets: vec!["agent".into(), "gateway".into()],
            scenarios: vec![
                "native-continuity".to_string(),
                "recreate-rehydrate".to_string(),
            ],
            interrupted: false,
            logs: vec![LogFile {
                name: "sandbox-agent".to_string(),
                path: "logs/sandbox-agent.log".to_string(),
            }],
            retries: 0,
            flaky_result: FlakyResult::Pass,
            partition: None,
            shards: Vec::new(),
            expect_file: None,
            allow_fixed: false,
            points: Vec::new(),
            seed: None,
            recipe: None,
        },
        totals: Totals::of(&cells),
        cells,
    }
}

/// The same run with every cell attempted twice (the agent's second
/// native attempt passing, so that cell is flaky), for pass rates.
pub fn repeated_report() -> Report {
    let mut r = report();
    r.run.repeat = 2;
    let mut cells = Vec::new();
    for cell in &r.cells {
        let mut second = cell.clone();
        second.attempt = 2;
        if second.point.target == "agent" && second.point.scenario == "native-continuity" {
            second.verdict = Verdict::Pass;
            second.failure_boundary = None;
            for p in &mut second.phases {
                p.outcome = Outcome::Ok;
                p.ok = true;
                p.signature = None;
            }
        }
        let attempts = vec![
            Attempt::of_cell(cell, false),
            Attempt::of_cell(&second, false),
        ];
        cells.push(super::attempts::aggregate(cell.point.clone(), attempts));
    }
    r.cells = cells;
    r.totals = Totals::of(&r.cells);
    r
}

/// Cells of agent × native-continuity for the ts-sdk client on two server
/// points (the registry's 0.4.2 and a binary `fix` that reports
/// `server_reports`) by two SDK points (0.4.2, and a package `fix`, whose
/// cells pass).
pub fn candidates(server_reports: &str) -> Report {
    use crate::{Axis, AxisPoint, AxisValue, ClientKind, PointSource};
    let mut r = report();
    let failing = r.cells[0].clone();
    r.cells.clear();
    for server in ["0.4.2", "fix"] {
        for sdk in ["0.4.2", "fix"] {
            let mut cell = failing.clone();
            cell.point.set(ClientKind::TsSdk.into());
            cell.point.set(AxisValue::Server(server.into()));
            cell.point.set(AxisValue::Sdk(sdk.into()));
            if sdk == "fix" {
                cell.verdict = Verdict::Pass;
                cell.failure_boundary = None;
            }
            r.cells.push(cell);
        }
    }
    let point = |axis, label: &str, source, version: &str| AxisPoint {
        axis,
        label: label.into(),
        source,
        version: version.into(),
        paths: match source {
            PointSource::Registry => Vec::new(),
            PointSource::Binary => vec!["/build/sandbox-agent".into()],
            PointSource::Package => vec!["../fix".into()],
        },
        sha256: None,
    };
    r.run.server_version = Some("sandbox-agent 0.4.2, sandbox-agent 0.4.2".into());
    r.run.points = vec![
        point(Axis::Server, "0.4.2", PointSource::Registry, "0.4.2"),
        point(Axis::Server, "fix", PointSource::Binary, server_reports),
        point(Axis::Sdk, "0.4.2", PointSource::Registry, "0.4.2"),
        point(Axis::Sdk, "fix", PointSource::Package, "0.4.2"),
    ];
    r
}
