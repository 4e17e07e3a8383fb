//! A run as Chrome Trace Event JSON (`continuity export --chrome-trace`),
//! the format Perfetto and `chrome://tracing` read: `{"traceEvents": […]}`
//! with complete events (`ph: "X"`, `ts`/`dur` in µs) for cells and their
//! phases, instants (`"i"`) for restarts, components and what a fault proxy
//! did, async spans (`"b"`/`"e"`) for fault windows and HTTP exchanges
//! (they overlap phases and each other), and metadata (`"M"`) naming the
//! tracks. One track per worker lane: attempts that ran at the same time
//! are on different tracks, each attempt's phases nested in its slice.
//! Every name and argument is a JSON string written by serde, so text
//! from a server or a gateway stays exact and inert. The document is
//! written as it is made, event by event, two passes over each trace (one
//! for where its attempt sits, one for its events): its size in memory
//! does not grow with a trace's.

use super::model::{Attempt, Cell, PhaseResult, Report, Verdict};
use crate::trace::event::{Event, Line};
use serde_json::{json, Value};

/// One attempt of a cell, with what its trace says of where it sits: read
/// in a first pass over the trace ([`Seen::see`]), so that the events
/// themselves are streamed in a second one and never held together.
pub struct TracedAttempt<'a> {
    pub cell: &'a Cell,
    /// `None`: the cell's own record (a cell of one attempt).
    pub attempt: Option<&'a Attempt>,
    pub seen: Seen,
}

/// What a first pass over an attempt's trace keeps: its wall-clock start,
/// its last event's time and its phases (a few per attempt).
#[derive(Debug, Clone, Default)]
pub struct Seen {
    started_ms: Option<f64>,
    last_t: f64,
    /// `(name, step, outcome, start ms, end ms)`, from `phase_start`/`phase_end`.
    spans: Vec<(String, String, String, f64, f64)>,
    open: Option<(String, String, f64)>,
    any_phase_start: bool,
}

impl Seen {
    pub fn see(&mut self, line: &Line) {
        self.last_t = self.last_t.max(line.t);
        match &line.event {
            Event::Trace(header) => self.started_ms = self.started_ms.or(header.started_ms),
            Event::PhaseStart(p) => {
                self.any_phase_start = true;
                self.open = Some((p.phase.clone(), p.step.clone(), line.t));
            }
            Event::PhaseEnd(p) => {
                if let Some((name, step, start)) = self.open.take().filter(|(n, ..)| *n == p.phase)
                {
                    self.spans
                        .push((name, step, p.outcome.clone(), start, line.t));
                }
            }
            _ => {}
        }
    }
}

impl TracedAttempt<'_> {
    fn duration_ms(&self) -> f64 {
        let recorded = self
            .attempt
            .map_or(self.cell.duration_ms, |a| a.duration_ms) as f64;
        recorded.max(self.seen.last_t)
    }

    fn phases(&self) -> &[PhaseResult] {
        self.attempt.map_or(&self.cell.phases, |a| &a.phases)
    }

    fn verdict(&self) -> Verdict {
        self.attempt.map_or(self.cell.verdict, |a| a.verdict)
    }

    /// The wall clock of its start, in Unix ms, when its trace says.
    fn started_ms(&self) -> Option<f64> {
        self.seen.started_ms
    }

    fn name(&self) -> String {
        let mut name = format!("{} × {}", self.cell.label(), self.cell.point.scenario);
        if let Some(a) = self.attempt {
            name.push_str(&format!(" #{}", a.attempt));
        }
        name
    }
}

/// The process every event belongs to.
const PID: u32 = 1;

