//! The in-flight model's rules, each on its own: pending and idle is hung;
//! a request in flight, an open stream, a retry within the grace or to come
//! is not; a hosted call only by a report that shows it.

use super::*;

const GRACE: f64 = 2000.0;

/// A call that began at 100 ms, its request answered 400 at 350 ms.
fn after_a_400() -> InFlight {
    let mut model = InFlight::default();
    model.begin_call("prompt".into(), None, 100.0);
    let post = model.begin(Flight::Request, "POST /v1/acp/s".into(), 110.0);
    model.end(post, 350.0);
    model.mark(350.0, "the server answered HTTP 400".into(), true, true);
    model
}

#[test]
fn a_pending_call_with_nothing_in_flight_for_the_grace_is_hung() {
    let model = after_a_400();
    assert_eq!(model.quiet(2349.0, GRACE, 0.0), None, "not yet the grace");
    let quiet = model.quiet(2350.0, GRACE, 0.0).expect("hung");
    assert_eq!((quiet.since, quiet.until), (350.0, 2350.0));
    assert_eq!(quiet.call, "prompt");
    assert_eq!(
        quiet.last_answer.map(|m| (m.t, m.what)),
        Some((350.0, "the server answered HTTP 400".into()))
    );
    assert_eq!(quiet.last_failure.map(|m| m.t), Some(350.0));
}

#[test]
fn a_call_made_before_the_phase_is_not_the_phases_to_judge() {
    let model = after_a_400();
    assert!(model.quiet(2350.0, GRACE, 100.0).is_some());
    assert_eq!(model.quiet(9000.0, GRACE, 101.0), None);
}

#[test]
fn nothing_pending_is_never_hung() {
    let mut model = InFlight::default();
    model.mark(10.0, "x".into(), false, false);
    assert_eq!(model.quiet(60_000.0, GRACE, 0.0), None);
    let call = model.begin_call("prompt".into(), None, 20.0);
    model.end(call, 30.0);
    assert_eq!(model.quiet(60_000.0, GRACE, 0.0), None);
}

#[test]
fn a_request_awaiting_its_answer_is_never_hung() {
    let mut model = after_a_400();
    // A long silent turn: its POST stays unanswered for minutes.
    let _turn = model.begin(Flight::Request, "POST /v1/acp/s".into(), 400.0);
    assert_eq!(model.quiet(300_000.0, GRACE, 0.0), None);
}

#[test]
fn an_open_stream_is_never_hung() {
    let mut model = after_a_400();
    let stream = model.begin(Flight::Stream, "GET /v1/acp/s".into(), 400.0);
    assert_eq!(model.quiet(10_000.0, GRACE, 0.0), None);
    // Its answer comes 3 s later, and the stream closes: the grace
    // counts from there.
    model.end(stream, 3400.0);
    assert_eq!(model.quiet(5399.0, GRACE, 0.0), None);
    assert!(model.quiet(5400.0, GRACE, 0.0).is_some());
}

#[test]
fn a_retry_within_the_grace_restarts_the_quiet() {
    let mut model = after_a_400();
    // The client tries again 1 s after the 400.
    let retry = model.begin(Flight::Request, "GET /v1/acp/s".into(), 1350.0);
    model.end(retry, 1360.0);
    assert_eq!(model.quiet(2350.0, GRACE, 0.0), None);
    assert!(model.quiet(3360.0, GRACE, 0.0).is_some());
}

#[test]
fn a_failed_health_attempt_is_a_retry_to_come_until_a_success() {
    let mut model = InFlight::default();
    model.begin_call("createSession".into(), None, 0.0);
    model.health(500.0, true);
    // The SDK's health wait sleeps 4 s, then 8 s, between attempts.
    assert_eq!(model.quiet(4000.0, GRACE, 0.0), None);
    assert_eq!(model.quiet(12_000.0, GRACE, 0.0), None);
    // Past the longest delay, no retry is coming.
    assert!(model
        .quiet(500.0 + HEALTH_RETRY_WITHIN_MS, GRACE, 0.0)
        .is_some());
    model.health(13_000.0, false);
    model.note(13_000.0);
    assert!(model.quiet(15_000.0, GRACE, 0.0).is_some());
}

fn report(at: f64, acting: &[(&str, f64)], open: bool, active_at: f64) -> HostReport {
    HostReport {
        at,
        acting: acting.iter().map(|(p, t)| (p.to_string(), *t)).collect(),
        open: match open {
            true => vec![(Flight::Request, "POST /v1/acp/s".into(), 300.0)],
            false => vec![],
        },
        active_at: Some(active_at),
    }
}

#[test]
fn a_hosted_call_is_judged_only_by_a_report_that_shows_it_running_quiet() {
    let mut model = InFlight::default();
    model.begin_call("prompt".into(), Some("p2".into()), 100.0);
    assert_eq!(model.quiet(9000.0, GRACE, 0.0), None, "no report yet");
    // A report from before the call, or of another phase's call.
    model.host_report(report(90.0, &[("p1", 10.0)], false, 50.0));
    assert_eq!(model.quiet(9000.0, GRACE, 0.0), None);
    model.host_report(report(1000.0, &[("p1", 10.0)], false, 50.0));
    assert_eq!(model.quiet(9000.0, GRACE, 0.0), None, "p2 not running yet");
    // Running, its request still open.
    model.host_report(report(2000.0, &[("p2", 150.0)], true, 350.0));
    assert_eq!(model.quiet(9000.0, GRACE, 0.0), None);
    // Running, nothing open since 354 ms: quiet only as far as the
    // report shows, however late it is now.
    model.host_report(report(2353.0, &[("p2", 150.0)], false, 354.0));
    assert_eq!(model.quiet(9000.0, GRACE, 0.0), None, "1999 ms of quiet");
    model.host_report(report(2360.0, &[("p2", 150.0)], false, 354.0));
    // A report older than the latest one changes nothing.
    model.host_report(report(2100.0, &[("p2", 150.0)], true, 354.0));
    let quiet = model.quiet(9000.0, GRACE, 0.0).expect("hung");
    assert_eq!((quiet.since, quiet.until), (354.0, 2360.0));
}

#[test]
fn the_trace_feeds_the_model_what_the_wire_showed_in_words() {
    use crate::{Exchange, Purpose, Seen, Trace};
    let trace = Trace::detached();
    let _call = trace.call("prompt");
    let mut post = Exchange::new(
        "POST",
        "http://127.0.0.1:9/v1/acp/s?agent=mock",
        Purpose::AcpPost,
    );
    post.status = Some(400);
    post.failure = Some(Seen::Status {
        status: 400,
        problem_type: Some("invalid_request".into()),
        detail: Some("missing agent".into()),
    });
    trace.http(post);
    trace.stream_end("http://127.0.0.1:9/v1/acp/s", 0, 0, None);
    let quiet = trace
        .quiet(std::time::Duration::ZERO, 0.0)
        .expect("nothing in flight");
    assert_eq!(
        quiet.last_answer.map(|m| m.what).as_deref(),
        Some("the server answered HTTP 400 invalid_request to POST /v1/acp/s")
    );
    assert_eq!(
        quiet.last_wire.map(|m| m.what).as_deref(),
        Some("the event stream GET /v1/acp/s ended")
    );
    // A request of the client's own in flight: not quiet, whatever the grace.
    let _post = trace.in_flight(Flight::Request, "POST /v1/acp/s");
    assert!(trace.quiet(std::time::Duration::ZERO, 0.0).is_none());
    assert_eq!(
        trace.open_flights(),
        [(Flight::Request, "POST /v1/acp/s".into())]
    );
}
