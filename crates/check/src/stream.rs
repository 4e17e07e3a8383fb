//! The stream invariant: on each ACP server id's event stream, across
//! every reconnect, each SSE id is delivered once and in increasing order,
//! with none skipped; a GET that resumes from `Last-Event-ID: n` goes on at
//! n+1 (at or below n is a replay, above n+1 a gap). Checked at each point
//! that saw the stream (the agent hop's proxy, the gateway hop's, the
//! client); a breach is reported at the first point it shows.
//!
//! At the proxies, an id sent again on a later GET that asked for it (its
//! `Last-Event-ID` below the id) is a resend of what a cut connection
//! never delivered, not a duplicate. At the client, whatever arrives twice
//! is a duplicate: it had the event.

use crate::history::{History, Id, Name, Point, Segment};
use crate::verdict::{Breach, Hop, Invariant, Violation};
use std::collections::HashSet;

/// One breach found at one point, before hop attribution.
#[derive(Debug, Clone)]
struct Found {
    stream: Name,
    breach: Breach,
    ids: Vec<Id>,
    t: f64,
    detail: String,
}

impl Found {
    /// What makes two points' findings the same breach.
    fn key(&self) -> (Name, Breach, Vec<Id>) {
        (self.stream, self.breach, self.ids.clone())
    }
}

/// The stream invariant's violations, each at the first point it shows;
/// only the streams the client used this cell are judged.
pub(crate) fn check(history: &History) -> Vec<Violation> {
    let cell: HashSet<Name> = history.client.streams.keys().copied().collect();
    let points = [
        (Hop::Server, &history.server, false),
        (Hop::Gateway, &history.gateway, false),
        (Hop::Client, &history.client, true),
    ];
    let mut earlier: HashSet<(Name, Breach, Vec<Id>)> = HashSet::new();
    let mut out = Vec::new();
    let mut since = None;
    for (hop, point, is_client) in points {
        if !point.recorded {
            continue;
        }
        let mut found = at_point(history, point, &cell, is_client);
        found.sort_by(|a, b| a.t.total_cmp(&b.t));
        for f in found {
            if !earlier.insert(f.key()) {
                continue;
            }
            out.push(violation(history, f, hop, since));
        }
        since = Some(hop);
    }
    out
}

fn violation(history: &History, f: Found, hop: Hop, since: Option<Hop>) -> Violation {
    Violation {
        invariant: Invariant::Stream,
        breach: f.breach,
        hop,
        since,
        stream: Some(history.names.text(f.stream).to_string()),
        session: None,
        ids: f.ids.iter().map(|id| history.id_text(*id)).collect(),
        event_index: None,
        t: f.t,
        phase: history.phase_at(f.t).map(str::to_string),
        detail: f.detail,
    }
}

fn at_point(history: &History, point: &Point, cell: &HashSet<Name>, is_client: bool) -> Vec<Found> {
    let mut found = Vec::new();
    let mut streams: Vec<_> = point
        .streams
        .iter()
        .filter(|(stream, _)| cell.contains(stream))
        .collect();
    streams.sort_by_key(|(stream, _)| **stream);
    for (stream, segments) in streams {
        found.extend(one_stream(history, *stream, segments, is_client));
    }
    found
}

