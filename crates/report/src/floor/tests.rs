//! The floor's tests (`floor.rs`): from hand-written traces, what counts as the servers' time (restarts, answers, store calls, SDK actions, terminals, faults) and what is overhead, and how the reports show both.

use super::*;

fn restart(restart_ms: u64, ready_ms: Option<u64>) -> RestartResult {
    RestartResult {
        phase: "restart".into(),
        action: "managed".into(),
        ok: true,
        restart_ms,
        ready_ms,
        down: None,
        detail: None,
    }
}

const TRACE: &str = concat!(
    r#"{"t":0.0,"ev":"trace"}"#,
    "\n",
    r#"{"t":10.0,"ev":"http","ms":4.0}"#,
    "\n",
    // Two exchanges at once (two clients): 20..30 and 25..40 are 20 ms, not 25.
    r#"{"t":30.0,"ev":"http","ms":10.0}"#,
    "\n",
    r#"{"t":40.0,"ev":"http","ms":15.0}"#,
    "\n",
    r#"{"t":50.0,"ev":"sse","ms":99.0}"#,
    "\n",
    // A prompt sent at 100 and answered on the stream at 150: 50 ms.
    r#"{"t":100.0,"ev":"rpc","dir":"out","rpcId":7}"#,
    "\n",
    r#"{"t":150.0,"ev":"rpc","dir":"in","rpcId":7}"#,
    "\n",
    // A notification (no answer) counts nothing.
    r#"{"t":160.0,"ev":"rpc","dir":"out","method":"session/cancel"}"#,
    "\n",
    "not json\n",
);

#[test]
fn restarts_and_answers_are_the_floor_the_rest_is_overhead() {
    let floor = of_attempt(1000, &[restart(100, Some(200))], Some(TRACE));
    assert_eq!(
        floor,
        Floor {
            floor_ms: 374,
            overhead_ms: 626
        }
    );
    assert_eq!(floor.describe(), "floor 0.4 s, overhead 0.6 s (+167%)");
}

/// The time a nemesis keeps the stack down is the stack's: a pause
/// from its stop to its wake, a schedule's fault from its start to its
/// end (which the executor waits out), the wait after a heal.
#[test]
fn a_pause_a_scheduled_fault_and_the_wait_after_a_heal_are_floor() {
    let trace = concat!(
        r#"{"t":0.0,"ev":"trace"}"#,
        "\n",
        r#"{"t":100.0,"ev":"pause_start","component":"agent","pid":1,"members":[1],"holdMs":2000}"#,
        "\n",
        r#"{"t":300.0,"ev":"pause_end","component":"agent","ok":true}"#,
        "\n",
        r#"{"t":400.0,"ev":"scheduled_start","index":0,"fault":"partition","on":"gateway"}"#,
        "\n",
        r#"{"t":450.0,"ev":"scheduled_start","index":1,"fault":"pause","on":"rivet"}"#,
        "\n",
        r#"{"t":500.0,"ev":"scheduled_end","index":0,"fault":"partition","on":"gateway","ok":true}"#,
        "\n",
        r#"{"t":600.0,"ev":"scheduled_end","index":1,"fault":"pause","on":"rivet","ok":true}"#,
        "\n",
        r#"{"t":700.0,"ev":"fault_ready","ms":50}"#,
        "\n",
    );
    // 100..300, 400..600 (two faults overlapping), 650..700.
    let floor = of_attempt(1000, &[], Some(trace));
    assert_eq!(floor.floor_ms, 450, "{floor:?}");
    // The schedule drawn to start at 350: the gap before its first
    // fault is its time too (350..600 whole).
    let scheduled = trace.replace(
            r#"{"t":400.0,"ev":"scheduled_start""#,
            "{\"t\":350.0,\"ev\":\"schedule\",\"schedule\":{}}\n{\"t\":400.0,\"ev\":\"scheduled_start\"",
        );
    let floor = of_attempt(1000, &[], Some(&scheduled));
    assert_eq!(floor.floor_ms, 500, "{floor:?}");
    // A stack that did not answer again after the heal: its probe's
    // attempts (no fault_ready) are its time too, 700..800 and 790..900.
    let never = concat!(
        r#"{"t":800.0,"ev":"ready_probe","attempt":1,"probe":"x","ms":100,"error":"no answer"}"#,
        "\n",
        r#"{"t":900.0,"ev":"ready_probe","attempt":2,"probe":"x","ms":110,"status":503}"#,
        "\n",
    );
    let floor = of_attempt(1000, &[], Some(never));
    assert_eq!(floor.floor_ms, 200, "{floor:?}");
}

