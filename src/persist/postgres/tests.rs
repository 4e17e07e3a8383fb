//! The Postgres store's tests (`postgres.rs`): schema names, and an unreachable server named in the error.

use super::*;

#[test]
fn schema_names_are_checked_and_made_from_keys() {
    assert!(valid_schema("c_run_3"));
    assert!(!valid_schema("1abc"));
    assert!(!valid_schema("a\"; DROP TABLE x; --"));
    assert_eq!(schema_for("ab12-ts-sdk-3"), "c_ab12_ts_sdk_3");
    assert!(valid_schema(&schema_for(&"x".repeat(200))));
    let bad = PostgresDriver::new(PostgresConfig {
        connection: "host=127.0.0.1".into(),
        schema: "no-dashes".into(),
    });
    assert!(bad.err().unwrap().message.contains("invalid schema"));
}

/// A server that is not there: the call fails at once, naming the
/// driver and the refusal, and the next call tries again.
#[tokio::test]
async fn an_unreachable_server_is_an_error_naming_the_driver() {
    let port = crate::supervise::free_port().unwrap();
    let driver = PostgresDriver::new(PostgresConfig {
        connection: format!("host=127.0.0.1 port={port} user=u dbname=d"),
        schema: "s".into(),
    })
    .unwrap();
    for _ in 0..2 {
        let e = driver.get_session("x").await.unwrap_err();
        assert_eq!(e.driver, "postgres");
        assert!(
            e.to_string()
                .starts_with("persist (postgres): getSession: cannot connect"),
            "{e}"
        );
    }
}
