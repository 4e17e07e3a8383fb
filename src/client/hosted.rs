//! The hosted client: the real TypeScript SDK (`sandbox-agent` on npm) living
//! in the `sdkClient` actor of the stack's RivetKit app
//! (`stack/rivet/sdk-client.mjs`), driven through the Rivet Engine's action
//! API. One actor per cell owns the cell's SDK clients and session handles,
//! as sandbox-agent's multiplayer guidance has an app do; this driver only
//! forwards each phase and reads back what the SDK answered.
//!
//! Every SDK failure comes back as data, so a failed action is a
//! [`HostedError::Sdk`] with the SDK's own error (name, message, HTTP status
//! and problem, JSON-RPC code, cause chain). Failures of the path to the
//! actor (engine refused, actor not scheduled) are kept apart: those are the
//! Rivet layer's, not the SDK's.
//!
//! With a cell's trace attached, each scenario action is an `sdk` event
//! (asked to answered, or to the deadline it was given up at: the client
//! under test holding the cell), and the SDK's own exchanges, which every
//! answer carries, go into the trace ([`super::hosted_wire`]). Each is
//! also a pending call in the trace's in-flight model, which the hang
//! detector reads; for the actor, whose records only come with an answer,
//! the driver polls its wire and what it has in flight while the call is
//! pending ([`SdkHost::REPORTS_FLIGHT`]).
//!
//! The browser client (`--client browser`) answers the same actions from
//! its page ([`crate::client::browser`]): the same SDK, bundled for the
//! browser, called through the same [`HostedClient`] over another
//! [`SdkHost`], one per client on the axis; its wire comes from
//! the browser's own network events, not from the answers.
//!
//! Over 400 lines on purpose: the driver of the hosted SDK and the host
//! contract it is generic over (`HostedClient`, `SdkHost`, `ActorHost`)
//! share one call path, the actor call with its retry, the `sdk` span in the
//! trace and the polling of the flight while a call is pending, that every
//! action of both hosts goes through; the wire's reading is apart
//! (`hosted_wire`).

use super::hosted_wire::WireCursor;
use super::sdk_action::{ActionArgs, SdkAction};
use super::ClientKind;
use crate::persist::rivet::answer::{EngineError, ACTOR_HEADER};
use crate::persist::rivet::route::{ActorRoute, Route};
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The actor's name in the app's registry.
pub(crate) const ACTOR: &str = "sdkClient";

/// While a scenario call is pending on a host that reports what it has in
/// flight, how often the driver asks, and how long one ask may take.
const FLIGHT_POLL: Duration = Duration::from_millis(250);
const FLIGHT_POLL_BOUND: Duration = Duration::from_secs(2);

pub(crate) use super::sdk_action::SdkError;

/// Why an action did not give the SDK's answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum HostedError {
    /// The SDK (or the actor's bound) failed the call.
    #[error("{}", .0.describe())]
    Sdk(Box<SdkError>),
    /// The engine could not be reached at all.
    #[error("{action}: the Rivet Engine is unreachable: {message}")]
    Unreachable { action: String, message: String },
    /// The engine or the actor answered with an error instead of the action's result.
    #[error("{action}: the actor did not answer: HTTP {status}: {body}")]
    Actor {
        action: String,
        status: u16,
        body: String,
    },
    /// An answer that is not the shape the app sends.
    #[error("{action}: unexpected answer: {message}")]
    Protocol { action: String, message: String },
    /// The browser client's page did not run the action (still loading,
    /// its context replaced by a reload).
    #[error("{action}: the browser page did not run it: {message}")]
    Page { action: String, message: String },
    /// A part of continuity's own that holds the client failed (the
    /// browser's Chromium gone): the cell is the harness's error.
    #[error("{fault} (during {action})")]
    Harness {
        action: String,
        #[source]
        fault: crate::errors::HarnessFault,
    },
}

/// Why the hosted SDK client cannot run here (no Rivet layer, an SDK
/// version the registry lacks, ...): its cells are skipped with this reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unhosted(pub String);

/// Where the actor is.
#[derive(Debug, Clone)]
pub(crate) struct HostedConfig {
    /// The engine's guard endpoint, e.g. `http://127.0.0.1:6420`.
    pub endpoint: String,
    pub namespace: String,
    /// One actor per cell attempt.
    pub key: String,
}