/// A turn cut by its fault is never answered: its prompt counts from
/// sent until the end of the phase it was sent in (the scenario let it
/// run on there before the restart), not until the attempt's end; an
/// answered one from sent to answered, as before.
#[test]
fn a_request_never_answered_counts_until_its_phase_ends() {
    let trace = concat!(
        r#"{"t":0.0,"ev":"phase_start","phase":"restartMidTurn","step":"restart"}"#,
        "\n",
        r#"{"t":50.0,"ev":"rpc","dir":"out","via":"post","method":"session/prompt","rpcId":2}"#,
        "\n",
        r#"{"t":60.0,"ev":"rpc","dir":"out","via":"post","method":"session/prompt","rpcId":3}"#,
        "\n",
        r#"{"t":70.0,"ev":"rpc","dir":"in","via":"post","rpcId":3}"#,
        "\n",
        r#"{"t":1500.0,"ev":"phase_end","phase":"restartMidTurn","outcome":"ok","ms":1500}"#,
        "\n",
        r#"{"t":1600.0,"ev":"phase_end","phase":"awaitTurn","outcome":"fail","ms":100}"#,
        "\n",
    );
    let floor = of_attempt(2000, &[], Some(trace));
    assert_eq!(floor.floor_ms, 1450, "50..1500: {floor:?}");
}