/// The whole run as one Chrome Trace Event document, written as it is
/// made: `write` gets its text in pieces (each event whole), and
/// `events(i, each)` hands attempt `i`'s trace events to `each` again, one
/// at a time, so no attempt's events are ever held together.
pub fn write_chrome_trace<E>(
    report: &Report,
    attempts: &[TracedAttempt<'_>],
    mut events: impl FnMut(usize, &mut dyn FnMut(&Line)),
    write: &mut dyn FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let placed = place(report, attempts);
    let lanes = placed.iter().map(|p| p.lane).max().map_or(0, |l| l + 1);
    write("{\"traceEvents\":[")?;
    let mut first = true;
    let mut emit = |event: Value| -> Result<(), E> {
        write(if first { "" } else { "," })?;
        first = false;
        write(&event.to_string())
    };
    emit(json!({
        "ph": "M", "name": "process_name", "pid": PID, "tid": 0,
        "args": { "name": format!("continuity run {}", report.run.id) },
    }))?;
    for lane in 0..lanes {
        emit(json!({
            "ph": "M", "name": "thread_name", "pid": PID, "tid": lane + 1,
            "args": { "name": format!("worker {}", lane + 1) },
        }))?;
    }
    let mut ids = 0u64;
    for (i, (traced, at)) in attempts.iter().zip(&placed).enumerate() {
        for event in attempt_events(traced, at) {
            emit(event)?;
        }
        let tid = at.lane + 1;
        let mut failed = Ok(());
        events(i, &mut |line| {
            if failed.is_ok() {
                let mut out = Vec::new();
                marks(line, at, tid, &mut ids, &mut out);
                for event in out {
                    if let Err(e) = emit(event) {
                        failed = Err(e);
                        return;
                    }
                }
            }
        });
        failed?;
    }
    write("],\"displayTimeUnit\":\"ms\"}")
}

/// Where an attempt sits: its start (µs from the run's start) and lane.
struct Placed {
    ts: f64,
    dur: f64,
    lane: usize,
}

/// Each attempt's start from its trace's wall clock (attempts without one
/// follow the one before), and the first lane free at that start.
fn place(report: &Report, attempts: &[TracedAttempt<'_>]) -> Vec<Placed> {
    let run_start = humantime::parse_rfc3339(&report.run.started_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64() * 1000.0);
    let first = attempts.iter().filter_map(TracedAttempt::started_ms);
    let origin = first.chain(run_start).fold(f64::INFINITY, f64::min);
    let mut lane_ends: Vec<f64> = Vec::new();
    let mut cursor = 0.0;
    let mut placed = Vec::with_capacity(attempts.len());
    for traced in attempts {
        let ts = match traced.started_ms() {
            Some(ms) if origin.is_finite() => (ms - origin) * 1000.0,
            _ => cursor,
        };
        let dur = traced.duration_ms() * 1000.0;
        cursor = cursor.max(ts + dur);
        let lane = match lane_ends.iter().position(|end| *end <= ts) {
            Some(free) => free,
            None => {
                lane_ends.push(0.0);
                lane_ends.len() - 1
            }
        };
        lane_ends[lane] = ts + dur;
        placed.push(Placed { ts, dur, lane });
    }
    placed
}

/// The attempt's slice and its phases within it.
fn attempt_events(traced: &TracedAttempt<'_>, at: &Placed) -> Vec<Value> {
    let tid = at.lane + 1;
    let mut out = vec![json!({
        "ph": "X", "cat": "cell", "name": traced.name(), "pid": PID, "tid": tid,
        "ts": at.ts, "dur": at.dur,
        "args": {
            "verdict": traced.verdict().as_str(),
            "failureBoundary": traced.attempt.map_or(&traced.cell.failure_boundary, |a| &a.failure_boundary),
            "trace": traced.attempt.map_or(&traced.cell.trace, |a| &a.trace),
        },
    })];
    for (name, step, outcome, start, end) in phase_spans(traced) {
        // Within the cell's bounds, so the phase nests in its slice.
        let start = (start * 1000.0).clamp(0.0, at.dur);
        let end = (end * 1000.0).clamp(start, at.dur);
        out.push(json!({
            "ph": "X", "cat": "phase", "name": name, "pid": PID, "tid": tid,
            "ts": at.ts + start, "dur": end - start,
            "args": { "step": step, "outcome": outcome },
        }));
    }
    out
}

/// `(name, step, outcome, start ms, end ms)` of each phase: from the
/// trace's `phase_start`/`phase_end`, else the report's phases one after
/// another.
fn phase_spans(traced: &TracedAttempt<'_>) -> Vec<(String, String, String, f64, f64)> {
    if !traced.seen.spans.is_empty() || traced.seen.any_phase_start {
        return traced.seen.spans.clone();
    }
    let mut spans = Vec::new();
    let mut at = 0.0;
    for phase in traced.phases() {
        let ms = phase.duration_ms as f64;
        let outcome = crate::wire_name::of(&phase.outcome).to_string();
        spans.push((phase.name.clone(), phase.step.clone(), outcome, at, at + ms));
        at += ms;
    }
    spans
}

/// A trace event's instant or span, if it is one the export shows.
fn marks(line: &Line, at: &Placed, tid: usize, ids: &mut u64, out: &mut Vec<Value>) {
    let ts = at.ts + (line.t * 1000.0).clamp(0.0, at.dur);
    let instant = |name: String, cat: &str, args: Value| json!({ "ph": "i", "s": "t", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "args": args });
    match &line.event {
        Event::RestartStart => out.push(instant("restart".into(), "restart", json!({}))),
        Event::RestartEnd(r) => out.push(instant(
            "restart ready".into(),
            "restart",
            json!({ "ok": r.ok, "action": r.action, "restartMs": r.restart_ms, "readyMs": r.ready_ms, "detail": r.detail }),
        )),
        Event::ComponentStop(c) | Event::ComponentStart(c) => {
            let what = match line.event {
                Event::ComponentStop(_) => "stopped",
                _ => "started",
            };
            out.push(instant(format!("{} {what}", c.component), "restart", json!({ "pid": c.pid, "exitCode": c.exit_code })));
        }
        Event::FaultStart(f) => {
            out.push(json!({
                "ph": "b", "cat": "fault", "id": format!("fault-{tid}-{}", f.hop), "name": format!("fault: {}", f.fault),
                "pid": PID, "tid": tid, "ts": ts,
                "args": { "hop": f.hop, "toxic": f.toxic, "holdMs": f.hold_ms },
            }));
            out.push(instant(format!("fault {} on {}", f.toxic, f.hop), "fault", json!({ "fault": f.fault })));
        }
        Event::FaultEnd(f) => out.push(json!({
            "ph": "e", "cat": "fault", "id": format!("fault-{tid}-{}", f.hop), "name": format!("fault: {}", f.toxic),
            "pid": PID, "tid": tid, "ts": ts,
            "args": { "ok": f.ok, "resets": f.resets, "closes": f.closes, "detail": f.detail },
        })),
        Event::FaultAction(f) => out.push(instant(
            format!("{} {} conn {}", f.toxic, f.action.as_str(), f.conn),
            "fault",
            json!({ "hop": f.hop, "toward": f.toward }),
        )),
        Event::Http(h) => {
            *ids += 1;
            let id = format!("http-{}", *ids);
            let start = at.ts + ((line.t - h.ms) * 1000.0).clamp(0.0, at.dur);
            let name = format!("{} {}", h.method, h.url);
            out.push(json!({ "ph": "b", "cat": "http", "id": id, "name": name, "pid": PID, "tid": tid, "ts": start }));
            out.push(json!({
                "ph": "e", "cat": "http", "id": id, "name": name, "pid": PID, "tid": tid, "ts": ts,
                "args": { "status": h.status, "error": h.error.map(|e| e.as_str()), "problemType": h.problem_type },
            }));
        }
        _ => {}
    }
}