/// Calls the cell's SDK where it runs, its host `H`: the `sdkClient`
/// actor ([`ActorHost`]) or the browser client's page
/// ([`super::browser::BrowserPage`]).
/// The actions are the same either way.
#[derive(Debug, Clone)]
pub(crate) struct HostedClient<H> {
    host: H,
    wire: Option<Arc<Wire>>,
    /// Whether a pending scenario call polls what its host has in flight
    /// (hosts that report it only: [`SdkHost::REPORTS_FLIGHT`]).
    watching: bool,
}

/// Where the SDK runs and answers the actions: one implementation per
/// place the real SDK is hosted, and so one client on the client axis
/// ([`SdkHost::KIND`]) per implementation.
#[async_trait::async_trait]
pub(crate) trait SdkHost: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The client the SDK is when hosted here.
    const KIND: ClientKind;

    /// Whether the hang detector learns what the SDK has in flight only
    /// from the host's report (`wire` answers `flight`), polled while a
    /// call is pending: the actor's records reach the trace with each
    /// answer, not as they happen. The page's wire is Chromium's own
    /// network events, which feed the trace live.
    const REPORTS_FLIGHT: bool = false;

    /// One call of `action`, no retry by the caller; `patience` is how
    /// long a host that can tell it is not ready yet (a page still
    /// loading) may wait for itself.
    async fn call_once(
        &self,
        action: &str,
        args: &Value,
        patience: Duration,
    ) -> Result<Map<String, Value>, HostedError>;
}

/// The cell's `sdkClient` actor, reached through the engine's gateway: by
/// its key first, then by the id an answer named ([`ActorRoute`]).
#[derive(Debug, Clone)]
pub(crate) struct ActorHost {
    config: HostedConfig,
    http: reqwest::Client,
    route: ActorRoute,
}

/// Where the SDK's wire goes: the cell's trace, and what it already holds.
#[derive(Debug)]
struct Wire {
    trace: Trace,
    cursor: Mutex<WireCursor>,
}

/// Whether a call is one of the scenario's (traced as the SDK's time) or
/// the harness's own (its faults, the wire, retiring the actor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    Scenario,
    Harness,
}

impl HostedClient<ActorHost> {
    pub(crate) fn new(config: HostedConfig) -> Result<Self, reqwest::Error> {
        let http = crate::http::client_builder()
            .connect_timeout(crate::http::CONNECT_TIMEOUT)
            .build()?;
        let route = ActorRoute::new(&config.endpoint, &config.namespace, ACTOR, &config.key);
        Ok(Self::on(ActorHost {
            config,
            http,
            route,
        }))
    }
}

impl<H: SdkHost> HostedClient<H> {
    /// The SDK hosted by `host` (the browser client: `HostedClient::on(page)`).
    pub(crate) fn on(host: H) -> Self {
        Self {
            host,
            wire: None,
            watching: false,
        }
    }

    /// Where the SDK runs (the browser client's page, for its reloads).
    pub(crate) fn host(&self) -> &H {
        &self.host
    }

    /// This client writing its actions and the SDK's wire into `trace`.
    pub(crate) fn traced(mut self, trace: Trace) -> Self {
        self.wire = Some(Arc::new(Wire {
            trace,
            cursor: Mutex::new(WireCursor::default()),
        }));
        self
    }

    /// With `watching`, a pending scenario call on a host that reports
    /// what it has in flight asks it as it waits (the hang detector reads
    /// it); without, the host's wire reaches the trace with each answer.
    pub(crate) fn watching(mut self, watching: bool) -> Self {
        self.watching = watching;
        self
    }

    /// Fetches the wire records the trace lacks (after a phase given up at
    /// its deadline, whose answer never came), within `bound`.
    pub(crate) async fn drain_wire(&self, phase: &str, bound: Duration) {
        let wire = SdkAction::Wire {
            phase: phase.into(),
        };
        let ask = self.call_as(CallKind::Harness, &wire, bound, None);
        let _ = tokio::time::timeout(bound, ask).await;
    }

    /// Calls `action` (which carries the phase name). A refused
    /// connection or an engine-level error (the actor not scheduled while the
    /// runner restarts) is retried until `patience` runs out: the action never
    /// ran, so sending it again is what a waiting app would do. The phase's
    /// own deadline bounds the whole call from outside.
    pub(crate) async fn call(
        &self,
        action: &SdkAction,
        patience: Duration,
    ) -> Result<Map<String, Value>, HostedError> {
        self.call_as(CallKind::Harness, action, patience, None)
            .await
    }

