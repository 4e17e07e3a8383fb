use super::*;
use serde_json::json;

fn header() -> Option<CellId> {
    Some(cell())
}

fn cell() -> CellId {
    CellId {
        target: "t".into(),
        scenario: "s".into(),
        attempt: 1,
    }
}

#[test]
fn events_are_lines_with_time_and_kind_and_never_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Trace::create(
        dir.path(),
        TraceLevel::Full,
        Some(Secret::new("tok-secret-1")),
        header(),
    )
    .unwrap();
    trace.phase_start("p", "prompt");
    trace.http(Exchange {
        method: "GET",
        url: "http://127.0.0.1:9/v1/health?access_token=tok-secret-1&x=1".into(),
        purpose: Purpose::Health,
        attempt: Some(1),
        status: Some(401),
        elapsed: Duration::from_millis(3),
        sent: 0,
        received: 10,
        failure: Some(Seen::Status {
            status: 401,
            problem_type: None,
            detail: Some("bad token tok-secret-1".into()),
        }),
        last_event_id: None,
    });
    trace.rpc(
        Dir::Out,
        Via::Post,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"k": "tok-secret-1"}}),
    );
    trace.flush();
    let text = std::fs::read_to_string(dir.path().join(TRACE_FILE)).unwrap();
    assert!(!text.contains("tok-secret-1"), "{text}");
    let events = read_trace(&dir.path().join(TRACE_FILE)).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["ev"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["trace", "phase_start", "http", "rpc"]);
    assert_eq!(events[2]["url"], "/v1/health?access_token=[redacted]&x=1");
    assert_eq!(events[2]["status"], 401);
    assert!(events[3]["body"].as_str().unwrap().contains("[redacted]"));
}

#[test]
fn a_summary_trace_has_no_bodies_and_off_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Trace::create(dir.path(), TraceLevel::Summary, None, header()).unwrap();
    trace.rpc(
        Dir::In,
        Via::Stream,
        &json!({"id": 2, "result": {"big": "x"}}),
    );
    trace.flush();
    let events = read_trace(&dir.path().join(TRACE_FILE)).unwrap();
    assert_eq!(events[1]["rpcId"], 2);
    assert!(events[1].get("body").is_none());
    let off = tempfile::tempdir().unwrap();
    let trace = Trace::create(off.path(), TraceLevel::Off, None, header()).unwrap();
    trace.rpc(Dir::In, Via::Stream, &json!({"id": 2}));
    assert!(!off.path().join(TRACE_FILE).exists());
}

#[test]
fn the_file_stops_at_its_limit_with_one_marker() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TRACE_FILE);
    let mut sink = Sink::create(&path, 1000).unwrap();
    for _ in 0..100 {
        sink.append(
            &json!({"t": 1, "ev": "x", "pad": "0123456789"}).to_string(),
            1.0,
        );
    }
    drop(sink);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.len() < 1100, "{}", text.len());
    let last = text.lines().last().unwrap();
    assert!(last.contains("\"truncated\""), "{last}");
    assert_eq!(text.matches("truncated").count(), 1);
}

#[test]
fn waits_and_channels_remember_what_they_saw() {
    let trace = Trace::detached();
    trace.phase_start("p", "create_session");
    let health = trace.wait("the health wait", Some(health_channel("http://h:1")));
    for attempt in 1..=3 {
        trace.http(Exchange {
            method: "GET",
            url: "http://h:1/v1/health".into(),
            purpose: Purpose::Health,
            attempt: Some(attempt),
            status: None,
            elapsed: Duration::ZERO,
            sent: 0,
            received: 0,
            failure: Some(Seen::Error {
                kind: ErrorKind::Reset,
                detail: "reset".into(),
            }),
            last_event_id: None,
        });
    }
    let snap = trace.snapshot();
    assert_eq!(snap.innermost().unwrap().what, "the health wait");
    let c = snap.channel("GET /v1/health").unwrap();
    assert_eq!((c.attempts, c.failures), (3, 3));
    assert_eq!(
        c.last_failure.as_ref().unwrap().to_string(),
        "connection reset"
    );
    drop(health);
    assert!(trace.snapshot().waits.is_empty());
    trace.phase_start("q", "prompt");
    assert!(trace.snapshot().channels.is_empty());
}

