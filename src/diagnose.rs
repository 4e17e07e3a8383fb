//! Turns an error into a failure signature: the class of failure and the
//! fields that identify it (HTTP status, problem type, RPC code), so the same
//! failure compares equal across runs and versions.

use crate::acp::AcpError;
use crate::client::ClientError;
use crate::errors::HarnessPart;
use crate::report::{mask_ids, Cause, FaultCause, Signature, SignatureKind};
use crate::trace::{ChannelStats, ErrorKind, FaultSeen, Seen, Snapshot};

/// The signature of a client-layer failure. `token` is scrubbed from the message.
pub fn signature(error: &ClientError, token: Option<&crate::secret::Secret>) -> Signature {
    let mut sig = Signature {
        integrity: None,
        kind: SignatureKind::Client,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        // Redacted before ids are masked: a masked id inside a secret
        // would leave the rest of it unrecognised.
        message: mask_ids(&crate::secret::redact_known(&crate::secret::redact(
            &error.to_string(),
            token,
        ))),
        pending: None,
        cause: None,
        observed: None,
        fault: None,
        component: None,
    };
    match error {
        ClientError::Acp(acp) => classify_acp(acp, &mut sig),
        ClientError::AgentExited { .. } => sig.kind = SignatureKind::AgentExit,
        ClientError::UnexpectedResult { .. } => sig.kind = SignatureKind::Protocol,
        ClientError::Health(_) => sig.kind = SignatureKind::Connect,
        ClientError::Persist(e) => {
            sig.kind = SignatureKind::Persist;
            sig.component = e.harness_part();
        }
        ClientError::SessionNotFound(_) | ClientError::NotBound { .. } | ClientError::Config(_) => {
            sig.kind = SignatureKind::Client
        }
    }
    sig
}

fn classify_acp(error: &AcpError, sig: &mut Signature) {
    sig.kind = match error {
        AcpError::Connect { .. } => SignatureKind::Connect,
        AcpError::StreamClosed { .. } => SignatureKind::StreamClosed,
        AcpError::Http { status, problem } => {
            sig.http_status = Some(*status);
            sig.problem_type = problem
                .as_ref()
                .and_then(|p| p.short_type())
                .map(str::to_string);
            SignatureKind::Http
        }
        AcpError::Rpc { code, .. } => {
            sig.rpc_code = Some(*code);
            SignatureKind::Rpc
        }
        AcpError::Malformed { .. } => SignatureKind::Protocol,
        // The write was refused by a transport an earlier failure closed: a
        // client-state failure, whose message names that earlier cause.
        AcpError::Closed { .. } => SignatureKind::Client,
        AcpError::Timeout { .. } | AcpError::HeadersTimeout { .. } => SignatureKind::Timeout,
        AcpError::AgentExited { .. } => SignatureKind::AgentExit,
    };
}

/// Settles a failure of a part of continuity's own (`sig.component`):
/// when the cell's target restarts that part on purpose (`owned`: the
/// `store` target its Postgres), the failure is the point of the test and
/// stays a verdict; otherwise the part failed under the cell (killed,
/// crashed, refusing) and the cell is the harness's error, the part named
/// first in the message.
pub fn blame_part(sig: &mut Signature, owned: &[HarnessPart]) {
    let Some(part) = sig.component else {
        return;
    };
    if owned.contains(&part) {
        sig.component = None;
        return;
    }
    sig.kind = SignatureKind::Harness;
    if !sig.message.starts_with(part.describe()) {
        sig.message = format!("{}: {}", part.describe(), sig.message);
    }
}

/// A failure to reach the server (refused, closed, reset) while a part of
/// continuity's own on the way is gone (its nginx killed by someone): the
/// part's failure, named on the signature for [`blame_part`].
pub fn find_gone_part(sig: &mut Signature, watched: &[crate::supervise::part::PartProcess]) {
    if sig.component.is_some() || !broke_on_the_way(sig) {
        return;
    }
    if let Some(gone) = watched.iter().find(|p| p.gone()) {
        sig.component = Some(gone.part);
    }
}

