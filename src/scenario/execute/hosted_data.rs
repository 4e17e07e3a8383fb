//! What the hosted SDK's answers mean for the report: its errors as
//! failure signatures (classified by what the SDK's error carries), the
//! stored history's integrity, and the unhandled rejections the actor app
//! recorded, put into the detail of the phase they happened in.

use super::StepFailure;
use crate::client::hosted::{HostedError, SdkError};
use crate::diagnose;
use crate::report::detail::{self, Detail, HostedFaults, IntegrityDetail};
use crate::report::detail::{UnhandledRejection, WriteLoss};
use crate::report::{Signature, SignatureKind};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The signature of a hosted failure: the SDK's own error classified by
/// what it carries (RPC code, HTTP status, its name), or the Rivet path's.
pub(super) fn hosted_signature(
    error: &HostedError,
    token: Option<&crate::secret::Secret>,
) -> Signature {
    let text = crate::report::mask_ids(&crate::secret::redact_known(&crate::secret::redact(
        &error.to_string(),
        token,
    )));
    let mut sig = diagnose::other(SignatureKind::Client, text);
    match error {
        HostedError::Sdk(sdk) => classify_sdk(sdk, &mut sig),
        // The Rivet Engine holding the actor did not answer at all: the
        // Rivet app's failure, unless the cell restarts it on purpose.
        HostedError::Unreachable { .. } => {
            sig.kind = SignatureKind::Connect;
            sig.component = Some(crate::errors::HarnessPart::RivetApp);
        }
        HostedError::Actor { status, .. } => {
            sig.kind = SignatureKind::Http;
            sig.http_status = Some(*status);
        }
        HostedError::Protocol { .. } => sig.kind = SignatureKind::Protocol,
        HostedError::Page { .. } => sig.kind = SignatureKind::Connect,
        HostedError::Harness { fault, .. } => {
            sig.kind = SignatureKind::Connect;
            sig.component = Some(fault.part);
        }
    }
    sig
}

fn classify_sdk(sdk: &SdkError, sig: &mut Signature) {
    sig.http_status = sdk.http_status();
    sig.problem_type = sdk
        .problem_type()
        .map(|t| t.rsplit(':').next().unwrap_or(&t).to_string());
    sig.rpc_code = sdk.rpc_code();
    let names: Vec<&str> = sdk.chain().map(|e| e.name.as_str()).collect();
    let text = sdk.describe();
    sig.kind = if sig.rpc_code.is_some() {
        SignatureKind::Rpc
    } else if sig.http_status.is_some() {
        SignatureKind::Http
    } else if names.contains(&"ActorTimeout") {
        SignatureKind::Timeout
    } else if names.contains(&"TerminalClosed") {
        // The SDK's terminal socket ended (`ws close CODE`), as the Rust client's.
        SignatureKind::StreamClosed
    } else if text.contains("health") || text.contains("fetch failed") {
        // The health wait, or fetch itself (refused, reset): the server was not there.
        SignatureKind::Connect
    } else {
        SignatureKind::Client
    };
}

/// Puts each unhandled rejection (or uncaught exception) the actor app
/// recorded into the detail of the phase it happened in
/// (`unhandledRejections`), or of the last phase when it came after them.
pub(super) fn attach_faults(faults: &[Value], results: &mut [crate::report::PhaseResult]) {
    for fault in faults {
        let phase = fault.get("phase").and_then(Value::as_str).unwrap_or("");
        let at = results
            .iter()
            .position(|r| r.name == phase)
            .or(results.len().checked_sub(1));
        let Some(at) = at else { continue };
        let error = fault.get("error").cloned().unwrap_or(Value::Null);
        let passed = |v: Option<&Value>| v.cloned().unwrap_or(Value::Null);
        let entry = UnhandledRejection {
            kind: passed(fault.get("kind")),
            phase: phase.into(),
            name: passed(error.get("name")),
            message: crate::report::mask_ids(&crate::secret::redact_known(
                error.get("message").and_then(Value::as_str).unwrap_or(""),
            )),
            status: passed(error.get("status")),
            problem_type: passed(error.get("problem").and_then(|p| p.get("type"))),
        };
        let detail = &mut results[at].detail;
        let mut faults = detail::read::<HostedFaults>(detail).unwrap_or_default();
        faults.unhandled_rejections.push(entry);
        faults.write_to(detail);
    }
}

