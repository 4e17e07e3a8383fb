//! Property tests of the transport's decoders: whatever bytes a server
//! sends on the SSE stream and whatever JSON arrives as an envelope, the
//! transport answers with events or a typed error, never a panic; and an
//! envelope survives any split of the stream into chunks.

use super::envelope::{response_id, rpc_result};
use super::stream::{decode_stream, DecodeError, StreamEvent};
use super::{Transport, TransportConfig};
use crate::acp::error::Problem;
use futures_util::StreamExt;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// Bytes that look like SSE often enough to reach the parser's corners.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: message\n".to_vec()),
        Just(b"event: other\n".to_vec()),
        Just(b"id: 7\n".to_vec()),
        Just(b"retry: 10\n".to_vec()),
        Just(b": comment\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_vec()),
        Just(b"{\"method\":\"x\"".to_vec()),
        Just("é€\u{feff}".as_bytes().to_vec()),
        Just(vec![0xff, 0xfe, 0x80]),
        proptest::collection::vec(any::<u8>(), 0..40),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

/// `bytes` cut at the given points into chunks, as the network may deliver them.
fn chunked(bytes: &[u8], cuts: &[usize]) -> Vec<Result<bytes::Bytes, String>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        chunks.push(Ok(bytes::Bytes::copy_from_slice(&bytes[from..cut])));
        from = cut;
    }
    chunks
}

fn decode(chunks: Vec<Result<bytes::Bytes, String>>) -> Vec<Result<StreamEvent, String>> {
    shared().0.block_on(async {
        decode_stream(futures_util::stream::iter(chunks))
            .map(|item| {
                item.map_err(|e| match e {
                    DecodeError::Transport(e) => format!("transport: {e}"),
                    DecodeError::Malformed(e) => format!("malformed: {e}"),
                })
            })
            .collect()
            .await
    })
}

/// Any JSON, with envelope keys and values more often than chance would give.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("2.0".to_string()),
            Just("session/request_permission".to_string()),
            Just("_adapter/agent_exited".to_string()),
            any::<String>(),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("jsonrpc".to_string()),
            Just("id".to_string()),
            Just("method".to_string()),
            Just("result".to_string()),
            Just("error".to_string()),
            Just("params".to_string()),
            Just("code".to_string()),
            Just("message".to_string()),
            Just("data".to_string()),
            any::<String>(),
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key, inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// One runtime and one HTTP client for all cases: building a client loads
/// the certificate store, which would be most of the test's time.
fn shared() -> &'static (tokio::runtime::Runtime, reqwest::Client) {
    static SHARED: std::sync::OnceLock<(tokio::runtime::Runtime, reqwest::Client)> =
        std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (runtime, crate::http::client_builder().build().unwrap())
    })
}

fn transport() -> Transport {
    let (runtime, client) = shared();
    let _guard = runtime.enter();
    let (observer, _rx) = tokio::sync::mpsc::unbounded_channel();
    Transport::new(
        TransportConfig {
            // Nothing listens there: replies the transport sends fail quietly.
            base_url: "http://127.0.0.1:9".into(),
            server_id: "sdk-mock-props".into(),
            bootstrap_agent: Some("mock".into()),
            token: None,
            headers: Default::default(),
            delete_timeout: Duration::from_millis(10),
            headers_timeout: None,
        },
        client.clone(),
        observer,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_sse_reader_never_panics(bytes in sse_bytes(), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let events = decode(chunked(&bytes, &cuts));
        // After an error the stream is over for the transport; before it,
        // every envelope is JSON that was on a data line.
        for event in events.iter().flatten() {
            if let Some(envelope) = &event.envelope {
                prop_assert!(serde_json::to_string(envelope).is_ok());
            }
        }
    }

    #[test]
    fn an_envelope_survives_any_chunking(
        before in sse_bytes(),
        id in 1i64..1_000_000,
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        // Whatever came before, once a blank line ends it, one well-formed
        // message event decodes to exactly its envelope.
        let envelope = json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}});
        let mut bytes = before;
        bytes.extend_from_slice(format!("\n\nid: e{id}\nevent: message\ndata: {envelope}\n\n").as_bytes());
        let events = decode(chunked(&bytes, &cuts));
        let found = events.iter().flatten().any(|e| e.envelope.as_ref() == Some(&envelope) && e.id == format!("e{id}"));
        let failed_first = events.iter().any(Result::is_err);
        prop_assert!(found || failed_first, "{events:?}");
    }

    #[test]
    fn the_envelope_reader_never_panics(envelope in json_value(), from_stream in any::<bool>()) {
        if let Value::Object(object) = &envelope {
            let _ = response_id(object);
        }
        let _ = rpc_result("1".into(), envelope.clone());
        let _ = Problem::parse(envelope.to_string().as_bytes());
        let transport = transport();
        shared().0.block_on(async {
            transport.inner.push_inbound(envelope, from_stream);
        });
    }

    #[test]
    fn problem_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Problem::parse(&body);
    }
}
