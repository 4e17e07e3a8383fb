//! The session updates themselves, followed from hop to hop by their
//! digests: each agent session's `session/update`s as the agent sent them
//! (its record), as the server sent them (the agent hop's proxy), as they
//! left the gateway, as the client read them, as it handed them to the
//! application, and as the store took them. Each point is held against the
//! one before it that was observed; what first differs is lost,
//! duplicated, reordered or invented there, and names the invariant of
//! that point: ground truth on the way to the client, the application's,
//! the store's.
//!
//! The SDK calls its listener after its store write; continuity's client
//! hands an event on before it. The order of the last two points follows.
//!
//! Over 400 lines on purpose: it is one invariant family, the session
//! updates followed hop to hop: the comparison (`compare`), each observation
//! point's sequence (`points_of`, `effective`, `distinct`, `given`) and the
//! blame of what differs read the same history in the same order of points.

use crate::history::{History, Id, Name, Point};
use crate::verdict::{Allowance, Breach, Hop, Invariant, Violation};
use std::collections::{HashMap, HashSet};

/// One update at one point: when, and its digest.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub t: f64,
    pub digest: u64,
    /// Where a stream point read it: its stream and SSE id (a number).
    pub read_as: Option<(Name, u64)>,
}

/// One difference between the updates expected and those observed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Deviation {
    pub breach: Breach,
    pub digest: u64,
    /// When the offending update arrived (a lost one: when it was expected).
    pub t: f64,
    /// Its place among the expected updates (lost, reordered) or observed ones.
    pub position: usize,
    /// A lost update that is the tail of its turn.
    pub tail: bool,
}

/// Compares `observed` with `expected`: the copies of an update beyond
/// those expected are duplicates, an update never expected is invented,
/// copies missing are lost, and a matched update placed before one
/// expected earlier is reordered. `turns` cuts `expected` into turns: a
/// lost update is a tail when every update after it in its turn is lost.
pub(crate) fn compare(expected: &[Item], observed: &[Item], turns: &[f64]) -> Vec<Deviation> {
    let mut wanted: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, item) in expected.iter().enumerate() {
        wanted.entry(item.digest).or_default().push(i);
    }
    let mut used: HashMap<u64, usize> = HashMap::new();
    let mut matched = vec![false; expected.len()];
    let mut out = Vec::new();
    let mut last_place: Option<usize> = None;
    for (j, item) in observed.iter().enumerate() {
        let n = used.entry(item.digest).or_default();
        let place = wanted.get(&item.digest).and_then(|places| places.get(*n));
        *n += 1;
        let Some(&place) = place else {
            let breach = match wanted.contains_key(&item.digest) {
                true => Breach::Duplicate,
                false => Breach::Invented,
            };
            out.push(Deviation {
                breach,
                digest: item.digest,
                t: item.t,
                position: j,
                tail: false,
            });
            continue;
        };
        matched[place] = true;
        if last_place.is_some_and(|last| place < last) {
            out.push(Deviation {
                breach: Breach::Reordered,
                digest: item.digest,
                t: item.t,
                position: place,
                tail: false,
            });
        }
        last_place = Some(last_place.map_or(place, |last| last.max(place)));
    }
    for (i, item) in expected.iter().enumerate() {
        if matched[i] {
            continue;
        }
        let turn_end = turns.iter().copied().find(|end| *end > item.t);
        let tail = expected[i + 1..]
            .iter()
            .enumerate()
            .take_while(|(_, later)| turn_end.is_none_or(|end| later.t < end))
            .all(|(k, _)| !matched[i + 1 + k]);
        out.push(Deviation {
            breach: Breach::Lost,
            digest: item.digest,
            t: item.t,
            position: i,
            tail,
        });
    }
    out
}

/// One observation point's updates for one session, or `None` when the
/// point saw nothing this history can follow.
type Sequence = Option<Vec<Item>>;

/// The content violations of every session the client saw. `allows`
/// excuses a cut turn's lost tail; `host_gaps` are the windows in which
/// the SDK's host lost its records (its process restarted).
pub(crate) fn check(
    history: &History,
    allows: &[Allowance],
    host_gaps: &[(f64, f64)],
) -> (Vec<Violation>, crate::verdict::Excused) {
    let mut sessions: Vec<Name> = history.cell_sessions().into_iter().collect();
    sessions.sort_by(|a, b| history.names.text(*a).cmp(history.names.text(*b)));
    let cell_streams: HashSet<Name> = history.client.streams.keys().copied().collect();
    let app_streams = history.app_streams();
    let mut out = Vec::new();
    let mut excused = crate::verdict::Excused::default();
    for session in sessions {
        let points = points_of(history, session, (&cell_streams, &app_streams));
        let turns = turns_of(history, session);
        let mut previous: Option<(Hop, &Vec<Item>)> = None;
        for (hop, sequence, compared) in &points {
            let Some(sequence) = sequence else { continue };
            let Some((since, expected)) = previous.filter(|_| *compared) else {
                previous = Some((*hop, sequence));
                continue;
            };
            for d in compare(expected, sequence, &turns) {
                if d.breach == Breach::Lost && unread(history, session, *hop, &expected[d.position])
                {
                    // Past where the client read its stream: never asked for.
                    excused.unread += 1;
                    continue;
                }
                let lost_tail = d.breach == Breach::Lost && d.tail;
                if lost_tail && allows.contains(&Allowance::LostTail) {
                    excused.lost_tail += 1;
                    continue;
                }
                let host_gap = matches!(d.breach, Breach::Lost)
                    && *hop >= Hop::Client
                    && host_gaps.iter().any(|(a, b)| d.t >= *a && d.t <= *b);
                if host_gap {
                    excused.host_restart += 1;
                    continue;
                }
                // A write the store refused, and the client saw refused, is
                // a failed operation, not a loss: it need not be there.
                if d.breach == Breach::Lost
                    && *hop == Hop::Store
                    && history.refused_write(session, d.digest)
                {
                    excused.refused += 1;
                    continue;
                }
                out.push(violation(history, session, *hop, since, &d));
            }
            previous = Some((*hop, sequence));
        }
    }
    (out, excused)
}

