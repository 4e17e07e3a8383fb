//! Which client runs a plan's cells: continuity's own (`rust`), the real
//! TypeScript SDK hosted in the Rivet app (`ts-sdk`), or the same SDK
//! bundled for the browser in headless Chromium (`browser`). The runner
//! asks here whether a ts-sdk or browser cell can run at all (a client
//! that could not be set up, a step it cannot take: skipped, with the
//! reason) and for the cell's hosted client: one actor, or one Chromium
//! and its page, per cell attempt.

use crate::client::hosted::{HostedClient, HostedConfig, HostedError, Unhosted};
use crate::scenario::{HostedCell, Scenario};
use crate::stack::browser::{BrowserHost, Chromium};
use std::path::PathBuf;
use std::time::Duration;

/// Which client runs a cell: a value of the client axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// continuity's SDK-faithful Rust client.
    Rust,
    /// The real TypeScript SDK, hosted in the local stack's Rivet app.
    TsSdk,
    /// The same SDK bundled for the browser, in a page of headless Chromium.
    Browser,
}

impl ClientKind {
    /// The name reports carry: `rust` or `ts-sdk`.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Rust => "rust",
            ClientKind::TsSdk => "ts-sdk",
            ClientKind::Browser => "browser",
        }
    }

    /// Whether the SDK axis applies to the client: the hosted client loads
    /// each SDK point's module. The browser page bundles the app's pinned
    /// SDK, so `--sdk-version` and `--sdk` do not multiply its cells.
    pub fn hosts_sdk(self) -> bool {
        matches!(self, ClientKind::TsSdk)
    }
}

/// An SDK point as the run installed it: the module its cells' actors
/// import, or why it could not be installed (its cells are skipped).
#[derive(Debug, Clone, PartialEq)]
pub struct ServedSdk {
    pub label: String,
    pub module: Result<PathBuf, Unhosted>,
}

/// Where a hosted cell runs and which SDK it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedSdk {
    /// The Rivet Engine endpoint its actor is called through.
    pub endpoint: String,
    /// The SDK module the actor imports (the cell's SDK point).
    pub module: PathBuf,
}

/// A cell's client as one worker runs it: a hosted client with where that
/// worker's stack hosts it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ClientChoice {
    /// continuity's SDK-faithful Rust client.
    #[default]
    Rust,
    /// The hosted TypeScript SDK, or why it cannot run here.
    TsSdk(Result<HostedSdk, Unhosted>),
    /// The browser client: the Chromium and page this worker's stack
    /// serves, or why it cannot run here.
    Browser(Result<BrowserHost, Unhosted>),
}

/// The hosted client of a cell on the SDK point labelled `label`, from
/// where the stack hosts it and what the run installed.
pub(super) fn hosted(
    host: &Result<String, Unhosted>,
    sdks: &[ServedSdk],
    label: &str,
) -> Result<HostedSdk, Unhosted> {
    let endpoint = host.clone()?;
    let served = sdks
        .iter()
        .find(|s| s.label == label)
        .ok_or_else(|| Unhosted(format!("the SDK {label} was not installed for this run")))?;
    Ok(HostedSdk {
        endpoint,
        module: served.module.clone()?,
    })
}

/// Why a cell of `scenario` cannot run with this client, if it cannot: a
/// client that could not be set up. (A step the client cannot take does
/// not skip the cell: that phase is reported not applicable.)
pub(super) fn skip_reason(choice: &ClientChoice, _scenario: &Scenario) -> Option<String> {
    match choice {
        ClientChoice::Rust | ClientChoice::TsSdk(Ok(_)) | ClientChoice::Browser(Ok(_)) => None,
        ClientChoice::TsSdk(Err(reason)) => Some(format!("the ts-sdk client cannot run: {reason}")),
        ClientChoice::Browser(Err(reason)) => {
            Some(format!("the browser client cannot run: {reason}"))
        }
    }
}

