//! Readiness probes: how the harness knows a restarted component is back.
//!
//! A probe polls until it passes or its deadline ends; a failure carries the
//! probe's last error ("connection refused", "status 503"), which is usually
//! the whole diagnosis.

use super::action::error_chain;
use super::{fmt_duration, DEFAULT_PROBE_INTERVAL};
use crate::secret::display_url;
use crate::trace::Trace;
use std::time::{Duration, Instant};

/// One readiness attempt in the cell's trace.
fn probe_event(
    trace: &Trace,
    attempt: u32,
    target: &str,
    status: Option<u16>,
    error: Option<&str>,
) {
    let mut fields = serde_json::Map::new();
    fields.insert("attempt".into(), attempt.into());
    fields.insert("probe".into(), display_url(target).into());
    if let Some(status) = status {
        fields.insert("status".into(), status.into());
    }
    if let Some(error) = error {
        fields.insert("error".into(), error.into());
    }
    trace.event("ready_probe", fields);
}

/// How long one TCP connect attempt may take before the next try.
const TCP_ATTEMPT: Duration = Duration::from_secs(2);

/// How to tell that a component is ready again.
#[derive(Debug, Clone, PartialEq)]
pub enum Readiness {
    /// `GET url` until it answers `expect_status`.
    Http {
        url: String,
        expect_status: u16,
        interval: Duration,
    },
    /// `POST body` (JSON) with `headers` until it answers `expect_status`:
    /// for components whose readiness is an operation, not a page (an actor action).
    HttpPost {
        url: String,
        body: String,
        headers: Vec<(String, String)>,
        expect_status: u16,
        interval: Duration,
    },
    /// A TCP connect to `host:port` succeeds.
    Tcp { addr: String },
    /// Wait a fixed time (what the seed script did: `sleep $SA_RESTART_WAIT_SEC`).
    Delay { duration: Duration },
    /// Ready as soon as the restart action returns.
    None,
}

/// A probe that did not pass before its deadline.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("readiness probe {probe} did not pass within {} ({attempts} attempts); last error: {last_error}", fmt_duration(*.timeout))]
pub struct ProbeError {
    /// The probe as [`Readiness::describe`] puts it.
    pub probe: String,
    pub timeout: Duration,
    pub last_error: String,
    /// How many times it polled.
    pub attempts: u32,
}

impl Readiness {
    /// `http GET http://127.0.0.1:2468/v1/health = 200`, `tcp 127.0.0.1:2468`, `delay 6 s`, `none`.
    pub fn describe(&self) -> String {
        match self {
            Readiness::Http {
                url, expect_status, ..
            } => format!("http GET {} = {expect_status}", display_url(url)),
            Readiness::HttpPost {
                url, expect_status, ..
            } => format!("http POST {} = {expect_status}", display_url(url)),
            Readiness::Tcp { addr } => format!("tcp {addr}"),
            Readiness::Delay { duration } => format!("delay {}", fmt_duration(*duration)),
            Readiness::None => "none".to_string(),
        }
    }

    /// An HTTP readiness on `url` expecting 200, polled every 50 ms.
    pub fn http(url: impl Into<String>) -> Self {
        Readiness::Http {
            url: url.into(),
            expect_status: 200,
            interval: DEFAULT_PROBE_INTERVAL,
        }
    }

    /// Polls until ready; returns how long that took. A delay is only a delay,
    /// so it does not consult `timeout`.
    pub async fn wait(&self, timeout: Duration) -> Result<Duration, ProbeError> {
        self.wait_traced(timeout, &Trace::detached()).await
    }