fn violation(history: &History, session: Name, hop: Hop, since: Hop, d: &Deviation) -> Violation {
    let (invariant, hop) = blame(history, session, hop, d);
    // What broke at the application or the store broke with an event the
    // client read: the phase is the one during which it arrived there.
    let t = match hop {
        Hop::Application | Hop::Store if d.breach != Breach::Lost => {
            arrival(history, session, d.digest, d.t).unwrap_or(d.t)
        }
        _ => d.t,
    };
    let what = match d.breach {
        Breach::Duplicate => "came more often than",
        Breach::Invented => "was never",
        Breach::Lost => "is missing; it was",
        Breach::Reordered => "came out of the order of",
        _ => "differs from",
    };
    Violation {
        invariant,
        breach: d.breach,
        hop,
        since: Some(since),
        stream: None,
        session: Some(history.names.text(session).to_string()),
        ids: vec![format!("{:016x}", d.digest)],
        event_index: None,
        t,
        phase: history.phase_at(t).map(str::to_string),
        detail: format!(
            "session/update #{} ({}) at the {} {what} seen at the {}",
            d.position + 1,
            format_args!("{:016x}", d.digest),
            hop.as_str(),
            since.as_str()
        ),
    }
}

/// The invariant a deviation found at `hop` breaks, and where it shows.
/// Continuity's client hands an event on, then stores it: the application
/// point is the application's, the store point the store's. The SDK
/// stores an event, then calls its listener: both are what it handed the
/// application, unless the store refused the write (a lost event with a
/// failed write of that session), which is the store's.
fn blame(history: &History, session: Name, hop: Hop, d: &Deviation) -> (Invariant, Hop) {
    match hop {
        Hop::Store if history.app_after_store => {
            let refused = d.breach == Breach::Lost && history.store_failures_of(session);
            match refused {
                true => (Invariant::Store, Hop::Store),
                false => (Invariant::Application, Hop::Application),
            }
        }
        Hop::Store => (Invariant::Store, Hop::Store),
        Hop::Application => (Invariant::Application, Hop::Application),
        other => (Invariant::GroundTruth, other),
    }
}

/// Whether the client never read as far as `item` (its stream was cut and
/// never resumed, it was closed, the cell ended): what was never asked for
/// is not lost on the way; a loss while the client still read is (and a
/// hole in the ids is the stream invariant's too). An update a stream
/// point passed on is unread when its id lies past the last id that point
/// read on its stream; one the server never sent (the agent's record holds
/// it) when the client read nothing of the session's streams after it.
fn unread(history: &History, session: Name, hop: Hop, item: &Item) -> bool {
    let point = match hop {
        Hop::Gateway => &history.gateway,
        Hop::Client => &history.client,
        Hop::Server => return nothing_read_after(history, session, item.t),
        _ => return false,
    };
    let Some((stream, id)) = item.read_as else {
        return nothing_read_after(history, session, item.t);
    };
    let furthest = point
        .streams
        .get(&stream)
        .into_iter()
        .flatten()
        .flat_map(|s| &s.events)
        .filter_map(|e| match e.id {
            Some(Id::Num(n)) => Some(n),
            _ => None,
        })
        .max();
    furthest.is_none_or(|furthest| id > furthest)
}

/// Whether the client read nothing on the streams that carried `session`
/// after `t`.
fn nothing_read_after(history: &History, session: Name, t: f64) -> bool {
    let carried = history.client.streams.values().filter(|segments| {
        segments
            .iter()
            .flat_map(|s| &s.events)
            .any(|e| e.session == Some(session))
    });
    let last_read = carried
        .flat_map(|segments| segments.iter().flat_map(|s| &s.events))
        .map(|e| e.t)
        .max_by(f64::total_cmp);
    last_read.is_none_or(|last| t > last)
}

/// When the client last read the update `digest` of `session` by `t`.
fn arrival(history: &History, session: Name, digest: u64, t: f64) -> Option<f64> {
    history
        .client
        .streams
        .values()
        .flatten()
        .flat_map(|s| &s.events)
        .filter(|e| e.session == Some(session) && e.digest == Some(digest) && e.t <= t)
        .map(|e| e.t)
        .max_by(f64::total_cmp)
}