/// The stored history against what the SDK asked the store to keep: each
/// event once, `eventIndex` 1..n with no gaps; and, given the scripted
/// agent's sent record, every chunk it sent in the history's sessions
/// stored (a whole history only: one cut at `limit` cannot tell).
pub(super) fn check_history(
    out: &Map<String, Value>,
    sent_log: Option<&std::path::Path>,
    limit: usize,
    detail: &mut Map<String, Value>,
) -> Result<(), StepFailure> {
    let history = out
        .get("history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let recorded = out.get("recorded").and_then(Value::as_u64).unwrap_or(0) as usize;
    let indexes: BTreeSet<i64> = history
        .iter()
        .filter_map(|e| e.get("eventIndex").and_then(Value::as_f64))
        .map(|i| i as i64)
        .collect();
    let ids: BTreeSet<&str> = history
        .iter()
        .filter_map(|e| e.get("id").and_then(Value::as_str))
        .collect();
    let duplicates = history.len() - indexes.len();
    let max = indexes.iter().next_back().copied().unwrap_or(0);
    let gaps = (1..=max).filter(|i| !indexes.contains(i)).count();
    // Both counts live in the actor's state: a lost save loses the count
    // too, so what this catches is a hole in the middle (gaps) or a write
    // the store dropped while the SDK went on.
    let events_never_written = match sent_log {
        Some(log) if history.len() < limit => super::chunks::never_stored(&history, log),
        _ => None,
    };
    let never_written = events_never_written.unwrap_or(0);
    let silent = recorded.saturating_sub(ids.len());
    let loud = out
        .get("writeFailures")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let lost = silent + loud + never_written;
    let first = out.get("firstWriteFailure").and_then(Value::as_str);
    let (writes, how) = write_loss(silent, loud, never_written, first);
    let recorded = recorded + loud;
    let integrity = IntegrityDetail {
        events_never_written,
        writes,
        events_total: history.len(),
        events_recorded: recorded,
        events_lost: lost,
        events_duplicated: duplicates,
        index_gaps: gaps,
    };
    integrity.write_to(detail);
    if integrity.is_clean() {
        return Ok(());
    }
    Err(StepFailure::new(diagnose::other(
        SignatureKind::Integrity,
        format!(
            "history has {} events, the SDK recorded {recorded}: {lost} lost, {duplicates} duplicated, {gaps} index gaps{how}",
            history.len()
        ),
    ))
    .with_detail(detail.clone()))
}

/// How the missing writes were lost (`writes` in the detail): `intact`,
/// `failedLoudly` (the store raised: the SDK logs the error and drops the
/// event, its caller never hears), `lostSilently` (the store accepted them
/// and the history does not hold them), `neverWritten` (chunks the agent
/// sent that the client dropped before any write: no store saw them), or
/// `both` (more than one of these); and the words that say so in a
/// message (empty when intact).
pub(super) fn write_loss(
    silent: usize,
    loud: usize,
    never_written: usize,
    first_failure: Option<&str>,
) -> (WriteLoss, String) {
    let word = match (silent, loud, never_written) {
        (0, 0, 0) => "intact",
        (0, _, 0) => "failedLoudly",
        (_, 0, 0) => "lostSilently",
        (0, 0, _) => "neverWritten",
        _ => "both",
    };
    let loss = WriteLoss {
        writes: word.into(),
        writes_failed_loudly: loud,
        writes_lost_silently: silent,
    };
    let mut words = String::new();
    if loud > 0 {
        words.push_str(&format!(
            "; {loud} writes failed loudly (the store raised; the client only logged it)"
        ));
        if let Some(first) = first_failure {
            let first = crate::report::mask_ids(&crate::secret::redact_known(first));
            words.push_str(&format!(", first: {first}"));
        }
    }
    if silent > 0 {
        words.push_str(&format!(
            "; {silent} writes the store accepted are gone (lost silently)"
        ));
    }
    if never_written > 0 {
        words.push_str(&format!(
            "; {never_written} chunks the agent sent never reached the store (the client dropped them before writing)"
        ));
    }
    (loss, words)
}

pub(super) fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = from.get(*key) {
            to.insert((*key).into(), v.clone());
        }
    }
}

