use super::{compare, Item};
use crate::made_up::Made;
use crate::{Allowance, Breach, Hop, Invariant, Status};

fn items(digests: &[u64]) -> Vec<Item> {
    digests
        .iter()
        .enumerate()
        .map(|(i, d)| Item {
            t: i as f64,
            digest: *d,
            read_as: None,
        })
        .collect()
}

fn breaches(expected: &[u64], observed: &[u64]) -> Vec<(Breach, u64)> {
    compare(&items(expected), &items(observed), &[])
        .into_iter()
        .map(|d| (d.breach, d.digest))
        .collect()
}

#[test]
fn sequences_compare_as_lost_duplicated_reordered_or_invented() {
    assert!(breaches(&[1, 2, 3], &[1, 2, 3]).is_empty());
    assert_eq!(
        breaches(&[1, 2, 3], &[1, 2, 2, 3]),
        [(Breach::Duplicate, 2)]
    );
    assert_eq!(breaches(&[1, 2, 3], &[1, 3]), [(Breach::Lost, 2)]);
    assert_eq!(breaches(&[1, 2, 3], &[1, 3, 2]), [(Breach::Reordered, 2)]);
    assert_eq!(breaches(&[1, 2, 3], &[1, 9, 2, 3]), [(Breach::Invented, 9)]);
    // The same text twice is two events, matched in order.
    assert!(breaches(&[5, 5, 6], &[5, 5, 6]).is_empty());
    assert_eq!(breaches(&[5, 5, 6], &[5, 6]), [(Breach::Lost, 5)]);
}

#[test]
fn a_lost_update_is_a_tail_only_when_nothing_after_it_in_its_turn_came() {
    let expected = items(&[1, 2, 3, 4, 10]);
    // A prompt at t 3.5: 1–4 are one turn, 10 the next.
    let tail = compare(&expected, &items(&[1, 2]), &[3.5]);
    assert!(
        tail.iter().filter(|d| d.digest != 10).all(|d| d.tail),
        "{tail:#?}"
    );
    let hole = compare(&expected, &items(&[1, 3, 4, 10]), &[3.5]);
    assert_eq!(hole.len(), 1);
    assert!(!hole[0].tail, "{hole:#?}");
}

/// The agent sent 1–3 of session `s`; every hop passed them on; the
/// application got `app`, the store took `stored` (index i+1 each).
fn handed(app: &[u32], stored: &[u32], via: &str) -> Made {
    let mut m = Made::new();
    m.phase("prompt")
        .prompt("s")
        .get("x", None)
        .hop_get("agent", 1, "x", None);
    for n in 1..=3 {
        m.agent("s", n)
            .hop_sse("agent", 1, "x", n as u64, "s", n)
            .sse("x", n as u64, "s", n);
    }
    for n in app {
        m.app(via, "s", *n);
    }
    for (i, n) in stored.iter().enumerate() {
        m.store("s", *n, i as u64 + 1);
    }
    m
}

#[test]
fn what_the_application_was_handed_twice_is_the_applications_invariant() {
    let verdict = handed(&[1, 2, 2, 3], &[1, 2, 2, 3], "recorder").check(&[]);
    let first = verdict.first().expect("a violation");
    assert_eq!(
        (first.invariant, first.breach, first.hop),
        (Invariant::Application, Breach::Duplicate, Hop::Application),
        "{verdict:#?}"
    );
    assert_eq!(first.session.as_deref(), Some("s"));
    assert_eq!(verdict.status(Invariant::GroundTruth), Some(Status::Valid));
    // Stored as handed: the store is right about what it was given.
    assert_eq!(
        verdict.status(Invariant::Store),
        Some(Status::Valid),
        "{verdict:#?}"
    );
}

#[test]
fn what_the_store_lost_or_invented_is_the_stores() {
    let lost = handed(&[1, 2, 3], &[1, 3], "recorder").check(&[]);
    let first = lost.first().unwrap();
    assert_eq!(
        (first.invariant, first.breach, first.hop),
        (Invariant::Store, Breach::Lost, Hop::Store)
    );
    let invented = handed(&[1, 2, 3], &[1, 2, 3, 7], "recorder").check(&[]);
    let first = invented.first().unwrap();
    assert_eq!(
        (first.invariant, first.breach),
        (Invariant::Store, Breach::Invented),
        "{invented:#?}"
    );
}

#[test]
fn what_the_sdk_stored_and_heard_is_what_it_handed_the_application_unless_the_store_refused() {
    // The SDK never stored nor handed on update 2: its own doing.
    let dropped = handed(&[1, 3], &[1, 3], "listener").check(&[]);
    let first = dropped.first().unwrap();
    assert_eq!(
        (first.invariant, first.breach, first.hop),
        (Invariant::Application, Breach::Lost, Hop::Application),
        "{dropped:#?}"
    );
    // It stored and heard update 2 twice: handed on twice.
    let twice = handed(&[1, 2, 2, 3], &[1, 2, 2, 3], "listener").check(&[]);
    let first = twice.first().unwrap();
    assert_eq!(
        (first.invariant, first.breach),
        (Invariant::Application, Breach::Duplicate),
        "{twice:#?}"
    );
    // The store refused the write of update 2: the store's.
    let mut refused = handed(&[1, 3], &[1, 3], "listener");
    refused.store_failed();
    let verdict = refused.check(&[]);
    let first = verdict.first().unwrap();
    assert_eq!(
        (first.invariant, first.breach, first.hop, first.since),
        (
            Invariant::Store,
            Breach::Lost,
            Hop::Store,
            Some(Hop::Client)
        ),
        "{verdict:#?}"
    );
}

