//! The hosted client's wire end to end: the recording `fetch` the
//! `sdkClient` actor gives the real TypeScript SDK (`stack/rivet/wire.mjs`),
//! against a real sandbox-agent server, and ts-sdk cells on the real local
//! stack whose traces hold the SDK's HTTP exchanges, whose timelines show
//! the 400 the SDK keeps to itself, and whose floor covers their time.
//! These need node and nginx (`.ci/setup` installs them); without them they
//! fail, loudly.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn wire_module() -> PathBuf {
    Path::new(REPO).join("stack/rivet/wire.mjs")
}

/// `(start, end)` of a phase in its trace.
fn phase_window(events: &[Value], name: &str) -> (f64, f64) {
    let at = |ev: &str| {
        events
            .iter()
            .find(|e| e["ev"] == ev && e["phase"] == name)
            .and_then(|e| e["t"].as_f64())
            .unwrap_or_else(|| panic!("no {ev} of {name}"))
    };
    (at("phase_start"), at("phase_end"))
}

#[tokio::test]
async fn the_recording_fetch_keeps_a_real_servers_exchanges_and_never_a_token() {
    let server = support::Server::start().await;
    let token = "sk-wire-probe-0123456789abcdef";
    let refused = {
        // A port with nothing listening: bound, then closed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/v1/health")
    };
    let wire = wire_module().display().to_string();
    let args = [wire.as_str(), &server.base_url(), token, &refused];
    let stdout = support::node_fixture("wire-probe.mjs", &args).await;
    assert!(
        !stdout.contains(token),
        "a token reached the records: {stdout}"
    );
    assert!(!stdout.to_ascii_lowercase().contains("bearer"), "{stdout}");
    let log: Value = serde_json::from_str(stdout.trim()).unwrap();
    let records = log["records"].as_array().unwrap();
    let http: Vec<&Value> = records.iter().filter(|r| r["kind"] == "http").collect();
    let find = |method: &str, path: &str| -> &Value {
        http.iter()
            .find(|r| r["method"] == method && r["url"].as_str().unwrap().starts_with(path))
            .unwrap_or_else(|| panic!("no {method} {path} in {records:?}"))
    };
    let health = find("GET", "/v1/health?");
    assert_eq!(health["url"], "/v1/health?access_token=[redacted]&probe=1");
    assert_eq!(health["status"], 200);
    let missing = find("POST", "/v1/acp/probe-missing-agent");
    assert_eq!(missing["status"], 400);
    assert_eq!(
        missing["problemType"],
        "urn:sandbox-agent:error:invalid_request"
    );
    assert!(missing["received"].as_u64().unwrap() > 0, "{missing}");
    let post = find("POST", "/v1/acp/probe-live?agent=mock");
    assert_eq!(post["status"], 200);
    assert!(post["sent"].as_u64().unwrap() > 0, "{post}");
    // Start, headers and end: each at or after the one before.
    for r in [health, missing, post] {
        let (start, headers, end) = (
            r["start"].as_f64().unwrap(),
            r["headersAt"].as_f64().unwrap(),
            r["at"].as_f64().unwrap(),
        );
        assert!(start <= headers && headers <= end, "{r}");
    }
    let stream = find("GET", "/v1/acp/probe-live");
    assert_eq!(stream["purpose"], "stream");
    assert_eq!(stream["status"], 200);
    let sse: Vec<&Value> = records.iter().filter(|r| r["kind"] == "sse").collect();
    assert!(
        sse.iter().any(|e| e["rpcId"] == 2 && e["id"].is_string()),
        "the initialize response on the stream, with its event id: {sse:?}"
    );
    let end = records
        .iter()
        .find(|r| r["kind"] == "stream_end")
        .expect("the stream's end");
    assert_eq!(end["closedBy"], "client", "{end}");
    assert!(end.get("error").is_none(), "{end}");
    let delete = find("DELETE", "/v1/acp/probe-live");
    assert!(
        delete["status"].is_u64() || delete["error"]["kind"] == "timeout",
        "{delete}"
    );
    let rpc_out: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "rpc" && r["dir"] == "out")
        .collect();
    assert!(
        rpc_out.iter().all(|r| r["method"] == "initialize"),
        "{rpc_out:?}"
    );
    let refused_path = refused.trim_start_matches("http://");
    let refused_path = &refused_path[refused_path.find('/').unwrap()..];
    let failed = http
        .iter()
        .find(|r| r["url"] == refused_path)
        .expect("the refused request");
    assert_eq!(failed["error"]["kind"], "refused", "{failed}");
    // Sequence numbers in order, nothing dropped.
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(log["dropped"], 0);
    // Acknowledged up to 3: the rest stays for the next answer; another
    // log's acknowledgement (a restarted runner's) removes nothing.
    let kept: Vec<u64> = seqs.iter().copied().filter(|s| *s > 3).collect();
    assert_eq!(log["acknowledged"], serde_json::json!(kept));
    assert_eq!(log["foreign"].as_u64(), Some(kept.len() as u64));
}

