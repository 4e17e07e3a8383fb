//! What an answer of the Rivet Engine's gateway means for the next call:
//! its JSON error (`{"group": "actor", "code": "not_found", …}`) sorted the
//! way RivetKit 2.3.19's own client sorts it (`isStaleResolvedActorError`,
//! `isSchedulingError`, `shouldRetryDynamicLifecycleError`), and the actor
//! id an answer names in its `x-rivet-actor` header.

use serde_json::Value;

/// The header every answer the gateway routed to an actor carries.
pub(crate) const ACTOR_HEADER: &str = "x-rivet-actor";

/// The longest actor id taken from a header; the engine's are 30 characters.
const MAX_ID_LEN: usize = 64;

/// An error the engine (or the actor through it) answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EngineError {
    pub group: String,
    pub code: String,
}

impl EngineError {
    /// The error in a reply body; `None` when the body is not the engine's shape.
    pub(crate) fn parse(body: &[u8]) -> Option<EngineError> {
        let value: Value = serde_json::from_slice(body).ok()?;
        Some(EngineError {
            group: value.get("group")?.as_str()?.to_string(),
            code: value.get("code")?.as_str()?.to_string(),
        })
    }

    /// The actor is between lives (not found, starting, stopping, gone): an
    /// actor id it was known by may name nothing now, and the key resolves
    /// again once it settles. RivetKit clears its resolved id and retries
    /// through the key for exactly these codes.
    pub(super) fn is_lifecycle(&self) -> bool {
        self.group == "actor"
            && (matches!(
                self.code.as_str(),
                "not_found"
                    | "starting"
                    | "stopping"
                    | "not_configured"
                    | "dropped_reply"
                    | "destroying"
            ) || self.code.starts_with("destroyed_"))
    }

    /// The engine could not place the actor on a runner in time; RivetKit
    /// resolves the key again after these too.
    pub(super) fn is_scheduling(&self) -> bool {
        self.group == "guard"
            && matches!(
                self.code.as_str(),
                "actor_ready_timeout" | "actor_runner_failed"
            )
    }

    /// The id names a datacenter this engine does not have: an id from
    /// another engine (its data folder was replaced). Not in RivetKit's
    /// list (its ids never outlive its engine); here an id is kept for the
    /// whole run, so it is resolved again as well.
    fn is_foreign_id(&self) -> bool {
        self.group == "datacenter" && self.code == "not_found"
    }

    /// A call made by actor id should forget the id and go through the key.
    pub(super) fn id_is_stale(&self) -> bool {
        self.is_lifecycle() || self.is_scheduling() || self.is_foreign_id()
    }

    /// Worth a short wait before resolving again (RivetKit waits 100 ms):
    /// the actor is coming or going, so asking at once finds it the same.
    pub(super) fn is_settling(&self) -> bool {
        self.group == "actor"
            && (matches!(self.code.as_str(), "starting" | "stopping" | "destroying")
                || self.code.starts_with("destroyed_"))
            || self.is_scheduling()
    }
}

/// Whether a failed answer passes with time: 5xx, 429 and the actor's
/// lifecycle and scheduling errors do; an error of the actor's own (an
/// unknown action, a rejected argument) does not. A 404 the engine did not
/// explain is taken as an actor not yet scheduled, as before ids were kept.
pub(super) fn is_transient(status: u16, error: Option<&EngineError>) -> bool {
    if status >= 500 || status == 429 {
        return true;
    }
    match error {
        Some(error) => error.is_lifecycle() || error.is_scheduling(),
        None => status == 404,
    }
}

/// The actor id in a header value, if it looks like one: ASCII letters and
/// digits only (it goes into a URL path), not empty, not absurdly long.
pub(super) fn actor_id(header: Option<&[u8]>) -> Option<String> {
    let text = std::str::from_utf8(header?).ok()?.trim();
    (!text.is_empty()
        && text.len() <= MAX_ID_LEN
        && text.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(group: &str, code: &str) -> EngineError {
        EngineError {
            group: group.into(),
            code: code.into(),
        }
    }

    #[test]
    fn the_engines_error_bodies_parse_and_others_do_not() {
        // As the engine 2.3.19 answers a destroyed actor's id (captured).
        let body = br#"{"group":"actor","code":"not_found","message":"The actor does not exist or was destroyed."}"#;
        assert_eq!(EngineError::parse(body), Some(error("actor", "not_found")));
        for other in [
            &b"not json"[..],
            br#"{"code":"not_found"}"#,
            br#"{"group":1,"code":"x"}"#,
            br#"["actor","not_found"]"#,
            b"",
        ] {
            assert_eq!(EngineError::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn stale_ids_are_rivetkits_lifecycle_and_scheduling_codes() {
        for code in [
            "not_found",
            "starting",
            "stopping",
            "not_configured",
            "dropped_reply",
            "destroying",
            "destroyed_while_waiting_for_ready",
        ] {
            assert!(error("actor", code).id_is_stale(), "{code}");
            assert!(is_transient(404, Some(&error("actor", code))), "{code}");
        }
        assert!(error("guard", "actor_ready_timeout").id_is_stale());
        assert!(error("guard", "actor_runner_failed").id_is_stale());
        assert!(error("datacenter", "not_found").id_is_stale());
        // The actor's own errors keep the id and are not retried.
        for (group, code) in [
            ("actor", "action_not_found"),
            ("actor", "overloaded"),
            ("guard", "actor_wake_retries_exceeded"),
            ("core", "internal_error"),
            ("rivetkit", "not_found"),
        ] {
            assert!(!error(group, code).id_is_stale(), "{group}.{code}");
        }
        assert!(!is_transient(
            404,
            Some(&error("actor", "action_not_found"))
        ));
        assert!(!is_transient(400, Some(&error("datacenter", "not_found"))));
        // Whatever the body, an overloaded or failing engine passes with time.
        assert!(is_transient(
            503,
            Some(&error("guard", "actor_wake_retries_exceeded"))
        ));
        assert!(is_transient(500, None) && is_transient(429, None) && is_transient(404, None));
        assert!(!is_transient(400, None) && !is_transient(410, None));
    }

    #[test]
    fn settling_codes_wait_before_resolving_again() {
        assert!(error("actor", "starting").is_settling());
        assert!(error("actor", "destroyed_during_creation").is_settling());
        assert!(error("guard", "actor_ready_timeout").is_settling());
        assert!(!error("actor", "not_found").is_settling());
        assert!(!error("datacenter", "not_found").is_settling());
    }

    #[test]
    fn only_plain_ids_are_taken_from_the_header() {
        assert_eq!(
            actor_id(Some(b"1ourbu4b3ugamkzyleafv7it80bl00")),
            Some("1ourbu4b3ugamkzyleafv7it80bl00".into())
        );
        assert_eq!(actor_id(Some(b" abc ")), Some("abc".into()));
        for hostile in [
            &b""[..],
            b"../../admin",
            b"abc?rvt-method=create",
            b"a/b",
            b"\xff\xfe",
            &[b'a'; 65][..],
        ] {
            assert_eq!(actor_id(Some(hostile)), None, "{hostile:?}");
        }
        assert_eq!(actor_id(None), None);
    }
}
