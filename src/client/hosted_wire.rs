//! The hosted SDK's wire, as the `sdkClient` actor records it
//! (`stack/rivet/wire.mjs`), written into the cell's trace: each record at
//! the time it happened (the actor's epoch milliseconds mapped onto the
//! cell's clock), each once — the actor repeats every record continuity has
//! not acknowledged, so an answer continuity gave up on loses nothing — and
//! the exchanges counted on their channels like the Rust client's, so a
//! phase's `observed` text and cause read the same for both clients.
//! What the actor has in flight (its `Flight` report, polled while a call
//! is pending) becomes the trace's [`HostReport`] ([`ingest_flight`]).

use crate::trace::event::{self, Event};
use crate::trace::{ErrorKind, Exchange, Flight, HostReport, Purpose, Seen, Trace};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Which records of the actor's wire log are already in the trace.
#[derive(Debug, Default)]
pub(super) struct WireCursor {
    /// Per log (a runner restart starts a new one): the last sequence number written.
    written: HashMap<String, u64>,
    /// The log the latest answer came from: the one to acknowledge.
    latest: Option<String>,
    /// Records the actor could not keep (its log full), as last reported.
    dropped: u64,
}

impl WireCursor {
    /// What the next action acknowledges: `{origin, seq}`, or null before any answer.
    pub(super) fn ack(&self) -> Value {
        match &self.latest {
            Some(origin) => {
                json!({"origin": origin, "seq": self.written.get(origin).copied().unwrap_or(0)})
            }
            None => Value::Null,
        }
    }

    /// Writes the records of an answer's `wire` field that the trace lacks.
    pub(super) fn ingest(&mut self, trace: &Trace, wire: &Value) {
        let Some(origin) = wire.get("origin").and_then(Value::as_str) else {
            return;
        };
        let new_log = !self.written.contains_key(origin);
        let written = self.written.entry(origin.to_string()).or_insert(0);
        let mut last = *written;
        for record in wire
            .get("records")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(seq) = record.get("seq").and_then(Value::as_u64) else {
                continue;
            };
            if seq <= *written {
                continue;
            }
            write_record(trace, record);
            last = last.max(seq);
        }
        *written = last;
        if self.latest.as_deref() != Some(origin) {
            // A log after the first: the host restarted, and what its old
            // log held beyond the last fetch went with it.
            if self.latest.is_some() && new_log {
                trace.emit(Event::WireDropped(event::WireDropped {
                    dropped: 0,
                    restarted: true,
                }));
            }
            self.latest = Some(origin.to_string());
            self.dropped = 0;
        }
        let dropped = wire.get("dropped").and_then(Value::as_u64).unwrap_or(0);
        if dropped > self.dropped {
            trace.emit(Event::WireDropped(event::WireDropped {
                dropped: dropped - self.dropped,
                restarted: false,
            }));
            self.dropped = dropped;
        }
    }
}