    /// [`HostedClient::call`]; a scenario call is traced as an `sdk` event
    /// that ends at its answer or, when the caller gives up first, at
    /// `deadline` after it began, and the SDK call is bounded by the actor
    /// at `deadline` (`timeoutMs`).
    pub(crate) async fn call_as(
        &self,
        kind: CallKind,
        call: &SdkAction,
        patience: Duration,
        deadline: Option<Duration>,
    ) -> Result<Map<String, Value>, HostedError> {
        let action = call.name();
        let scenario = self.wire.as_ref().filter(|_| kind == CallKind::Scenario);
        let mut span = scenario.map(|w| SdkSpan::new(&w.trace, action, call.phase(), deadline));
        // Pending until answered or dropped: what the hang detector judges.
        let _pending = scenario.map(|w| match H::REPORTS_FLIGHT {
            true => w.trace.hosted_call(action, call.phase()),
            false => w.trace.call(action),
        });
        let asking = self.ask(call, patience, deadline);
        let answer = match scenario.filter(|_| H::REPORTS_FLIGHT && self.watching) {
            Some(wire) => tokio::select! {
                answer = asking => answer,
                never = self.watch_flight(wire, call.phase()) => match never {},
            },
            None => asking.await,
        };
        let answer = answer.and_then(|mut output| {
            if let (Some(wire), Some(records)) = (&self.wire, output.remove("wire")) {
                wire.cursor().ingest(&wire.trace, &records);
            }
            judge_output(action, output)
        });
        if let Some(span) = span.as_mut() {
            span.answered(&answer);
        }
        answer
    }

    /// One action asked of the host, again while the host cannot be
    /// reached (see [`HostedClient::call`]): its raw answer.
    async fn ask(
        &self,
        call: &SdkAction,
        patience: Duration,
        deadline: Option<Duration>,
    ) -> Result<Map<String, Value>, HostedError> {
        let action = call.name();
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            let args = ActionArgs {
                action: call,
                timeout_ms: deadline.map(|d| d.as_millis() as u64),
                wire_ack: self.wire.as_ref().map(|wire| wire.cursor().ack()),
            };
            let args = serde_json::to_value(&args).map_err(|e| HostedError::Protocol {
                action: action.into(),
                message: format!("the action's arguments: {e}"),
            })?;
            let once = self.host.call_once(action, &args, patience).await;
            match once {
                Err(e) if retryable(&e) && started.elapsed() + delay < patience => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// While a call of phase `phase` is pending: asks the host every
    /// [`FLIGHT_POLL`] for the wire records the trace lacks and what it
    /// has in flight, into the trace. An ask that fails is skipped: the
    /// model then holds no fresh report, and nothing is judged hung.
    async fn watch_flight(&self, wire: &Wire, phase: &str) -> std::convert::Infallible {
        let ask = SdkAction::Wire {
            phase: phase.into(),
        };
        loop {
            tokio::time::sleep(FLIGHT_POLL).await;
            let args = ActionArgs {
                action: &ask,
                timeout_ms: None,
                wire_ack: Some(wire.cursor().ack()),
            };
            let Ok(args) = serde_json::to_value(&args) else {
                continue;
            };
            let once = self.host.call_once(ask.name(), &args, Duration::ZERO);
            let Ok(Ok(mut out)) = tokio::time::timeout(FLIGHT_POLL_BOUND, once).await else {
                continue;
            };
            if let Some(records) = out.remove("wire") {
                wire.cursor().ingest(&wire.trace, &records);
            }
            if let Some(flight) = out.get("flight") {
                super::hosted_wire::ingest_flight(&wire.trace, flight);
            }
        }
    }
}

#[async_trait::async_trait]
impl SdkHost for ActorHost {
    const KIND: ClientKind = ClientKind::TsSdk;
    const REPORTS_FLIGHT: bool = true;

    /// By the known id when there is one; an answer saying it is stale
    /// sends the same call through the key at once (the action never ran).
    async fn call_once(
        &self,
        action: &str,
        args: &Value,
        _patience: Duration,
    ) -> Result<Map<String, Value>, HostedError> {
        let route = self.route.current();
        match self.call_by(&route, action, args).await {
            Err((_, engine)) if self.route.stale(&route, engine.as_ref()).await => self
                .call_by(&Route::Key, action, args)
                .await
                .map_err(|(error, _)| error),
            answer => answer.map_err(|(error, _)| error),
        }
    }
}

impl ActorHost {
    /// One action call on the actor by `route`: its answer's `output`
    /// object, or the error with the engine's own when it sent one.
    async fn call_by(
        &self,
        route: &Route,
        action: &str,
        args: &Value,
    ) -> Result<Map<String, Value>, (HostedError, Option<EngineError>)> {
        let config = &self.config;
        let response = self
            .http
            .post(self.route.url(route, action))
            .header("x-rivet-encoding", "json")
            .json(&json!({ "args": [args] }))
            .send()
            .await
            .map_err(|e| {
                let message = crate::acp::AcpError::from_reqwest(
                    &config.endpoint,
                    &e,
                    crate::http::CONNECT_TIMEOUT,
                )
                .to_string();
                let action = action.into();
                (HostedError::Unreachable { action, message }, None)
            })?;
        let status = response.status().as_u16();
        let actor = response.headers().get(ACTOR_HEADER).cloned();
        let body = response.bytes().await.map_err(|e| {
            let message = format!("reading the answer: {e}");
            let action = action.into();
            (HostedError::Unreachable { action, message }, None)
        })?;
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&body);
            let text: String = crate::secret::redact_known(&text)
                .chars()
                .take(400)
                .collect();
            let error = HostedError::Actor {
                action: action.into(),
                status,
                body: text,
            };
            return Err((error, EngineError::parse(&body)));
        }
        let protocol = |message: String| {
            let action = action.into();
            (HostedError::Protocol { action, message }, None)
        };
        let reply: Value =
            serde_json::from_slice(&body).map_err(|e| protocol(format!("not JSON: {e}")))?;
        let Some(Value::Object(output)) = reply.get("output").cloned() else {
            return Err(protocol(format!("no `output` object in {reply}")));
        };
        self.route
            .answered(route, actor.as_ref().map(|value| value.as_bytes()));
        Ok(output)
    }
}

