//! The plain REST endpoints the client uses besides ACP: `/v1/health` (the
//! SDK's start-up health wait, and the `health` step) and
//! `/v1/processes/run` (the `pwd` liveness probe of the reconnect design).

use super::{Client, ClientError};
use crate::acp::AcpError;
use crate::secret::Secret;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::watch;

impl Client {
    /// `GET /v1/health` once.
    pub async fn health(&self) -> Result<Value, ClientError> {
        let url = format!("{}/v1/health", self.options.base_url);
        health_once(
            &self.http,
            &url,
            auth_headers(&self.headers, self.options.token.as_ref()),
        )
        .await
    }

    /// `POST /v1/processes/run`: a one-off command in the sandbox (the liveness probe).
    pub async fn run_process(&self, command: &str, timeout_ms: u64) -> Result<Value, ClientError> {
        let url = format!("{}/v1/processes/run", self.options.base_url);
        let sent = self
            .http
            .post(&url)
            .headers(auth_headers(&self.headers, self.options.token.as_ref()))
            .json(&json!({"command": command, "timeoutMs": timeout_ms}))
            .send()
            .await
            .map_err(|e| ClientError::Acp(AcpError::from_reqwest(&url, &e)))?;
        let status = sent.status().as_u16();
        let body = sent
            .bytes()
            .await
            .map_err(|e| ClientError::Acp(AcpError::from_reqwest(&url, &e)))?;
        if !(200..300).contains(&status) {
            return Err(ClientError::Acp(AcpError::Http {
                status,
                problem: crate::acp::Problem::parse(&body),
            }));
        }
        serde_json::from_slice(&body).map_err(|e| ClientError::UnexpectedResult {
            method: "processes/run".into(),
            detail: e.to_string(),
        })
    }
}

pub(super) fn auth_headers(headers: &HeaderMap, token: Option<&Secret>) -> HeaderMap {
    let mut headers = headers.clone();
    if let Some(token) = token {
        if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose())) {
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
    }
    headers
}

async fn health_once(
    http: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
) -> Result<Value, ClientError> {
    let response = http
        .get(url)
        .headers(headers)
        .send()
        .await
        .map_err(|e| ClientError::Acp(AcpError::from_reqwest(url, &e)))?;
    let status = response.status().as_u16();
    let body = response
        .bytes()
        .await
        .map_err(|e| ClientError::Acp(AcpError::from_reqwest(url, &e)))?;
    if status != 200 {
        return Err(ClientError::Acp(AcpError::Http {
            status,
            problem: crate::acp::Problem::parse(&body),
        }));
    }
    serde_json::from_slice(&body).map_err(|e| ClientError::Health(format!("not JSON: {e}")))
}

/// The SDK's health wait: poll `/v1/health` until `status == "ok"`, 500 ms doubling to 15 s.
pub(super) async fn wait_healthy(
    http: reqwest::Client,
    base_url: String,
    headers: HeaderMap,
    done: watch::Sender<Option<Result<(), String>>>,
) {
    let url = format!("{base_url}/v1/health");
    let mut delay = Duration::from_millis(500);
    loop {
        if done.is_closed() {
            return;
        }
        if let Ok(health) = health_once(&http, &url, headers.clone()).await {
            if health.get("status").and_then(Value::as_str) == Some("ok") {
                let _ = done.send(Some(Ok(())));
                return;
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(15));
    }
}
