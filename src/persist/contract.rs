//! Shared checks every driver must pass (test-only).

use super::*;
use serde_json::json;

pub(crate) fn record(id: &str, created_at: i64) -> SessionRecord {
    SessionRecord {
        id: id.to_string(),
        agent: "mock".into(),
        agent_session_id: format!("agent-{id}"),
        last_connection_id: "conn-1".into(),
        created_at,
        destroyed_at: None,
        sandbox_id: None,
        session_init: Some(json!({"cwd": "/", "mcpServers": []})),
        config_options: None,
        modes: None,
    }
}

pub(crate) fn event(session_id: &str, index: i64) -> SessionEvent {
    SessionEvent {
        id: format!("{session_id}-ev-{index}"),
        event_index: index,
        session_id: session_id.to_string(),
        created_at: 1_700_000_000_000 + index,
        connection_id: "conn-1".into(),
        sender: if index % 2 == 0 {
            Sender::Agent
        } else {
            Sender::Client
        },
        payload: json!({"jsonrpc": "2.0", "id": index, "method": "session/prompt", "params": {"z": 1, "a": 2}}),
    }
}

/// What a store does to the key order of an event's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PayloadKeys {
    /// As written (the SDK's in-memory driver, SQLite).
    Preserved,
    /// Sorted: the Rivet Engine's JSON action API re-encodes objects with
    /// sorted keys, so `{"z":1,"a":2}` comes back as `{"a":2,"z":1}`.
    Sorted,
}

/// Round-trips, ordering and paging as the SDK's in-memory driver does them.
pub(crate) async fn check_driver(driver: &dyn PersistDriver) {
    check_driver_with(driver, PayloadKeys::Preserved).await
}

/// [`check_driver`] for a store that is known to change payload key order:
/// everything else must hold, and the order must be exactly `keys` (so a
/// store that starts preserving it fails here and gets the strict check).
pub(crate) async fn check_driver_with(driver: &dyn PersistDriver, keys: PayloadKeys) {
    assert!(driver.get_session("missing").await.unwrap().is_none());

    driver.update_session(record("s2", 20)).await.unwrap();
    driver.update_session(record("s1", 10)).await.unwrap();
    driver.update_session(record("s3", 20)).await.unwrap();
    let mut updated = record("s1", 10);
    updated.destroyed_at = Some(99);
    driver.update_session(updated.clone()).await.unwrap();
    assert_eq!(driver.get_session("s1").await.unwrap(), Some(updated));

    let first = driver
        .list_sessions(PageRequest {
            cursor: None,
            limit: Some(2),
        })
        .await
        .unwrap();
    let ids: Vec<&str> = first.items.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, vec!["s1", "s2"]);
    assert_eq!(first.next_cursor.as_deref(), Some("2"));
    let second = driver
        .list_sessions(PageRequest {
            cursor: first.next_cursor,
            limit: Some(2),
        })
        .await
        .unwrap();
    let ids: Vec<&str> = second.items.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, vec!["s3"]);
    assert_eq!(second.next_cursor, None);

    // Inserted out of order, listed by eventIndex, payload key order preserved.
    for i in [3, 1, 2, 5, 4] {
        driver.insert_event("s1", event("s1", i)).await.unwrap();
    }
    let page = driver
        .list_events(
            "s1",
            PageRequest {
                cursor: Some("1".into()),
                limit: Some(3),
            },
        )
        .await
        .unwrap();
    let indexes: Vec<i64> = page.items.iter().map(|e| e.event_index).collect();
    assert_eq!(indexes, vec![2, 3, 4]);
    assert_eq!(page.next_cursor.as_deref(), Some("4"));
    assert_eq!(page.items[0], event("s1", 2));
    assert_eq!(
        serde_json::to_string(&page.items[0].payload["params"]).unwrap(),
        match keys {
            PayloadKeys::Preserved => r#"{"z":1,"a":2}"#,
            PayloadKeys::Sorted => r#"{"a":2,"z":1}"#,
        }
    );
    let all = list_all_events(driver, "s1").await.unwrap();
    assert_eq!(all.len(), 5);
    assert!(driver
        .list_events("s2", PageRequest::default())
        .await
        .unwrap()
        .items
        .is_empty());
}
