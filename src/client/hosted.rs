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
//! The browser client (`--client browser`) answers the same actions from
//! its page ([`crate::client::browser`]): the same SDK, bundled for the
//! browser, called through the same [`HostedClient`].

use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

/// The actor's name in the app's registry.
pub const ACTOR: &str = "sdkClient";

/// An error the SDK raised (or the actor's own bound on an action), as the actor reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SdkError {
    pub name: String,
    pub message: String,
    /// `SandboxAgentError` / `AcpHttpError`: the HTTP status.
    #[serde(default)]
    pub status: Option<u16>,
    /// The problem document (`type`, `title`, `detail`), when the server sent one.
    #[serde(default)]
    pub problem: Option<Value>,
    /// `AcpRpcError`: the JSON-RPC code (other errors may carry a string code).
    #[serde(default)]
    pub code: Option<Value>,
    #[serde(default)]
    pub cause: Option<Box<SdkError>>,
}

impl SdkError {
    /// The error and its causes, outermost first.
    pub fn chain(&self) -> impl Iterator<Item = &SdkError> {
        std::iter::successors(Some(self), |e| e.cause.as_deref())
    }

    /// The first HTTP status in the chain.
    pub fn http_status(&self) -> Option<u16> {
        self.chain().find_map(|e| e.status)
    }

    /// The first problem `type` in the chain.
    pub fn problem_type(&self) -> Option<String> {
        self.chain().find_map(|e| {
            e.problem
                .as_ref()
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
    }

    /// The first JSON-RPC (numeric) code in the chain.
    pub fn rpc_code(&self) -> Option<i64> {
        self.chain()
            .find_map(|e| e.code.as_ref().and_then(Value::as_i64))
    }

    /// `Name: message; cause: Name: message …`.
    pub fn describe(&self) -> String {
        self.chain()
            .map(|e| format!("{}: {}", e.name, e.message))
            .collect::<Vec<_>>()
            .join("; cause: ")
    }
}

/// Why an action did not give the SDK's answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostedError {
    /// The SDK (or the actor's bound) failed the call.
    #[error("{}", .0.describe())]
    Sdk(SdkError),
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
}

/// Why the hosted SDK client cannot run here (no Rivet layer, an SDK
/// version the registry lacks, ...): its cells are skipped with this reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unhosted(pub String);

/// Where the actor is.
#[derive(Debug, Clone)]
pub struct HostedConfig {
    /// The engine's guard endpoint, e.g. `http://127.0.0.1:6420`.
    pub endpoint: String,
    pub namespace: String,
    /// One actor per cell attempt.
    pub key: String,
}

/// Calls the cell's `sdkClient` actor, or the browser client's page.
#[derive(Debug, Clone)]
pub struct HostedClient {
    via: Via,
}

#[derive(Debug, Clone)]
enum Via {
    Actor {
        config: HostedConfig,
        http: reqwest::Client,
    },
    Page(crate::client::browser::BrowserPage),
}

impl HostedClient {
    pub fn new(config: HostedConfig) -> Result<Self, reqwest::Error> {
        let http = crate::http::client_builder()
            .connect_timeout(crate::http::CONNECT_TIMEOUT)
            .build()?;
        Ok(Self {
            via: Via::Actor { config, http },
        })
    }

    /// The browser client: the same actions, answered by its page.
    pub fn page(page: crate::client::browser::BrowserPage) -> Self {
        Self {
            via: Via::Page(page),
        }
    }

    /// The browser client's page, if this is one.
    pub fn browser_page(&self) -> Option<&crate::client::browser::BrowserPage> {
        match &self.via {
            Via::Page(page) => Some(page),
            Via::Actor { .. } => None,
        }
    }

