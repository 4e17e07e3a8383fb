//! The checker's cost (bench/checker.sh): how long it takes and how much
//! memory it holds on a big history, and what it costs a real run's cells.
//!
//! ```text
//! checker generate FILE MB   a made-up trace of about MB megabytes: turns of
//!                            session updates as every party records them
//!                            (agent, both hops' proxies, client, application,
//!                            store), with a resume every 500 events and one
//!                            duplicate the check must find
//! checker check FILE         the checker over FILE, read line by line as
//!                            `continuity check` reads a trace (no size cap
//!                            here: the point is a trace far past the 8 MB a
//!                            cell writes); prints time, MB/s, what it found,
//!                            and this process's peak resident memory
//! checker run DIR            each cell's trace of the run folder DIR checked:
//!                            the checker's time against the cell's own, with
//!                            what its hops' taps wrote into the trace while
//!                            the cell ran (each `hop_sse` line timed here as
//!                            the tap writes it: its data parsed, digested,
//!                            appended to a trace file)
//! ```

use continuity_check::{check, History};
use continuity_trace::event::Line;
use serde_json::{json, Value};
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["generate", file, mb] => generate(Path::new(file), mb.parse().expect("MB")),
        ["check", file] => check_big(Path::new(file)),
        ["run", dir] => check_run(Path::new(dir)),
        _ => {
            eprintln!("usage: checker generate FILE MB | check FILE | run DIR");
            std::process::exit(64);
        }
    }
}

fn update(session: &str, n: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("turn chunk {n}: some words of an answer")}}}})
}

fn generate(path: &Path, mb: u64) {
    let mut out = BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut t = 0.0;
    let mut line = |value: Value, out: &mut BufWriter<std::fs::File>| {
        t += 0.1;
        let mut value = value;
        value["t"] = json!((t * 10.0_f64).round() / 10.0);
        writeln!(out, "{value}").expect("write");
    };
    line(
        json!({"ev": "trace", "schema": "continuity.trace/v1", "level": "summary",
        "cell": {"target": "gateway", "scenario": "bench", "attempt": 1}}),
        &mut out,
    );
    line(
        json!({"ev": "phase_start", "phase": "turns", "step": "prompt"}),
        &mut out,
    );
    let limit = mb * 1024 * 1024;
    let sessions = ["agent-1111", "agent-2222", "agent-3333", "agent-4444"];
    let mut ids = [0u64; 4];
    let mut n = 0u64;
    while out.get_ref().metadata().map(|m| m.len()).unwrap_or(0) < limit {
        let k = (n % 4) as usize;
        let (session, stream) = (sessions[k], format!("sdk-mock-{k}"));
        if ids[k] % 500 == 0 {
            let last = (ids[k] > 0).then(|| ids[k].to_string());
            line(
                json!({"ev": "http", "method": "GET", "url": format!("/sandbox/v1/acp/{stream}"), "purpose": "stream",
                "ms": 1.0, "sent": 0, "received": 0, "status": 200, "lastEventId": last}),
                &mut out,
            );
            for hop in ["agent", "gateway"] {
                line(
                    json!({"ev": "hop_stream", "hop": hop, "conn": k, "stream": stream, "status": 200, "lastEventId": last}),
                    &mut out,
                );
            }
            line(
                json!({"ev": "rpc", "dir": "out", "via": "post", "method": "session/prompt", "rpcId": n, "session": session}),
                &mut out,
            );
        }
        ids[k] += 1;
        let id = ids[k].to_string();
        let digest = continuity_trace::digest::envelope(&update(session, n));
        line(
            json!({"ev": "agent_sent", "session": session, "method": "session/update", "digest": digest}),
            &mut out,
        );
        for hop in ["agent", "gateway"] {
            line(
                json!({"ev": "hop_sse", "hop": hop, "conn": k, "stream": stream, "id": id, "event": "message",
                "session": session, "method": "session/update", "digest": digest}),
                &mut out,
            );
        }
        // One duplicate on the gateway hop, halfway: the check must find it.
        let copies = if n == 40_000 { 2 } else { 1 };
        for _ in 0..copies {
            line(
                json!({"ev": "sse", "event": "message", "bytes": 240, "id": id, "method": "session/update",
                "stream": stream, "session": session, "digest": digest}),
                &mut out,
            );
        }
        line(
            json!({"ev": "app", "via": "recorder", "session": format!("local-{k}"), "sender": "agent",
            "conn": format!("conn-{k}"), "stream": stream, "agentSession": session, "method": "session/update", "digest": digest}),
            &mut out,
        );
        line(
            json!({"ev": "store", "call": "insertEvent", "driver": "sqlite", "ms": 1.2, "ok": true,
            "session": format!("local-{k}"), "eventIndex": ids[k], "sender": "agent", "conn": format!("conn-{k}"),
            "agentSession": session, "method": "session/update", "digest": digest}),
            &mut out,
        );
        n += 1;
    }
    line(
        json!({"ev": "phase_end", "phase": "turns", "outcome": "ok", "ms": 1}),
        &mut out,
    );
    out.flush().expect("flush");
    eprintln!(
        "{}: {n} updates, {} bytes",
        path.display(),
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    );
}