/// A connection on the way broke (refused, reset, closed): the failure
/// itself, or the last thing a phase that ran out of time saw while it
/// kept trying (the SDK's health wait retries until its deadline).
pub fn broke_on_the_way(sig: &Signature) -> bool {
    let broke =
        |kind: SignatureKind| matches!(kind, SignatureKind::Connect | SignatureKind::StreamClosed);
    broke(sig.kind)
        || (matches!(sig.kind, SignatureKind::Timeout | SignatureKind::Hung)
            && sig.cause.as_ref().is_some_and(|c| broke(c.kind)))
}

/// A restart that failed: a target that went down and did not come back
/// is the system under test's failure (`not_back`, the readiness probe's
/// last answer its cause) unless what it brings back is a part of
/// continuity's own (`own`: its Postgres, the Rivet app hosting the SDK);
/// an action that failed, or a target never seen going down, is the
/// test's setup failing (`harness`).
pub fn restart_failed(
    record: &crate::report::RestartResult,
    failure: Option<&crate::targets::RestartFailure>,
    own: Option<HarnessPart>,
) -> Signature {
    let message = record
        .detail
        .clone()
        .unwrap_or_else(|| "restart failed".into());
    match (failure, own) {
        (Some(crate::targets::RestartFailure::NotBack { error, .. }), None) => Signature {
            cause: error.last_cause.as_deref().cloned(),
            ..other(SignatureKind::NotBack, message)
        },
        (Some(crate::targets::RestartFailure::NotBack { .. }), Some(part)) => other(
            SignatureKind::Harness,
            format!("{}: {message}", part.describe()),
        ),
        _ => other(SignatureKind::Harness, message),
    }
}

/// A phase that ran out of time, and what it was waiting for.
pub fn timeout(deadline_ms: u64, pending: impl Into<String>) -> Signature {
    Signature {
        integrity: None,
        kind: SignatureKind::Timeout,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: format!("timed out after {deadline_ms} ms"),
        pending: Some(pending.into()),
        cause: None,
        observed: None,
        fault: None,
        component: None,
    }
}

/// A phase that ran out of time because the session store kept it waiting:
/// `persist (rivet): updateSession no answer after 29.9 s`.
pub fn persist_timeout(
    driver: &str,
    call: &str,
    waited_ms: u64,
    deadline_ms: u64,
    pending: impl Into<String>,
) -> Signature {
    Signature {
        integrity: None,
        kind: SignatureKind::Persist,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: format!(
            "persist ({driver}): {call} no answer after {:.1} s (the phase timed out after {deadline_ms} ms)",
            waited_ms as f64 / 1000.0
        ),
        pending: Some(pending.into()),
        cause: None,
        observed: None,
        fault: None,
        component: None,
    }
}

/// A failure of the harness or of a check, not of the system under test's API.
pub fn other(kind: SignatureKind, message: impl Into<String>) -> Signature {
    Signature {
        integrity: None,
        kind,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: message.into(),
        pending: None,
        cause: None,
        observed: None,
        fault: None,
        component: None,
    }
}

/// A phase that ran out of time, told from what its waits saw: `pending`
/// names the wait opened last (the health wait, a response to
/// `session/prompt`), or `fallback` when nothing on the wire was open; the
/// message adds the last failure of that wait's channel and of any other
/// channel that failed in the phase (the event stream), without counts so
/// it compares across runs; `observed` keeps the counts.
pub fn timeout_seen(
    deadline_ms: u64,
    fallback: String,
    seen: &Snapshot,
    token: Option<&crate::secret::Secret>,
) -> Signature {
    let mut sig = timeout(deadline_ms, fallback);
    explain(&mut sig, seen, token, true);
    sig
}

