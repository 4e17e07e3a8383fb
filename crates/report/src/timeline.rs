//! One cell's timeline as text, for `continuity show --cell`: each phase
//! with its start, duration and outcome, the HTTP exchanges, session-store
//! calls, hosted SDK actions and restart events of its trace under it (in
//! time order: the hosted SDK's exchanges reach the file in batches), and
//! the signature of a failed phase — so a run pasted into an issue reads
//! without a browser.
//!
//! Over 400 lines on purpose: one line per trace event kind (`traffic_text`,
//! `stack_text`) placed under the phase it falls in; the kinds are many and
//! the rendering one, and the tests below read whole timelines.

use super::model::{Cell, Outcome, SignatureKind};
use crate::trace::event::{Dir, Event, Line, ReadyProbe};
use crate::untrusted::Untrusted;
use std::fmt::Write;

/// Lines of trace listed under one phase; the rest are counted.
const MAX_LINES_PER_PHASE: usize = 40;

/// The timeline of `cell`, from its trace's `events` (empty when it has none).
pub fn render_timeline(cell: &Cell, events: &[Line]) -> String {
    let cell = &*super::inert::of(cell);
    let mut out = String::new();
    write_header(&mut out, cell);
    let bounds = phase_bounds(events);
    let mut clock = 0.0;
    out.push('\n');
    let _ = writeln!(
        out,
        "{:>9}  {:>9}  {:<40} outcome",
        "start", "duration", "phase"
    );
    for phase in &cell.phases {
        let (start, end) = bounds
            .iter()
            .find(|(name, _, _)| *name == phase.name)
            .map(|(_, s, e)| (*s, *e))
            .unwrap_or((clock, clock + phase.duration_ms as f64));
        clock = end;
        let mut name = phase.name.clone();
        if phase.cleanup {
            name.push_str(" (cleanup)");
        }
        if cell.failure_boundary.as_deref() == Some(phase.name.as_str()) {
            name.push_str(" ◀ boundary");
        }
        let outcome = phase_outcome(phase);
        let _ = writeln!(
            out,
            "{:>9}  {:>9}  {name:<40} {outcome}",
            ms(start),
            if matches!(phase.outcome, Outcome::NotRun | Outcome::NotApplicable) {
                "–".into()
            } else {
                ms(end - start)
            },
        );
        write_under_phase(&mut out, phase, events, (start, end));
    }
    if events
        .iter()
        .any(|e| matches!(e.event, Event::Truncated(_)))
    {
        let _ = writeln!(out, "\nthe trace was cut at its size limit");
    }
    out
}

/// The cell's first lines: what ran, its verdict, why, and its trace.
fn write_header(out: &mut String, cell: &Cell) {
    let verdict = match &cell.failure_boundary {
        Some(b) => format!("{} @ {b}", cell.verdict.as_str()),
        None => cell.verdict.as_str().to_string(),
    };
    let _ = writeln!(
        out,
        "{} × {} — {verdict} ({})",
        cell.point.scenario,
        cell.label(),
        ms(cell.duration_ms as f64)
    );
    if let Some(reason) = &cell.reason {
        let _ = writeln!(out, "reason: {}", shown(reason));
    }
    if let Some(schedule) = &cell.schedule {
        let _ = writeln!(out, "schedule: {}", shown(&schedule.describe()));
    }
    match &cell.trace {
        Some(path) => {
            let _ = writeln!(out, "trace: {path}");
        }
        None => {
            let _ = writeln!(out, "no trace: phase times are laid end to end");
        }
    }
}

/// A phase's outcome column: its signature when it failed.
fn phase_outcome(phase: &super::model::PhaseResult) -> String {
    match phase.outcome {
        Outcome::Ok => "ok".to_string(),
        Outcome::NotRun => "not run".to_string(),
        Outcome::NotApplicable => "not applicable".to_string(),
        Outcome::Interrupted => "interrupted".to_string(),
        Outcome::Timeout => phase
            .signature
            .as_ref()
            .map(|sig| shown(&sig.short()))
            .unwrap_or_else(|| "timeout".into()),
        Outcome::Fail => match phase.signature.as_ref() {
            // A cause worth adding when the kind does not already say it.
            Some(sig) => match (&sig.cause, sig.kind) {
                // A hang's short form already names its cause.
                (Some(cause), kind)
                    if !matches!(kind, SignatureKind::Http | SignatureKind::Hung) =>
                {
                    format!("fail: {} ({})", shown(&sig.short()), shown(&cause.short()))
                }
                _ => format!("fail: {}", shown(&sig.short())),
            },
            None => "fail".into(),
        },
    }
}

