//! Which client runs a plan's cells: continuity's own (`rust`), the real
//! TypeScript SDK hosted in the Rivet app (`ts-sdk`), or the same SDK
//! bundled for the browser in headless Chromium (`browser`). Everything the
//! runner does by client lives here: the client a worker gives a cell
//! ([`choice`]), whether a ts-sdk or browser cell can run at all (a client
//! that could not be set up, a store it cannot reach: skipped, with the
//! reason), the cell's hosted client (one actor, or one Chromium and its
//! page, per cell attempt, [`set_up`]) and the store its SDK builds
//! ([`hosted_store`]).
use crate::client::hosted::{HostedClient, HostedConfig, HostedError, Unhosted};
use crate::persist::{PersistChoice, Store};
use crate::scenario::{BrowserClient, CellClient, Scenario, TsSdkClient};
use crate::stack::browser::{BrowserHost, Chromium};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use crate::client::ClientKind;

/// An SDK point as the run installed it: the module its cells' actors
/// import, or why it could not be installed (its cells are skipped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServedSdk {
    pub label: String,
    pub module: Result<PathBuf, Unhosted>,
}

/// Where a hosted cell runs and which SDK it runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostedSdk {
    /// The Rivet Engine endpoint its actor is called through.
    pub endpoint: String,
    /// The SDK module the actor imports (the cell's SDK point).
    pub module: PathBuf,
}

/// A cell's client as one worker runs it: a hosted client with where that
/// worker's stack hosts it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum ClientChoice {
    /// continuity's SDK-faithful Rust client.
    #[default]
    Rust,
    /// The hosted TypeScript SDK, or why it cannot run here.
    TsSdk(Result<HostedSdk, Unhosted>),
    /// The browser client: the Chromium and page this worker's stack
    /// serves, or why it cannot run here.
    Browser(Result<BrowserHost, Unhosted>),
}

impl ClientChoice {
    /// Which client this is: every fact of a client is its kind's.
    pub(crate) fn kind(&self) -> ClientKind {
        match self {
            ClientChoice::Rust => ClientKind::Rust,
            ClientChoice::TsSdk(_) => ClientKind::TsSdk,
            ClientChoice::Browser(_) => ClientKind::Browser,
        }
    }

    /// Why the client could not be set up on this worker's stack, if it could not.
    fn unhosted(&self) -> Option<&Unhosted> {
        match self {
            ClientChoice::Rust => None,
            ClientChoice::TsSdk(host) => host.as_ref().err(),
            ClientChoice::Browser(host) => host.as_ref().err(),
        }
    }
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
    let reason = choice.unhosted()?;
    Some(format!(
        "the {} client cannot run: {reason}",
        choice.kind().name()
    ))
}

/// Why a timeout target is not applicable to this client: a browser's
/// `fetch` has no header timeout a page could lower (only an abort of the
/// whole request), so the `client-headers-timeout` cell would say nothing
/// about it (`not_applicable`, naming the call).
pub(super) fn timeout_not_applicable(
    client: ClientKind,
    target: &crate::targets::Target,
) -> Option<String> {
    let limit = target.client_headers_timeout()?;
    client.runs_in_a_page().then(|| {
        format!(
            "a browser's fetch has no response-headers timeout to lower to {} (undici's headersTimeout is Node's); a page can only abort the whole request",
            crate::targets::fmt_duration(limit)
        )
    })
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
    sdk: &Result<HostedSdk, Unhosted>,
    key: &str,
    store: Option<serde_json::Value>,
) -> Result<TsSdkClient, HostedSetupError> {
    let sdk = sdk.as_ref().map_err(|reason| reason.clone())?;
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
    Ok(TsSdkClient::new(client, Some(sdk.module.clone())).with_store(store))
}

/// The cell's browser client: a Chromium of its own (profile `profile`,
/// made afresh) with the client's page open, its SDK clients keeping
/// sessions in `store`. The Chromium is the caller's to stop when the
/// cell is over.
pub(super) async fn browser_cell(
    host: &Result<BrowserHost, Unhosted>,
    profile: &std::path::Path,
    store: Option<serde_json::Value>,
) -> Result<(BrowserClient, Chromium), HostedSetupError> {
    let host = host.as_ref().map_err(|reason| reason.clone())?;
    let mut chromium = Chromium::launch(host, profile).await?;
    match crate::client::browser::BrowserPage::open(&chromium.ws_url, &host.page_url).await {
        Ok(page) => {
            let client = HostedClient::on(page);
            Ok((BrowserClient::new(client, None).with_store(store), chromium))
        }
        Err(e) => {
            chromium.stop().await;
            Err(e.into())
        }
    }
}

/// A cell's client as `worker` runs it: a hosted client is called through
/// the worker's own stack and runs the SDK point labelled `sdk`.
pub(super) fn choice(kind: ClientKind, worker: &super::Worker, sdk: &str) -> ClientChoice {
    match kind {
        ClientKind::Rust => ClientChoice::Rust,
        ClientKind::TsSdk => ClientChoice::TsSdk(hosted(&worker.sdk_host, &worker.sdks, sdk)),
        ClientKind::Browser => ClientChoice::Browser(worker.browser_host.clone()),
    }
}

