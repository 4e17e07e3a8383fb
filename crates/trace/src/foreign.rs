//! Events another process recorded on its own clock — the hosted SDK's
//! exchanges, which the `sdkClient` actor records and hands back in
//! batches — placed in the trace at the time they happened. They reach the
//! file after events that came later, so a reader that lists a trace in
//! time order sorts it by `t` (the timeline does).

use super::event::{Event, Http};
use super::{Exchange, Seen, Trace};

impl Trace {
    /// The trace time of a wall-clock instant in Unix milliseconds (the
    /// same system clock on this machine, whichever process read it).
    pub fn t_of_epoch_ms(&self, epoch_ms: f64) -> f64 {
        (((epoch_ms - self.inner.start_epoch_ms) * 10.0).round() / 10.0).max(0.0)
    }

    /// An exchange that ended at `t`, counted on its channel like one of
    /// the cell's own; `extra` adds what only the recorder knows.
    pub fn recorded_http(&self, t: f64, exchange: Exchange, extra: impl FnOnce(&mut Http)) {
        self.http_at(t, exchange, extra);
    }

    /// The end of an event stream at `t` after `(events, bytes)`, counted
    /// on its channel; `closed_by` says when the client closed it.
    pub fn recorded_stream_end(
        &self,
        t: f64,
        url: &str,
        counts: (u64, u64),
        failure: Option<&Seen>,
        closed_by: Option<String>,
    ) {
        self.stream_end_at(t, url, counts, failure, closed_by);
    }

    /// Any other event (`sse`, `rpc`, `store`, `sdk`) at `t`, redacted as every event is.
    pub fn recorded(&self, t: f64, event: Event) {
        self.emit_at(t, event);
    }
}
