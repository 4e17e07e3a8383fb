//! The local stack's fault targets on its hops: a toxic on one of them
//! for a window, where a restart target would restart a component. The
//! built-in ones (their toxics are [`BuiltinTarget::fault`]'s) and the
//! config file's own, each on its hop's proxy.

use super::hops::Hops;
use crate::faults::{Hop, LocalHop};
use crate::targets::{
    BuiltinTarget, FaultAction, OwnTarget, Readiness, RestartAction, Selection, Target, TargetId,
    Unavailable,
};
use std::time::Duration;

/// The fault targets a run selects, built in and the config file's
/// (`custom`), each on its hop's proxy and with `ready`'s probe for its hop
/// (what must answer once the fault heals); one whose hop has no proxy
/// here is unavailable, saying why.
pub(crate) fn on_hops(
    selection: &Selection,
    custom: &[(OwnTarget, FaultAction)],
    hops: &Hops,
    ready: &dyn Fn(&Hop) -> Option<(Readiness, Duration)>,
) -> (Vec<Target>, Vec<Unavailable>) {
    let builtin = BuiltinTarget::ALL
        .into_iter()
        .filter_map(|b| Some((TargetId::from(b), b.fault()?)));
    let own = custom
        .iter()
        .map(|(name, action)| (TargetId::from(name.clone()), action.clone()));
    let (mut targets, mut unavailable) = (Vec::new(), Vec::new());
    for (id, action) in builtin.chain(own) {
        if !selection.includes(&id) {
            continue;
        }
        match hops.control(&action.hop) {
            Some(control) => {
                let hop = action.hop.clone();
                let mut target = fault_target(id, action, control);
                if let Some((readiness, timeout)) = ready(&hop) {
                    target.readiness = readiness;
                    target.ready_timeout = timeout;
                }
                targets.push(target);
            }
            None => unavailable.push(Unavailable::skipped(id, &hops.why_no_proxy(&action.hop))),
        }
    }
    (targets, unavailable)
}

/// A fault target on its hop's proxy. Off the clients' requests (the
/// session store's hops), its window may cut no other cell's DELETE.
pub(crate) fn fault_target(
    id: TargetId,
    action: FaultAction,
    control: crate::faults::FaultControl,
) -> Target {
    let hop = action.hop.local();
    let target =
        Target::new(id, RestartAction::Fault(action), Readiness::None).with_fault_proxy(control);
    match hop {
        Some(LocalHop::Persist | LocalHop::Runner) => target.keeping_open_requests(),
        _ => target,
    }
}