#[test]
fn a_ts_sdk_cells_trace_holds_its_exchanges_and_its_floor_covers_its_time() {
    let _one = support::stack_slot();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = support::continuity_with(
        &[
            "run",
            "--client",
            "ts-sdk",
            "--target",
            "agent",
            "--scenario",
            "native-continuity",
            "--scenario",
            "recreate-rehydrate",
            "--timeout-ms",
            "10000",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    // native-continuity fails on the agent target (the seed's finding).
    support::assert_exit(&run, continuity::exit_codes::FAILED);
    let report = support::report(&out);

    // recreate-rehydrate passes: the whole life of a connection is on the wire.
    let passing = support::cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "agent"),
            ("scenario", "recreate-rehydrate"),
        ],
    );
    assert_eq!(passing["verdict"], "pass", "{passing}");
    let events = support::trace_of(&out, passing);
    let http: Vec<&Value> = events.iter().filter(|e| e["ev"] == "http").collect();
    let acp = |method: &str| {
        http.iter()
            .filter(|e| e["method"] == method && e["url"].as_str().unwrap().contains("/v1/acp/"))
            .count()
    };
    assert!(
        acp("POST") >= 4 && acp("GET") >= 2 && acp("DELETE") >= 1,
        "POST, GET and DELETE on /v1/acp/…: {http:?}"
    );
    assert!(
        http.iter()
            .all(|e| e["status"].is_u64() || e["error"].is_string() || e["closedBy"] == "client"),
        "each exchange has its status or what ended it: {http:?}"
    );
    assert!(events
        .iter()
        .any(|e| e["ev"] == "sse" && e["id"].is_string()));
    assert!(events
        .iter()
        .any(|e| e["ev"] == "store" && e["driver"] == "rivet"));
    let text = std::fs::read_to_string(out.join(passing["trace"].as_str().unwrap())).unwrap();
    assert!(!text.contains("Authorization") && !text.contains("Bearer"));
    // Its floor: the SDK's actions and exchanges, the restart; the rest is the harness's.
    let floor_of = |cell: &Value| {
        let floor = cell["floorMs"].as_u64().expect("a floor") as f64;
        let overhead = cell["overheadMs"].as_u64().unwrap() as f64;
        floor / (floor + overhead)
    };
    assert!(
        floor_of(passing) >= 0.8,
        "floor share {}",
        floor_of(passing)
    );

    // native-continuity: the prompt after the restart is left pending by the
    // SDK; its trace shows the 400 the SDK got and kept to itself.
    let failing = support::cell_where(
        &report,
        &[
            ("client", "ts-sdk"),
            ("target", "agent"),
            ("scenario", "native-continuity"),
        ],
    );
    assert_eq!(
        failing["failureBoundary"], "promptSameHandleAfterRestart",
        "{failing}"
    );
    let events = support::trace_of(&out, failing);
    let (start, end) = phase_window(&events, "promptSameHandleAfterRestart");
    let the_400 = events
        .iter()
        .find(|e| {
            e["ev"] == "http"
                && e["method"] == "POST"
                && e["status"] == 400
                && e["problemType"] == "invalid_request"
        })
        .expect("the SDK's POST answered 400");
    let t = the_400["t"].as_f64().unwrap();
    assert!(
        start <= t && t <= end,
        "in its phase: {start} <= {t} <= {end}"
    );
    // Long before the phase's deadline: the SDK had the answer and waited on.
    assert!(t - start < 3000.0, "{t} - {start}");
    let phase = support::phase(failing, "promptSameHandleAfterRestart");
    // Hung, not waited out: nothing was in flight after the 400.
    assert_eq!(phase["signature"]["kind"], "hung", "{phase}");
    let signature = &phase["signature"];
    assert!(
        signature["observed"]
            .as_str()
            .is_some_and(|o| o.contains("HTTP 400 invalid_request")),
        "{signature}"
    );
    assert_eq!(signature["cause"]["httpStatus"], 400, "{signature}");
    // The floor counts the SDK's time, its pending prompts to their end among it.
    assert!(
        floor_of(failing) >= 0.8,
        "floor share {}",
        floor_of(failing)
    );

    // `show --cell` and the HTML report show the exchange.
    let show = support::continuity_with(
        &[
            "show",
            out.to_str().unwrap(),
            "--cell",
            "agent/native-continuity/ts-sdk",
        ],
        &[],
    );
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("→ 400 invalid_request")
            && shown.contains("sdk prompt → no answer when its phase ended"),
        "{shown}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#""ev":"sdk""#) && html.contains(r#""headersMs""#));
}