/// The actor's `Flight` report (`{now, activeAt, open: [{kind, what,
/// since}], acting: [{phase, since}]}`, epoch milliseconds) as the trace's
/// [`HostReport`]. Something open that does not read is still open (as
/// the host's own work): a report is never read as quieter than it is.
pub(super) fn ingest_flight(trace: &Trace, flight: &Value) {
    let t = |v: Option<&Value>| v.and_then(Value::as_f64).map(|ms| trace.t_of_epoch_ms(ms));
    let Some(at) = t(flight.get("now")) else {
        return;
    };
    let list = |key: &str| {
        flight
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let acting = list("acting")
        .iter()
        .filter_map(|a| Some((text(a, "phase")?, t(a.get("since"))?)))
        .collect();
    let open = list("open")
        .iter()
        .map(|o| {
            let kind = o.get("kind").and_then(|k| Flight::deserialize(k).ok());
            (
                kind.unwrap_or(Flight::Host),
                text(o, "what").unwrap_or_default(),
                t(o.get("since")).unwrap_or(at),
            )
        })
        .collect();
    trace.host_report(HostReport {
        at,
        acting,
        open,
        active_at: t(flight.get("activeAt")),
    });
}

fn write_record(trace: &Trace, record: &Value) {
    let num = |k: &str| record.get(k).and_then(Value::as_f64);
    let text = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or_default();
    let Some(at) = num("at") else { return };
    let t = trace.t_of_epoch_ms(at);
    let since_start = num("start").map(|start| (at - start).max(0.0));
    match text("kind") {
        "http" => {
            let exchange = exchange(record, since_start.unwrap_or(0.0));
            let headers_ms = match (num("headersAt"), num("start")) {
                (Some(headers), Some(start)) => Some(round(headers - start)),
                _ => None,
            };
            trace.recorded_http(t, exchange, |http| {
                http.closed_by = closed_by(record);
                http.client = Some("ts-sdk".into());
                http.headers_ms = headers_ms;
            });
        }
        "stream_end" => {
            let failure = record.get("error").map(transport_failure);
            trace.recorded_stream_end(
                t,
                text("url"),
                (
                    num("events").unwrap_or(0.0) as u64,
                    num("received").unwrap_or(0.0) as u64,
                ),
                failure.as_ref(),
                closed_by(record),
            );
        }
        "sse" => {
            if let Some(sse) = fields::<event::Sse>(record) {
                // Never a body, whatever the record holds: the trace's level decides that.
                let sse = event::Sse { body: None, ..sse };
                trace.recorded(t, Event::Sse(sse));
            }
        }
        "rpc" => {
            if let Some(rpc) = fields::<event::Rpc>(record) {
                let rpc = event::Rpc { body: None, ..rpc };
                trace.recorded(t, Event::Rpc(rpc));
            }
        }
        "store" => {
            if let Some(mut store) = fields::<event::Store>(record) {
                store.ms = since_start.map(round);
                trace.recorded(t, Event::Store(store));
            }
        }
        // What the SDK's listener handed the application.
        "app" => {
            if let Some(app) = fields::<event::Handed>(record) {
                trace.recorded(t, Event::App(app));
            }
        }
        _ => {}
    }
}

/// A record's fields as the event they describe: the actor writes them
/// under the trace's names (a record's own `kind`, `at`, `seq` are not
/// among them). A record that does not fit is left out.
fn fields<T: DeserializeOwned>(record: &Value) -> Option<T> {
    serde_json::from_value(record.clone()).ok()
}

/// An `http` record as the trace's exchange.
fn exchange(record: &Value, elapsed_ms: f64) -> Exchange {
    let text = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or_default();
    let count = |k: &str| record.get(k).and_then(Value::as_f64).unwrap_or(0.0) as u64;
    let status = record
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let purpose = purpose(record);
    let failure = match (record.get("error"), status) {
        (Some(error), _) => Some(transport_failure(error)),
        // The SDK ignores a DELETE's status, as the Rust client does.
        (None, Some(status)) if !(200..300).contains(&status) && purpose != Purpose::Delete => {
            Some(Seen::Status {
                status,
                problem_type: record
                    .get("problemType")
                    .and_then(Value::as_str)
                    .map(|t| t.rsplit(':').next().unwrap_or(t).to_string()),
                detail: record
                    .get("detail")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        }
        _ => None,
    };
    let mut exchange = Exchange::new(method(text("method")), text("url"), purpose);
    exchange.last_event_id = record
        .get("lastEventId")
        .and_then(Value::as_str)
        .map(str::to_string);
    exchange.status = status;
    exchange.elapsed = std::time::Duration::from_secs_f64(elapsed_ms / 1000.0);
    exchange.sent = count("sent");
    exchange.received = count("received");
    exchange.failure = failure;
    exchange
}

/// `client` when the SDK itself ended the request (it closed its transport).
fn closed_by(record: &Value) -> Option<String> {
    record
        .get("closedBy")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn transport_failure(error: &Value) -> Seen {
    // The actor writes continuity's kinds; one it does not know is `other`.
    let kind = error
        .get("kind")
        .and_then(|kind| ErrorKind::deserialize(kind).ok())
        .unwrap_or(ErrorKind::Other);
    Seen::Error {
        kind,
        detail: error
            .get("detail")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    }
}

/// The record's purpose by its trace name; any other is `api`.
fn purpose(record: &Value) -> Purpose {
    record
        .get("purpose")
        .and_then(|name| Purpose::deserialize(name).ok())
        .unwrap_or(Purpose::Api)
}

/// The trace keeps methods as static names; anything unusual is `OTHER`.
fn method(name: &str) -> &'static str {
    match name {
        "GET" => "GET",
        "POST" => "POST",
        "DELETE" => "DELETE",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "HEAD" => "HEAD",
        _ => "OTHER",
    }
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests;