/// A terminal socket cut (no close frame) is a break; a later phase that
/// fails on it only reports it, and says how long ago it was. A break in
/// the phase itself is no reported one; a status is no break at all.
#[test]
fn a_break_seen_before_the_phase_is_one_it_only_reports() {
    let trace = Trace::detached();
    trace.phase_start("restart", "restart");
    assert_eq!(trace.snapshot().breaks.last_ms, None);
    trace.emit(Event::WsClose(event::WsClose {
        process: "proc_1".into(),
        code: 1000,
        clean: true,
    }));
    assert_eq!(trace.snapshot().breaks.last_ms, None, "a clean close");
    trace.emit(Event::WsClose(event::WsClose {
        process: "proc_1".into(),
        code: 1006,
        clean: false,
    }));
    std::thread::sleep(Duration::from_millis(20));
    trace.phase_start("oldTerminalSend", "terminal_send");
    let age = trace.snapshot().breaks.reported_age_ms().expect("reported");
    assert!(age >= 20, "{age}");
    let exchange = |failure| Exchange {
        method: "GET",
        url: "http://h:1/v1/health".into(),
        purpose: Purpose::Health,
        attempt: None,
        status: None,
        elapsed: Duration::ZERO,
        sent: 0,
        received: 0,
        last_event_id: None,
        failure: Some(failure),
    };
    trace.http(exchange(Seen::Status {
        status: 502,
        problem_type: None,
        detail: None,
    }));
    assert!(
        trace.snapshot().breaks.reported_age_ms().is_some(),
        "a 502 breaks nothing"
    );
    trace.http(exchange(Seen::Error {
        kind: ErrorKind::Refused,
        detail: "refused".into(),
    }));
    assert_eq!(
        trace.snapshot().breaks.reported_age_ms(),
        None,
        "broke in the phase"
    );
}

#[test]
fn damaged_traces_are_errors_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TRACE_FILE);
    std::fs::write(
        &path,
        "{\"t\":0,\"ev\":\"trace\",\"schema\":\"continuity.trace/v1\"}\n{oops\n",
    )
    .unwrap();
    let e = read_trace(&path).unwrap_err().to_string();
    assert!(e.contains("trace.jsonl: line 2"), "{e}");
    std::fs::write(
        &path,
        "{\"t\":0,\"ev\":\"trace\",\"schema\":\"other/v9\"}\n",
    )
    .unwrap();
    let e = read_trace(&path).unwrap_err().to_string();
    assert!(e.contains("other/v9"), "{e}");
    std::fs::write(&path, [0xff, 0xfe]).unwrap();
    assert!(read_trace(&path).is_err());
    assert!(read_trace(&dir.path().join("missing.jsonl")).is_err());
}

#[test]
fn access_tokens_in_queries_are_redacted() {
    assert_eq!(
        strip_access_token("/x?a=1&ACCESS_TOKEN=abc"),
        "/x?a=1&ACCESS_TOKEN=[redacted]"
    );
    assert_eq!(strip_access_token("/x"), "/x");
}

#[test]
fn a_cell_trace_lives_in_the_cells_folder_and_off_means_none() {
    let run = tempfile::tempdir().unwrap();
    let dir = cell_dir_name(3, "agent", "native continuity/x", 2);
    assert_eq!(dir, "cells/003-agent-native_continuity_x-2");
    let (trace, path) = for_cell(run.path(), &dir, TraceLevel::Summary, None, cell());
    trace.flush();
    assert_eq!(
        path.as_deref(),
        Some("cells/003-agent-native_continuity_x-2/trace.jsonl")
    );
    assert!(run.path().join(path.unwrap()).is_file());
    let (trace, path) = for_cell(run.path(), "cells/004", TraceLevel::Off, None, cell());
    trace.phase_start("p", "prompt");
    assert_eq!(path, None);
    assert!(!run.path().join("cells/004").exists());
}

