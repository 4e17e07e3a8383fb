//! What a phase's waits and channels saw, into its failure signature:
//! the wait it was pending on, the cause from the channels that failed
//! (counts kept in `observed`, never in the message, so signatures compare
//! across runs), and the network fault the failure fell in or after. Used
//! for a timeout ([`timeout_seen`]), a hang ([`hung_seen`]) and any other
//! failure ([`add_seen`]).

use crate::report::{mask_ids, Cause, FaultCause, Signature, SignatureKind};
use crate::trace::{ChannelStats, ErrorKind, FaultSeen, Seen, Snapshot};

use super::timeout;

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
pub(crate) fn hung_seen(
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
pub(crate) fn fault_clause(fault: &FaultCause) -> String {
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
pub(crate) fn add_seen(
    sig: &mut Signature,
    seen: &Snapshot,
    token: Option<&crate::secret::Secret>,
) {
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

pub(super) fn cause_of(seen: &Seen) -> Cause {
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
mod tests;
