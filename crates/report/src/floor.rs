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
//! after a heal (`fault_ready`, and each readiness probe's attempt,
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
mod tests {
    use super::*;

    fn restart(restart_ms: u64, ready_ms: Option<u64>) -> RestartResult {
        RestartResult {
            phase: "restart".into(),
            action: "managed".into(),
            ok: true,
            restart_ms,
            ready_ms,
            down: None,
            detail: None,
        }
    }

    const TRACE: &str = concat!(
        r#"{"t":0.0,"ev":"trace"}"#,
        "\n",
        r#"{"t":10.0,"ev":"http","ms":4.0}"#,
        "\n",
        // Two exchanges at once (two clients): 20..30 and 25..40 are 20 ms, not 25.
        r#"{"t":30.0,"ev":"http","ms":10.0}"#,
        "\n",
        r#"{"t":40.0,"ev":"http","ms":15.0}"#,
        "\n",
        r#"{"t":50.0,"ev":"sse","ms":99.0}"#,
        "\n",
        // A prompt sent at 100 and answered on the stream at 150: 50 ms.
        r#"{"t":100.0,"ev":"rpc","dir":"out","rpcId":7}"#,
        "\n",
        r#"{"t":150.0,"ev":"rpc","dir":"in","rpcId":7}"#,
        "\n",
        // A notification (no answer) counts nothing.
        r#"{"t":160.0,"ev":"rpc","dir":"out","method":"session/cancel"}"#,
        "\n",
        "not json\n",
    );

    #[test]
    fn restarts_and_answers_are_the_floor_the_rest_is_overhead() {
        let floor = of_attempt(1000, &[restart(100, Some(200))], Some(TRACE));
        assert_eq!(
            floor,
            Floor {
                floor_ms: 374,
                overhead_ms: 626
            }
        );
        assert_eq!(floor.describe(), "floor 0.4 s, overhead 0.6 s (+167%)");
    }

    /// The time a nemesis keeps the stack down is the stack's: a pause
    /// from its stop to its wake, a schedule's fault from its start to its
    /// end (which the executor waits out), the wait after a heal.
    #[test]
    fn a_pause_a_scheduled_fault_and_the_wait_after_a_heal_are_floor() {
        let trace = concat!(
            r#"{"t":0.0,"ev":"trace"}"#,
            "\n",
            r#"{"t":100.0,"ev":"pause_start","component":"agent","pid":1,"members":[1],"holdMs":2000}"#,
            "\n",
            r#"{"t":300.0,"ev":"pause_end","component":"agent","ok":true}"#,
            "\n",
            r#"{"t":400.0,"ev":"scheduled_start","index":0,"fault":"partition","on":"gateway"}"#,
            "\n",
            r#"{"t":450.0,"ev":"scheduled_start","index":1,"fault":"pause","on":"rivet"}"#,
            "\n",
            r#"{"t":500.0,"ev":"scheduled_end","index":0,"fault":"partition","on":"gateway","ok":true}"#,
            "\n",
            r#"{"t":600.0,"ev":"scheduled_end","index":1,"fault":"pause","on":"rivet","ok":true}"#,
            "\n",
            r#"{"t":700.0,"ev":"fault_ready","ms":50}"#,
            "\n",
        );
        // 100..300, 400..600 (two faults overlapping), 650..700.
        let floor = of_attempt(1000, &[], Some(trace));
        assert_eq!(floor.floor_ms, 450, "{floor:?}");
        // The schedule drawn to start at 350: the gap before its first
        // fault is its time too (350..600 whole).
        let scheduled = trace.replace(
            r#"{"t":400.0,"ev":"scheduled_start""#,
            "{\"t\":350.0,\"ev\":\"schedule\",\"schedule\":{}}\n{\"t\":400.0,\"ev\":\"scheduled_start\"",
        );
        let floor = of_attempt(1000, &[], Some(&scheduled));
        assert_eq!(floor.floor_ms, 500, "{floor:?}");
        // A stack that did not answer again after the heal: its probe's
        // attempts (no fault_ready) are its time too, 700..800 and 790..900.
        let never = concat!(
            r#"{"t":800.0,"ev":"ready_probe","attempt":1,"probe":"x","ms":100,"error":"no answer"}"#,
            "\n",
            r#"{"t":900.0,"ev":"ready_probe","attempt":2,"probe":"x","ms":110,"status":503}"#,
            "\n",
        );
        let floor = of_attempt(1000, &[], Some(never));
        assert_eq!(floor.floor_ms, 200, "{floor:?}");
    }

