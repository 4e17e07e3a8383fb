//! The back end of the stack's own sandbox provider: what a
//! `SandboxProvider` of the real SDK (`stack/rivet/sandbox-provider.mjs`,
//! written as a user writes one for their infrastructure) calls on
//! loopback. A sandbox is a real sandbox-agent server of its own (the
//! stack's binary, its own port, folder and scripted agent), started
//! under the stack's supervision:
//!
//! - `POST /sandboxes`: create one; `{ id, url }`.
//! - `GET /sandboxes/{id}`: is it still there (`reconnect`, `getUrl`); 404 once destroyed.
//! - `POST /sandboxes/{id}/server`: `ensureServer`: a server that answers
//!   is left alone (`running`); one that is down is started again on its
//!   port and must answer `/v1/health` (`started`, with the new pid).
//! - `DELETE /sandboxes/{id}`: destroy it (its server stopped, its folder removed).
//!
//! The `server-kill` target takes every sandbox's server down and leaves it
//! down ([`LeftDown`]): only an `ensureServer` brings it back. What the
//! cell's sandboxes left behind is destroyed when the cell ends.

use super::sandbox_agent::{SandboxAgentConfig, SandboxAgentServer};
use super::StackError;
use crate::signal::Signal;
use crate::supervise::{free_port, ProcessState, Supervisor};
use crate::targets::{ActionError, LeftDown};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a sandbox's server may take to answer `/v1/health` once started.
const SERVER_READY: Duration = Duration::from_secs(15);
/// How long a killed server's listener may keep accepting (the kernel
/// closes it as the last holder exits).
const LISTENER_CLOSE: Duration = Duration::from_secs(1);

/// The stack's sandboxes and the service the provider calls (cheap to clone).
#[derive(Clone)]
pub struct Sandboxes {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    /// How each sandbox's server runs; its folder and port are the sandbox's own.
    template: SandboxAgentConfig,
    supervisor: Supervisor,
    state: tokio::sync::Mutex<Registry>,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Default)]
struct Registry {
    live: BTreeMap<String, SandboxAgentServer>,
    /// Destroyed ids: a reconnect to one is told it no longer exists.
    gone: BTreeSet<String>,
}

/// An answer of the service: its status and JSON body.
type Answer = (u16, Value);