/// A phase whose call hung (nothing in flight could settle it for the
/// grace): `evidence` says what the wire showed last and when; `pending`,
/// the cause and `observed` are read from its waits as a timeout's are
/// ([`timeout_seen`]), so the two name the same cause.
pub fn hung_seen(
    evidence: String,
    fallback: String,
    seen: &Snapshot,
    token: Option<&crate::secret::Secret>,
) -> Signature {
    let mut sig = timeout(0, fallback);
    sig.kind = SignatureKind::Hung;
    sig.message = evidence;
    explain(&mut sig, seen, token, false);
    sig
}

/// What a phase's waits saw, into a timeout's or a hang's signature:
/// `pending` from the wait opened last, the cause and `observed` from the
/// channels' failures, the network fault it fell in; with `failures`, the
/// message names those failures too (a hang's evidence already does).
fn explain(
    sig: &mut Signature,
    seen: &Snapshot,
    token: Option<&crate::secret::Secret>,
    failures: bool,
) {
    let wait = seen.innermost();
    let linked = wait
        .and_then(|w| w.channel.as_deref())
        .and_then(|c| seen.channel(c));
    if let Some(wait) = wait {
        let mut pending = wait.what.clone();
        if let Some(c) = linked {
            pending.push_str(&format!(": {}", attempts(c)));
        }
        sig.pending = Some(mask_ids(&pending));
    }
    let mut message = sig.message.clone();
    if let Some(wait) = wait.filter(|w| w.channel.is_none() && failures) {
        message.push_str(&format!(" waiting for {}", without_id(&wait.what)));
    }
    // The linked channel's failure whatever its age (the health wait may
    // have begun in an earlier phase); others only if still failing since
    // the wait opened — a stream's first 404 before its 200 explains nothing.
    let since = wait.map_or(0, |w| w.opened);
    // Without a linked channel, the channels a request travels on come
    // before event streams: a pending request's own answer is its cause,
    // whichever of the two failures the trace happened to record first.
    let mut others: Vec<&ChannelStats> = seen
        .failing_since(since)
        .filter(|c| Some(*c) != linked)
        .collect();
    others.sort_by_key(|c| c.is_event_stream());
    let failed: Vec<&ChannelStats> = linked
        .filter(|c| c.failing)
        .into_iter()
        .chain(others)
        .collect();
    for channel in failed.iter().filter(|_| failures) {
        if let Some(last) = &channel.last_failure {
            message.push_str(&format!("; {}: {last}", channel.name));
        }
    }
    sig.message = mask_ids(&message);
    sig.cause = failed
        .first()
        .and_then(|c| c.last_failure.as_ref())
        .map(cause_of);
    sig.observed = observed(seen);
    scrub(sig, token);
    attribute_fault(sig, &seen.faults);
}

/// Names the network fault a failure fell in or after: the hop and the
/// toxic of the cell's latest fault window. When the failure is a reset
/// (or a close) and the fault proxy itself reset (closed) connections, it
/// says "reset by the fault proxy on the gateway hop (reset_peer)"; a reset
/// the proxy did not make (the server's own, passed through) is only
/// "during"/"after" the fault, never blamed on it. A harness failure stays
/// the harness's.
fn attribute_fault(sig: &mut Signature, faults: &[FaultSeen]) {
    let Some(window) = faults.last() else {
        return;
    };
    if sig.kind == SignatureKind::Harness {
        return;
    }
    let text = sig.message.to_ascii_lowercase();
    let cause = sig.cause.as_ref().and_then(|c| c.error.as_deref());
    let reset = cause == Some("reset") || text.contains("reset") || text.contains("broken pipe");
    let closed = cause == Some("closed")
        || sig.kind == SignatureKind::StreamClosed
        || ["closed", "terminated", "socket hang up", "eof"]
            .iter()
            .any(|w| text.contains(w));
    let by_proxy = if reset && window.resets > 0 {
        Some("reset")
    } else if (closed || reset) && window.closes > 0 {
        Some("closed")
    } else {
        None
    };
    let when = if window.active { "during" } else { "after" };
    let fault = FaultCause {
        hop: window.hop.clone(),
        toxic: window.toxic.clone(),
        when: when.into(),
        by_proxy: by_proxy.map(str::to_string),
    };
    sig.message = format!("{}: {}", fault_clause(&fault), sig.message);
    sig.fault = Some(fault);
}