#[test]
fn what_the_server_never_sent_is_lost_against_the_agents_record() {
    let mut m = Made::new();
    m.prompt("s").get("x", None).hop_get("agent", 1, "x", None);
    for n in 1..=3 {
        m.agent("s", n);
    }
    // The server numbers what it sends: update 2 never had an SSE id.
    for (id, n) in [(1, 1), (2, 3)] {
        m.hop_sse("agent", 1, "x", id, "s", n).sse("x", id, "s", n);
    }
    // A later prompt: the lost update is no tail of its turn.
    m.prompt("s")
        .agent("s", 4)
        .hop_sse("agent", 1, "x", 3, "s", 4);
    let verdict = m.check(&[Allowance::LostTail]);
    let first = verdict.first().expect("a violation");
    assert_eq!(
        (first.invariant, first.breach, first.hop, first.since),
        (
            Invariant::GroundTruth,
            Breach::Lost,
            Hop::Server,
            Some(Hop::Agent)
        ),
        "{verdict:#?}"
    );
}

#[test]
fn a_cut_turns_lost_tail_is_excused_only_where_the_scenario_allows_it() {
    let mut m = Made::new();
    m.prompt("s").get("x", None);
    for n in 1..=4 {
        m.agent("s", n);
    }
    m.sse("x", 1, "s", 1).sse("x", 2, "s", 2).restart();
    m.prompt("s").agent("s", 5).sse("x", 3, "s", 5);
    let strict = m.check(&[]);
    assert_eq!(strict.violations.len(), 2, "{strict:#?}");
    assert!(strict
        .violations
        .iter()
        .all(|v| v.breach == Breach::Lost && v.hop == Hop::Client));
    let allowed = m.check(&[Allowance::LostTail]);
    assert!(allowed.violations.is_empty(), "{allowed:#?}");
    assert_eq!(allowed.excused.lost_tail, 2);
    // Never a duplicate, whatever the scenario allows.
    m.app("recorder", "s", 1).app("recorder", "s", 1);
    let dup = m.check(&[Allowance::LostTail]);
    assert!(
        dup.violations.iter().any(|v| v.breach == Breach::Duplicate),
        "{dup:#?}"
    );
}

#[test]
fn a_stream_whose_client_hands_nothing_on_is_not_the_applications() {
    // The application was handed updates 1–2 from stream `x`; a recovering
    // client read 1–3 again on `r` (a `session/load`) and handed nothing on.
    let mut m = Made::new();
    m.get("x", None).sse("x", 1, "s", 1).sse("x", 2, "s", 2);
    m.app_from("x", "s", 1).app_from("x", "s", 2);
    m.get("r", None);
    for n in 1..=3 {
        m.sse("r", n as u64, "s", n);
    }
    let verdict = m.check(&[]);
    assert!(verdict.violations.is_empty(), "{verdict:#?}");
    // Were `r` handed on at all, what the application missed of it counts.
    m.app_from("r", "s", 3);
    let verdict = m.check(&[]);
    assert!(
        verdict
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::Application),
        "{verdict:#?}"
    );
}

#[test]
fn what_a_stream_carried_past_where_its_client_stopped_reading_is_never_asked_for() {
    // The server sent 1–4; the client's stream was cut after 2 and never
    // resumed (a fault reset it, the phase failed): 3 and 4 were not lost there.
    let cut = |read: &[u64]| {
        let mut m = Made::new();
        m.prompt("s").get("x", None).hop_get("agent", 1, "x", None);
        for n in 1..=4 {
            m.agent("s", n).hop_sse("agent", 1, "x", n as u64, "s", n);
        }
        for n in read {
            m.sse("x", *n, "s", *n as u32);
        }
        m.check(&[])
    };
    let verdict = cut(&[1, 2]);
    assert!(verdict.violations.is_empty(), "{verdict:#?}");
    assert_eq!(verdict.excused.unread, 2);
    // A hole below the last id read is lost, and named.
    let verdict = cut(&[1, 2, 4]);
    assert!(
        verdict
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::Stream && v.breach == Breach::Gap),
        "{verdict:#?}"
    );
}

