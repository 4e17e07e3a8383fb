//! The POST half of the transport: one envelope per request, its exchange
//! traced; a 200 body is an inbound envelope, any failure (status, transport
//! error, a body over the envelope limit, the client's header timeout)
//! closes the transport with it.

use super::envelope::read_bounded;
use super::{Inner, MAX_ENVELOPE_BYTES};
use crate::acp::error::{AcpError, Problem};
use crate::trace::{strip_access_token, Exchange, Flight, Purpose};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::Value;
use std::sync::Arc;

impl Inner {
    pub(super) async fn post(self: Arc<Self>, url: String, envelope: Value) {
        // Awaiting its answer until it ends, whichever way (or is dropped).
        let _flight = self.trace.in_flight(
            Flight::Request,
            format!("POST {}", strip_access_token(&url)),
        );
        let body = envelope.to_string();
        let mut exchange = Exchange {
            method: "POST",
            url: url.clone(),
            purpose: Purpose::AcpPost,
            attempt: None,
            status: None,
            elapsed: std::time::Duration::ZERO,
            sent: body.len() as u64,
            received: 0,
            failure: None,
            last_event_id: None,
        };
        let started = std::time::Instant::now();
        let sent = self
            .http
            .post(&url)
            .headers(self.headers())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(body)
            .send();
        // `send` ends when the response's headers have come: the client's
        // header timeout (undici's `headersTimeout`) bounds exactly that.
        let sent = match self.config.headers_timeout {
            None => sent.await,
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(sent) => sent,
                Err(_) => {
                    let ms = limit.as_millis() as u64;
                    return self.fail_exchange(exchange, started, AcpError::HeadersTimeout { ms });
                }
            },
        };
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                return self.fail_exchange(
                    exchange,
                    started,
                    AcpError::from_reqwest(&url, &e, crate::http::CONNECT_TIMEOUT),
                )
            }
        };
        let status = response.status();
        exchange.status = Some(status.as_u16());
        let body = match read_bounded(response).await {
            Ok(body) => body,
            Err(e) => {
                return self.fail_exchange(
                    exchange,
                    started,
                    AcpError::from_reqwest(&url, &e, crate::http::CONNECT_TIMEOUT),
                )
            }
        };
        let Some(body) = body else {
            exchange.received = MAX_ENVELOPE_BYTES as u64;
            return self.fail_exchange(
                exchange,
                started,
                AcpError::Malformed {
                    detail: format!(
                        "response body over {MAX_ENVELOPE_BYTES} bytes (the envelope limit)"
                    ),
                },
            );
        };
        exchange.received = body.len() as u64;
        if !status.is_success() {
            let error = AcpError::Http {
                status: status.as_u16(),
                problem: Problem::parse(&body),
            };
            return self.fail_exchange(exchange, started, error);
        }
        exchange.elapsed = started.elapsed();
        self.trace.http(exchange);
        if status.as_u16() != 200 || body.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(envelope) => self.push_inbound(envelope, false),
            Err(e) => self.fail(AcpError::Malformed {
                detail: format!("POST response is not JSON: {e}"),
            }),
        }
    }

    /// Records a failed exchange, then fails the transport with its error.
    fn fail_exchange(&self, mut exchange: Exchange, started: std::time::Instant, error: AcpError) {
        exchange.elapsed = started.elapsed();
        exchange.failure = Some(error.seen());
        self.trace.http(exchange);
        self.fail(error);
    }
}