    /// Calls `action` with `args` (which carry the phase name). A refused
    /// connection or an engine-level error (the actor not scheduled while the
    /// runner restarts) is retried until `patience` runs out: the action never
    /// ran, so sending it again is what a waiting app would do. The phase's
    /// own deadline bounds the whole call from outside.
    pub async fn call(
        &self,
        action: &str,
        args: Value,
        patience: Duration,
    ) -> Result<Map<String, Value>, HostedError> {
        let (config, http) = match &self.via {
            Via::Page(page) => {
                let output = page.call(action, &args, patience).await.map_err(|e| {
                    HostedError::Unreachable {
                        action: action.into(),
                        message: format!("the browser page: {e}"),
                    }
                })?;
                return answer(action, output);
            }
            Via::Actor { config, http } => (config, http),
        };
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            match call_once(config, http, action, &args).await {
                Err(e) if retryable(&e) && started.elapsed() + delay < patience => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }
}

fn action_url(config: &HostedConfig, action: &str) -> String {
    format!(
        "{}/gateway/{ACTOR}/action/{action}?rvt-namespace={}&rvt-method=getOrCreate&rvt-pool=default&rvt-key={}",
        config.endpoint.trim_end_matches('/'),
        config.namespace,
        crate::http::encode_component(&config.key)
    )
}

async fn call_once(
    config: &HostedConfig,
    http: &reqwest::Client,
    action: &str,
    args: &Value,
) -> Result<Map<String, Value>, HostedError> {
    {
        let response = http
            .post(action_url(config, action))
            .header("x-rivet-encoding", "json")
            .json(&json!({ "args": [args] }))
            .send()
            .await
            .map_err(|e| HostedError::Unreachable {
                action: action.into(),
                message: crate::acp::AcpError::from_reqwest(
                    &config.endpoint,
                    &e,
                    crate::http::CONNECT_TIMEOUT,
                )
                .to_string(),
            })?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| HostedError::Unreachable {
                action: action.into(),
                message: format!("reading the answer: {e}"),
            })?;
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&body);
            let text: String = crate::secret::redact_known(&text)
                .chars()
                .take(400)
                .collect();
            return Err(HostedError::Actor {
                action: action.into(),
                status,
                body: text,
            });
        }
        let protocol = |message: String| HostedError::Protocol {
            action: action.into(),
            message,
        };
        let reply: Value =
            serde_json::from_slice(&body).map_err(|e| protocol(format!("not JSON: {e}")))?;
        let Some(Value::Object(output)) = reply.get("output").cloned() else {
            return Err(protocol(format!("no `output` object in {reply}")));
        };
        answer(action, output)
    }
}

/// An action's `{ok: true, …}`, or the SDK's error it carries.
#[expect(
    clippy::result_large_err,
    reason = "the error every action returns; one per action, never in a hot loop"
)]
fn answer(action: &str, output: Map<String, Value>) -> Result<Map<String, Value>, HostedError> {
    let protocol = |message: String| HostedError::Protocol {
        action: action.into(),
        message,
    };
    match output.get("ok") {
        Some(Value::Bool(true)) => Ok(output),
        Some(Value::Bool(false)) => {
            let error = output.get("error").cloned().unwrap_or(Value::Null);
            serde_json::from_value(error)
                .map(HostedError::Sdk)
                .map_err(|e| protocol(format!("error without name/message: {e}")))
                .and_then(Err)
        }
        _ => Err(protocol(format!("no `ok` in {}", Value::Object(output)))),
    }
}

/// A failure where the action never reached the actor: refused, or an
/// engine error on the way to it (`guard`: `actor_wake_retries_exceeded`;
/// `pegboard`: `route_resolve_query_timeout`, no runner to place it on yet).
fn retryable(error: &HostedError) -> bool {
    match error {
        HostedError::Unreachable { .. } => true,
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
        assert!(!retryable(&HostedError::Sdk(SdkError {
            name: "Error".into(),
            message: "x".into(),
            status: None,
            problem: None,
            code: None,
            cause: None
        })));
    }
}