    /// A turn cut by its fault is never answered: its prompt counts from
    /// sent until the end of the phase it was sent in (the scenario let it
    /// run on there before the restart), not until the attempt's end; an
    /// answered one from sent to answered, as before.
    #[test]
    fn a_request_never_answered_counts_until_its_phase_ends() {
        let trace = concat!(
            r#"{"t":0.0,"ev":"phase_start","phase":"restartMidTurn","step":"restart"}"#,
            "\n",
            r#"{"t":50.0,"ev":"rpc","dir":"out","via":"post","method":"session/prompt","rpcId":2}"#,
            "\n",
            r#"{"t":60.0,"ev":"rpc","dir":"out","via":"post","method":"session/prompt","rpcId":3}"#,
            "\n",
            r#"{"t":70.0,"ev":"rpc","dir":"in","via":"post","rpcId":3}"#,
            "\n",
            r#"{"t":1500.0,"ev":"phase_end","phase":"restartMidTurn","outcome":"ok","ms":1500}"#,
            "\n",
            r#"{"t":1600.0,"ev":"phase_end","phase":"awaitTurn","outcome":"fail","ms":100}"#,
            "\n",
        );
        let floor = of_attempt(2000, &[], Some(trace));
        assert_eq!(floor.floor_ms, 1450, "50..1500: {floor:?}");
    }