/// The cell's client, and the browser client's Chromium (the runner's to
/// stop when the cell is over).
pub(super) type ClientSetup = (CellClient, Option<Chromium>);

/// Sets up the cell's client (`key` names its actor, `profile` its
/// browser's folder), its SDK clients keeping sessions in `store`.
/// continuity's own client needs none: the cell makes it.
pub(super) async fn set_up(
    client: &ClientChoice,
    key: &str,
    profile: &std::path::Path,
    store: Option<serde_json::Value>,
) -> Result<ClientSetup, HostedSetupError> {
    match client {
        ClientChoice::Rust => Ok((CellClient::Rust, None)),
        ClientChoice::TsSdk(sdk) => hosted_cell(sdk, key, store)
            .await
            .map(|sdk| (CellClient::TsSdk(sdk), None)),
        ClientChoice::Browser(host) => browser_cell(host, profile, store)
            .await
            .map(|(sdk, chromium)| (CellClient::Browser(sdk), Some(chromium))),
    }
}

/// Why a cell of `client` cannot keep its sessions in `persist`, if it
/// cannot: IndexedDB is a browser's, and a page can reach no other store
/// but the SDK's own memory.
pub(super) fn client_skip_reason(client: ClientKind, persist: &PersistChoice) -> Option<String> {
    let browser = client.runs_in_a_page();
    match persist.store() {
        Store::IndexedDb if !browser => Some(
            "--persist indexeddb is the browser's own storage: it runs with --client browser only"
                .into(),
        ),
        Store::Memory | Store::IndexedDb => None,
        other if browser => Some(format!(
            "the browser client keeps sessions in IndexedDB or the SDK's memory (--persist indexeddb or memory); a page cannot open `{other}`, a store of a server-side process"
        )),
        _ => None,
    }
}

/// What the hosted client's actor builds its `SessionPersistDriver` from
/// (`stack/rivet/drivers.mjs`): the same store as a Rust cell's, through
/// the Node drivers.
pub(super) fn hosted_store(
    client: ClientKind,
    persist: &PersistChoice,
    postgres_url: Option<&str>,
    run_dir: &Path,
    cell: &str,
    key: &str,
) -> Option<Value> {
    if !client.runs_real_sdk() {
        return None;
    }
    if client.runs_in_a_page() {
        return Some(match persist.store() {
            Store::IndexedDb => json!({"driver": "indexeddb", "database": key}),
            _ => json!({"driver": "memory"}),
        });
    }
    Some(match persist.store() {
        Store::Memory => json!({"driver": "memory"}),
        Store::Sqlite => {
            json!({"driver": "sqlite", "filename": super::persist_axis::sqlite_file(run_dir, cell)})
        }
        Store::Postgres => json!({
            "driver": "postgres",
            "connectionString": postgres_url,
            "schema": crate::persist::postgres_schema_for(key),
        }),
        // IndexedDB is the browser's, whose ts-sdk cells are skipped.
        Store::Rivet | Store::IndexedDb => json!({"driver": "rivet"}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosted_client_gets_the_same_store_as_a_rust_cell() {
        let ts = ClientKind::TsSdk;
        let dir = Path::new("/run");
        assert_eq!(
            hosted_store(
                ClientKind::Rust,
                &PersistChoice::Own(Store::Sqlite),
                None,
                dir,
                "c",
                "k"
            ),
            None
        );
        let sqlite = hosted_store(
            ts,
            &PersistChoice::Own(Store::Sqlite),
            None,
            dir,
            "001-x",
            "k",
        )
        .unwrap();
        assert_eq!(sqlite["filename"], "/run/persist/001-x.db");
        let pg = hosted_store(
            ts,
            &PersistChoice::Own(Store::Postgres),
            Some("postgres://u@127.0.0.1:5/d"),
            dir,
            "c",
            "run-ts-sdk-3",
        )
        .unwrap();
        assert_eq!(pg["schema"], "c_run_ts_sdk_3");
        assert_eq!(pg["connectionString"], "postgres://u@127.0.0.1:5/d");
    }

    /// A store the user names that a client cannot open skips its cells,
    /// naming the client and the store; each client's own default opens.
    #[test]
    fn a_named_store_a_client_cannot_open_is_a_skip_naming_both() {
        let browser = ClientKind::Browser;
        for store in [Store::Rivet, Store::Sqlite, Store::Postgres] {
            let reason = client_skip_reason(browser, &PersistChoice::Own(store))
                .unwrap_or_else(|| panic!("the browser on {store}"));
            assert!(
                reason.contains("browser client") && reason.contains(&format!("`{store}`")),
                "{reason}"
            );
        }
        let reason =
            client_skip_reason(ClientKind::Rust, &PersistChoice::Own(Store::IndexedDb)).unwrap();
        assert!(
            reason.contains("--persist indexeddb") && reason.contains("--client browser"),
            "{reason}"
        );
        for client in [ClientKind::Rust, browser] {
            let own = client.default_store(Store::Rivet);
            assert_eq!(client_skip_reason(client, &PersistChoice::Own(own)), None);
        }
    }
}