/// Each line of `path` to `keep`, as `continuity_trace::for_each_event`
/// reads a trace (one line at a time), without its size cap.
fn each_line(path: &Path, mut keep: impl FnMut(&Line)) {
    let reader = std::io::BufReader::new(std::fs::File::open(path).expect("open"));
    for bytes in reader.split(b'\n') {
        let bytes = bytes.expect("read");
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            if let Some(line) = Line::from_value(&value) {
                keep(&line);
            }
        }
    }
}

fn check_big(path: &Path) {
    let size = std::fs::metadata(path).expect("trace").len() as f64 / (1024.0 * 1024.0);
    let started = Instant::now();
    let mut history = History::default();
    each_line(path, |line| history.push(line));
    let verdict = check(&history, &[]);
    let took = started.elapsed().as_secs_f64();
    println!(
        "trace {size:.1} MB: checked in {:.2} s ({:.1} MB/s), {} violations ({}), peak RSS {:.1} MB",
        took,
        size / took,
        verdict.violations.len(),
        verdict.first().map(|v| v.short()).unwrap_or_default(),
        peak_rss_mb()
    );
}

fn check_run(dir: &Path) {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    let report: Value = serde_json::from_str(&text).expect("report");
    let tell_ms = tell_cost_ms();
    let (mut cells_ms, mut cost_ms, mut n, mut idle) = (0.0, 0.0, 0, 0);
    let mut worst: Option<(f64, f64, String)> = None;
    for cell in report["cells"].as_array().into_iter().flatten() {
        let attempts: Vec<&Value> = match cell["attempts"].as_array() {
            Some(all) if !all.is_empty() => all.iter().collect(),
            _ => vec![cell],
        };
        for attempt in attempts {
            let Some(trace) = attempt["trace"].as_str() else {
                continue;
            };
            let path = dir.join(trace);
            let started = Instant::now();
            let checked = continuity_check::check_file(&path, &[]);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            if checked.is_err() {
                continue;
            }
            let ms = ms + tell_ms * tapped(&path) as f64;
            let cell_ms = attempt["durationMs"].as_f64().unwrap_or(0.0);
            cells_ms += cell_ms;
            cost_ms += ms;
            n += 1;
            // A cell that ran nothing (its first step not applicable) has no time to share.
            if cell_ms < 1.0 {
                idle += 1;
                continue;
            }
            if worst.as_ref().is_none_or(|(w, _, _)| ms / cell_ms > *w) {
                worst = Some((ms / cell_ms, cell_ms, trace.to_string()));
            }
        }
    }
    let (share, worst_ms, worst_trace) = worst.unwrap_or_default();
    println!(
        "{n} attempts: cells {:.1} s, checker and taps {:.0} ms in all ({:.2} % of the cells' time), {:.1} ms per attempt; \
         worst {:.2} % ({worst_trace}, {:.1} s); {idle} ran no step; a tapped event {:.1} µs",
        cells_ms / 1000.0,
        cost_ms,
        100.0 * cost_ms / cells_ms.max(1.0),
        cost_ms / f64::from(n.max(1)),
        100.0 * share,
        worst_ms / 1000.0,
        tell_ms * 1000.0,
    );
}

/// How many events the hops' taps told the trace at `path`.
fn tapped(path: &Path) -> usize {
    let mut n = 0;
    each_line(path, |line| {
        if matches!(
            line.event,
            continuity_trace::event::Event::HopSse(_)
                | continuity_trace::event::Event::HopStream(_)
        ) {
            n += 1;
        }
    });
    n
}

/// What one tapped SSE event costs the cell, in ms: `Trace::hop_sse` (as
/// the runner's tap calls it) on a session update, into a trace file.
fn tell_cost_ms() -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = continuity_trace::Trace::create(
        dir.path(),
        continuity_trace::TraceLevel::Summary,
        None,
        None,
    )
    .expect("trace");
    let data = update("agent-1111", 7).to_string();
    let rounds = 10_000;
    let started = Instant::now();
    for i in 0..rounds {
        trace.hop_sse(
            "gateway",
            1,
            "/v1/acp/sdk-mock-1",
            (Some(i.to_string()), "message".into(), &data),
        );
    }
    trace.flush();
    started.elapsed().as_secs_f64() * 1000.0 / f64::from(rounds)
}

/// This process's peak resident set (VmHWM), in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
