//! The always-on checker around each attempt. While the cell runs, the
//! fault proxies on the agent and gateway hops tell its trace what event
//! streams they carried (what the server sent, what left the gateway).
//! Once its phases are over, the scripted agent's record of what it sent
//! in the meantime is copied into the trace, and the checker reads the
//! whole trace; its verdict goes into the attempt, and a violation fails
//! the phase it fell in (`scenario::CellRun::apply_integrity`).

use crate::check::{Allowance, Verdict};
use crate::faults::{FaultControl, LocalHop, TapEvent};
use crate::trace::event::{AgentSent, Event};
use crate::trace::Trace;
use serde::Deserialize;
use std::io::{BufRead, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The hops whose event streams the checker follows.
const TAPPED: [LocalHop; 2] = [LocalHop::Agent, LocalHop::Gateway];

/// Most of the agent's record one cell copies (its lines are short: a
/// restart-mid-turn cell writes about 50).
const AGENT_RECORD_LIMIT: u64 = 16 * 1024 * 1024;

/// One attempt being watched: the hops it taps, and where the agent's
/// record stood when it began.
pub(super) struct Watch {
    tapped: Vec<FaultControl>,
    agent: Option<(PathBuf, u64)>,
}

impl Watch {
    /// Taps `hops` into `trace` and marks the agent's record `agent_log`.
    pub(super) fn start(hops: &[FaultControl], agent_log: Option<&Path>, trace: &Trace) -> Watch {
        let tapped: Vec<FaultControl> = hops
            .iter()
            .filter(|h| TAPPED.iter().any(|tapped| h.hop() == tapped))
            .cloned()
            .collect();
        for hop in &tapped {
            let (trace, name) = (trace.clone(), hop.hop().name().to_string());
            hop.tap(Some(Arc::new(move |event| tell(&trace, &name, event))));
        }
        let agent = agent_log.map(|path| {
            let from = std::fs::metadata(path).map_or(0, |m| m.len());
            (path.to_path_buf(), from)
        });
        Watch { tapped, agent }
    }

    /// Stops the taps, copies what the agent sent since the start, and
    /// checks the trace at `file` (nothing without one: `--trace off`).
    pub(super) fn finish(
        self,
        trace: &Trace,
        file: Option<&Path>,
        allows: &[Allowance],
    ) -> Option<Verdict> {
        for hop in &self.tapped {
            hop.tap(None);
        }
        if let Some((path, from)) = &self.agent {
            copy_agent_record(path, *from, trace);
        }
        trace.flush();
        let file = file?;
        match crate::check::check_file(file, allows) {
            Ok(verdict) => Some(verdict),
            Err(e) => {
                eprintln!(
                    "continuity: the checker could not read {}: {e}",
                    file.display()
                );
                None
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        for hop in &self.tapped {
            hop.tap(None);
        }
    }
}

/// What a hop's tap saw, into the cell's trace.
fn tell(trace: &Trace, hop: &str, event: TapEvent) {
    match event {
        TapEvent::Stream {
            conn,
            path,
            last_event_id,
            status,
        } => trace.hop_stream(hop, conn, &path, last_event_id, status),
        TapEvent::Sse {
            conn,
            path,
            id,
            event,
            data,
        } => trace.hop_sse(hop, conn, &path, (id, event, &data)),
    }
}

/// A line of the agent's sent record that notes a message (the chunk
/// lines of a streamed turn have no digest and are skipped).
#[derive(Deserialize)]
struct Noted {
    at: f64,
    #[serde(flatten)]
    sent: AgentSent,
}

/// Copies the lines the agent appended to its record since `from` into
/// `trace`, each at the time it was noted.
fn copy_agent_record(path: &Path, from: u64, trace: &Trace) {
    let Ok(mut file) = std::fs::File::open(path) else {
        return;
    };
    if file.seek(std::io::SeekFrom::Start(from)).is_err() {
        return;
    }
    let reader = std::io::BufReader::new(file.take(AGENT_RECORD_LIMIT));
    for line in reader.split(b'\n').map_while(Result::ok) {
        let Ok(noted) = serde_json::from_slice::<Noted>(&line) else {
            continue;
        };
        if noted.sent.digest.is_empty() || noted.sent.session.is_empty() {
            continue;
        }
        trace.recorded(trace.t_of_epoch_ms(noted.at), Event::AgentSent(noted.sent));
    }
}
