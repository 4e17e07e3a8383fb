//! Turns an error into a failure signature: the class of failure and the
//! fields that identify it (HTTP status, problem type, RPC code), so the same
//! failure compares equal across runs and versions. What the phase's
//! waits saw is added to a signature apart (`seen.rs`).

use crate::acp::AcpError;
use crate::client::ClientError;
use crate::errors::HarnessPart;
use crate::report::{mask_ids, Signature, SignatureKind};

mod seen;
pub use seen::timeout_seen;
pub(crate) use seen::{add_seen, fault_clause, hung_seen};

/// The signature of a client-layer failure. `token` is scrubbed from the message.
pub(crate) fn signature(error: &ClientError, token: Option<&crate::secret::Secret>) -> Signature {
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
pub(crate) fn blame_part(sig: &mut Signature, owned: &[HarnessPart]) {
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
pub(crate) fn find_gone_part(sig: &mut Signature, watched: &[crate::supervise::part::PartProcess]) {
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
pub(crate) fn broke_on_the_way(sig: &Signature) -> bool {
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
pub(crate) fn restart_failed(
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
pub(crate) fn timeout(deadline_ms: u64, pending: impl Into<String>) -> Signature {
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
pub(crate) fn persist_timeout(
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
pub(crate) fn other(kind: SignatureKind, message: impl Into<String>) -> Signature {
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

#[cfg(test)]
mod tests;