/// The session's updates at every point, in the order an event travels
/// (the last two swap for the SDK: its listener runs after its store
/// write), each with whether it is held against the point before it: the
/// client's updates read once per SSE id are only what the next point is
/// held against.
fn points_of(
    history: &History,
    session: Name,
    (cell, app_streams): (&HashSet<Name>, &HashSet<Name>),
) -> Vec<(Hop, Sequence, bool)> {
    let agent: Vec<Item> = history
        .agent
        .iter()
        .filter(|s| s.session == session && s.update)
        .map(|s| Item {
            t: s.t,
            digest: s.digest,
            read_as: None,
        })
        .collect();
    let agent = (!history.agent.is_empty()).then_some(agent);
    let app = given(history, &history.app, session, false);
    let store = given(history, &history.store, session, true);
    let mut points = vec![
        (Hop::Agent, agent, true),
        (Hop::Server, effective(&history.server, session, cell), true),
        (
            Hop::Gateway,
            effective(&history.gateway, session, cell),
            true,
        ),
        (Hop::Client, effective(&history.client, session, cell), true),
        (
            Hop::Client,
            distinct(&history.client, session, app_streams),
            false,
        ),
    ];
    if history.app_after_store {
        points.extend([(Hop::Store, store, true), (Hop::Application, app, true)]);
    } else {
        points.extend([(Hop::Application, app, true), (Hop::Store, store, true)]);
    }
    points
}

/// The updates one point passed on for `session`, each SSE id once, at
/// its first arrival: a resend of an id (a resume going on after its
/// `Last-Event-ID`, the harness's own re-attach beside the client's GET)
/// is the same event, and an id repeated is the stream invariant's.
fn effective(point: &Point, session: Name, cell: &HashSet<Name>) -> Sequence {
    if !point.recorded {
        return None;
    }
    let mut items: Vec<Item> = Vec::new();
    for (stream, segments) in point.streams.iter().filter(|(s, _)| cell.contains(s)) {
        let mut events: Vec<&crate::history::Seen> = segments
            .iter()
            .flat_map(|s| &s.events)
            .filter(|e| e.update)
            .collect();
        events.sort_by(|a, b| a.t.total_cmp(&b.t));
        let mut ids: HashSet<Id> = HashSet::new();
        for e in events {
            let digest = e.digest?;
            let Some(s) = e.session else { continue };
            if s == session && e.id.is_none_or(|id| ids.insert(id)) {
                let read_as = match e.id {
                    Some(Id::Num(n)) => Some((*stream, n)),
                    _ => None,
                };
                items.push(Item {
                    t: e.t,
                    digest,
                    read_as,
                });
            }
        }
    }
    items.sort_by(|a, b| a.t.total_cmp(&b.t));
    Some(items)
}

/// The client's updates for `session`, each SSE id once (its first
/// arrival): what it received, however often the stream repeated it.
fn distinct(point: &Point, session: Name, cell: &HashSet<Name>) -> Sequence {
    if !point.recorded {
        return None;
    }
    let mut items = Vec::new();
    for (_, segments) in point.streams.iter().filter(|(s, _)| cell.contains(s)) {
        let mut seen: HashSet<Id> = HashSet::new();
        for e in segments.iter().flat_map(|s| &s.events).filter(|e| e.update) {
            let digest = e.digest?;
            let Some(s) = e.session else { continue };
            if s == session && e.id.is_none_or(|id| seen.insert(id)) {
                items.push(Item {
                    t: e.t,
                    digest,
                    read_as: None,
                });
            }
        }
    }
    items.sort_by(|a: &Item, b: &Item| a.t.total_cmp(&b.t));
    Some(items)
}

/// The updates of `session` the application was handed, or the store
/// took (in index order), when the client recorded any.
fn given(
    history: &History,
    given: &[crate::history::Given],
    session: Name,
    by_index: bool,
) -> Sequence {
    if given.is_empty() {
        return None;
    }
    let mut mine: Vec<&crate::history::Given> = given
        .iter()
        .filter(|g| g.from_agent && g.update && g.agent_session == Some(session))
        .collect();
    if by_index && mine.iter().all(|g| g.event_index.is_some()) {
        mine.sort_by_key(|g| (g.session.map(|s| history.names.text(s)), g.event_index));
    }
    Some(
        mine.into_iter()
            .filter_map(|g| {
                Some(Item {
                    read_as: None,
                    t: g.t,
                    digest: g.digest?,
                })
            })
            .collect(),
    )
}

/// Where the session's turns start: each prompt the client sent for it.
/// A lost update is a turn's tail when no update after it came before the
/// next prompt.
fn turns_of(history: &History, session: Name) -> Vec<f64> {
    let mut starts: Vec<f64> = history
        .prompts
        .iter()
        .filter(|(_, s)| *s == session)
        .map(|(t, _)| *t)
        .collect();
    starts.sort_by(f64::total_cmp);
    starts
}

#[cfg(test)]
mod tests;
