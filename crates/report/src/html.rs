//! `report.html`: one self-contained page per run (inline CSS and JS, no
//! network), the matrix in colour with each failure's signature, and per
//! cell a timeline read from its `trace.jsonl` — phases as bars on one time
//! axis, the restart window shaded, requests and events as marks with their
//! status and latency on hover, the failure boundary highlighted — then the
//! signatures, restart timings and links to the trace and the logs; and
//! the unhandled rejections of every cell that ran the real SDK (`ts-sdk`,
//! `browser`), in a section of their own and in each cell's detail.
//!
//! The page is drawn by its script from the data embedded in it; the script
//! ends by writing a self-check (cells, timelines, boundaries drawn; every
//! verdict's mark drawn, no emoji on the page, no part wider than the
//! window) into the DOM, and any script error too, which the browser test
//! reads. The marks are inline SVG, so a machine without an emoji font (a
//! CI screenshot) shows them too; a wide table scrolls in its own box.

use super::model::Report;
use crate::run_dir::RunDir;
use crate::trace::event::Event;
use crate::trace::TraceError;
use serde_json::{json, Map, Value};

const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");
/// Request and event marks drawn per cell; a cell with more keeps the first
/// ones (its trace file keeps all), which also bounds the page and the memory
/// it takes to write it.
const MAX_MARKS: usize = 2000;
/// Structure events (phases, restarts, components) drawn per cell: a real
/// cell has tens; a trace made of nothing else is cut here, so no trace
/// makes the page (or its writer's memory) larger than this.
const MAX_STRUCTURE: usize = 5000;

/// The events of each cell's trace that the page draws, in cell order,
/// each trace read once through the run folder's reader; a missing,
/// damaged or shared trace gives a note instead, never a failed report.
pub(crate) fn cell_traces(run: &RunDir, report: &Report) -> Vec<Result<Vec<Value>, TraceError>> {
    report
        .cells
        .iter()
        .map(|cell| match &cell.trace {
            None => Ok(Vec::new()),
            Some(path) => marks(run, path),
        })
        .collect()
}

/// Only what the timeline draws, read line by line so a full trace never
/// sits in memory: at most [`MAX_STRUCTURE`] structure events (phases,
/// restarts, the component and cell events) and [`MAX_MARKS`] requests and
/// stream events.
fn marks(run: &RunDir, path: &str) -> Result<Vec<Value>, TraceError> {
    const KEEP: &[&str] = &[
        "t",
        "ev",
        "phase",
        "outcome",
        "ms",
        "method",
        "url",
        "status",
        "purpose",
        "attempt",
        "error",
        "problemType",
        "dir",
        "via",
        "rpcId",
        "event",
        "id",
        "ok",
        "action",
        "readyMs",
        "probe",
        "component",
        "pid",
        "exitCode",
        "signal",
        "call",
        "driver",
        "hop",
        "toxic",
        "fault",
        "conn",
        "detail",
        "abandoned",
        "headersMs",
        "client",
        "closedBy",
        "process",
        "frame",
        "bytes",
        "code",
        "clean",
        "what",
    ];
    let mut kept = Vec::new();
    let (mut marks, mut structure) = (0, 0);
    run.for_each_event(path, |line| {
        if matches!(line.event, Event::Trace(_) | Event::Other) {
            return;
        }
        let (count, limit) = match line.event.is_structure() {
            true => (&mut structure, MAX_STRUCTURE),
            false => (&mut marks, MAX_MARKS),
        };
        if *count >= limit {
            return;
        }
        *count += 1;
        let fields: Map<String, Value> = line
            .to_value()
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| KEEP.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        kept.push(Value::Object(fields));
    })?;
    Ok(kept)
}

