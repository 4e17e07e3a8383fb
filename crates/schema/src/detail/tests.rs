//! Each typed detail serialises to the object the string-keyed inserts
//! wrote before it: same keys, same order, same `null`s.

use super::*;
use serde_json::{json, Map, Value};

/// The old way: inserts one key at a time, in the order the step did.
fn inserts(pairs: &[(&str, Value)]) -> String {
    let mut map = Map::new();
    for (key, value) in pairs {
        map.insert((*key).into(), value.clone());
    }
    serde_json::to_string(&map).unwrap()
}

fn typed(detail: &impl Detail) -> String {
    serde_json::to_string(&detail.to_map()).unwrap()
}

#[test]
fn a_prompt_detail_is_the_old_object() {
    let detail = PromptDetail {
        stop_reason: Some("end_turn".into()),
        prompts: 2,
    };
    let old = inserts(&[("stopReason", json!("end_turn")), ("prompts", json!(2))]);
    assert_eq!(typed(&detail), old);
    let silent = PromptDetail {
        stop_reason: None,
        prompts: 0,
    };
    assert_eq!(typed(&silent), inserts(&[("prompts", json!(0))]));
    assert_eq!(read::<PromptDetail>(&detail.to_map()), Some(detail));
}

#[test]
fn a_restart_detail_is_the_old_object_with_its_nulls() {
    let detail = RestartDetail {
        clients_renewed: None,
        action: "managed".into(),
        restart_ms: 120,
        ready_ms: None,
    };
    let old = inserts(&[
        ("action", json!("managed")),
        ("restartMs", json!(120)),
        ("readyMs", Value::Null),
    ]);
    assert_eq!(typed(&detail), old);
    let during = TurnRestartDetail {
        restart: RestartDetail {
            clients_renewed: Some(1),
            ready_ms: Some(40),
            ..detail
        },
        after_ms: 300,
        started_into_turn_ms: None,
    };
    let old = inserts(&[
        ("clientsRenewed", json!(1)),
        ("action", json!("managed")),
        ("restartMs", json!(120)),
        ("readyMs", json!(40)),
        ("afterMs", json!(300)),
        ("startedIntoTurnMs", Value::Null),
    ]);
    assert_eq!(typed(&during), old);
    assert_eq!(read::<TurnRestartDetail>(&during.to_map()), Some(during));
}

#[test]
fn an_integrity_detail_is_the_old_object_after_what_came_before() {
    let mut map = Map::new();
    map.insert("eventsObserved".into(), json!(7));
    IntegrityDetail {
        events_never_written: None,
        writes: WriteLoss {
            writes: "failedLoudly".into(),
            writes_failed_loudly: 1,
            writes_lost_silently: 0,
        },
        events_total: 6,
        events_recorded: 7,
        events_lost: 1,
        events_duplicated: 0,
        index_gaps: 0,
    }
    .write_to(&mut map);
    let old = inserts(&[
        ("eventsObserved", json!(7)),
        ("writes", json!("failedLoudly")),
        ("writesFailedLoudly", json!(1)),
        ("writesLostSilently", json!(0)),
        ("eventsTotal", json!(6)),
        ("eventsRecorded", json!(7)),
        ("eventsLost", json!(1)),
        ("eventsDuplicated", json!(0)),
        ("indexGaps", json!(0)),
    ]);
    assert_eq!(serde_json::to_string(&map).unwrap(), old);
}

#[test]
fn a_detail_of_another_kind_does_not_read() {
    let map = HealthDetail {
        health: json!({"status": "ok"}),
    }
    .to_map();
    assert_eq!(read::<PromptDetail>(&map), Some(PromptDetail::default()));
    let clash = inserts(&[("prompts", json!("two"))]);
    let clash: Map<String, Value> = serde_json::from_str(&clash).unwrap();
    assert_eq!(read::<PromptDetail>(&clash), None);
}
