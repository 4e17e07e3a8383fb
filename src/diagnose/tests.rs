//! The signature's tests (`diagnose.rs`): each error's kind and fields, and whom a failure blames.

use super::*;
use crate::acp::Problem;
use crate::report::Cause;

#[test]
fn http_errors_keep_status_and_short_problem_type() {
    let e = ClientError::Acp(AcpError::Http {
        status: 400,
        problem: Some(Problem {
            type_: Some("urn:sandbox-agent:error:invalid_request".into()),
            title: None,
            detail: Some("missing agent".into()),
        }),
    });
    let s = signature(&e, None);
    assert_eq!(
        (s.kind, s.http_status, s.problem_type.as_deref()),
        (SignatureKind::Http, Some(400), Some("invalid_request"))
    );
    assert_eq!(s.short(), "http 400 invalid_request");
}

#[test]
fn a_closed_client_is_a_client_failure_naming_its_cause() {
    let e = ClientError::Acp(AcpError::Closed {
        cause: Some(Box::new(AcpError::Http {
            status: 400,
            problem: None,
        })),
    });
    let s = signature(&e, None);
    assert_eq!(s.kind, SignatureKind::Client);
    assert_eq!(s.message, "ACP client is closed (after HTTP 400)");
}

#[test]
fn rpc_and_exit_and_protocol_kinds() {
    let rpc = ClientError::Acp(AcpError::Rpc {
        code: -32601,
        message: "x".into(),
        data: None,
    });
    assert_eq!(signature(&rpc, None).rpc_code, Some(-32601));
    let exit = ClientError::Acp(AcpError::AgentExited { code: Some(3) });
    assert_eq!(signature(&exit, None).kind, SignatureKind::AgentExit);
    let bad = ClientError::UnexpectedResult {
        method: "m".into(),
        detail: "d".into(),
    };
    assert_eq!(signature(&bad, None).kind, SignatureKind::Protocol);
}

#[test]
fn a_store_failure_names_the_store_and_the_call() {
    let e = ClientError::from(crate::persist::PersistError::new(
        "rivet",
        "updateSession: HTTP 503: actor_wake_retries_exceeded (after 30012 ms)",
    ));
    let s = signature(&e, None);
    assert_eq!(s.kind, SignatureKind::Persist);
    assert_eq!(
        s.message,
        "persist (rivet): updateSession: HTTP 503: actor_wake_retries_exceeded (after 30012 ms)"
    );
    let t = persist_timeout("rivet", "insertEvent", 29_870, 30_000, "session/prompt");
    assert_eq!(
            (t.kind, t.message.as_str()),
            (
                SignatureKind::Persist,
                "persist (rivet): insertEvent no answer after 29.9 s (the phase timed out after 30000 ms)"
            )
        );
}

/// A phase that timed out while its waits kept meeting a broken
/// connection through a part seen gone (the SDK's health wait against
/// a killed nginx) is that part's failure, as a refused step is; a
/// timeout with no such cause, or with every part up, names none.
#[test]
fn a_timeout_whose_waits_met_a_gone_part_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let gone = crate::supervise::part::PartProcess::new(
        HarnessPart::Nginx,
        dir.path().join("no-such.pid"),
    );
    let up_file = dir.path().join("up.pid");
    std::fs::write(&up_file, std::process::id().to_string()).unwrap();
    let up = crate::supervise::part::PartProcess::new(HarnessPart::Nginx, up_file);
    let waited = |cause: SignatureKind| {
        let mut sig = timeout(30_000, "the SDK's health wait");
        sig.cause = Some(Cause {
            kind: cause,
            http_status: None,
            problem_type: None,
            error: Some("reset".into()),
        });
        sig
    };
    let mut met = waited(SignatureKind::Connect);
    find_gone_part(&mut met, std::slice::from_ref(&gone));
    blame_part(&mut met, &[]);
    assert_eq!(
        (met.kind, met.component),
        (SignatureKind::Harness, Some(HarnessPart::Nginx))
    );
    assert!(
        met.message.starts_with("nginx (the gateway): timed out"),
        "{}",
        met.message
    );
    let mut all_up = waited(SignatureKind::Connect);
    find_gone_part(&mut all_up, &[up]);
    assert_eq!(all_up.component, None);
    let mut http = waited(SignatureKind::Http);
    find_gone_part(&mut http, &[gone]);
    assert_eq!(http.component, None);
}