/// Under a phase's line: the trace's events between `start` and `end` in
/// time order (at most [`MAX_LINES_PER_PHASE`]), then its signature.
fn write_under_phase(
    out: &mut String,
    phase: &super::model::PhaseResult,
    events: &[Line],
    (start, end): (f64, f64),
) {
    let mut inside: Vec<(f64, String)> = events
        .iter()
        .filter(|e| e.t >= start && e.t <= end)
        .filter_map(|e| Some((e.t, event_line(e)?)))
        .collect();
    inside.sort_by(|a, b| a.0.total_cmp(&b.0));
    let inside: Vec<String> = inside.into_iter().map(|(_, line)| line).collect();
    for line in inside.iter().take(MAX_LINES_PER_PHASE) {
        let _ = writeln!(out, "{:>22}{line}", "");
    }
    if inside.len() > MAX_LINES_PER_PHASE {
        let _ = writeln!(
            out,
            "{:>22}… {} more in the trace",
            "",
            inside.len() - MAX_LINES_PER_PHASE
        );
    }
    if let Some(sig) = &phase.signature {
        let _ = writeln!(out, "{:>22}signature: {}", "", shown(&sig.message));
        if let Some(pending) = &sig.pending {
            let _ = writeln!(out, "{:>22}pending: {}", "", shown(pending));
        }
        if let Some(observed) = &sig.observed {
            let _ = writeln!(out, "{:>22}observed: {}", "", shown(observed));
        }
        if let Some(evidence) = sig.evidence() {
            let _ = writeln!(out, "{:>22}evidence: {}", "", shown(&evidence));
        }
    }
    // Every violation the always-on checker found in this phase.
    let listed = phase.detail.get("integrity").and_then(|v| v.as_array());
    for violation in listed.into_iter().flatten() {
        let Ok(v) = serde_json::from_value::<continuity_check::Violation>(violation.clone()) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{:>22}{} {}: {}",
            "",
            ms(v.t),
            v.short(),
            shown(&v.detail)
        );
    }
}

/// `(phase, start, end)` from the trace's phase boundaries.
fn phase_bounds(events: &[Line]) -> Vec<(String, f64, f64)> {
    let mut bounds: Vec<(String, f64, f64)> = Vec::new();
    for line in events {
        match &line.event {
            Event::PhaseStart(start) => bounds.push((start.phase.clone(), line.t, line.t)),
            Event::PhaseEnd(end) => {
                if let Some(b) = bounds.iter_mut().rev().find(|b| b.0 == end.phase) {
                    b.2 = line.t;
                }
            }
            _ => {}
        }
    }
    bounds
}

/// `+12.3 ms  POST /v1/acp/… → 401 (2.1 ms)`; `None` for events not listed.
fn event_line(line: &Line) -> Option<String> {
    let t = ms(line.t);
    let text = traffic_text(&line.event).or_else(|| stack_text(&line.event))?;
    Some(format!("{t:>9}  {text}"))
}