    /// As [`Readiness::wait`], recording each attempt in `trace` (`ready_probe`).
    pub async fn wait_traced(
        &self,
        timeout: Duration,
        trace: &Trace,
    ) -> Result<Duration, ProbeError> {
        let started = Instant::now();
        // Written by the polling loop, read after the deadline drops it.
        let mut last_error = String::new();
        let mut attempts = 0;
        let polled = match self {
            Readiness::None => return Ok(Duration::ZERO),
            Readiness::Delay { duration } => {
                tokio::time::sleep(*duration).await;
                return Ok(started.elapsed());
            }
            Readiness::Http {
                url,
                expect_status,
                interval,
            } => {
                let request = Probe {
                    url,
                    post: None,
                    expect: *expect_status,
                    interval: *interval,
                    trace,
                };
                tokio::time::timeout(timeout, poll_http(request, &mut last_error, &mut attempts))
                    .await
            }
            Readiness::HttpPost {
                url,
                body,
                headers,
                expect_status,
                interval,
            } => {
                let request = Probe {
                    url,
                    post: Some((body, headers)),
                    expect: *expect_status,
                    interval: *interval,
                    trace,
                };
                tokio::time::timeout(timeout, poll_http(request, &mut last_error, &mut attempts))
                    .await
            }
            Readiness::Tcp { addr } => {
                tokio::time::timeout(
                    timeout,
                    poll_tcp(addr, &mut last_error, &mut attempts, trace),
                )
                .await
            }
        };
        match polled {
            Ok(Ok(())) => Ok(started.elapsed()),
            Ok(Err(fatal)) => Err(self.failed(timeout, fatal, attempts)),
            Err(_) => Err(self.failed(
                timeout,
                if last_error.is_empty() {
                    "no answer before the deadline".to_string()
                } else {
                    last_error
                },
                attempts,
            )),
        }
    }

    fn failed(&self, timeout: Duration, last_error: String, attempts: u32) -> ProbeError {
        ProbeError {
            attempts,
            probe: self.describe(),
            timeout,
            last_error,
        }
    }
}

/// One HTTP probe: a GET, or a POST with a JSON body and headers.
struct Probe<'a> {
    url: &'a str,
    post: Option<(&'a String, &'a Vec<(String, String)>)>,
    expect: u16,
    interval: Duration,
    trace: &'a Trace,
}

/// Polls until the probe answers `expect`. Only a probe that can never pass
/// (a client that cannot be built) returns early with an error.
async fn poll_http(
    probe: Probe<'_>,
    last_error: &mut String,
    attempts: &mut u32,
) -> Result<(), String> {
    let client = crate::http::client_builder()
        .build()
        .map_err(|e| error_chain(&e))?;
    let Probe {
        url,
        post,
        expect,
        interval,
        trace,
    } = probe;
    loop {
        let request = match post {
            None => client.get(url),
            Some((body, headers)) => {
                let mut r = client
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body.clone());
                for (k, v) in headers {
                    r = r.header(k.as_str(), v.as_str());
                }
                r
            }
        };
        *attempts += 1;
        let attempt = request.timeout(interval.max(TCP_ATTEMPT)).send();
        let outcome = attempt.await;
        let status = outcome.as_ref().ok().map(|r| r.status().as_u16());
        let error = outcome.as_ref().err().map(|e| error_chain(e));
        probe_event(trace, *attempts, url, status, error.as_deref());
        match (status, error) {
            (Some(s), _) if s == expect => return Ok(()),
            (Some(s), _) => *last_error = format!("status {s}"),
            (None, e) => *last_error = e.unwrap_or_default(),
        }
        tokio::time::sleep(interval).await;
    }
}

async fn poll_tcp(
    addr: &str,
    last_error: &mut String,
    attempts: &mut u32,
    trace: &Trace,
) -> Result<(), String> {
    loop {
        *attempts += 1;
        let connected =
            tokio::time::timeout(TCP_ATTEMPT, tokio::net::TcpStream::connect(addr)).await;
        let error = match &connected {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some("no answer".to_string()),
        };
        probe_event(trace, *attempts, addr, None, error.as_deref());
        match connected {
            Ok(Ok(_stream)) => return Ok(()),
            Ok(Err(e)) => *last_error = format!("connect {addr}: {e}"),
            Err(_) => {
                *last_error = format!(
                    "connect {addr}: no answer within {}",
                    fmt_duration(TCP_ATTEMPT)
                )
            }
        }
        tokio::time::sleep(DEFAULT_PROBE_INTERVAL).await;
    }
}
