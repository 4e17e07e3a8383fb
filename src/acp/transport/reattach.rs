//! A re-attached stream: one `GET /v1/acp/{serverId}` with the
//! `Last-Event-ID` a client last had, read for a bounded while, as a client
//! recovering a turn whose answer never reached it would read it. It is a
//! transport of its own (nothing posted, so nothing to DELETE): what the
//! server replays is traced as the cell's `sse` events.

use super::{Transport, TransportConfig};
use crate::acp::AcpError;
use crate::trace::Trace;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What one re-attached stream delivered.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    /// The envelopes of its `message` events, in order.
    pub envelopes: Vec<Value>,
    /// Why the GET or the stream failed, when it did before `within` ran out.
    pub error: Option<AcpError>,
}

impl Transport {
    /// Opens `config`'s server id's stream once from `last_event_id` and
    /// reads it until `within` passes, the stream ends, or `enough` says
    /// the envelopes read so far hold what was looked for.
    pub(crate) async fn reattach(
        config: TransportConfig,
        http: reqwest::Client,
        trace: Trace,
        last_event_id: Option<String>,
        within: Duration,
        enough: impl Fn(&[Value]) -> bool,
    ) -> Replayed {
        let (tx, mut rx) = mpsc::unbounded_channel();
        // The harness's own reading, never taken for the client's stream.
        let transport = Transport::traced(config, http, tx, trace.probing());
        let inner = Arc::clone(&transport.inner);
        let read = async move { inner.read_stream_once(last_event_id).await };
        tokio::pin!(read);
        let deadline = tokio::time::sleep(within);
        tokio::pin!(deadline);
        let mut out = Replayed::default();
        loop {
            tokio::select! {
                ended = &mut read => {
                    out.error = ended;
                    break;
                }
                Some(seen) = rx.recv() => {
                    out.envelopes.push(seen.envelope);
                    if enough(&out.envelopes) {
                        break;
                    }
                }
                () = &mut deadline => break,
            }
        }
        while let Ok(seen) = rx.try_recv() {
            out.envelopes.push(seen.envelope);
        }
        transport.shut();
        out
    }

    /// The ACP server id this transport talks to.
    pub(crate) fn server_id(&self) -> &str {
        &self.inner.config.server_id
    }

    /// The id of the last stream event read: what a resumed stream sends
    /// as `Last-Event-ID`.
    pub(crate) fn last_event_id(&self) -> Option<String> {
        self.inner.lock().last_event_id.clone()
    }
}
