//! The browser client's page (`--client browser`): the real SDK bundled
//! for the browser, running in a page of headless Chromium, driven over
//! the DevTools protocol. One page per cell attempt; each action is the
//! page API's `window.continuity.call(action, args)` (the hosted Node
//! client's actions and answers, `stack/browser/page.mjs`), evaluated in
//! the page and awaited. The page's own network traffic is traced as the
//! other clients' is ([`wire`]): every exchange with sandbox-agent, the
//! JSON-RPC envelopes it posts, and the events of its streams. The page is
//! an [`SdkHost`]: the SDK's steps are called on it as on the actor.

use super::hosted::{HostedError, SdkHost};
use super::ClientKind;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod cdp;
mod wire;

pub(crate) use cdp::CdpError;

/// How long one DevTools command may take (an action's own wait is the
/// evaluation, bounded by the phase's deadline from outside).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a (re)loaded page may take to define its page API.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// A page of the browser, on the client's page URL.
#[derive(Clone)]
pub(crate) struct BrowserPage {
    cdp: cdp::Connection,
    session: String,
    url: String,
    trace: Arc<Mutex<crate::trace::Trace>>,
}

impl std::fmt::Debug for BrowserPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserPage")
            .field("url", &self.url)
            .finish()
    }
}

/// What the page API answered, or why it did not.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PageError {
    #[error(transparent)]
    Cdp(#[from] CdpError),
    /// The page threw, or has no page API (yet): it is loading.
    #[error("the page did not run the action: {0}")]
    Page(String),
}

impl PageError {
    /// The browser itself is gone or not answering (its DevTools
    /// connection closed, unreachable, or silent past its bound): a fault
    /// of continuity's Chromium, not of the page's SDK or the server.
    pub(crate) fn chromium_fault(&self) -> Option<crate::errors::HarnessFault> {
        match self {
            PageError::Cdp(
                e @ (CdpError::Closed | CdpError::Connect { .. } | CdpError::Timeout { .. }),
            ) => Some(crate::errors::HarnessFault {
                part: crate::errors::HarnessPart::Chromium,
                cause: e.to_string(),
            }),
            PageError::Cdp(CdpError::Command { .. }) | PageError::Page(_) => None,
        }
    }
}

impl BrowserPage {
    /// Opens a new page of the browser whose DevTools endpoint is `ws_url`
    /// on `url` (the client's app), its network traced, and waits for its
    /// page API.
    pub(crate) async fn open(ws_url: &str, url: &str) -> Result<BrowserPage, PageError> {
        let trace = Arc::new(Mutex::new(crate::trace::Trace::detached()));
        let cdp = cdp::Connection::connect(ws_url, wire::Wire::new(trace.clone())).await?;
        let target = cdp
            .send("Target.createTarget", json!({"url": "about:blank"}), None)
            .await?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_string();
        let attached = cdp
            .send(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
                None,
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let page = BrowserPage {
            cdp,
            session,
            url: url.to_string(),
            trace,
        };
        page.command("Page.enable", json!({})).await?;
        page.command("Network.enable", json!({})).await?;
        page.command("Page.navigate", json!({"url": page.url}))
            .await?;
        page.wait_for_api(LOAD_TIMEOUT).await?;
        Ok(page)
    }

    /// Where the page's traffic is traced from now on.
    pub(crate) fn set_trace(&self, trace: crate::trace::Trace) {
        *self.trace.lock().unwrap_or_else(|p| p.into_inner()) = trace;
    }

    async fn command(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.cdp.send(method, params, Some(&self.session)).await
    }

    /// Calls the page API's `action` with `args`; an answer of
    /// `{ok: …}` as the page gave it. A page still loading (no page API
    /// yet, its context replaced by a reload) is asked again until
    /// `patience` runs out.
    pub(crate) async fn call(
        &self,
        action: &str,
        args: &Value,
        patience: Duration,
    ) -> Result<Map<String, Value>, PageError> {
        let started = Instant::now();
        loop {
            match self.evaluate_call(action, args).await {
                Err(PageError::Page(why)) if started.elapsed() < patience => {
                    let _ = why;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => return other,
            }
        }
    }

    async fn evaluate_call(
        &self,
        action: &str,
        args: &Value,
    ) -> Result<Map<String, Value>, PageError> {
        let expression = format!(
            "window.continuity.call({}, {})",
            Value::String(action.to_string()),
            args
        );
        let out = self
            .cdp
            .send_unbounded(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
                Some(&self.session),
            )
            .await?;
        if let Some(exception) = out.get("exceptionDetails") {
            let text = exception["exception"]["description"]
                .as_str()
                .or_else(|| exception["text"].as_str())
                .unwrap_or("an exception")
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            return Err(PageError::Page(text));
        }
        match out["result"]["value"].clone() {
            Value::Object(answer) => Ok(answer),
            other => Err(PageError::Page(format!("the page answered {other}"))),
        }
    }

    /// Waits until the page defines its page API.
    async fn wait_for_api(&self, within: Duration) -> Result<(), PageError> {
        let started = Instant::now();
        loop {
            let ready = self
                .command(
                    "Runtime.evaluate",
                    json!({"expression": "window.continuity?.ready === true", "returnByValue": true}),
                )
                .await;
            match ready {
                Ok(out) if out["result"]["value"] == Value::Bool(true) => return Ok(()),
                // A reload replaces the context under an evaluation: ask again.
                Ok(_) | Err(CdpError::Command { .. }) if started.elapsed() < within => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(out) => {
                    return Err(PageError::Page(format!(
                        "{} defined no page API within {} s ({})",
                        self.url,
                        within.as_secs(),
                        out["result"]
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reloads the page, as a user or a deploy does: everything in page
    /// memory (the SDK clients, their session handles) is gone; what the
    /// page keeps (sessionStorage, IndexedDB) stays. Returns once the
    /// reloaded page defines its page API.
    pub(crate) async fn reload(&self) -> Result<(), PageError> {
        self.command("Page.reload", json!({"ignoreCache": false}))
            .await?;
        // The old page may answer `ready` until the navigation commits.
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.wait_for_api(LOAD_TIMEOUT).await
    }
}

/// The browser client is the real SDK hosted in this page.
#[async_trait::async_trait]
impl SdkHost for BrowserPage {
    const KIND: ClientKind = ClientKind::Browser;

    async fn call_once(
        &self,
        action: &str,
        args: &Value,
        patience: Duration,
    ) -> Result<Map<String, Value>, HostedError> {
        self.call(action, args, patience)
            .await
            .map_err(|e| match e.chromium_fault() {
                Some(fault) => HostedError::Harness {
                    action: action.into(),
                    fault,
                },
                None => HostedError::Page {
                    action: action.into(),
                    message: e.to_string(),
                },
            })
    }
}
