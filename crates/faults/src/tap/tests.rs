use super::*;

fn chunk(text: &str) -> String {
    format!("{:x}\r\n{text}\r\n", text.len())
}

/// A POST answered with a JSON body, then a stream GET resumed from 2,
/// answered with two events in chunks (one event split across two).
fn conversation() -> (Vec<u8>, Vec<u8>) {
    let up = "POST /v1/acp/s1 HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n{}\r\nGET /v1/acp/s1 HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nLast-Event-ID: 2\r\n\r\n";
    let down = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{{}}HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{}{}{}{}",
        chunk("id: 3\ndata: {\"a\":1}\n\n: keep-alive\n\nid: 4\r\nda"),
        chunk("ta: {\"b\":"),
        chunk("2}\r\n\r\n"),
        "0\r\n\r\n",
    );
    (up.as_bytes().to_vec(), down.into_bytes())
}

fn sniff(up: &[u8], down: &[u8], piece: usize) -> Vec<TapEvent> {
    let mut sniffer = Sniffer::default();
    let mut seen = Vec::new();
    for part in up.chunks(piece) {
        sniffer.upstream(part);
    }
    for part in down.chunks(piece) {
        sniffer.downstream(7, part, &mut |e| seen.push(e));
    }
    seen
}

#[test]
fn a_streams_get_and_its_events_are_told_however_the_bytes_are_cut() {
    let (up, down) = conversation();
    let whole = sniff(&up, &down, usize::MAX);
    let sse = |id: &str, data: &str| TapEvent::Sse {
        conn: 7,
        path: "/v1/acp/s1".into(),
        id: Some(id.into()),
        event: "message".into(),
        data: data.into(),
    };
    assert_eq!(
        whole,
        [
            TapEvent::Stream {
                conn: 7,
                path: "/v1/acp/s1".into(),
                last_event_id: Some("2".into()),
                status: 200,
            },
            sse("3", r#"{"a":1}"#),
            sse("4", r#"{"b":2}"#),
        ]
    );
    for piece in [1, 2, 3, 7, 13] {
        assert_eq!(sniff(&up, &down, piece), whole, "cut in pieces of {piece}");
    }
}

#[test]
fn what_it_cannot_follow_it_leaves_alone() {
    // A body read until the close, then what would look like a stream.
    let mut sniffer = Sniffer::default();
    sniffer.upstream(b"GET /x HTTP/1.1\r\n\r\nGET /v1/acp/s HTTP/1.1\r\n\r\n");
    let mut seen = Vec::new();
    sniffer.downstream(1, b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n", &mut |e| seen.push(e));
    assert!(seen.is_empty(), "{seen:?}");
    // A WebSocket upgrade: nothing after the 101 is read.
    let mut sniffer = Sniffer::default();
    sniffer.upstream(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
    sniffer.downstream(
        1,
        b"HTTP/1.1 101 Switching Protocols\r\n\r\nid: 1\ndata: x\n\n",
        &mut |e| seen.push(e),
    );
    assert!(seen.is_empty(), "{seen:?}");
    // Garbage is given up on, never a panic.
    let mut sniffer = Sniffer::default();
    sniffer.upstream(&[0xff; 100]);
    sniffer.downstream(1, &[0; 100_000], &mut |e| seen.push(e));
    assert!(seen.is_empty());
}