/// The whole page.
pub(crate) fn render_html(report: &Report, traces: &[Result<Vec<Value>, TraceError>]) -> String {
    let mut data = serde_json::to_value(report).unwrap_or(Value::Null);
    if let Some(cells) = data.get_mut("cells").and_then(Value::as_array_mut) {
        for ((cell, trace), model) in cells.iter_mut().zip(traces).zip(&report.cells) {
            // The one row label (every axis the cell names), not the page's own.
            cell["label"] = Value::from(model.label());
            let (events, problem) = match trace {
                Ok(events) => (events.clone(), Value::Null),
                Err(e) => (Vec::new(), Value::from(e.to_string())),
            };
            cell["events"] = Value::Array(events);
            cell["traceProblem"] = problem;
        }
    }
    let data = json!({
        "report": data,
        "rejections": rejections(report),
        "scenarios": report.scenario_order(),
        "targets": report.target_order(),
        "columns": report
            .by_scenario()
            .iter()
            .map(|(s, cells)| (s.to_string(), json!(super::model::phase_columns(cells))))
            .collect::<Map<String, Value>>(),
    });
    // In a <script> block only `<` can end it early; JSON allows it escaped.
    let data = data.to_string().replace('<', "\\u003c");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>continuity run {id}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<noscript>This report is drawn by its inline script; report.txt and report.json hold the same results as text.</noscript>\n<main id=\"app\"></main>\n<script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        id = escape(&report.run.id),
    )
}

/// The unhandled rejections of every cell whose client runs the real SDK
/// (hosted or in the browser), for the page's section and each cell's
/// detail; `null` when no cell ran the real SDK. Each error in its
/// terminal form: text the SDK's host wrote.
fn rejections(report: &Report) -> Value {
    let sdk_ran = report.cells.iter().any(|c| {
        c.point
            .client()
            .known()
            .is_some_and(crate::ClientKind::runs_real_sdk)
    });
    if !sdk_ran {
        return Value::Null;
    }
    let rows: Vec<Value> = super::clients::sdk_rejections(report)
        .iter()
        .map(|r| {
            json!({
                "label": r.cell.label(),
                "scenario": r.cell.point.scenario,
                "phase": r.phase,
                "error": crate::untrusted::Untrusted::new(&r.error()).terminal(),
            })
        })
        .collect();
    Value::Array(rows)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained_and_its_data_cannot_close_the_script() {
        let mut report = super::super::fixture::report();
        report.cells[0].reason = Some("</script><script>alert(1)</script>".into());
        let traces: Vec<_> = report.cells.iter().map(|_| Ok(Vec::new())).collect();
        let html = render_html(&report, &traces);
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "only the two own blocks end"
        );
        let outside_data = html.split("id=\"data\">").next().unwrap().to_string()
            + html.rsplit("</script>\n<script>").next().unwrap();
        for fetch in [
            "<link",
            "src=",
            "@import",
            "url(",
            "fetch(",
            "XMLHttpRequest",
            "<iframe",
        ] {
            assert!(!outside_data.contains(fetch), "{fetch} in the page");
        }
        let data = html
            .split("id=\"data\">")
            .nth(1)
            .and_then(|d| d.split("</script>").next())
            .unwrap();
        let parsed: Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            parsed["report"]["cells"][0]["reason"],
            "</script><script>alert(1)</script>"
        );
    }

    #[test]
    fn a_long_trace_keeps_its_structure_and_a_bounded_number_of_marks() {
        use crate::trace::{Exchange, Purpose, Trace, TraceLevel};
        let dir = tempfile::tempdir().unwrap();
        let trace = Trace::create(dir.path(), TraceLevel::Summary, None, None).unwrap();
        trace.phase_start("p", "prompt");
        for _ in 0..(MAX_MARKS + 500) {
            trace.http(Exchange {
                last_event_id: None,
                method: "GET",
                url: "http://h/v1/health".into(),
                purpose: Purpose::Health,
                attempt: None,
                status: Some(200),
                elapsed: std::time::Duration::ZERO,
                sent: 0,
                received: 2,
                failure: None,
            });
        }
        trace.phase_end("p", "ok", 1);
        drop(trace);
        let run = RunDir::open(dir.path()).unwrap();
        let kept = marks(&run, crate::trace::TRACE_FILE).unwrap();
        let http = kept.iter().filter(|e| e["ev"] == "http").count();
        assert_eq!(http, MAX_MARKS);
        assert_eq!(
            kept.last().unwrap()["ev"],
            "phase_end",
            "the structure survives the cap"
        );
        assert!(
            kept[1].get("received").is_none(),
            "only what the timeline draws"
        );
    }
}
