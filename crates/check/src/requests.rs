//! The requests invariant: on each of the client's connections, every
//! JSON-RPC request is answered to the application at most once, and no
//! answer comes for a request never made. A request left unanswered is
//! its phase's outcome (a timeout, a hang), never this invariant's.

use crate::history::{Given, History, Name};
use crate::verdict::{Breach, Hop, Invariant, Violation};
use std::collections::{HashMap, HashSet};

pub(crate) fn check(history: &History) -> Vec<Violation> {
    let mut asked: HashMap<Option<Name>, HashSet<Name>> = HashMap::new();
    let mut answered: HashMap<(Option<Name>, Name), usize> = HashMap::new();
    let mut out = Vec::new();
    for g in &history.app {
        let Some(id) = g.rpc_id else { continue };
        if g.request && !g.from_agent {
            asked.entry(g.conn).or_default().insert(id);
            continue;
        }
        if !g.from_agent || g.request || g.update {
            continue;
        }
        let count = answered.entry((g.conn, id)).or_default();
        *count += 1;
        let made = asked.get(&g.conn).is_some_and(|ids| ids.contains(&id));
        if *count == 2 {
            out.push(violation(
                history,
                g,
                Breach::AnsweredTwice,
                id,
                "was answered twice to the application",
            ));
        } else if *count == 1 && !made {
            out.push(violation(
                history,
                g,
                Breach::Unrequested,
                id,
                "was answered, but no request with this id was made on the connection",
            ));
        }
    }
    out
}

fn violation(history: &History, g: &Given, breach: Breach, id: Name, what: &str) -> Violation {
    let id = history.names.text(id).to_string();
    Violation {
        invariant: Invariant::Requests,
        breach,
        hop: Hop::Application,
        since: Some(Hop::Client),
        stream: None,
        session: g.session.map(|s| history.names.text(s).to_string()),
        detail: format!("JSON-RPC request {id} {what}"),
        ids: vec![id],
        event_index: g.event_index,
        t: g.t,
        phase: history.phase_at(g.t).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use crate::made_up::Made;
    use crate::{Breach, Invariant, Status};

    #[test]
    fn a_request_answered_twice_or_an_answer_never_asked_for_breaks_requests() {
        let mut once = Made::new();
        once.app_rpc(4, false).app_rpc(4, true);
        let fine = once.check(&[]);
        assert_eq!(
            fine.status(Invariant::Requests),
            Some(Status::Valid),
            "{fine:#?}"
        );

        let mut twice = Made::new();
        twice.app_rpc(4, false).app_rpc(4, true).app_rpc(4, true);
        let verdict = twice.check(&[]);
        let first = verdict.first().expect("a violation");
        assert_eq!(
            (first.invariant, first.breach),
            (Invariant::Requests, Breach::AnsweredTwice)
        );
        assert_eq!(first.ids, ["4"]);

        let mut stray = Made::new();
        stray.app_rpc(4, false).app_rpc(5, true);
        let verdict = stray.check(&[]);
        assert_eq!(
            verdict.first().map(|v| v.breach),
            Some(Breach::Unrequested),
            "{verdict:#?}"
        );
    }

    #[test]
    fn an_unanswered_request_is_its_phases_not_the_checkers() {
        let mut m = Made::new();
        m.app_rpc(4, false);
        assert!(m.check(&[]).violations.is_empty());
    }
}