#[test]
fn a_loss_while_the_sdks_host_restarted_is_unknown_never_a_duplicate() {
    // The SDK heard and stored 1–3 of the turn before a restart; when its
    // host came back with a new log, the records of 2 and 3 were gone.
    let with = |new_log: bool, app: &[u32]| {
        let mut m = Made::of_target("rivet-engine");
        m.phase("prompt").prompt("s").get("x", None);
        for n in 1..=3 {
            m.agent("s", n).sse("x", n as u64, "s", n);
        }
        for n in app {
            m.app("listener", "s", *n);
        }
        m.phase("restart").restart();
        if new_log {
            m.new_host_log();
        }
        m.check(&[])
    };
    assert!(with(true, &[1]).violations.is_empty());
    // The same log throughout: nothing was lost with it, the loss counts.
    let kept = with(false, &[1]);
    assert_eq!(
        kept.first().map(|v| v.breach),
        Some(Breach::Lost),
        "{kept:#?}"
    );
    // A duplicate counts whatever restarted.
    let twice = with(true, &[1, 1, 2, 3]);
    assert_eq!(
        twice.first().map(|v| v.breach),
        Some(Breach::Duplicate),
        "{twice:#?}"
    );
}

#[test]
fn what_the_server_never_sent_once_its_client_stopped_reading_is_not_lost() {
    let run = |read_on: bool| {
        let mut m = Made::new();
        m.prompt("s").get("x", None).hop_get("agent", 1, "x", None);
        for n in 1..=2 {
            m.agent("s", n)
                .hop_sse("agent", 1, "x", n as u64, "s", n)
                .sse("x", n as u64, "s", n);
        }
        // The agent answers a prompt the client re-sent after its stream was cut.
        m.agent("s", 3);
        if read_on {
            // ... or the client still reads the stream: then 3 is lost at the server.
            m.agent("s", 4)
                .hop_sse("agent", 1, "x", 3, "s", 4)
                .sse("x", 3, "s", 4);
        }
        m.check(&[])
    };
    let cut = run(false);
    assert!(cut.violations.is_empty(), "{cut:#?}");
    let reading = run(true);
    let first = reading.first().expect("a violation");
    assert_eq!(
        (first.invariant, first.breach, first.hop),
        (Invariant::GroundTruth, Breach::Lost, Hop::Server),
        "{reading:#?}"
    );
}

#[test]
fn a_resend_beside_the_clients_stream_is_the_same_event_not_a_replacement() {
    // The hops carried 1–2 on the client's GET, then the harness re-read
    // from 1 on another connection (3 and 4 of it none of the client's),
    // then the client's GET carried 3.
    let mut m = Made::new();
    m.prompt("s").get("x", None);
    for hop in ["agent", "gateway"] {
        m.hop_get(hop, 1, "x", None);
    }
    for n in 1..=2u32 {
        m.agent("s", n);
        for hop in ["agent", "gateway"] {
            m.hop_sse(hop, 1, "x", u64::from(n), "s", n);
        }
        m.sse("x", u64::from(n), "s", n);
    }
    for hop in ["agent", "gateway"] {
        m.hop_get(hop, 2, "x", Some(1))
            .hop_sse(hop, 2, "x", 2, "s", 2);
    }
    m.probe_get("x", Some(1)).probe_sse("x", 2, "s", 2);
    m.prompt("s").agent("s", 3);
    for hop in ["agent", "gateway"] {
        m.hop_sse(hop, 1, "x", 3, "s", 3);
    }
    m.sse("x", 3, "s", 3);
    let verdict = m.check(&[]);
    assert!(verdict.violations.is_empty(), "{verdict:#?}");
}

/// A write the store refused, and the client saw refused, is a failed
/// operation (Jepsen's `:fail`): its event need not be in the store, nor
/// its index; it is counted as let pass. The same event missing with no
/// refusal of it is lost.
#[test]
fn a_write_the_store_refused_is_no_loss_and_no_index_gap() {
    let mut m = Made::new();
    m.phase("prompt")
        .prompt("s")
        .get("x", None)
        .hop_get("agent", 1, "x", None);
    for n in 1..=3 {
        m.agent("s", n)
            .hop_sse("agent", 1, "x", n as u64, "s", n)
            .sse("x", n as u64, "s", n)
            .app("recorder", "s", n);
    }
    let mut refused = m.clone();
    refused
        .store("s", 1, 1)
        .store_refused("s", 2, 2)
        .store("s", 3, 3);
    let verdict = refused.check(&[]);
    assert!(verdict.is_valid(), "{verdict:#?}");
    assert_eq!(verdict.excused.refused, 1, "{verdict:#?}");
    // Missing with no refusal of it (another event's refused): lost.
    let mut lost = m.clone();
    lost.store("s", 1, 1)
        .store_refused("s", 3, 4)
        .store("s", 3, 3);
    let verdict = lost.check(&[]);
    let first = verdict.first().expect("a violation");
    assert_eq!(
        (first.invariant, first.breach, first.hop),
        (Invariant::Store, Breach::Lost, Hop::Store),
        "{verdict:#?}"
    );
    assert!(
        verdict
            .violations
            .iter()
            .any(|v| v.breach == Breach::Index && v.event_index == Some(2)),
        "index 2 was never stored nor refused: {verdict:#?}"
    );
}
