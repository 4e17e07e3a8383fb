//! The fake model provider: a stack component on a loopback port that real
//! agents (opencode, Claude Code, Codex) use as their model API, so a run
//! needs no network and no key. It answers OpenAI chat completions, OpenAI
//! Responses and Anthropic Messages (streamed or not) with a deterministic
//! reply echoing the last user text, 404 for anything else, and keeps a log
//! of every call — in memory for scenarios to query ([`ModelCalls`]) and as
//! JSON lines in the run folder.
//!
//! Built on hyper (already in the tree under reqwest), in-process: starting
//! and stopping it is spawning and cancelling one task, and a scenario reads
//! the same log the server writes, with no second process to supervise.

pub(crate) mod wire;

use crate::report::RunFolder;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};
use tokio::net::TcpListener;
use tokio::sync::watch;
use wire::Api;

/// One request the provider answered.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct ModelCall {
    /// 1, 2, 3… in arrival order (404s included).
    pub n: u64,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub method: String,
    pub path: String,
    /// `None` for a 404.
    pub api: Option<Api>,
    pub model: Option<String>,
    /// Every user text in the request's context, oldest first.
    pub user_texts: Vec<String>,
    pub status: u16,
    /// What the provider answered.
    pub reply: Option<String>,
}

/// The provider's call log, shared between the server and the scenarios.
#[derive(Debug, Clone, Default)]
pub struct ModelCalls {
    calls: Arc<Mutex<Vec<ModelCall>>>,
    counter: Arc<std::sync::atomic::AtomicU64>,
}

impl ModelCalls {
    /// Every call so far.
    pub(crate) fn all(&self) -> Vec<ModelCall> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Model turns (chat, Responses, Messages) at or after `since_ms`.
    pub(crate) fn model_calls_since(&self, since_ms: u64) -> Vec<ModelCall> {
        self.all()
            .into_iter()
            .filter(|c| c.api.is_some_and(Api::is_model_call) && c.at_ms >= since_ms)
            .collect()
    }

    fn push(&self, call: ModelCall) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }

    fn next_n(&self) -> u64 {
        self.counter
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1
    }
}

/// Milliseconds since the Unix epoch, the clock [`ModelCall::at_ms`] uses.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A running fake provider.
pub(crate) struct FakeProvider {
    port: u16,
    calls: ModelCalls,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Why the provider could not start: what it was doing, and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{doing}: {source}")]
pub struct ProviderError {
    pub doing: String,
    #[source]
    pub source: std::io::Error,
}

impl ProviderError {
    fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> ProviderError {
        let doing = doing.into();
        move |source| ProviderError { doing, source }
    }
}

impl FakeProvider {
    /// Listens on a free loopback port; every call is appended to `log`
    /// (JSON lines, written through the run folder so secrets are redacted).
    pub(crate) async fn start(log: &Path) -> Result<FakeProvider, ProviderError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(ProviderError::io(
                "fake model provider: cannot listen on 127.0.0.1",
            ))?;
        let port = listener
            .local_addr()
            .map_err(ProviderError::io("fake model provider"))?
            .port();
        let dir = log.parent().unwrap_or(Path::new("."));
        let name = log
            .file_name()
            .map(PathBuf::from)
            .unwrap_or("provider.jsonl".into());
        let folder = Arc::new(RunFolder::open(dir, crate::secret::Redactor::none()));
        folder
            .write_text(&name, "")
            .map_err(ProviderError::io(format!("cannot write {}", log.display())))?;
        let calls = ModelCalls::default();
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, calls.clone(), folder, name, stopped));
        Ok(FakeProvider {
            port,
            calls,
            stop,
            task: Some(task),
        })
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT` (the agents add `/v1/...`).
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The call log, for scenarios.
    pub(crate) fn calls(&self) -> ModelCalls {
        self.calls.clone()
    }

    /// Stops listening and drops open connections.
    pub(crate) async fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn serve(
    listener: TcpListener,
    calls: ModelCalls,
    folder: Arc<RunFolder>,
    log: PathBuf,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.wait_for(|s| *s) => break,
        };
        let Ok((stream, _)) = accepted else { continue };
        let (calls, folder, log) = (calls.clone(), folder.clone(), log.clone());
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let (calls, folder, log) = (calls.clone(), folder.clone(), log.clone());
                async move {
                    Ok::<_, std::convert::Infallible>(answer(request, &calls, &folder, &log).await)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
    connections.abort_all();
}

async fn answer(
    request: Request<hyper::body::Incoming>,
    calls: &ModelCalls,
    folder: &RunFolder,
    log: &Path,
) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let bytes = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let api = Api::of(&method, &path);
    let n = calls.next_n();
    let user_texts = wire::user_texts(&body);
    let mut call = ModelCall {
        n,
        at_ms: now_ms(),
        method,
        path,
        api,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        user_texts,
        status: 404,
        reply: None,
    };
    let response = match api {
        None => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(
                br#"{"error":{"type":"not_found","message":"continuity fake provider: unknown path"}}"#,
            ))),
        Some(api) => {
            let text = wire::reply_text(n, call.user_texts.last().map(String::as_str).unwrap_or(""));
            let reply = wire::reply(api, n, &body, &text);
            call.status = 200;
            call.reply = api.is_model_call().then_some(text);
            Response::builder()
                .header("content-type", reply.content_type)
                .header("cache-control", "no-cache")
                .body(Full::new(Bytes::from(reply.body)))
        }
    };
    let mut line = serde_json::to_value(&call).unwrap_or(Value::Null);
    line["answer_ms"] = (started.elapsed().as_millis() as u64).into();
    let _ = folder.append_line(log, &line.to_string());
    calls.push(call);
    response.unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

#[cfg(test)]
mod tests;