/// A prompt the client sent without waiting (the hosted SDK's), in a
/// phase that ends at once, while its turn streams on through the next
/// phase: it counts until the last event its session showed at work,
/// not only to the end of its own phase. Events of another session, of
/// the same session once the client sent it another request, or after
/// a restart ended the turn, do not extend it.
#[test]
fn a_request_never_answered_counts_while_its_session_shows_the_turn_at_work() {
    let line = |t: f64, rest: &str| format!("{{\"t\":{t:.1},{rest}}}\n");
    let update = |t: f64, session: &str| {
        line(
            t,
            &format!(
                r#""ev":"hop_sse","hop":"gateway","conn":1,"stream":"s","event":"message","method":"session/update","session":"{session}""#
            ),
        )
    };
    let mut trace = String::new();
    trace += &line(0.0, r#""ev":"phase_start","phase":"startLongTurn""#);
    trace += &line(
        10.0,
        r#""ev":"rpc","dir":"out","method":"session/prompt","rpcId":2,"session":"a""#,
    );
    trace += &line(
        20.0,
        r#""ev":"phase_end","phase":"startLongTurn","outcome":"ok","ms":20"#,
    );
    trace += &update(400.0, "a");
    trace += &line(
        900.0,
        r#""ev":"agent_sent","session":"a","method":"session/update","digest":"d""#,
    );
    // Another session's turn is not this one's.
    trace += &update(1200.0, "b");
    trace += &line(1300.0, r#""ev":"restart_start""#);
    // After the restart, the session's events are not the cut turn's.
    trace += &update(1800.0, "a");
    trace += &line(
        2000.0,
        r#""ev":"restart_end","ok":true,"action":"managed","restartMs":700"#,
    );
    let floor = of_attempt(5000, &[restart(700, None)], Some(&trace));
    // 10..900 (the turn at work), then the restart 1300..2000.
    assert_eq!(floor.floor_ms, 890 + 700, "{floor:?}");

    // The client sends the session a new request: what follows is its.
    let mut moved_on = String::new();
    moved_on += &line(
        10.0,
        r#""ev":"rpc","dir":"out","method":"session/prompt","rpcId":2,"session":"a""#,
    );
    moved_on += &line(
        20.0,
        r#""ev":"phase_end","phase":"startLongTurn","outcome":"ok","ms":20"#,
    );
    moved_on += &update(300.0, "a");
    moved_on += &line(
        3000.0,
        r#""ev":"rpc","dir":"out","method":"session/load","rpcId":3,"session":"a""#,
    );
    moved_on += &update(3100.0, "a");
    moved_on += &line(3200.0, r#""ev":"rpc","dir":"in","rpcId":3"#);
    let floor = of_attempt(5000, &[], Some(&moved_on));
    // 10..300 for the prompt, 3000..3200 for the load.
    assert_eq!(floor.floor_ms, 290 + 200, "{floor:?}");
}

#[test]
fn store_calls_are_answers_like_http_exchanges() {
    let trace = concat!(
        r#"{"t":0.0,"ev":"trace"}"#,
        "\n",
        // A store call alone: 20..30.
        r#"{"t":30.0,"ev":"store","call":"insertEvent","driver":"rivet","ms":10.0,"ok":true}"#,
        "\n",
        // One overlapping an exchange (40..60 and 50..70): 30 ms, not 40.
        r#"{"t":60.0,"ev":"http","ms":20.0}"#,
        "\n",
        r#"{"t":70.0,"ev":"store","call":"getSession","driver":"rivet","ms":20.0,"ok":true}"#,
        "\n",
        // A failed call waited as long as it waited; one without `ms` counts nothing.
        r#"{"t":100.0,"ev":"store","call":"updateSession","ms":5.0,"ok":false,"error":"x"}"#,
        "\n",
        r#"{"t":200.0,"ev":"store","call":"updateSession"}"#,
        "\n",
    );
    let floor = of_attempt(1000, &[], Some(trace));
    assert_eq!((floor.floor_ms, floor.overhead_ms), (45, 955));
}

#[test]
fn restart_windows_join_the_union_so_a_call_waiting_in_one_counts_once() {
    let trace = concat!(
        r#"{"t":100.0,"ev":"restart_start"}"#,
        "\n",
        // A store call retrying while the runner restarts (150..350), and
        // one that outlives the restart by 50 ms (350..450).
        r#"{"t":350.0,"ev":"store","call":"insertEvent","ms":200.0,"ok":true}"#,
        "\n",
        r#"{"t":400.0,"ev":"restart_end","ok":true,"restartMs":250,"readyMs":50}"#,
        "\n",
        r#"{"t":450.0,"ev":"store","call":"getSession","ms":100.0,"ok":true}"#,
        "\n",
        r#"{"t":600.0,"ev":"http","ms":10.0}"#,
        "\n",
    );
    let restarts = [restart(250, Some(50))];
    // 100..450 and 590..600, where summing would say 300 + 350 + 10.
    let floor = of_attempt(1000, &restarts, Some(trace));
    assert_eq!(floor.floor_ms, 360);
    // A trace that lost a restart's end (cut at its size limit) cannot
    // place it: the restarts are added up, and the answers beside them.
    let cut = trace.replace(r#""ev":"restart_end""#, r#""ev":"truncated""#);
    let floor = of_attempt(1000, &restarts, Some(&cut));
    assert_eq!(floor.floor_ms, 300 + 300 + 10);
    // Two restarts, two windows.
    let twice = format!(
        "{trace}{}\n{}\n",
        r#"{"t":700.0,"ev":"restart_start"}"#, r#"{"t":800.0,"ev":"restart_end","ok":true}"#
    );
    let floor = of_attempt(
        1000,
        &[restarts[0].clone(), restart(90, Some(10))],
        Some(&twice),
    );
    assert_eq!(floor.floor_ms, 460);
}

#[test]
fn a_hosted_sdk_action_counts_to_its_answer_or_to_the_deadline_it_was_given_up_at() {
    let trace = concat!(
        r#"{"t":0.0,"ev":"trace"}"#,
        "\n",
        // The SDK's POST inside its action counts once: 100..400.
        r#"{"t":120.0,"ev":"http","ms":10.0,"client":"ts-sdk"}"#,
        "\n",
        r#"{"t":400.0,"ev":"sdk","call":"prompt","ms":300.0,"ok":true}"#,
        "\n",
        // Given up at its 500 ms deadline: 500..1000.
        r#"{"t":1000.0,"ev":"sdk","call":"prompt","ms":500.0,"abandoned":true}"#,
        "\n",
    );
    let floor = of_attempt(1100, &[], Some(trace));
    assert_eq!((floor.floor_ms, floor.overhead_ms), (800, 300));
}

#[test]
fn a_terminal_counts_from_opening_or_typing_to_what_answers_it() {
    let trace = concat!(
        r#"{"t":10.0,"ev":"http","method":"GET","purpose":"terminal","ms":5.0,"status":101}"#,
        "\n",
        // Opened at 10, ready at 14: 4 ms, beside the upgrade's 5.
        r#"{"t":10.0,"ev":"ws_open","process":"p1"}"#,
        "\n",
        r#"{"t":14.0,"ev":"ws","dir":"in","frame":"ready","process":"p1"}"#,
        "\n",
        // A line at 100, echoed at 130; the second output frame adds nothing.
        r#"{"t":100.0,"ev":"ws","dir":"out","frame":"input","process":"p1"}"#,
        "\n",
        r#"{"t":130.0,"ev":"ws","dir":"in","frame":"data","process":"p1"}"#,
        "\n",
        r#"{"t":140.0,"ev":"ws","dir":"in","frame":"data","process":"p1"}"#,
        "\n",
        // A line to another terminal that never answers counts nothing.
        r#"{"t":150.0,"ev":"ws","dir":"out","frame":"input","process":"p2"}"#,
        "\n",
        // The wait for another cell's unanswered DELETEs: 200..500.
        r#"{"t":500.0,"ev":"cleanup_wait","ms":300}"#,
        "\n",
    );
    let floor = of_attempt(1000, &[], Some(trace));
    assert_eq!(floor.floor_ms, 5 + 4 + 30 + 300);
}

#[test]
fn without_a_trace_the_floor_is_the_restarts() {
    let floor = of_attempt(500, &[restart(10, None), restart(5, Some(5))], None);
    assert_eq!(floor.floor_ms, 20);
    assert_eq!(floor.overhead_ms, 480);
    assert_eq!(of_attempt(0, &[], None).overhead_percent(), None);
}

#[test]
fn the_floor_never_exceeds_the_wall_time() {
    let floor = of_attempt(50, &[restart(100, Some(100))], None);
    assert_eq!((floor.floor_ms, floor.overhead_ms), (50, 0));
}

#[test]
fn sums_skip_what_has_no_floor() {
    let a = Some(Floor {
        floor_ms: 1,
        overhead_ms: 2,
    });
    assert_eq!(
        Floor::sum(&[a, None, a]),
        Some(Floor {
            floor_ms: 2,
            overhead_ms: 4
        })
    );
    assert_eq!(Floor::sum(&[None]), None);
}

#[test]
fn the_text_and_markdown_reports_show_both_per_cell_and_for_the_run() {
    let mut report = crate::fixture::report();
    let plain = crate::table::render_text(&report, false);
    assert!(!plain.contains("floor"), "no floor, no line: {plain}");
    for (n, cell) in report.cells.iter_mut().enumerate() {
        cell.timing = Some(Floor {
            floor_ms: 1000 * (n as u64 + 1),
            overhead_ms: 100,
        });
    }
    report.run.timing = Floor::of_cells(&report.cells);
    let cells = report.cells.len() as u64;
    let floor: u64 = (1..=cells).map(|n| n * 1000).sum();
    assert_eq!(
        report.run.timing,
        Some(Floor {
            floor_ms: floor,
            overhead_ms: 100 * cells
        })
    );
    let text = crate::table::render_text(&report, false);
    let line = text.lines().find(|l| l.starts_with("time: ")).unwrap();
    assert!(
        line.contains(&format!("floor {:.1} s", floor as f64 / 1000.0)),
        "{line}"
    );
    assert!(text.contains("floor and overhead"), "{text}");
    let first = &report.cells[0];
    assert!(
        text.lines()
            .any(|l| l.contains(&first.label()) && l.contains("1000") && l.contains("10%")),
        "{text}"
    );
    let markdown = crate::markdown::render_markdown(&report);
    assert!(markdown.contains("## Floor and overhead"), "{markdown}");
    assert!(
        markdown.contains(&format!(
            "| {} | {} | 1000 | 100 | 10% |",
            first.label(),
            first.point.scenario
        )),
        "{markdown}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["cells"][0]["floorMs"], 1000);
    assert_eq!(json["run"]["overheadMs"], 100 * cells);
    assert!(json["totals"].get("floorMs").is_none(), "totals are counts");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/report.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn reports_without_the_fields_still_read() {
    #[derive(serde::Deserialize)]
    struct Holder {
        #[serde(flatten, default)]
        timing: Option<Floor>,
    }
    let old: Holder = serde_json::from_str(r#"{"other":1}"#).unwrap();
    assert_eq!(old.timing, None);
    let new: Holder = serde_json::from_str(r#"{"floorMs":3,"overheadMs":4}"#).unwrap();
    assert_eq!(new.timing.map(|f| f.floor_ms), Some(3));
}