/// A target that went down and did not come back is the system's
/// (`not_back`, the probe's last answer its cause); one that never went
/// down, and a part of continuity's own not back, the harness's.
#[test]
fn a_restart_failure_blames_the_system_only_when_the_target_did_not_come_back() {
    use crate::targets::{ProbeError, RestartFailure};
    let record = |detail: &str| crate::report::RestartResult {
        phase: "restart".into(),
        action: "command".into(),
        ok: false,
        restart_ms: 1,
        ready_ms: None,
        down: None,
        detail: Some(detail.into()),
    };
    let refused = Cause {
        kind: SignatureKind::Connect,
        http_status: None,
        problem_type: None,
        error: Some("refused".into()),
    };
    let not_back = RestartFailure::NotBack {
        timeout: std::time::Duration::from_secs(2),
        error: ProbeError {
            probe: "http GET http://127.0.0.1:9/v1/health = 200".into(),
            timeout: std::time::Duration::from_secs(2),
            last_error: "connection refused".into(),
            last_cause: Some(Box::new(refused.clone())),
            gave_up: false,
            attempts: 40,
        },
        hint: String::new(),
        of: None,
    };
    let text = not_back.to_string();
    let sig = restart_failed(&record(&text), Some(&not_back), None);
    assert_eq!(sig.kind, SignatureKind::NotBack);
    assert_eq!(sig.cause, Some(refused));
    assert_eq!(sig.short(), "not back: refused");
    assert!(sig
        .message
        .starts_with("the target did not come back within 2 s"));
    let own = restart_failed(&record(&text), Some(&not_back), Some(HarnessPart::Postgres));
    assert_eq!(own.kind, SignatureKind::Harness);
    assert!(
        own.message.starts_with("postgres (the session store): "),
        "{}",
        own.message
    );
    let never_down = RestartFailure::NeverDown {
        observed: "its probe answered throughout".into(),
    };
    let sig = restart_failed(&record(&never_down.to_string()), Some(&never_down), None);
    assert_eq!(sig.kind, SignatureKind::Harness);
    assert_eq!(
        restart_failed(&record("exit status 3"), None, None).kind,
        SignatureKind::Harness
    );
}

#[test]
fn a_store_server_gone_is_the_harnesss_error_unless_the_target_restarts_it() {
    let gone = || {
        signature(
            &ClientError::from(crate::persist::PersistError::gone(
                "postgres",
                HarnessPart::Postgres,
                "updateSession: cannot connect: connection refused",
            )),
            None,
        )
    };
    // Nobody restarted it: the harness's part failed, named first.
    let mut lost = gone();
    blame_part(&mut lost, &[]);
    assert_eq!(
        (lost.kind, lost.component),
        (SignatureKind::Harness, Some(HarnessPart::Postgres))
    );
    assert_eq!(
            lost.message,
            "postgres (the session store): persist (postgres): updateSession: cannot connect: connection refused"
        );
    // The `store` target restarts it: the failure is the test's point.
    let mut owned = gone();
    blame_part(&mut owned, &[HarnessPart::Postgres]);
    assert_eq!(
        (owned.kind, owned.component),
        (SignatureKind::Persist, None)
    );
    assert!(owned.message.starts_with("persist (postgres): "));
    // Any other store failure names no part.
    let refused = signature(
        &ClientError::from(crate::persist::PersistError::new("postgres", "ERROR: x")),
        None,
    );
    assert_eq!(refused.component, None);
}

#[test]
fn the_token_is_scrubbed_from_messages() {
    let token = crate::secret::Secret::new("tok-9");
    let e = ClientError::Config("header value tok-9 is bad".into());
    assert!(!signature(&e, Some(&token)).message.contains("tok-9"));
}
