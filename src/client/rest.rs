//! The plain REST endpoints the client uses besides ACP: `/v1/health` (the
//! SDK's start-up health wait, and the `health` step) and
//! `/v1/processes/run` (the `pwd` liveness probe of the reconnect design).

use super::{Client, ClientError};
use crate::acp::{read_bounded, AcpError, MAX_ENVELOPE_BYTES};
use crate::secret::Secret;
use crate::trace::{Exchange, Purpose, Trace};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::sync::watch;

impl Client {
    /// `GET /v1/health` once.
    pub(crate) async fn health(&self) -> Result<Value, ClientError> {
        let url = format!("{}/v1/health", self.options.base_url);
        let _waiting = self.options.trace.wait(
            "a response to GET /v1/health",
            Some(crate::trace::health_channel(&self.options.base_url)),
        );
        health_once(
            &self.http,
            &url,
            auth_headers(&self.headers, self.options.token.as_ref()),
            &self.options.trace,
            None,
        )
        .await
    }

    /// `POST /v1/processes/run`: a one-off command in the sandbox (the liveness probe).
    pub(crate) async fn run_process(
        &self,
        command: &str,
        timeout_ms: u64,
    ) -> Result<Value, ClientError> {
        let url = format!("{}/v1/processes/run", self.options.base_url);
        let _waiting = self.options.trace.wait(
            format!("a response to POST /v1/processes/run ({command})"),
            None,
        );
        let body = json!({"command": command, "timeoutMs": timeout_ms}).to_string();
        let request = self
            .http
            .post(&url)
            .headers(auth_headers(&self.headers, self.options.token.as_ref()))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        let (status, body) = exchange(
            request,
            &url,
            "POST",
            Purpose::Process,
            body.len() as u64,
            None,
            &self.options.trace,
            |status| (200..300).contains(&status),
        )
        .await?;
        serde_json::from_slice(&body).map_err(|e| ClientError::UnexpectedResult {
            method: "processes/run".into(),
            detail: format!("HTTP {status}: {e}"),
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

/// Sends a request, reads its body within the envelope limit, and traces the
/// exchange; a status `accept` refuses is an HTTP error with its problem.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    request: reqwest::RequestBuilder,
    url: &str,
    method: &'static str,
    purpose: Purpose,
    sent: u64,
    attempt: Option<u32>,
    trace: &Trace,
    accept: impl Fn(u16) -> bool,
) -> Result<(u16, Vec<u8>), ClientError> {
    let _flight = trace.in_flight(
        crate::trace::Flight::Request,
        format!("{method} {}", crate::trace::strip_access_token(url)),
    );
    let started = Instant::now();
    let mut record = Exchange {
        attempt,
        sent,
        ..Exchange::new(method, url, purpose)
    };
    let outcome = async {
        let response = request
            .send()
            .await
            .map_err(|e| AcpError::from_reqwest(url, &e, crate::http::CONNECT_TIMEOUT))?;
        let status = response.status().as_u16();
        record.status = Some(status);
        let body = read_bounded(response)
            .await
            .map_err(|e| AcpError::from_reqwest(url, &e, crate::http::CONNECT_TIMEOUT))?
            .ok_or_else(|| AcpError::Malformed {
                detail: format!("{method} {url}: response body over {MAX_ENVELOPE_BYTES} bytes (the envelope limit)"),
            })?;
        record.received = body.len() as u64;
        if !accept(status) {
            return Err(AcpError::Http {
                status,
                problem: crate::acp::Problem::parse(&body),
            });
        }
        Ok((status, body))
    }
    .await;
    record.elapsed = started.elapsed();
    record.failure = outcome.as_ref().err().map(AcpError::seen);
    trace.http(record);
    outcome.map_err(ClientError::Acp)
}

async fn health_once(
    http: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    trace: &Trace,
    attempt: Option<u32>,
) -> Result<Value, ClientError> {
    let request = http.get(url).headers(headers);
    let (_, body) = exchange(
        request,
        url,
        "GET",
        Purpose::Health,
        0,
        attempt,
        trace,
        |status| status == 200,
    )
    .await?;
    serde_json::from_slice(&body).map_err(|e| ClientError::Health(format!("not JSON: {e}")))
}

/// The SDK's health wait: poll `/v1/health` until `status == "ok"`, 500 ms
/// doubling to 15 s. Each attempt is traced; the wait in `live_connection`
/// reads their count and last failure when it times out.
pub(super) async fn wait_healthy(
    http: reqwest::Client,
    base_url: String,
    headers: HeaderMap,
    done: watch::Sender<bool>,
    trace: Trace,
) {
    let url = format!("{base_url}/v1/health");
    let _counted = trace.watch(crate::trace::health_channel(&base_url));
    let mut delay = Duration::from_millis(500);
    let mut attempt = 0;
    loop {
        if done.is_closed() {
            return;
        }
        attempt += 1;
        if let Ok(health) = health_once(&http, &url, headers.clone(), &trace, Some(attempt)).await {
            if health.get("status").and_then(Value::as_str) == Some("ok") {
                let _ = done.send(true);
                return;
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(15));
    }
}
