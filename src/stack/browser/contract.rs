//! The browser client's IndexedDB driver (`stack/browser/indexeddb.mjs`)
//! against the persist contract every other driver passes, through the
//! page's `store` action in a real headless Chromium: round-trips, order
//! and paging, payload key order kept, and a taken event index refused
//! with the message the SDK retries on (as the SQL drivers refuse it).

use super::*;
use crate::client::browser::BrowserPage;
use crate::client::hosted::HostedClient;
use crate::persist::contract::check_driver;
use crate::persist::{PersistDriver, PersistError};
use crate::stack::rivet::hosted_contract::HostedStore;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_indexeddb_driver_passes_the_persist_contract() {
    let chromium = find_chromium().unwrap_or_else(|e| panic!("this test needs Chromium: {e}"));
    let app = prepare_app(&mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("the browser app would not build: {e}"));
    let server = PageServer::start(&app).await.unwrap();
    let host = BrowserHost {
        chromium,
        page_url: format!("{}/", server.origin()),
        supervisor: Supervisor::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let mut browser = Chromium::launch(&host, &dir.path().join("profile"))
        .await
        .unwrap_or_else(|e| panic!("Chromium would not start: {e}"));
    let (ws_url, page_url) = (browser.ws_url.clone(), host.page_url.clone());
    let checked = async move {
        let page = BrowserPage::open(&ws_url, &page_url)
            .await
            .unwrap_or_else(|e| panic!("the page would not open: {e}"));
        let store = HostedStore {
            client: HostedClient::on(page),
            spec: json!({"driver": "indexeddb", "database": "contract"}),
        };
        check_driver(&store).await;
        let mut dup = crate::persist::contract::event("s1", 1);
        dup.id = "another-id".into();
        let taken = store.insert_event("s1", dup).await;
        assert!(
            taken.as_ref().is_err_and(PersistError::is_index_conflict),
            "{taken:?}"
        );
        assert!(store.get_session("s1").await.unwrap().is_some());
    };
    let outcome = tokio::spawn(checked).await;
    browser.stop().await;
    if let Err(failure) = outcome {
        std::panic::resume_unwind(failure.into_panic());
    }
}