impl Wire {
    fn cursor(&self) -> std::sync::MutexGuard<'_, WireCursor> {
        self.cursor.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The action's answer: ok, or the SDK's error as the actor reported it.
fn judge_output(
    action: &str,
    output: Map<String, Value>,
) -> Result<Map<String, Value>, HostedError> {
    let protocol = |message: String| HostedError::Protocol {
        action: action.into(),
        message,
    };
    match output.get("ok") {
        Some(Value::Bool(true)) => Ok(output),
        Some(Value::Bool(false)) => {
            let error = output.get("error").cloned().unwrap_or(Value::Null);
            serde_json::from_value(error)
                .map(|e| HostedError::Sdk(Box::new(e)))
                .map_err(|e| protocol(format!("error without name/message: {e}")))
                .and_then(Err)
        }
        _ => Err(protocol(format!("no `ok` in {}", Value::Object(output)))),
    }
}

/// One scenario action in the trace: an `sdk` event written when it is
/// answered, or when its caller drops it (given up at the phase deadline:
/// it then ends at that deadline, not at whatever the caller did next).
struct SdkSpan {
    trace: Trace,
    call: String,
    phase: Option<String>,
    began: f64,
    started: Instant,
    deadline: Option<Duration>,
    /// Whether it succeeded, and its error when it did not.
    answer: Option<(bool, Option<String>)>,
}

impl SdkSpan {
    fn new(trace: &Trace, call: &str, phase: &str, deadline: Option<Duration>) -> Self {
        Self {
            trace: trace.clone(),
            call: call.to_string(),
            phase: Some(phase.to_string()),
            began: trace.now_ms(),
            started: Instant::now(),
            deadline,
            answer: None,
        }
    }