/// The cell's own traffic: HTTP exchanges, event streams, store calls,
/// hosted SDK actions and terminals.
fn traffic_text(event: &Event) -> Option<String> {
    let text = match event {
        Event::Http(e) => {
            let mut result = e.status.map(|s| s.to_string()).unwrap_or_default();
            if let Some(err) = e.error {
                if !result.is_empty() {
                    result.push(' ');
                }
                result.push_str(err.as_str());
            }
            if let Some(t) = &e.problem_type {
                result.push_str(&format!(" {}", shown(t)));
            }
            if e.closed_by.as_deref() == Some("client") && result.is_empty() {
                result.push_str("closed by the client");
            }
            let attempt = e.attempt.map(|a| format!(" #{a}")).unwrap_or_default();
            format!(
                "{} {}{attempt} → {result} ({})",
                e.method,
                shown(&e.url),
                ms(e.ms)
            )
        }
        Event::StreamEnd(e) => match (e.error, e.closed_by.as_deref()) {
            (Some(err), _) => format!("event stream ended: {}", err.as_str()),
            (None, Some("client")) => {
                format!("event stream closed by the client ({} events)", e.events)
            }
            (None, _) => format!("event stream ended ({} events)", e.events),
        },
        Event::Store(e) => format!(
            "store {} ({}) → {} ({})",
            e.call,
            e.driver,
            match &e.error {
                Some(error) => format!("failed: {}", shown(error)),
                None => "ok".to_string(),
            },
            ms(e.ms.unwrap_or(0.0))
        ),
        Event::Sdk(e) => format!(
            "sdk {} → {} ({})",
            e.call,
            if e.abandoned {
                "no answer when its phase ended".to_string()
            } else if e.ok == Some(true) {
                "ok".to_string()
            } else {
                format!("failed: {}", shown(e.error.as_deref().unwrap_or_default()))
            },
            ms(e.ms)
        ),
        Event::Ws(e) => match e.dir {
            Dir::Out => format!("terminal {} → input ({} bytes)", e.process, e.bytes),
            Dir::In => format!("terminal {} ← {} ({} bytes)", e.process, e.frame, e.bytes),
        },
        Event::WsOpen(e) => format!("terminal {} open", e.process),
        Event::WsClose(e) => format!(
            "terminal {} closed: ws close {}{}",
            e.process,
            e.code,
            if e.clean { "" } else { " (no close frame)" }
        ),
        _ => return None,
    };
    Some(text)
}

/// What happened around the cell: watch windows, waits, restarts, faults
/// and its components' stops and starts.
fn stack_text(event: &Event) -> Option<String> {
    let text = match event {
        Event::Window(e) => format!("watched {} for {}", ms(e.ms as f64), e.what),
        Event::CleanupWait(e) => format!(
            "waited {} for the previous cell's DELETEs on this stack",
            ms(e.ms as f64)
        ),
        Event::WireDropped(e) if e.restarted => {
            "the hosted SDK's host restarted: its records since the last fetch are lost".to_string()
        }
        Event::WireDropped(e) => format!(
            "{} of the hosted SDK's wire records lost (its buffer was full)",
            e.dropped
        ),
        Event::RestartStart => "restart started".to_string(),
        Event::RestartEnd(e) => format!(
            "restart {} (ready after {}){}",
            if e.ok { "ready" } else { "failed" },
            e.ready_ms
                .map(|r| ms(r as f64))
                .unwrap_or_else(|| "–".into()),
            // How it went down may quote a probe's error: untrusted.
            e.down
                .as_deref()
                .map(|down| format!("; down: {}", shown(down)))
                .unwrap_or_default()
        ),
        Event::FaultStart(e) => format!("fault on the {} hop: {}", e.hop, e.fault),
        Event::FaultAction(e) => format!(
            "the fault proxy {} connection {} on the {} hop ({})",
            e.action.as_str(),
            e.conn,
            e.hop,
            e.toxic
        ),
        Event::FaultEnd(e) => match e.ok {
            true => format!("fault on the {} hop healed", e.hop),
            false => format!(
                "fault on the {} hop: {}",
                e.hop,
                shown(e.detail.as_deref().unwrap_or_default())
            ),
        },
        Event::PauseStart(e) => format!(
            "{} paused (SIGSTOP to group {}: {} process{} seen stopped) for {} at most",
            shown(&e.component),
            e.pid,
            e.members.len(),
            if e.members.len() == 1 { "" } else { "es" },
            ms(e.hold_ms as f64)
        ),
        Event::PauseEnd(e) => format!(
            "{} {}: {}",
            shown(&e.component),
            if e.ok { "woke" } else { "did not wake" },
            shown(e.detail.as_deref().unwrap_or_default())
        ),
        Event::AgentKill(e) => format!(
            "agent process{} {} under the server (pid {}) SIGKILLed and gone; the server runs on",
            if e.pids.len() == 1 { "" } else { "es" },
            pid_list(&e.pids),
            e.server_pid
        ),
        Event::AgentAfter(e) => format!(
            "after the phases: the server (pid {}) {}, agent processes under it: {}",
            e.server_pid,
            if e.server_same {
                "still runs"
            } else {
                "is gone or replaced"
            },
            pid_list(&e.pids)
        ),
        Event::Schedule(e) => match serde_json::from_value::<crate::Schedule>(e.schedule.clone()) {
            Ok(schedule) => format!("chaos schedule: {}", shown(&schedule.describe())),
            Err(_) => "chaos schedule (unreadable)".to_string(),
        },
        Event::ScheduledStart(e) => format!(
            "chaos fault #{}: {} of {} starts",
            e.index,
            shown(&e.fault),
            shown(&e.on)
        ),
        Event::ScheduledEnd(e) => format!(
            "chaos fault #{}: {} of {} {}{}",
            e.index,
            shown(&e.fault),
            shown(&e.on),
            if e.ok { "over" } else { "failed" },
            e.detail
                .as_deref()
                .map(|d| format!(": {}", shown(d)))
                .unwrap_or_default()
        ),
        Event::Truncated(_) => "trace cut here (size limit)".to_string(),
        Event::ComponentStop(e) => format!(
            "{} stopped{}",
            e.component,
            match (e.exit_code, &e.signal) {
                (Some(code), _) => format!(" (exit code {code})"),
                (None, Some(signal)) => format!(" ({signal})"),
                _ => String::new(),
            }
        ),
        Event::ComponentStart(e) => format!(
            "{} started (pid {})",
            e.component,
            e.pid.map_or("null".to_string(), |p| p.to_string())
        ),
        // Only failed readiness attempts: a probe polls every 50 ms.
        Event::ReadyProbe(e) if ready_failed(e) => format!(
            "readiness {} #{} → {}",
            e.probe,
            e.attempt,
            e.status
                .map(|s| s.to_string())
                .unwrap_or_else(|| shown(e.error.as_deref().unwrap_or_default()))
        ),
        _ => return None,
    };
    Some(text)
}