/// What a message says first of the fault it fell in: `reset by the fault
/// proxy on the gateway hop (reset_peer)`, `during partition on the gateway hop`.
pub fn fault_clause(fault: &FaultCause) -> String {
    let (hop, toxic) = (&fault.hop, &fault.toxic);
    match &fault.by_proxy {
        Some(what) => format!("{what} by the fault proxy on the {hop} hop ({toxic})"),
        None => format!("{} {toxic} on the {hop} hop", fault.when),
    }
}

/// What a server said can hold the token (a gateway echoing the header it refused).
fn scrub(sig: &mut Signature, token: Option<&crate::secret::Secret>) {
    let clean = |text: &mut String| *text = crate::secret::redact(text, token);
    clean(&mut sig.message);
    sig.pending.iter_mut().for_each(clean);
    sig.observed.iter_mut().for_each(clean);
}

/// Adds what the phase's channels saw to a failure that was not a timeout:
/// the counts, and a cause when the signature's own kind is not already one.
pub fn add_seen(sig: &mut Signature, seen: &Snapshot, token: Option<&crate::secret::Secret>) {
    sig.observed = observed(seen);
    scrub(sig, token);
    sig.cause = match sig.kind {
        // What the readiness probe met last: the cell's channels did not say it.
        SignatureKind::NotBack => sig.cause.take(),
        SignatureKind::Http => Some(Cause {
            kind: SignatureKind::Http,
            http_status: sig.http_status,
            problem_type: sig.problem_type.clone(),
            error: None,
        }),
        _ => seen
            .failing_since(0)
            .last()
            .and_then(|c| c.last_failure.as_ref())
            .map(cause_of),
    };
    attribute_fault(sig, &seen.faults);
}

/// `GET /v1/health: 4 attempts, 4 failed, last HTTP 401; …`, or `None` when nothing failed.
fn observed(seen: &Snapshot) -> Option<String> {
    let parts: Vec<String> = seen
        .failed_channels()
        .map(|c| format!("{}: {}", c.name, attempts(c)))
        .collect();
    (!parts.is_empty()).then(|| mask_ids(&parts.join("; ")))
}

fn attempts(c: &ChannelStats) -> String {
    let plural = if c.attempts == 1 { "" } else { "s" };
    let mut text = format!("{} attempt{plural}", c.attempts);
    if c.failures > 0 {
        text.push_str(&format!(", {} failed", c.failures));
    }
    if c.received > 0 {
        text.push_str(&format!(", {} bytes received", c.received));
    }
    if let Some(last) = &c.last_failure {
        text.push_str(&format!("; last: {last}"));
    }
    text
}

/// `a response to session/prompt (id 3)` → `a response to session/prompt`:
/// request ids differ between runs, the method does not.
fn without_id(what: &str) -> &str {
    match what.rfind(" (id ") {
        Some(i) if what.ends_with(')') => &what[..i],
        _ => what,
    }
}

fn cause_of(seen: &Seen) -> Cause {
    match seen {
        Seen::Status {
            status,
            problem_type,
            ..
        } => Cause {
            kind: SignatureKind::Http,
            http_status: Some(*status),
            problem_type: problem_type.clone(),
            error: None,
        },
        Seen::Error { kind, .. } => Cause {
            kind: match kind {
                ErrorKind::Refused
                | ErrorKind::Reset
                | ErrorKind::Tls
                | ErrorKind::Dns
                | ErrorKind::Other => SignatureKind::Connect,
                ErrorKind::Closed => SignatureKind::StreamClosed,
                ErrorKind::Timeout => SignatureKind::Timeout,
                ErrorKind::TooLarge => SignatureKind::Protocol,
            },
            http_status: None,
            problem_type: None,
            error: Some(kind.as_str().to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::Problem;

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
}
