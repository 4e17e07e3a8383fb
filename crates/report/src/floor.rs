//! The floor and the overhead of an attempt, a cell and a run. The floor is
//! the time nothing on the harness's side could save: the restarts, from
//! action to ready, and the servers' own answers, read from the wire trace —
//! each HTTP exchange from request to answer, each JSON-RPC request from
//! sent to answered (a prompt's answer comes on the stream once the agent is
//! done; one never answered, as a turn its fault cut, until the end of the
//! phase it was sent in or, when later, the last event of its session the
//! wire showed while the turn was visibly at work: before the client's next
//! request on that session and before a restart or an agent kill ended the
//! turn), and each call to the session store (the Rivet actor, or SQLite)
//! from asked to answered. For the hosted TypeScript SDK, the client under
//! test, each of its actions (`sdk`) counts from asked to answered, or to
//! the phase deadline it was given up at: that time is the SDK's (its own
//! waits, such as a prompt it leaves pending after a 400 it never
//! surfaces) and the servers', not the harness's; its wire, in the same
//! trace, shows what it was. A terminal's answers count too: its upgrade
//! (`http`), then from the socket opening or a line sent (`ws_open`, `ws`
//! out) to the next frame that arrives on it (`ready`, the echo). So does
//! a restart's wait for the previous cell's deferred DELETEs on the same
//! stack (`cleanup_wait`): on 0.4.2 the server never answers a DELETE and
//! the wait runs to their 2 s bound, which a restart must not cut short;
//! that cell counts its DELETE too, as its durations overlap. So does the
//! time a fault of the nemesis package keeps the stack down: a pause, from
//! its stop to its wake (`pause_start` to `pause_end`), each fault of a
//! chaos schedule from its start until it is over and seen so
//! (`scheduled_start` to `scheduled_end`), and the schedule itself from
//! its start (`schedule`) until its last fault is over, the drawn gaps
//! before and between its faults included, which the executor waits out
//! before the scenario's last phase, and the stack's wait to answer again
//! after a heal (`fault_ready`, until it answered or the deadline it never
//! answered by, as an unanswered call counts; each restart continuity
//! makes to bring back a component that did not, from its action to ready
//! or its deadline, is one too; and each readiness probe's attempt,
//! `ready_probe`, passed or not). With a
//! trace, the restart windows join the same union of intervals, so a store
//! call or a health check waiting during a restart counts once. The
//! overhead is the rest of the attempt's wall time: the harness's own
//! work, its waits and settles (the SDK's settle until the stream catches
//! up with an answer, and a terminal reattach's observation `window`s
//! among them).
//! Without a trace (`--trace off`) the floor is the restarts alone (restart
//! plus ready time, summed), so the overhead holds the servers' answers too.

use super::model::{Floor, RestartResult};
use crate::trace::event::{AgentSent, Dir, Event, HopSse, Line, Sse, WsFrame, WsOpen};

/// An attempt of `duration_ms` with these restarts and this `trace.jsonl` text.
pub fn of_attempt(duration_ms: u64, restarts: &[RestartResult], trace: Option<&str>) -> Floor {
    let restarting: u64 = restarts
        .iter()
        .map(|r| r.restart_ms + r.ready_ms.unwrap_or(0))
        .sum();
    let floor_ms = match trace.map(Spans::read) {
        // Every restart has its window in the trace: one union.
        Some(spans) if spans.restarts.len() == restarts.len() => {
            union_ms(spans.answers.into_iter().chain(spans.restarts).collect())
        }
        // A restart the trace lost (cut at its size limit): add them up.
        Some(spans) => restarting + union_ms(spans.answers),
        None => restarting,
    }
    .min(duration_ms);
    Floor {
        floor_ms,
        overhead_ms: duration_ms - floor_ms,
    }
}

/// The run's floor line for the text report, when its cells have one.
pub(crate) fn run_line(report: &super::Report) -> Option<String> {
    let timing = Floor::sum(report.cells.iter().map(|c| &c.timing))?;
    Some(format!(
        "time: {} over {} s of cells (run {:.1} s wall)",
        timing.describe(),
        format_args!(
            "{:.1}",
            (timing.floor_ms + timing.overhead_ms) as f64 / 1000.0
        ),
        report.run.duration_ms as f64 / 1000.0
    ))
}