    fn answered(&mut self, answer: &Result<Map<String, Value>, HostedError>) {
        self.answer = Some(match answer {
            Ok(_) => (true, None),
            Err(error) => (false, Some(error.to_string().chars().take(300).collect())),
        });
    }
}

impl Drop for SdkSpan {
    fn drop(&mut self) {
        let mut elapsed = self.started.elapsed();
        let answer = self.answer.take();
        if answer.is_none() {
            if let Some(deadline) = self.deadline {
                elapsed = elapsed.min(deadline);
            }
        }
        let ms = (elapsed.as_micros() as f64 / 100.0).round() / 10.0;
        let (ok, error) = answer.map_or((None, None), |(ok, error)| (Some(ok), error));
        let sdk = event::Sdk {
            ok,
            error,
            abandoned: ok.is_none(),
            call: self.call.clone(),
            phase: self.phase.take(),
            ms,
        };
        self.trace.recorded(self.began + ms, Event::Sdk(sdk));
    }
}

/// A failure where the action never reached the actor: refused, or an
/// engine error on the way to it (`guard`: `actor_wake_retries_exceeded`;
/// `pegboard`: `route_resolve_query_timeout`, no runner to place it on yet).
fn retryable(error: &HostedError) -> bool {
    match error {
        HostedError::Unreachable { .. } | HostedError::Page { .. } => true,
        HostedError::Actor { status, body, .. } => {
            *status >= 500
                && (body.contains("\"group\":\"guard\"") || body.contains("\"group\":\"pegboard\""))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sdk_error_keeps_its_chain_status_problem_and_code() {
        let error: SdkError = serde_json::from_value(json!({
            "name": "Error", "message": "ACP client is closed",
            "cause": {"name": "AcpHttpError", "message": "Bad Request", "status": 400,
                      "problem": {"type": "urn:sandbox-agent:error:invalid_request", "detail": "missing agent"},
                      "cause": {"name": "AcpRpcError", "message": "Internal agent error: x", "code": -32603}}
        }))
        .unwrap();
        assert_eq!(error.http_status(), Some(400));
        assert_eq!(
            error.problem_type().as_deref(),
            Some("urn:sandbox-agent:error:invalid_request")
        );
        assert_eq!(error.rpc_code(), Some(-32603));
        assert_eq!(
            error.describe(),
            "Error: ACP client is closed; cause: AcpHttpError: Bad Request; cause: AcpRpcError: Internal agent error: x"
        );
    }

    #[test]
    fn only_failures_before_the_actor_are_retried() {
        let guard = HostedError::Actor {
            action: "prompt".into(),
            status: 503,
            body: r#"{"group":"guard","code":"actor_wake_retries_exceeded"}"#.into(),
        };
        let user = HostedError::Actor {
            action: "prompt".into(),
            status: 500,
            body: r#"{"group":"user","code":"invalid_args"}"#.into(),
        };
        assert!(retryable(&guard));
        let route = HostedError::Actor {
            action: "connect".into(),
            status: 504,
            body: r#"{"group":"pegboard","code":"route_resolve_query_timeout"}"#.into(),
        };
        assert!(retryable(&route));
        assert!(!retryable(&user));
        assert!(!retryable(&HostedError::Sdk(Box::new(SdkError {
            name: "Error".into(),
            message: "x".into(),
            status: None,
            problem: None,
            code: None,
            cause: None
        }))));
    }

    /// The actor host as the store's driver: by key first, then by the id
    /// the answer named; a stale id goes back through the key at once and
    /// the action is answered; an actor's own error is not rerouted.
    #[tokio::test]
    async fn the_actor_host_goes_by_the_id_an_answer_named_and_back_by_key_when_stale() {
        use crate::persist::rivet::tests::{engine_error, Gateway, Reply};
        let answer = |actor: &str| -> Reply {
            (200, Some(actor.into()), r#"{"output":{"ok":true}}"#.into())
        };
        // The key names `old` first; once `old` is gone, it names `new`.
        let gateway = Gateway::start(move |path, n| {
            if path.starts_with("/gateway/old/") {
                engine_error(404, "actor", "not_found")
            } else if path.contains("/action/nope") {
                engine_error(404, "actor", "action_not_found")
            } else if path.starts_with("/gateway/new/") || n > 0 {
                answer("new")
            } else {
                answer("old")
            }
        })
        .await;
        let client = HostedClient::new(HostedConfig {
            endpoint: gateway.endpoint.clone(),
            namespace: "default".into(),
            key: "k 1".into(),
        })
        .unwrap();
        let ask = |action: &'static str| {
            let host = client.host().clone();
            async move { host.call_once(action, &json!({}), Duration::ZERO).await }
        };
        ask("faults").await.unwrap();
        // By id: stale, so by key at once (which names `new`), answered.
        assert_eq!(ask("faults").await.unwrap()["ok"], true);
        ask("wire").await.unwrap();
        let error = ask("nope").await.unwrap_err();
        assert!(
            matches!(error, HostedError::Actor { status: 404, .. }),
            "{error}"
        );
        assert_eq!(
            gateway.routes(),
            [
                "key",
                "/gateway/old/action/faults",
                "key",
                "/gateway/new/action/wire",
                "/gateway/new/action/nope"
            ]
        );
    }
}