/// Why a timeout target's cell cannot run with this client: a browser's
/// `fetch` has no header timeout a page could lower (only an abort of the
/// whole request), so the `client-headers-timeout` cell has nothing to test.
pub(super) fn timeout_skip_reason(
    choice: &ClientChoice,
    target: &crate::targets::Target,
) -> Option<String> {
    let limit = target.client_headers_timeout()?;
    matches!(choice, ClientChoice::Browser(_)).then(|| {
        format!(
            "a browser's fetch has no response-headers timeout to lower to {} (undici's headersTimeout is Node's); a page can only abort the whole request",
            crate::targets::fmt_duration(limit)
        )
    })
}

/// The folder and key part that keeps a ts-sdk cell apart from the rust cell
/// at the same index (both clients run the same matrix in one run folder).
pub(super) fn tag(choice: &ClientChoice) -> &'static str {
    match choice {
        ClientChoice::Rust => "",
        ClientChoice::TsSdk(_) => "ts-sdk-",
        ClientChoice::Browser(_) => "browser-",
    }
}

/// Why a ts-sdk cell's hosted client could not be set up: the cell is an error.
#[derive(Debug, thiserror::Error)]
pub(super) enum HostedSetupError {
    #[error(transparent)]
    Unhosted(#[from] Unhosted),
    #[error("cannot build the hosted client's HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the browser client could not start: {0}")]
    Chromium(#[from] crate::stack::StackError),
    #[error("the browser client's page did not open: {0}")]
    Page(#[from] crate::client::browser::PageError),
    #[error("the hosted client's actor did not answer within {waited_s} s: {source}")]
    NoActor {
        waited_s: u64,
        #[source]
        source: HostedError,
    },
}

/// How long a ts-sdk cell waits for its actor before its first phase: the
/// Rivet layer may still be coming back from an earlier cell's restarts
/// (the runner's reconnect backoff reaches 30 s and more, NOTES.md).
const ACTOR_READY: Duration = Duration::from_secs(90);

/// The cell's hosted client (its own `sdkClient` actor, keyed `key`), for
/// ts-sdk, once that actor answers: setup, like a target's readiness, so
/// the Rivet layer's recovery from an earlier cell is not charged to this
/// cell's first phase.
pub(super) async fn hosted_cell(
    choice: &ClientChoice,
    key: &str,
    store: Option<serde_json::Value>,
) -> Result<Option<HostedCell>, HostedSetupError> {
    let sdk = match choice {
        ClientChoice::Rust | ClientChoice::Browser(_) => return Ok(None),
        ClientChoice::TsSdk(Err(reason)) => return Err(reason.clone().into()),
        ClientChoice::TsSdk(Ok(sdk)) => sdk,
    };
    let client = HostedClient::new(HostedConfig {
        endpoint: sdk.endpoint.clone(),
        namespace: "default".into(),
        key: key.to_string(),
    })?;
    let started = std::time::Instant::now();
    client
        .call(
            &crate::client::sdk_action::SdkAction::Faults {
                phase: "setup".into(),
            },
            ACTOR_READY,
        )
        .await
        .map_err(|source| HostedSetupError::NoActor {
            waited_s: started.elapsed().as_secs(),
            source,
        })?;
    Ok(Some(
        HostedCell::new(client, Some(sdk.module.clone())).with_store(store),
    ))
}

/// The cell's browser client: a Chromium of its own (profile `profile`,
/// made afresh) with the client's page open, its SDK clients keeping
/// sessions in `store`. The Chromium is the caller's to stop when the
/// cell is over.
pub(super) async fn browser_cell(
    host: &Result<BrowserHost, Unhosted>,
    profile: &std::path::Path,
    store: Option<serde_json::Value>,
) -> Result<(HostedCell, Chromium), HostedSetupError> {
    let host = host.as_ref().map_err(|reason| reason.clone())?;
    let mut chromium = Chromium::launch(host, profile).await?;
    match crate::client::browser::BrowserPage::open(&chromium.ws_url, &host.page_url).await {
        Ok(page) => match HostedClient::page(page) {
            Ok(client) => Ok((HostedCell::new(client, None).with_store(store), chromium)),
            Err(e) => {
                chromium.stop().await;
                Err(e.into())
            }
        },
        Err(e) => {
            chromium.stop().await;
            Err(e.into())
        }
    }
}