    /// A prompt the client sent without waiting (the hosted SDK's), in a
    /// phase that ends at once, while its turn streams on through the next
    /// phase: it counts until the last event its session showed at work,
    /// not only to the end of its own phase. Events of another session, of
    /// the same session once the client sent it another request, or after
    /// a restart ended the turn, do not extend it.
    #[test]
    fn a_request_never_answered_counts_while_its_session_shows_the_turn_at_work() {
        let line = |t: f64, rest: &str| format!("{{\"t\":{t:.1},{rest}}}\n");
        let update = |t: f64, session: &str| {
            line(
                t,
                &format!(
                    r#""ev":"hop_sse","hop":"gateway","conn":1,"stream":"s","event":"message","method":"session/update","session":"{session}""#
                ),
            )
        };
        let mut trace = String::new();
        trace += &line(0.0, r#""ev":"phase_start","phase":"startLongTurn""#);
        trace += &line(
            10.0,
            r#""ev":"rpc","dir":"out","method":"session/prompt","rpcId":2,"session":"a""#,
        );
        trace += &line(
            20.0,
            r#""ev":"phase_end","phase":"startLongTurn","outcome":"ok","ms":20"#,
        );
        trace += &update(400.0, "a");
        trace += &line(
            900.0,
            r#""ev":"agent_sent","session":"a","method":"session/update","digest":"d""#,
        );
        // Another session's turn is not this one's.
        trace += &update(1200.0, "b");
        trace += &line(1300.0, r#""ev":"restart_start""#);
        // After the restart, the session's events are not the cut turn's.
        trace += &update(1800.0, "a");
        trace += &line(
            2000.0,
            r#""ev":"restart_end","ok":true,"action":"managed","restartMs":700"#,
        );
        let floor = of_attempt(5000, &[restart(700, None)], Some(&trace));
        // 10..900 (the turn at work), then the restart 1300..2000.
        assert_eq!(floor.floor_ms, 890 + 700, "{floor:?}");

        // The client sends the session a new request: what follows is its.
        let mut moved_on = String::new();
        moved_on += &line(
            10.0,
            r#""ev":"rpc","dir":"out","method":"session/prompt","rpcId":2,"session":"a""#,
        );
        moved_on += &line(
            20.0,
            r#""ev":"phase_end","phase":"startLongTurn","outcome":"ok","ms":20"#,
        );
        moved_on += &update(300.0, "a");
        moved_on += &line(
            3000.0,
            r#""ev":"rpc","dir":"out","method":"session/load","rpcId":3,"session":"a""#,
        );
        moved_on += &update(3100.0, "a");
        moved_on += &line(3200.0, r#""ev":"rpc","dir":"in","rpcId":3"#);
        let floor = of_attempt(5000, &[], Some(&moved_on));
        // 10..300 for the prompt, 3000..3200 for the load.
        assert_eq!(floor.floor_ms, 290 + 200, "{floor:?}");
    }

    #[test]
    fn store_calls_are_answers_like_http_exchanges() {
        let trace = concat!(
            r#"{"t":0.0,"ev":"trace"}"#,
            "\n",
            // A store call alone: 20..30.
            r#"{"t":30.0,"ev":"store","call":"insertEvent","driver":"rivet","ms":10.0,"ok":true}"#,
            "\n",
            // One overlapping an exchange (40..60 and 50..70): 30 ms, not 40.
            r#"{"t":60.0,"ev":"http","ms":20.0}"#,
            "\n",
            r#"{"t":70.0,"ev":"store","call":"getSession","driver":"rivet","ms":20.0,"ok":true}"#,
            "\n",
            // A failed call waited as long as it waited; one without `ms` counts nothing.
            r#"{"t":100.0,"ev":"store","call":"updateSession","ms":5.0,"ok":false,"error":"x"}"#,
            "\n",
            r#"{"t":200.0,"ev":"store","call":"updateSession"}"#,
            "\n",
        );
        let floor = of_attempt(1000, &[], Some(trace));
        assert_eq!((floor.floor_ms, floor.overhead_ms), (45, 955));
    }

    #[test]
    fn restart_windows_join_the_union_so_a_call_waiting_in_one_counts_once() {
        let trace = concat!(
            r#"{"t":100.0,"ev":"restart_start"}"#,
            "\n",
            // A store call retrying while the runner restarts (150..350), and
            // one that outlives the restart by 50 ms (350..450).
            r#"{"t":350.0,"ev":"store","call":"insertEvent","ms":200.0,"ok":true}"#,
            "\n",
            r#"{"t":400.0,"ev":"restart_end","ok":true,"restartMs":250,"readyMs":50}"#,
            "\n",
            r#"{"t":450.0,"ev":"store","call":"getSession","ms":100.0,"ok":true}"#,
            "\n",
            r#"{"t":600.0,"ev":"http","ms":10.0}"#,
            "\n",
        );
        let restarts = [restart(250, Some(50))];
        // 100..450 and 590..600, where summing would say 300 + 350 + 10.
        let floor = of_attempt(1000, &restarts, Some(trace));
        assert_eq!(floor.floor_ms, 360);
        // A trace that lost a restart's end (cut at its size limit) cannot
        // place it: the restarts are added up, and the answers beside them.
        let cut = trace.replace(r#""ev":"restart_end""#, r#""ev":"truncated""#);
        let floor = of_attempt(1000, &restarts, Some(&cut));
        assert_eq!(floor.floor_ms, 300 + 300 + 10);
        // Two restarts, two windows.
        let twice = format!(
            "{trace}{}\n{}\n",
            r#"{"t":700.0,"ev":"restart_start"}"#, r#"{"t":800.0,"ev":"restart_end","ok":true}"#
        );
        let floor = of_attempt(
            1000,
            &[restarts[0].clone(), restart(90, Some(10))],
            Some(&twice),
        );
        assert_eq!(floor.floor_ms, 460);
    }

    #[test]
    fn a_hosted_sdk_action_counts_to_its_answer_or_to_the_deadline_it_was_given_up_at() {
        let trace = concat!(
            r#"{"t":0.0,"ev":"trace"}"#,
            "\n",
            // The SDK's POST inside its action counts once: 100..400.
            r#"{"t":120.0,"ev":"http","ms":10.0,"client":"ts-sdk"}"#,
            "\n",
            r#"{"t":400.0,"ev":"sdk","call":"prompt","ms":300.0,"ok":true}"#,
            "\n",
            // Given up at its 500 ms deadline: 500..1000.
            r#"{"t":1000.0,"ev":"sdk","call":"prompt","ms":500.0,"abandoned":true}"#,
            "\n",
        );
        let floor = of_attempt(1100, &[], Some(trace));
        assert_eq!((floor.floor_ms, floor.overhead_ms), (800, 300));
    }

    #[test]
    fn a_terminal_counts_from_opening_or_typing_to_what_answers_it() {
        let trace = concat!(
            r#"{"t":10.0,"ev":"http","method":"GET","purpose":"terminal","ms":5.0,"status":101}"#,
            "\n",
            // Opened at 10, ready at 14: 4 ms, beside the upgrade's 5.
            r#"{"t":10.0,"ev":"ws_open","process":"p1"}"#,
            "\n",
            r#"{"t":14.0,"ev":"ws","dir":"in","frame":"ready","process":"p1"}"#,
            "\n",
            // A line at 100, echoed at 130; the second output frame adds nothing.
            r#"{"t":100.0,"ev":"ws","dir":"out","frame":"input","process":"p1"}"#,
            "\n",
            r#"{"t":130.0,"ev":"ws","dir":"in","frame":"data","process":"p1"}"#,
            "\n",
            r#"{"t":140.0,"ev":"ws","dir":"in","frame":"data","process":"p1"}"#,
            "\n",
            // A line to another terminal that never answers counts nothing.
            r#"{"t":150.0,"ev":"ws","dir":"out","frame":"input","process":"p2"}"#,
            "\n",
            // The wait for another cell's unanswered DELETEs: 200..500.
            r#"{"t":500.0,"ev":"cleanup_wait","ms":300}"#,
            "\n",
        );
        let floor = of_attempt(1000, &[], Some(trace));
        assert_eq!(floor.floor_ms, 5 + 4 + 30 + 300);
    }

    #[test]
    fn without_a_trace_the_floor_is_the_restarts() {
        let floor = of_attempt(500, &[restart(10, None), restart(5, Some(5))], None);
        assert_eq!(floor.floor_ms, 20);
        assert_eq!(floor.overhead_ms, 480);
        assert_eq!(of_attempt(0, &[], None).overhead_percent(), None);
    }

    #[test]
    fn the_floor_never_exceeds_the_wall_time() {
        let floor = of_attempt(50, &[restart(100, Some(100))], None);
        assert_eq!((floor.floor_ms, floor.overhead_ms), (50, 0));
    }

    #[test]
    fn sums_skip_what_has_no_floor() {
        let a = Some(Floor {
            floor_ms: 1,
            overhead_ms: 2,
        });
        assert_eq!(
            Floor::sum(&[a, None, a]),
            Some(Floor {
                floor_ms: 2,
                overhead_ms: 4
            })
        );
        assert_eq!(Floor::sum(&[None]), None);
    }

    #[test]
    fn the_text_and_markdown_reports_show_both_per_cell_and_for_the_run() {
        let mut report = crate::fixture::report();
        let plain = crate::table::render_text(&report, false);
        assert!(!plain.contains("floor"), "no floor, no line: {plain}");
        for (n, cell) in report.cells.iter_mut().enumerate() {
            cell.timing = Some(Floor {
                floor_ms: 1000 * (n as u64 + 1),
                overhead_ms: 100,
            });
        }
        report.run.timing = Floor::of_cells(&report.cells);
        let cells = report.cells.len() as u64;
        let floor: u64 = (1..=cells).map(|n| n * 1000).sum();
        assert_eq!(
            report.run.timing,
            Some(Floor {
                floor_ms: floor,
                overhead_ms: 100 * cells
            })
        );
        let text = crate::table::render_text(&report, false);
        let line = text.lines().find(|l| l.starts_with("time: ")).unwrap();
        assert!(
            line.contains(&format!("floor {:.1} s", floor as f64 / 1000.0)),
            "{line}"
        );
        assert!(text.contains("floor and overhead"), "{text}");
        let first = &report.cells[0];
        assert!(
            text.lines()
                .any(|l| l.contains(&first.label()) && l.contains("1000") && l.contains("10%")),
            "{text}"
        );
        let markdown = crate::markdown::render_markdown(&report);
        assert!(markdown.contains("## Floor and overhead"), "{markdown}");
        assert!(
            markdown.contains(&format!(
                "| {} | {} | 1000 | 100 | 10% |",
                first.label(),
                first.point.scenario
            )),
            "{markdown}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["cells"][0]["floorMs"], 1000);
        assert_eq!(json["run"]["overheadMs"], 100 * cells);
        assert!(json["totals"].get("floorMs").is_none(), "totals are counts");
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/report.schema.json")).unwrap();
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn reports_without_the_fields_still_read() {
        #[derive(serde::Deserialize)]
        struct Holder {
            #[serde(flatten, default)]
            timing: Option<Floor>,
        }
        let old: Holder = serde_json::from_str(r#"{"other":1}"#).unwrap();
        assert_eq!(old.timing, None);
        let new: Holder = serde_json::from_str(r#"{"floorMs":3,"overheadMs":4}"#).unwrap();
        assert_eq!(new.timing.map(|f| f.floor_ms), Some(3));
    }
}