pub(super) fn sdk_json(sdk: &SdkError) -> Value {
    let mut chain = Vec::new();
    for e in sdk.chain() {
        let mut m = Map::new();
        m.insert("name".into(), e.name.clone().into());
        m.insert(
            "message".into(),
            crate::report::mask_ids(&crate::secret::redact_known(&e.message)).into(),
        );
        if let Some(s) = e.status {
            m.insert("status".into(), s.into());
        }
        if let Some(p) = &e.problem {
            m.insert("problem".into(), p.clone());
        }
        if let Some(c) = &e.code {
            m.insert("code".into(), c.clone());
        }
        chain.push(Value::Object(m));
    }
    Value::Array(chain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sdks_400_is_an_http_signature_and_its_timeout_a_timeout() {
        let sdk = |v: Value| HostedError::Sdk(Box::new(serde_json::from_value(v).unwrap()));
        let http = hosted_signature(
            &sdk(
                json!({"name": "AcpHttpError", "message": "Bad Request", "status": 400,
                "problem": {"type": "urn:sandbox-agent:error:invalid_request"}}),
            ),
            None,
        );
        assert_eq!(
            (http.kind, http.http_status, http.problem_type.as_deref()),
            (SignatureKind::Http, Some(400), Some("invalid_request"))
        );
        let timeout = hosted_signature(
            &sdk(
                json!({"name": "ActorTimeout", "message": "promptSameHandleAfterRestart: no answer within 5000 ms"}),
            ),
            None,
        );
        assert_eq!(timeout.kind, SignatureKind::Timeout);
        let closed = hosted_signature(
            &sdk(json!({"name": "Error", "message": "ACP client is closed"})),
            None,
        );
        assert_eq!(closed.kind, SignatureKind::Client);
    }

    #[test]
    fn a_history_with_a_gap_or_a_lost_event_fails_integrity() {
        let out = |history: Value, recorded: u64| -> Map<String, Value> {
            json!({"history": history, "recorded": recorded})
                .as_object()
                .cloned()
                .unwrap()
        };
        let mut d = Map::new();
        let whole = out(
            json!([{"id": "a", "eventIndex": 1}, {"id": "b", "eventIndex": 2}]),
            2,
        );
        assert!(check_history(&whole, None, 100, &mut d).is_ok());
        let gap = out(
            json!([{"id": "a", "eventIndex": 1}, {"id": "c", "eventIndex": 3}]),
            2,
        );
        assert!(check_history(&gap, None, 100, &mut d).is_err());
        let lost = out(json!([{"id": "a", "eventIndex": 1}]), 2);
        let failure = check_history(&lost, None, 100, &mut d).unwrap_err();
        assert_eq!(failure.signature.kind, SignatureKind::Integrity);
        assert_eq!(d["eventsLost"], 1);
    }

    /// A history whose events came without their payloads (the hosted
    /// clients once sent ids and indexes only) cannot say that no chunk is
    /// missing: the count is absent, never 0.
    #[test]
    fn a_history_without_payloads_cannot_say_no_chunk_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sent.jsonl");
        let line = json!({"turn": "stream", "session": "s1", "seq": 1, "of": 1});
        std::fs::write(&log, format!("{line}\n")).unwrap();
        let bare = json!({"history": [{"id": "a", "eventIndex": 1}], "recorded": 1});
        let mut d = Map::new();
        let _ = check_history(bare.as_object().unwrap(), Some(&log), 100, &mut d);
        assert!(d.get("eventsNeverWritten").is_none(), "{d:?}");
        let missing_log = dir.path().join("gone.jsonl");
        let chunk = json!({"id": "a", "eventIndex": 1, "payload": {"method": "session/update"}});
        let whole = json!({"history": [chunk], "recorded": 1});
        let mut d = Map::new();
        let _ = check_history(whole.as_object().unwrap(), Some(&missing_log), 100, &mut d);
        assert!(d.get("eventsNeverWritten").is_none(), "{d:?}");
    }

    /// A page reloaded while the SDK still queued a turn's events: the
    /// store's own tally says intact, the agent's sent record does not.
    #[test]
    fn chunks_the_agent_sent_and_no_store_holds_fail_integrity() {
        let chunk = |i: u64, index: u64| {
            json!({"id": format!("e{index}"), "eventIndex": index, "payload": {
                "method": "session/update",
                "params": {"sessionId": "s1", "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": format!("stream chunk {i}/3")}}}}})
        };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sent.jsonl");
        let sent: String = (1..=3)
            .map(|i| {
                format!(
                    "{}\n",
                    json!({"turn": "stream", "session": "s1", "seq": i, "of": 3})
                )
            })
            .chain(std::iter::once(
                json!({"turn": "stream", "session": "other", "seq": 9, "of": 9}).to_string() + "\n",
            ))
            .collect();
        std::fs::write(&log, sent).unwrap();
        let out = |history: Vec<Value>| -> Map<String, Value> {
            let recorded = history.len();
            json!({"history": history, "recorded": recorded})
                .as_object()
                .cloned()
                .unwrap()
        };
        let mut d = Map::new();
        let whole = out(vec![chunk(1, 1), chunk(2, 2), chunk(3, 3)]);
        assert!(check_history(&whole, Some(&log), 100, &mut d).is_ok());
        assert_eq!(d["eventsNeverWritten"], 0);
        let mut d = Map::new();
        let dropped = out(vec![chunk(1, 1), chunk(2, 2)]);
        let failure = check_history(&dropped, Some(&log), 100, &mut d).unwrap_err();
        assert_eq!(d["eventsNeverWritten"], 1);
        assert_eq!(d["writes"], "neverWritten");
        assert!(
            failure
                .signature
                .message
                .contains("never reached the store"),
            "{}",
            failure.signature.message
        );
        // A history cut at the limit cannot tell what is missing.
        let mut d = Map::new();
        assert!(check_history(&dropped, Some(&log), 2, &mut d).is_ok());
    }
}