/// `none`, `41`, `41, 42`.
fn pid_list(pids: &[u32]) -> String {
    match pids.is_empty() {
        true => "none".into(),
        false => pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Text continuity did not write (a server's problem type and message, a
/// store's or the SDK's error), in its terminal form.
fn shown(text: &str) -> String {
    Untrusted::new(text).terminal()
}

fn ready_failed(e: &ReadyProbe) -> bool {
    e.error.is_some() || e.status.is_some_and(|s| !(200..300).contains(&s))
}

fn ms(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{:.1} s", value / 1000.0)
    } else if value >= 1000.0 {
        format!("{:.2} s", value / 1000.0)
    } else {
        format!("{value:.1} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hosted_cells_late_records_are_listed_in_time_order_with_its_sdk_actions() {
        let mut cell = crate::fixture::report().cells[0].clone();
        cell.phases.truncate(1);
        let name = cell.phases[0].name.clone();
        // The SDK's exchanges reach the file after the action that carried them.
        let events = [
            json!({"t": 0.0, "ev": "phase_start", "phase": name}),
            json!({"t": 6000.0, "ev": "sdk", "call": "prompt", "ms": 5990.0, "abandoned": true}),
            json!({"t": 25.0, "ev": "http", "method": "POST", "url": "/v1/acp/s", "status": 400,
                   "problemType": "invalid_request", "ms": 9.0}),
            json!({"t": 30.0, "ev": "http", "method": "GET", "url": "/v1/acp/s", "ms": 4.0,
                   "closedBy": "client"}),
            json!({"t": 6001.0, "ev": "phase_end", "phase": name}),
        ];
        let events: Vec<Line> = events.iter().filter_map(Line::from_value).collect();
        let text = render_timeline(&cell, &events);
        let post = text
            .find("POST /v1/acp/s → 400 invalid_request")
            .expect(&text);
        let get = text
            .find("GET /v1/acp/s → closed by the client")
            .expect(&text);
        let sdk = text
            .find("sdk prompt → no answer when its phase ended (5.99 s)")
            .expect(&text);
        assert!(post < get && get < sdk, "{text}");
    }
}
