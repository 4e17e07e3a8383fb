use crate::made_up::Made;
use crate::{Breach, Hop, Invariant, Status};

/// One GET of stream `x`: the server sends `sent`, the gateway passes on
/// `passed`, and the client reads what the gateway passed.
fn through_gateway(sent: &[u64], passed: &[u64]) -> Made {
    let mut m = Made::new();
    m.phase("before").get("x", None);
    m.hop_get("agent", 1, "x", None)
        .hop_get("gateway", 1, "x", None);
    for id in sent {
        m.hop_sse("agent", 1, "x", *id, "s", *id as u32);
    }
    m.phase("after");
    for id in passed {
        m.hop_sse("gateway", 1, "x", *id, "s", *id as u32);
        m.sse("x", *id, "s", *id as u32);
    }
    m
}

fn stream_violations(m: &Made) -> Vec<crate::Violation> {
    m.check(&[])
        .violations
        .into_iter()
        .filter(|v| v.invariant == Invariant::Stream)
        .collect()
}

#[test]
fn an_event_passed_on_twice_is_a_duplicate_at_the_gateway_in_the_phase_it_came() {
    let verdict = through_gateway(&[1, 2, 3, 4], &[1, 2, 3, 3, 4]).check(&[]);
    let first = verdict.first().expect("a violation");
    assert_eq!(
        (first.invariant, first.breach, first.hop),
        (Invariant::Stream, Breach::Duplicate, Hop::Gateway),
        "{verdict:#?}"
    );
    assert_eq!(first.ids, ["3"]);
    assert_eq!(first.stream.as_deref(), Some("x"));
    assert_eq!(first.since, Some(Hop::Server));
    assert_eq!(first.phase.as_deref(), Some("after"));
    // The same breach at the client is the gateway's, named once.
    let stream = stream_violations(&through_gateway(&[1, 2, 3, 4], &[1, 2, 3, 3, 4]));
    assert_eq!(stream.len(), 1, "{stream:#?}");
    assert_eq!(verdict.status(Invariant::Stream), Some(Status::Broken));
}

#[test]
fn two_events_swapped_are_reordered_and_one_dropped_is_a_gap() {
    let swapped = stream_violations(&through_gateway(&[1, 2, 3, 4], &[1, 2, 4, 3]));
    assert_eq!(swapped.len(), 1, "{swapped:#?}");
    assert_eq!(
        (swapped[0].breach, swapped[0].hop, swapped[0].ids.clone()),
        (Breach::Reordered, Hop::Gateway, vec!["3".to_string()])
    );
    let dropped = stream_violations(&through_gateway(&[1, 2, 3, 4], &[1, 2, 4]));
    assert_eq!(dropped.len(), 1, "{dropped:#?}");
    assert_eq!(
        (dropped[0].breach, dropped[0].hop, dropped[0].ids.clone()),
        (Breach::Gap, Hop::Gateway, vec!["3".to_string()])
    );
}

#[test]
fn what_the_server_itself_sent_twice_is_the_servers() {
    let v = stream_violations(&through_gateway(&[1, 2, 2, 3], &[1, 2, 2, 3]));
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(
        (v[0].breach, v[0].hop, v[0].since),
        (Breach::Duplicate, Hop::Server, None)
    );
}

#[test]
fn a_clean_stream_is_valid() {
    let verdict = through_gateway(&[1, 2, 3], &[1, 2, 3]).check(&[]);
    assert!(verdict.violations.is_empty(), "{verdict:#?}");
    assert_eq!(verdict.status(Invariant::Stream), Some(Status::Valid));
}

#[test]
fn a_resume_goes_on_after_its_last_event_id_or_is_a_replay_or_a_gap() {
    // The client read 1–3 and resumed from 3; the server resends what the
    // cut connection carried past 3: no violation anywhere.
    let mut fine = Made::new();
    fine.get("x", None).hop_get("agent", 1, "x", None);
    for id in 1..=5 {
        fine.hop_sse("agent", 1, "x", id, "s", id as u32);
    }
    for id in 1..=3 {
        fine.sse("x", id, "s", id as u32);
    }
    fine.restart()
        .get("x", Some(3))
        .hop_get("agent", 2, "x", Some(3));
    for id in 4..=6 {
        fine.hop_sse("agent", 2, "x", id, "s", id as u32)
            .sse("x", id, "s", id as u32);
    }
    assert!(
        stream_violations(&fine).is_empty(),
        "{:#?}",
        stream_violations(&fine)
    );

    let resumed = |next: &[u64]| {
        let mut m = Made::new();
        m.get("x", None);
        for id in 1..=4 {
            m.sse("x", id, "s", id as u32);
        }
        m.get("x", Some(4));
        for id in next {
            m.sse("x", *id, "s", *id as u32);
        }
        stream_violations(&m)
    };
    let replay = resumed(&[3, 4, 5]);
    assert_eq!(replay.len(), 1, "{replay:#?}");
    assert_eq!(
        (replay[0].breach, replay[0].hop),
        (Breach::Replay, Hop::Client)
    );
    assert_eq!(replay[0].ids, ["3", "4"]);
    let gap = resumed(&[7, 8]);
    assert_eq!(gap.len(), 1, "{gap:#?}");
    assert_eq!(
        (gap[0].breach, gap[0].ids.clone()),
        (Breach::Gap, vec!["5".to_string(), "6".to_string()])
    );
    assert!(
        gap[0].detail.contains("Last-Event-ID 4"),
        "{}",
        gap[0].detail
    );
}

#[test]
fn an_event_read_twice_across_gets_is_a_duplicate_at_the_client() {
    let mut m = Made::new();
    m.get("x", None);
    for id in 1..=4 {
        m.sse("x", id, "s", id as u32);
    }
    // It resumes from 2 though it had 4: 3 and 4 come again.
    m.get("x", Some(2));
    for id in 3..=5 {
        m.sse("x", id, "s", id as u32);
    }
    let v = stream_violations(&m);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v
        .iter()
        .all(|v| v.breach == Breach::Duplicate && v.hop == Hop::Client));
}

#[test]
fn another_cells_stream_on_a_proxy_is_not_judged() {
    let mut m = through_gateway(&[1, 2], &[1, 2]);
    m.hop_get("agent", 9, "other", None);
    m.hop_sse("agent", 9, "other", 5, "t", 1)
        .hop_sse("agent", 9, "other", 5, "t", 1);
    assert!(stream_violations(&m).is_empty());
}

#[test]
fn the_harness_reading_a_stream_again_is_not_the_clients_nor_mixed_with_it() {
    // The client read 1–3; a probe of the harness's re-attached from 1 on
    // another connection while the client's own GET stayed open and read 4.
    let mut m = Made::new();
    m.get("x", None).hop_get("agent", 1, "x", None);
    for id in 1..=3 {
        m.hop_sse("agent", 1, "x", id, "s", id as u32)
            .sse("x", id, "s", id as u32);
    }
    m.probe_get("x", Some(1)).hop_get("agent", 2, "x", Some(1));
    m.hop_sse("agent", 2, "x", 2, "s", 2)
        .probe_sse("x", 2, "s", 2);
    m.hop_sse("agent", 1, "x", 4, "s", 4).sse("x", 4, "s", 4);
    m.hop_sse("agent", 2, "x", 3, "s", 3)
        .probe_sse("x", 3, "s", 3);
    let v = stream_violations(&m);
    assert!(v.is_empty(), "{v:#?}");
}
