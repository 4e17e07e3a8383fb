//! Turns an error into a failure signature: the class of failure and the
//! fields that identify it (HTTP status, problem type, RPC code), so the same
//! failure compares equal across runs and versions.

use crate::acp::AcpError;
use crate::client::ClientError;
use crate::report::{Signature, SignatureKind};

/// The signature of a client-layer failure. `token` is scrubbed from the message.
pub fn signature(error: &ClientError, token: Option<&crate::secret::Secret>) -> Signature {
    let mut sig = Signature {
        kind: SignatureKind::Client,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: mask_ids(&crate::secret::redact(&error.to_string(), token)),
        pending: None,
    };
    match error {
        ClientError::Acp(acp) => classify_acp(acp, &mut sig),
        ClientError::AgentExited { .. } => sig.kind = SignatureKind::AgentExit,
        ClientError::UnexpectedResult { .. } => sig.kind = SignatureKind::Protocol,
        ClientError::Health(_) => sig.kind = SignatureKind::Connect,
        ClientError::Persist(_) => sig.kind = SignatureKind::Persist,
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
        AcpError::Timeout { .. } => SignatureKind::Timeout,
        AcpError::AgentExited { .. } => SignatureKind::AgentExit,
    };
}

/// Replaces UUIDs (server ids like `sdk-mock-<uuid>`, session ids) with
/// `<id>`, so the same failure has the same message in every cell and run.
pub fn mask_ids(text: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let uuid_at = |start: usize| -> Option<usize> {
        let mut i = start;
        for (n, len) in SHAPE.iter().enumerate() {
            if n > 0 {
                if bytes.get(i) != Some(&b'-') {
                    return None;
                }
                i += 1;
            }
            let group = bytes.get(i..i + len)?;
            if !group.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            i += len;
        }
        // Not part of a longer hex run.
        (!bytes.get(i).is_some_and(u8::is_ascii_hexdigit)).then_some(i)
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !bytes[i - 1].is_ascii_hexdigit();
        match boundary.then(|| uuid_at(i)).flatten() {
            Some(end) => {
                out.push_str("<id>");
                i = end;
            }
            None => {
                let ch = text[i..].chars().next().expect("i is on a char boundary");
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// A phase that ran out of time, and what it was waiting for.
pub fn timeout(deadline_ms: u64, pending: impl Into<String>) -> Signature {
    Signature {
        kind: SignatureKind::Timeout,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: format!("timed out after {deadline_ms} ms"),
        pending: Some(pending.into()),
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
        kind: SignatureKind::Persist,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: format!(
            "persist ({driver}): {call} no answer after {:.1} s (the phase timed out after {deadline_ms} ms)",
            waited_ms as f64 / 1000.0
        ),
        pending: Some(pending.into()),
    }
}

/// A failure of the harness or of a check, not of the system under test's API.
pub fn other(kind: SignatureKind, message: impl Into<String>) -> Signature {
    Signature {
        kind,
        http_status: None,
        problem_type: None,
        rpc_code: None,
        message: message.into(),
        pending: None,
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
    fn ids_are_masked_so_signatures_compare_across_runs() {
        assert_eq!(
            mask_ids("first POST to /v1/acp/sdk-mock-3743b79f-59e5-4713-a915-af9a2188ebbc é"),
            "first POST to /v1/acp/sdk-mock-<id> é"
        );
        assert_eq!(mask_ids("abc 12345678-1234 x"), "abc 12345678-1234 x");
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

    #[test]
    fn the_token_is_scrubbed_from_messages() {
        let token = crate::secret::Secret::new("tok-9");
        let e = ClientError::Config("header value tok-9 is bad".into());
        assert!(!signature(&e, Some(&token)).message.contains("tok-9"));
    }
}