/// Every cell's floor and overhead, in report order: a table for the text
/// report, rows for Markdown; `None` when no cell has one.
pub(crate) fn cell_rows(report: &super::Report) -> Option<Vec<[String; 5]>> {
    let rows: Vec<[String; 5]> = report
        .cells
        .iter()
        .filter_map(|cell| {
            let t = cell.timing?;
            Some([
                cell.label(),
                cell.point.scenario.clone(),
                t.floor_ms.to_string(),
                t.overhead_ms.to_string(),
                t.overhead_percent()
                    .map(|p| format!("{p:.0}%"))
                    .unwrap_or_else(|| "–".into()),
            ])
        })
        .collect();
    (!rows.is_empty()).then_some(rows)
}

pub(crate) const CELL_COLUMNS: [&str; 5] =
    ["target", "scenario", "floor ms", "overhead ms", "overhead"];

/// The Markdown section: the run's line and one row per cell.
pub(crate) fn markdown_section(report: &super::Report) -> Option<String> {
    let rows = cell_rows(report)?;
    let mut out = String::from(
        "## Floor and overhead

",
    );
    if let Some(line) = run_line(report) {
        out.push_str(&format!(
            "{}

",
            line.trim_start_matches("time: ")
        ));
    }
    out.push_str(&format!("| {} |\n", CELL_COLUMNS.join(" | ")));
    out.push_str("|---|---|---|---|---|\n");
    for row in rows {
        let row: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    Some(out)
}

/// A trace's intervals (`t` and `ms` in milliseconds).
struct Spans {
    /// The servers' answers: `http`, `store`, `sdk` and `cleanup_wait`
    /// events, logged at their end with their duration, terminal frames
    /// answering an opening or a line sent, and `rpc` requests (`dir: out`) paired with
    /// their answer (`dir: in`, the same `rpcId`, the latest request first).
    answers: Vec<(f64, f64)>,
    /// `restart_start` to `restart_end`.
    restarts: Vec<(f64, f64)>,
}

impl Spans {
    fn read(trace: &str) -> Spans {
        let mut reader = Reader::default();
        for Line { t, event } in trace
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter_map(|value| Line::from_value(&value))
        {
            reader.see(t, event);
        }
        reader.finish()
    }
}

/// A JSON-RPC request sent and not answered yet.
struct Asked {
    id: i64,
    sent: f64,
    /// The end of the phase it was sent in, once that phase ended.
    phase_end: Option<f64>,
    /// The agent's session it names, when it names one.
    session: Option<String>,
    /// The last event of its session seen while its turn was at work.
    at_work: Option<f64>,
    /// Whether its session's events still show its turn: not once the
    /// client sent the session another request, nor after a restart or an
    /// agent kill ended the turn.
    watched: bool,
}

/// What reading a trace keeps between its lines.
#[derive(Default)]
struct Reader {
    answers: Vec<(f64, f64)>,
    restarts: Vec<(f64, f64)>,
    asked: Vec<Asked>,
    /// Per terminal (its process): when it opened or a line went out, unanswered yet.
    typed: Vec<(String, f64)>,
    restarting: Option<f64>,
    /// The faults keeping the stack down: a pause (by component), a
    /// schedule's fault (by its index).
    down: Vec<(String, f64)>,
    /// A chaos schedule: its start, and the end of its last fault so far.
    schedule: Option<(f64, f64)>,
}

impl Reader {
    fn see(&mut self, t: f64, event: Event) {
        // An answer logged at its end with how long it took.
        let took = match &event {
            Event::Http(http) => Some(http.ms),
            Event::Store(store) => store.ms,
            Event::Sdk(sdk) => Some(sdk.ms),
            Event::CleanupWait(wait) => Some(wait.ms as f64),
            Event::FaultReady(ready) => Some(ready.ms as f64),
            // A readiness probe's attempt is an exchange with the stack,
            // passed or not: a stack that never answers again after a
            // heal keeps the cell waiting on it, not on the harness.
            Event::ReadyProbe(probe) => Some(probe.ms as f64),
            _ => None,
        };
        if let Some(ms) = took {
            self.answers.push(((t - ms).max(0.0), t));
        }
        match event {
            Event::WsOpen(WsOpen { process })
            | Event::Ws(WsFrame {
                process,
                dir: Dir::Out,
                ..
            }) if !self.typed.iter().any(|(p, _)| *p == process) => {
                self.typed.push((process, t));
            }
            Event::Ws(WsFrame {
                process,
                dir: Dir::In,
                ..
            }) => {
                if let Some(at) = self.typed.iter().position(|(p, _)| *p == process) {
                    let (_, sent) = self.typed.remove(at);
                    self.answers.push((sent, t));
                }
            }
            Event::Rpc(rpc) => self.see_rpc(
                t,
                rpc.dir,
                rpc.rpc_id.and_then(|id| id.as_i64()),
                rpc.session,
            ),
            // The session's stream or its agent at work: the turn of an
            // unanswered request on it goes on.
            Event::Sse(Sse {
                session: Some(session),
                ..
            })
            | Event::HopSse(HopSse {
                session: Some(session),
                ..
            })
            | Event::AgentSent(AgentSent { session, .. }) => self.see_at_work(t, &session),
            Event::RestartStart | Event::AgentKill(_) => {
                self.asked.iter_mut().for_each(|a| a.watched = false);
                self.see_fault(t, event)
            }
            Event::PhaseEnd(_) => {
                for open in self.asked.iter_mut().filter(|a| a.phase_end.is_none()) {
                    open.phase_end = Some(t);
                }
            }
            event => self.see_fault(t, event),
        }
    }

    /// A request (`dir: out`) paired with its answer (`dir: in`, the same
    /// `rpcId`, the latest request first).
    fn see_rpc(&mut self, t: f64, dir: Dir, id: Option<i64>, session: Option<String>) {
        match (dir, id) {
            (Dir::Out, Some(id)) => {
                // The client moved on: what its session shows from now on
                // is the new request's.
                for earlier in self
                    .asked
                    .iter_mut()
                    .filter(|a| a.session.is_some() && a.session == session)
                {
                    earlier.watched = false;
                }
                self.asked.push(Asked {
                    id,
                    sent: t,
                    phase_end: None,
                    session,
                    at_work: None,
                    watched: true,
                })
            }
            (Dir::In, Some(id)) => {
                if let Some(at) = self.asked.iter().rposition(|a| a.id == id) {
                    let asked = self.asked.remove(at);
                    self.answers.push((asked.sent, t));
                }
            }
            _ => {}
        }
    }

    /// An event of `session` at `t`: each unanswered request on it whose
    /// turn it still shows was at work until then.
    fn see_at_work(&mut self, t: f64, session: &str) {
        for asked in self
            .asked
            .iter_mut()
            .filter(|a| a.watched && a.session.as_deref() == Some(session))
        {
            asked.at_work = Some(t);
        }
    }

    /// The restarts' windows and the time the nemesis keeps the stack down.
    fn see_fault(&mut self, t: f64, event: Event) {
        match event {
            Event::PauseStart(pause) => self.down.push((format!("pause {}", pause.component), t)),
            // The schedule holds the cell from its start until its last
            // fault is over: the drawn gaps before and between its
            // faults are the schedule's, which the executor waits out.
            Event::Schedule(_) => self.schedule = Some((t, t)),
            Event::ScheduledStart(fault) => self.down.push((format!("fault {}", fault.index), t)),
            Event::PauseEnd(pause) => self.end_down(&format!("pause {}", pause.component), t),
            Event::ScheduledEnd(fault) => {
                if let Some((_, over)) = self.schedule.as_mut() {
                    *over = t;
                }
                self.end_down(&format!("fault {}", fault.index), t)
            }
            Event::RestartStart => self.restarting = Some(t),
            Event::RestartEnd(_) => {
                if let Some(start) = self.restarting.take() {
                    self.restarts.push((start, t));
                }
            }
            _ => {}
        }
    }

    /// The fault `key` is over at `t`: its span joins the answers.
    fn end_down(&mut self, key: &str, t: f64) {
        if let Some(at) = self.down.iter().position(|(k, _)| k == key) {
            let (_, start) = self.down.remove(at);
            self.answers.push((start, t));
        }
    }

    /// The spans read. A request never answered counts until the end of
    /// the phase it was sent in: the client waited on the server at least
    /// that long (a prompt that timed out); and, when later, until the last
    /// event its session showed while its turn was at work (a turn the
    /// fault cut, which the scenario lets run on before its restart,
    /// whatever phase the client sent it in).
    fn finish(mut self) -> Spans {
        self.answers.extend(self.schedule);
        self.answers.extend(self.asked.iter().filter_map(|a| {
            let end = match (a.phase_end, a.at_work) {
                (Some(phase), Some(work)) => phase.max(work),
                (end, None) | (None, end) => end?,
            };
            Some((a.sent, end))
        }));
        Spans {
            answers: self.answers,
            restarts: self.restarts,
        }
    }
}

/// The length of the union of `spans`, rounded to whole milliseconds:
/// overlapping intervals count once.
fn union_ms(mut spans: Vec<(f64, f64)>) -> u64 {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (start, end) in spans {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        total += e - s;
    }
    total.round() as u64
}

#[cfg(test)]
mod tests;