#[test]
fn a_watched_channel_keeps_its_count_across_phases_without_being_a_wait() {
    let trace = Trace::detached();
    trace.phase_start("connect", "connect");
    let watching = trace.watch("GET /v1/health".into());
    trace.http(Exchange {
        method: "GET",
        url: "http://h:1/v1/health".into(),
        purpose: Purpose::Health,
        attempt: Some(1),
        status: Some(401),
        elapsed: Duration::ZERO,
        sent: 0,
        received: 0,
        failure: Some(Seen::Status {
            status: 401,
            problem_type: None,
            detail: None,
        }),
        last_event_id: None,
    });
    trace.phase_start("create", "create_session");
    let snap = trace.snapshot();
    assert!(snap.waits.is_empty(), "a watch is not a wait");
    assert_eq!(snap.channel("GET /v1/health").unwrap().attempts, 1);
    drop(watching);
    trace.phase_start("later", "prompt");
    assert!(trace.snapshot().channels.is_empty());
}

#[test]
fn every_line_written_reads_back_as_its_event_and_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Trace::create(dir.path(), TraceLevel::Full, None, header()).unwrap();
    trace.phase_start("p", "prompt");
    trace.http(Exchange {
        method: "GET",
        url: "http://h:1/v1/health".into(),
        purpose: Purpose::Health,
        attempt: Some(2),
        status: None,
        elapsed: Duration::from_micros(1250),
        sent: 0,
        received: 0,
        failure: Some(Seen::Error {
            kind: ErrorKind::TooLarge,
            detail: "big".into(),
        }),
        last_event_id: None,
    });
    trace.rpc(Dir::Out, Via::Post, &json!({"id": 1, "method": "m"}));
    trace.sse(
        "http://h:1/v1/acp/s",
        "7",
        "message",
        12,
        Some(&json!({"id": 1, "error": {"code": -32000}})),
    );
    trace.stream_end("http://h:1/v1/acp/s", 3, 40, None);
    trace.fault_start("gateway", "reset_peer", "reset_peer downstream", 500);
    trace.fault_action("gateway", "reset_peer", event::ConnAction::Closed, None, 1);
    trace.fault_end("gateway", "reset_peer", false, Some("proxy stopped"));
    trace.emit(Event::RestartStart);
    trace.emit(Event::CleanupWait(event::Took { ms: 4 }));
    trace.phase_end("p", "ok", 9);
    trace.flush();
    let text = std::fs::read_to_string(dir.path().join(TRACE_FILE)).unwrap();
    let mut read = Vec::new();
    for_each_event(&dir.path().join(TRACE_FILE), |line| read.push(line)).unwrap();
    assert_eq!(read.len(), text.lines().count());
    for (line, written) in read.iter().zip(text.lines()) {
        assert_ne!(line.event, Event::Other, "{written}");
        assert_eq!(line.to_value().to_string(), written);
    }
    let Event::Http(http) = &read[2].event else {
        panic!("{:?}", read[2]);
    };
    assert_eq!(http.error, Some(ErrorKind::TooLarge));
    assert!(text.contains(r#""error":"too_large""#), "{text}");
    assert!(text.contains(r#""purpose":"health","ms":1.3"#), "{text}");
}

#[test]
fn an_unknown_event_or_a_torn_field_reads_as_other_not_an_error() {
    let line = Line::from_value(&json!({"t": 1.0, "ev": "from_the_future", "x": 1})).unwrap();
    assert_eq!(line.event, Event::Other);
    let line = Line::from_value(&json!({"t": 1.0, "ev": "http", "ms": "slow"})).unwrap();
    assert_eq!(line.event, Event::Other);
    // Fields a reader can do without default.
    let line = Line::from_value(&json!({"t": 2, "ev": "http", "ms": 4.0})).unwrap();
    assert!(matches!(line.event, Event::Http(event::Http { ms, .. }) if ms == 4.0));
}

#[test]
fn the_trace_enums_that_print_their_wire_name_print_what_serde_writes() {
    fn same<T: serde::Serialize>(value: T, name: &str) {
        assert_eq!(serde_json::to_value(&value).unwrap(), name);
        assert_eq!(continuity_base::wire_name::of(&value), name);
    }
    same(ErrorKind::TooLarge, ErrorKind::TooLarge.as_str());
    same(TraceLevel::Summary, "summary");
    same(
        event::ConnAction::Closed,
        event::ConnAction::Closed.as_str(),
    );
}