impl Sandboxes {
    /// The service on a free loopback port; sandboxes run `template`'s
    /// server, each in a folder under `template.run_dir`.
    pub(crate) async fn start(
        template: SandboxAgentConfig,
        supervisor: Supervisor,
    ) -> Result<Sandboxes, StackError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(StackError::io("cannot listen on 127.0.0.1"))?;
        let port = listener
            .local_addr()
            .map_err(StackError::io("the sandbox service's address"))?
            .port();
        let sandboxes = Sandboxes {
            inner: Arc::new(Inner {
                url: format!("http://127.0.0.1:{port}"),
                template,
                supervisor,
                state: tokio::sync::Mutex::new(Registry::default()),
                task: std::sync::Mutex::new(None),
            }),
        };
        let serving = sandboxes.clone();
        let task = tokio::spawn(async move { serving.serve(listener).await });
        *sandboxes.task() = Some(task);
        Ok(sandboxes)
    }

    fn task(&self) -> std::sync::MutexGuard<'_, Option<tokio::task::JoinHandle<()>>> {
        self.inner.task.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where the provider calls it.
    pub(crate) fn url(&self) -> &str {
        &self.inner.url
    }

    async fn serve(&self, listener: tokio::net::TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let this = self.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let this = this.clone();
                    async move { Ok::<_, std::convert::Infallible>(this.answer(request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    async fn answer(
        &self,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<Full<Bytes>> {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        // The body is not read (no call has one), but drained.
        let _ = request.into_body().collect().await;
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (status, body) = match (method.as_str(), parts.as_slice()) {
            ("POST", ["sandboxes"]) => self.create().await,
            ("GET", ["sandboxes", id]) => self.get(id).await,
            ("POST", ["sandboxes", id, "server"]) => self.ensure_server(id).await,
            ("DELETE", ["sandboxes", id]) => self.destroy(id).await,
            // The browser page's preflight: it may call every route.
            ("OPTIONS", _) => (204, Value::Null),
            _ => (404, json!({ "error": format!("no route {method} {path}") })),
        };
        let body = match body {
            Value::Null => Bytes::new(),
            body => Bytes::from(body.to_string()),
        };
        hyper::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            // The browser client's page calls it from its own origin.
            .header("access-control-allow-origin", "*")
            .header("access-control-allow-methods", "GET, POST, DELETE, OPTIONS")
            .body(Full::new(body))
            .unwrap_or_default()
    }

    /// A new sandbox: its own sandbox-agent server, started and healthy.
    async fn create(&self) -> Answer {
        let id = format!("sbx-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let port = match free_port() {
            Ok(port) => port,
            Err(e) => return (500, json!({ "error": e.to_string() })),
        };
        let config = SandboxAgentConfig {
            run_dir: self.inner.template.run_dir.join(&id),
            port: Some(port),
            ..self.inner.template.clone()
        };
        let started =
            SandboxAgentServer::start(config, self.inner.supervisor.clone(), SERVER_READY).await;
        match started {
            Ok(server) => {
                let url = server.base_url();
                self.inner
                    .state
                    .lock()
                    .await
                    .live
                    .insert(id.clone(), server);
                (201, json!({ "id": id, "url": url }))
            }
            Err(e) => (500, json!({ "error": e.to_string() })),
        }
    }

    async fn get(&self, id: &str) -> Answer {
        let mut state = self.inner.state.lock().await;
        match state.live.get_mut(id) {
            Some(server) => {
                let running = matches!(server.state(), ProcessState::Running { .. });
                (
                    200,
                    json!({ "id": id, "url": server.base_url(), "serverRunning": running }),
                )
            }
            None => not_found(id, state.gone.contains(id)),
        }
    }

    /// `ensureServer`: start the sandbox's server again if it does not answer.
    async fn ensure_server(&self, id: &str) -> Answer {
        let mut state = self.inner.state.lock().await;
        let gone = state.gone.contains(id);
        let Some(server) = state.live.get_mut(id) else {
            return not_found(id, gone);
        };
        if server.healthy().await {
            return (200, json!({ "action": "running", "pid": server.pid() }));
        }
        let before = server.exit_words();
        let started = Instant::now();
        match server.start_again(SERVER_READY).await {
            Ok(()) => (
                200,
                json!({
                    "action": "started",
                    "pid": server.pid(),
                    "wasDown": before,
                    "readyMs": started.elapsed().as_millis() as u64,
                }),
            ),
            Err(e) => (500, json!({ "action": "failed", "error": e.to_string() })),
        }
    }

    async fn destroy(&self, id: &str) -> Answer {
        let mut state = self.inner.state.lock().await;
        let Some(mut server) = state.live.remove(id) else {
            let gone = state.gone.contains(id);
            return not_found(id, gone);
        };
        state.gone.insert(id.to_string());
        server.stop().await;
        let _ = std::fs::remove_dir_all(self.inner.template.run_dir.join(id));
        (204, Value::Null)
    }

    /// Every sandbox still there is destroyed (a cell's end: what its
    /// scenario did not destroy goes with it); returns how many.
    pub(crate) async fn destroy_all(&self) -> usize {
        let ids: Vec<String> = self.inner.state.lock().await.live.keys().cloned().collect();
        for id in &ids {
            self.destroy(id).await;
        }
        ids.len()
    }

    /// The stack goes down: every sandbox, then the service.
    pub(crate) async fn stop(&self) {
        self.destroy_all().await;
        if let Some(task) = self.task().take() {
            task.abort();
        }
    }
}

fn not_found(id: &str, gone: bool) -> Answer {
    let why = match gone {
        true => "was destroyed",
        false => "was never made here",
    };
    (404, json!({ "error": format!("sandbox {id} {why}") }))
}

#[async_trait::async_trait]
impl LeftDown for Sandboxes {
    async fn take_down(&self) -> Result<String, ActionError> {
        let mut state = self.inner.state.lock().await;
        let mut seen = Vec::new();
        for (id, server) in state.live.iter_mut() {
            if !matches!(server.state(), ProcessState::Running { .. }) {
                continue;
            }
            let pid = server.pid().unwrap_or_default();
            let exit = server.kill().await;
            let addr = format!("127.0.0.1:{}", server.port());
            seen.push(format!(
                "{id}: sandbox-agent (pid {pid}) {exit}, {}",
                refused(&addr).await?
            ));
        }
        match seen.is_empty() {
            true => Err(ActionError::NothingDown {
                reason: "no sandbox of the stack's provider has a server running (a sandbox is made by the SDK's SandboxAgent.start, scenario sandbox-provider)".into(),
            }),
            false => Ok(seen.join("; ")),
        }
    }

    fn describe(&self) -> String {
        format!(
            "the servers of the sandboxes made through the provider back end at {}",
            self.inner.url
        )
    }
}

/// Whether `addr` now refuses connections, within [`LISTENER_CLOSE`].
async fn refused(addr: &str) -> Result<String, ActionError> {
    let deadline = Instant::now() + LISTENER_CLOSE;
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) => return Ok(format!("{addr} refused connections ({e})")),
            Ok(_) if Instant::now() >= deadline => {
                return Err(ActionError::NothingDown {
                    reason: format!(
                        "{addr} still accepted connections after its server's group was killed"
                    ),
                })
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

impl SandboxAgentServer {
    /// SIGKILL to its group, as a crash: nothing is left to shut down cleanly.
    async fn kill(&mut self) -> String {
        self.stop_with(Signal::KILL, Duration::from_millis(500))
            .await
            .to_string()
    }
}