/// Every breach on one server id's stream at one point.
fn one_stream(
    history: &History,
    stream: Name,
    segments: &[Segment],
    is_client: bool,
) -> Vec<Found> {
    let mut found = Vec::new();
    // Ids delivered on earlier GETs, and every numeric id seen at all.
    let mut delivered: HashSet<Id> = HashSet::new();
    let mut everywhere: HashSet<u64> = HashSet::new();
    let mut maybe_gaps: Vec<(Vec<u64>, f64, String)> = Vec::new();
    for (k, segment) in segments.iter().enumerate() {
        let mut get = Get {
            stream,
            resumed: match segment.last_event_id {
                Some(Id::Num(n)) => Some(n),
                _ => None,
            },
            later: k > 0,
            is_client,
            this: HashSet::new(),
            highest: None,
            replayed: Vec::new(),
        };
        for event in &segment.events {
            let Some(id) = event.id else { continue };
            if let Id::Num(n) = id {
                everywhere.insert(n);
            }
            get.event(
                history,
                id,
                event.t,
                &delivered,
                &mut found,
                &mut maybe_gaps,
            );
        }
        if let Some((first, t)) = get.replayed.first().copied() {
            let ids: Vec<u64> = get.replayed.iter().map(|(n, _)| *n).collect();
            found.push(Found {
                stream,
                breach: Breach::Replay,
                detail: format!(
                    "after a resume with Last-Event-ID {}, {} came again (the first: {first})",
                    get.resumed.unwrap_or_default(),
                    id_list(&ids)
                ),
                ids: ids.into_iter().map(Id::Num).collect(),
                t,
            });
        }
        delivered.extend(get.this);
    }
    for (ids, t, why) in maybe_gaps {
        let missing: Vec<u64> = ids
            .into_iter()
            .filter(|id| !everywhere.contains(id))
            .collect();
        if missing.is_empty() {
            continue;
        }
        found.push(Found {
            stream,
            breach: Breach::Gap,
            detail: format!("{why}: {} never came", id_list(&missing)),
            ids: missing.into_iter().map(Id::Num).collect(),
            t,
        });
    }
    found
}

/// One GET of a stream, as its events are read.
struct Get {
    stream: Name,
    /// The `Last-Event-ID` it resumed from.
    resumed: Option<u64>,
    /// Not the stream's first GET at this point.
    later: bool,
    is_client: bool,
    this: HashSet<Id>,
    highest: Option<u64>,
    /// Ids at or below `resumed`, with when each came.
    replayed: Vec<(u64, f64)>,
}

impl Get {
    fn event(
        &mut self,
        history: &History,
        id: Id,
        t: f64,
        delivered: &HashSet<Id>,
        found: &mut Vec<Found>,
        maybe_gaps: &mut Vec<(Vec<u64>, f64, String)>,
    ) {
        let at = |breach, detail: String| Found {
            stream: self.stream,
            breach,
            ids: vec![id],
            t,
            detail,
        };
        let text = history.id_text(id);
        if !self.this.insert(id) {
            found.push(at(
                Breach::Duplicate,
                format!("SSE id {text} came twice on one GET of the stream"),
            ));
            return;
        }
        if let Id::Num(n) = id {
            if self.resumed.is_some_and(|last| n <= last) {
                self.replayed.push((n, t));
                return;
            }
            match (self.highest, self.resumed) {
                (Some(high), _) if n < high => found.push(at(
                    Breach::Reordered,
                    format!("SSE id {n} came after id {high}"),
                )),
                (Some(high), _) if n > high + 1 => maybe_gaps.push((
                    (high + 1..n).collect(),
                    t,
                    format!("SSE id {n} came right after id {high}"),
                )),
                (None, Some(last)) if n > last + 1 => maybe_gaps.push((
                    (last + 1..n).collect(),
                    t,
                    format!("after a resume with Last-Event-ID {last}, the next id was {n}"),
                )),
                _ => {}
            }
            self.highest = Some(self.highest.map_or(n, |h| h.max(n)));
        }
        if !self.is_client || !delivered.contains(&id) {
            return;
        }
        match self.resumed {
            Some(last) => found.push(at(
                Breach::Duplicate,
                format!("SSE id {text} came again: the client resumed from {last} although it had read {text}"),
            )),
            None if self.later => found.push(at(
                Breach::Replay,
                format!("a GET without Last-Event-ID after events were read: id {text} came again"),
            )),
            None => found.push(at(
                Breach::Duplicate,
                format!("SSE id {text} came again on a later GET"),
            )),
        }
    }
}

/// `id 7` or `ids 7–9`.
fn id_list(ids: &[u64]) -> String {
    match ids {
        [one] => format!("id {one}"),
        [first, .., last] if (last - first) as usize + 1 == ids.len() => {
            format!("ids {first}–{last}")
        }
        many => format!(
            "ids {}",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests;
