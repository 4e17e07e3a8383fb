//! The hosted client's Node drivers (`stack/rivet/drivers.mjs`) against
//! the same persist contract as the Rust drivers (`persist::contract`), one
//! contract for both: a [`PersistDriver`] whose every call is the
//! `sdkClient` actor's `store` action on the driver a spec names, against
//! the real engine, runner, SQLite file and Postgres server.

use super::*;
use crate::client::hosted::{HostedClient, HostedConfig, HostedError, SdkHost};
use crate::client::sdk_action::SdkAction;
use crate::persist::contract::check_driver;
use crate::persist::{Page, PageRequest, PersistError, SessionEvent, SessionRecord};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

const DRIVER: &str = "hosted";

/// The driver `spec` names, called through the actor (or the browser
/// client's page, which answers the same `store` action).
pub(crate) struct HostedStore<H> {
    pub client: HostedClient<H>,
    pub spec: Value,
}

impl<H: SdkHost> HostedStore<H> {
    async fn call<T: DeserializeOwned>(&self, call: &str, args: Value) -> Result<T, PersistError> {
        let out = self
            .client
            .call(
                &SdkAction::Store {
                    phase: "contract".into(),
                    persist: self.spec.clone(),
                    call: call.into(),
                    args_json: args.to_string(),
                },
                Duration::from_secs(30),
            )
            .await
            .map_err(|e| match &e {
                HostedError::Sdk(sdk) if sdk.message.starts_with("UNIQUE constraint failed") => {
                    PersistError::index_conflict(DRIVER, sdk.describe())
                }
                other => PersistError::new(DRIVER, format!("{call}: {other}")),
            })?;
        let text = match out.get("resultJson") {
            Some(Value::String(text)) => text.clone(),
            _ => "null".into(),
        };
        serde_json::from_str(&text).map_err(|e| PersistError::new(DRIVER, format!("{call}: {e}")))
    }
}

fn page_args(page: &PageRequest) -> Value {
    json!({"cursor": page.cursor, "limit": page.limit})
}

#[async_trait]
impl<H: SdkHost> PersistDriver for HostedStore<H> {
    fn name(&self) -> &'static str {
        DRIVER
    }
    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, PersistError> {
        self.call("getSession", json!([id])).await
    }
    async fn list_sessions(&self, page: PageRequest) -> Result<Page<SessionRecord>, PersistError> {
        self.call("listSessions", json!([page_args(&page)])).await
    }
    async fn update_session(&self, record: SessionRecord) -> Result<(), PersistError> {
        self.call::<Value>("updateSession", json!([record]))
            .await
            .map(drop)
    }
    async fn list_events(
        &self,
        session_id: &str,
        page: PageRequest,
    ) -> Result<Page<SessionEvent>, PersistError> {
        let mut args = page_args(&page);
        args["sessionId"] = session_id.into();
        self.call("listEvents", json!([args])).await
    }
    async fn insert_event(
        &self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<(), PersistError> {
        self.call::<Value>("insertEvent", json!([session_id, event]))
            .await
            .map(drop)
    }
}

/// Every Node driver the hosted client can use passes the contract the
/// Rust drivers pass (payload key order preserved: the texts travel
/// untouched), and a duplicate index is the conflict the SDK retries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosted_clients_drivers_pass_the_persist_contract() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let node =
        npm::which("node").expect("the Rivet layer needs node: apt-get install -y nodejs npm");
    let bin = crate::stack::postgres::find_bin_dir()
        .unwrap_or_else(|e| panic!("this test needs the real Postgres: {e}"));
    let mut rivet = RivetStack::up(
        &dir.path().join("rivet"),
        &node,
        SaveMode::Immediate,
        RunnerStop::Kill,
        super::HostedApp {
            native_sqlite: true,
        },
        super::Wiring {
            supervisor: &crate::supervise::Supervisor::default(),
            hops: &mut crate::stack::hops::Hops::default(),
        },
        &mut |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("the Rivet layer would not start: {e}"));
    let postgres = crate::stack::postgres::PostgresStack::up(
        &dir.path().join("postgres"),
        &bin,
        Default::default(),
        &mut |_| {},
    )
    .await;
    let endpoint = rivet.endpoint().to_string();
    let sqlite_file = dir.path().join("hosted.db");
    let checked = match &postgres {
        Err(e) => {
            Err(Box::new(format!("Postgres would not start: {e}")) as Box<dyn std::any::Any + Send>)
        }
        Ok(pg) => {
            let specs = vec![
                json!({"driver": "memory"}),
                json!({"driver": "sqlite", "filename": sqlite_file}),
                json!({"driver": "postgres", "connectionString": pg.url(), "schema": "c_hosted_contract"}),
                json!({"driver": "rivet"}),
            ];
            tokio::spawn(async move {
                for (n, spec) in specs.into_iter().enumerate() {
                    let client = HostedClient::new(HostedConfig {
                        endpoint: endpoint.clone(),
                        namespace: "default".into(),
                        key: format!("contract-{n}-{}", uuid::Uuid::new_v4().simple()),
                    })
                    .unwrap();
                    let store = HostedStore {
                        client,
                        spec: spec.clone(),
                    };
                    check_driver(&store).await;
                    // The SQL drivers refuse a taken index with the message the
                    // SDK retries on; the SDK's in-memory driver and actor state
                    // keep both, as the Rust memory driver does.
                    let sql = matches!(spec["driver"].as_str(), Some("sqlite" | "postgres"));
                    let mut dup = crate::persist::contract::event("s1", 1);
                    dup.id = "another-id".into();
                    let taken = store.insert_event("s1", dup).await;
                    match sql {
                        true => assert!(
                            taken.as_ref().is_err_and(PersistError::is_index_conflict),
                            "{spec}: {taken:?}"
                        ),
                        false => assert!(taken.is_ok(), "{spec}: {taken:?}"),
                    }
                    assert!(store.get_session("s1").await.unwrap().is_some(), "{spec}");
                }
            })
            .await
            .map_err(|failure| failure.into_panic())
        }
    };
    if let Ok(mut pg) = postgres {
        pg.down().await;
    }
    rivet.down().await;
    if let Err(failure) = checked {
        // A message of our own has no panic behind it to print it.
        match failure.downcast::<String>() {
            Ok(message) => panic!("{message}"),
            Err(failure) => std::panic::resume_unwind(failure),
        }
    }
}
