//! The always-on checker: the invariants every cell's history must hold,
//! whatever its scenario asks, as Jepsen checks a test's history
//! (`checker/compose`): small checkers, each a function of the one
//! history, run together and folded into one verdict. The runner runs them
//! on every cell after its phases; `continuity check RUN` runs them again
//! on a finished run's traces.
//!
//! The history is the cell's `trace.jsonl` ([`History`]): the SSE events
//! the client read and the GETs that carried them, the fault proxies'
//! record of the SSE events they forwarded on the agent and gateway hops,
//! what the client handed the application, what it wrote to its store,
//! and the scripted agent's record of what it sent. The invariants:
//!
//! - [`Invariant::Stream`] ([`stream`]): SSE ids once, in order, none
//!   skipped, resumes going on after their `Last-Event-ID`;
//! - [`Invariant::GroundTruth`], [`Invariant::Application`] and the
//!   store's content ([`content`]): each session update followed by its
//!   digest from the agent to the store;
//! - [`Invariant::Store`]'s indexes ([`store`]);
//! - [`Invariant::Requests`] ([`requests`]).
//!
//! A violation names the hop where it first shows (server, gateway,
//! client, application, store), so the verdict says where the fix belongs.
//! A scenario only adds what it allows ([`Allowance`]), never what is checked.

#![forbid(unsafe_code)]

mod content;
mod history;
#[cfg(test)]
mod made_up;
mod requests;
mod store;
mod stream;
/// The verdict's types are the schema's: `report.json` carries them.
use continuity_schema::checked as verdict;

pub use history::History;
pub use verdict::{
    Allowance, Breach, Checked, Excused, Hop, Invariant, Status, UnknownName, Verdict, Violation,
};

use continuity_trace::event::Line;
use std::path::Path;

/// Runs every checker over `history`, folding their findings: the
/// violations in the order of the path (the hop first, then the time),
/// each invariant valid, broken, or unknown with why.
pub fn check(history: &History, allows: &[Allowance]) -> Verdict {
    let gaps = history.host_gaps();
    let stream = stream::check(history);
    let (content, excused) = content::check(history, allows, &gaps);
    let content: Vec<Violation> = content
        .into_iter()
        .filter(|v| !explained_by_stream(v, &stream))
        .collect();
    let mut violations: Vec<Violation> = stream
        .into_iter()
        .chain(content)
        .chain(store::check(history, &gaps))
        .chain(requests::check(history))
        .collect();
    violations.sort_by(|a, b| a.hop.cmp(&b.hop).then(a.t.total_cmp(&b.t)));
    let checked = Invariant::ALL
        .into_iter()
        .map(|invariant| status(history, invariant, &violations))
        .collect();
    Verdict {
        checked,
        violations,
        allowed: allows.to_vec(),
        excused,
    }
}

/// [`check`] of the lines of a trace.
pub fn check_lines(lines: impl IntoIterator<Item = Line>, allows: &[Allowance]) -> Verdict {
    check(&History::of(lines), allows)
}

/// [`check`] of a trace file, read one line at a time.
pub fn check_file(
    path: &Path,
    allows: &[Allowance],
) -> Result<Verdict, continuity_trace::TraceError> {
    let mut history = History::default();
    continuity_trace::for_each_event(path, |line| history.push(&line))?;
    Ok(check(&history, allows))
}

/// A content breach at a stream's hop that the stream invariant already
/// names there (the same event, seen by its id).
fn explained_by_stream(v: &Violation, stream: &[Violation]) -> bool {
    let same = |b: Breach| match v.breach {
        Breach::Lost => b == Breach::Gap,
        Breach::Duplicate => matches!(b, Breach::Duplicate | Breach::Replay),
        other => b == other,
    };
    v.invariant == Invariant::GroundTruth && stream.iter().any(|s| s.hop == v.hop && same(s.breach))
}

/// One invariant's status on this history.
fn status(history: &History, invariant: Invariant, violations: &[Violation]) -> Checked {
    let broken = violations.iter().any(|v| v.invariant == invariant);
    let why = match invariant {
        _ if broken => None,
        Invariant::Stream if !history.client.recorded => {
            Some("the trace holds no event stream the client read")
        }
        Invariant::Application | Invariant::Requests if history.app.is_empty() => {
            Some("the trace records nothing the client handed the application (written before the checker, or the client records none)")
        }
        Invariant::Store if history.store.is_empty() && history.store_calls => {
            Some("the trace's store calls do not say what they wrote (written before the checker)")
        }
        Invariant::Store if history.store.is_empty() => Some("the trace holds no store writes"),
        Invariant::GroundTruth if history.agent.is_empty() && !history.server.recorded => {
            Some("no record of what the agent or the server sent (a deployment's agent, a stack without fault proxies, or a trace written before the checker)")
        }
        Invariant::GroundTruth if history.undigested => {
            Some("the client's SSE events carry no digests (a trace written before the checker)")
        }
        _ if history.truncated => Some("the trace was cut at its size limit"),
        _ => None,
    };
    Checked {
        invariant,
        status: match (broken, &why) {
            (true, _) => Status::Broken,
            (false, Some(_)) => Status::Unknown,
            (false, None) => Status::Valid,
        },
        why: why.map(str::to_string),
    }
}
