//! The tests of what phases saw (`seen.rs`): the wait a timeout names, the
//! cause from the channels that failed, and the network fault it fell in.

use super::*;
use crate::acp::AcpError;
use crate::client::ClientError;
use crate::diagnose::signature;

fn failing(name: &str, attempts: u32, last: Seen) -> crate::trace::ChannelStats {
    crate::trace::ChannelStats {
        name: name.into(),
        attempts,
        failures: attempts,
        last_status: None,
        last_failure: Some(last),
        failing: true,
        received: 0,
        last_failure_seq: 5,
    }
}

#[test]
fn a_pending_request_names_the_failing_event_stream_without_counts_in_the_message() {
    let seen = Snapshot {
        faults: Vec::new(),
        breaks: Default::default(),
        waits: vec![crate::trace::WaitInfo {
            what: "a response to session/prompt (id 3)".into(),
            channel: None,
            opened: 1,
        }],
        channels: vec![failing(
            "GET /v1/acp/sdk-mock-3743b79f-59e5-4713-a915-af9a2188ebbc (event stream)",
            3,
            Seen::Status {
                status: 502,
                problem_type: None,
                detail: None,
            },
        )],
    };
    let s = timeout_seen(4000, "fallback".into(), &seen, None);
    assert_eq!(
            s.message,
            "timed out after 4000 ms waiting for a response to session/prompt; GET /v1/acp/sdk-mock-<id> (event stream): HTTP 502"
        );
    assert_eq!(
        s.pending.as_deref(),
        Some("a response to session/prompt (id 3)")
    );
    assert_eq!(
        s.observed.as_deref(),
        Some("GET /v1/acp/sdk-mock-<id> (event stream): 3 attempts, 3 failed; last: HTTP 502")
    );
    assert_eq!(
        s.cause.as_ref().map(Cause::short).as_deref(),
        Some("http 502")
    );
    assert_eq!(s.short(), "timeout: http 502");
}

/// After a restart the SDK's stream GET gets 404 and its prompt POST
/// 400, in either order: the prompt's own answer is the cause.
#[test]
fn a_pending_requests_own_channel_is_its_cause_before_an_event_stream() {
    let status = |status: u16, problem: &str| Seen::Status {
        status,
        problem_type: Some(problem.into()),
        detail: None,
    };
    let seen = Snapshot {
        faults: Vec::new(),
        breaks: Default::default(),
        waits: vec![crate::trace::WaitInfo {
            what: "session/prompt on native".into(),
            channel: None,
            opened: 1,
        }],
        channels: vec![
            failing(
                "GET /v1/acp/sdk-mock-1 (event stream)",
                1,
                status(404, "session_not_found"),
            ),
            failing("POST /v1/acp/sdk-mock-1", 1, status(400, "invalid_request")),
        ],
    };
    let s = timeout_seen(6000, "fallback".into(), &seen, None);
    assert_eq!(
        s.cause.as_ref().map(Cause::short).as_deref(),
        Some("http 400 invalid_request")
    );
}

fn window(toxic: &str, active: bool, resets: u32, closes: u32) -> FaultSeen {
    FaultSeen {
        hop: "gateway".into(),
        toxic: toxic.into(),
        active,
        resets,
        closes,
    }
}

fn reset_failure() -> Signature {
    signature(
        &ClientError::Acp(AcpError::StreamClosed {
            detail: "error decoding response body: connection reset by peer".into(),
        }),
        None,
    )
}

#[test]
fn a_reset_the_fault_proxy_made_names_the_hop_and_the_toxic() {
    let mut sig = reset_failure();
    let seen = Snapshot {
        faults: vec![window("reset_peer", true, 2, 0)],
        ..Snapshot::default()
    };
    add_seen(&mut sig, &seen, None);
    assert!(
        sig.message
            .starts_with("reset by the fault proxy on the gateway hop (reset_peer): "),
        "{}",
        sig.message
    );
    let fault = sig.fault.unwrap();
    assert_eq!(
        (fault.when.as_str(), fault.by_proxy.as_deref()),
        ("during", Some("reset"))
    );
}

#[test]
fn a_reset_the_proxy_did_not_make_is_not_blamed_on_the_fault() {
    let mut sig = reset_failure();
    let seen = Snapshot {
        faults: vec![window("latency", false, 0, 0)],
        ..Snapshot::default()
    };
    add_seen(&mut sig, &seen, None);
    assert!(
        sig.message
            .starts_with("after latency on the gateway hop: "),
        "{}",
        sig.message
    );
    assert!(!sig.message.contains("by the fault proxy"));
    assert_eq!(sig.fault.unwrap().by_proxy, None);
    // Without a fault window nothing is added.
    let mut plain = reset_failure();
    add_seen(&mut plain, &Snapshot::default(), None);
    assert!(plain.fault.is_none() && !plain.message.contains("hop"));
}

#[test]
fn a_timeout_during_a_partition_says_so() {
    let seen = Snapshot {
        faults: vec![window("partition", true, 0, 0)],
        ..Snapshot::default()
    };
    let s = timeout_seen(3000, "session/prompt".into(), &seen, None);
    assert_eq!(
        s.message,
        "during partition on the gateway hop: timed out after 3000 ms"
    );
}

#[test]
fn with_nothing_open_a_timeout_keeps_the_steps_words() {
    let s = timeout_seen(100, "sleeping".into(), &Snapshot::default(), None);
    assert_eq!(s.pending.as_deref(), Some("sleeping"));
    assert_eq!((s.cause, s.observed), (None, None));
    let reset = Seen::Error {
        kind: ErrorKind::Reset,
        detail: "x".into(),
    };
    assert_eq!(cause_of(&reset).short(), "reset");
    assert_eq!(cause_of(&reset).kind, SignatureKind::Connect);
}
