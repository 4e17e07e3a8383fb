//! The `chaos` action: Jepsen's combined nemesis for one cell. A schedule
//! of [`FAULTS`] faults (restarts, pauses, partitions, resets, latency)
//! over the stack's components and hops, drawn from a seed ([`draw`]): the
//! run's seed mixed with the cell's point, never the attempt, so every
//! repeat of the cell runs the same schedule, on any machine. The catalog
//! it draws from is fixed by the cell's settings alone (Postgres's pause
//! only when the cell keeps its sessions there), never by what happens to
//! run here: a stack that cannot take every fault of the catalog has no
//! `chaos` target (it is skipped, saying why).
//!
//! Every fault starts and heals inside the window ([`WINDOW`]) that opens
//! at the cell's restart step, one fault at a time on a component or a
//! hop; the phases that follow run meanwhile. The executor waits for the
//! schedule to be over (every fault healed or back, and seen so) before
//! the scenario's last phase, so that phase finds the stack whole: a
//! restart's deadline (120 s at least) covers the window and the slowest
//! component's readiness. A fault that did not take is the cell's error
//! (the test's setup), never a pass; what a fault acted on, seen running
//! again, that did not answer its probe did not come back (`not_back`, the
//! system's failure unless it is a part of continuity's own), and a
//! component that did not is restarted for the next cell.
//!
//! This file draws a schedule and holds what it runs on ([`Chaos`]); the
//! run itself is `chaos_run.rs`.

use super::pause::PauseAction;
use super::readiness::Readiness;
use super::BuiltinTarget;
use crate::faults::{FaultControl, Hop, LocalHop};
use crate::report::{FaultKind, Schedule, ScheduledFault};
use std::sync::Arc;
use std::time::Duration;

/// How many faults a schedule holds.
pub(crate) const FAULTS: usize = 3;
/// Every fault starts and ends within this long of the restart step.
pub(crate) const WINDOW: Duration = Duration::from_secs(8);
/// A restart keeps its component to itself this long in the draw (it is
/// over once the component is back, which takes a few seconds).
const RESTART_ROOM_MS: u64 = 3000;

/// The components a schedule restarts: the server, the gateway, the
/// RivetKit runner (the engine's restart waits out the runner's reconnect
/// backoff, up to 90 s: too long for one window).
pub(crate) const RESTARTED: [BuiltinTarget; 3] = [
    BuiltinTarget::Agent,
    BuiltinTarget::Gateway,
    BuiltinTarget::Rivet,
];
/// The components a schedule is lent (their restart targets): those it
/// restarts, and those it pauses, restarted when they do not answer after
/// their fault so the next cell finds the stack whole (the store's only
/// when it runs).
pub(crate) const LENT: [BuiltinTarget; 5] = [
    BuiltinTarget::Agent,
    BuiltinTarget::Gateway,
    BuiltinTarget::Rivet,
    BuiltinTarget::RivetEngine,
    BuiltinTarget::Store,
];
/// The components a schedule pauses (the store only under `--persist postgres`).
const PAUSED: [BuiltinTarget; 4] = [
    BuiltinTarget::Agent,
    BuiltinTarget::Gateway,
    BuiltinTarget::Rivet,
    BuiltinTarget::RivetEngine,
];
/// The hops a schedule puts its network faults on (the runner's hop is
/// left out: its reconnect backoff outlasts a window).
pub(crate) const HOPS: [LocalHop; 3] = [LocalHop::Gateway, LocalHop::Agent, LocalHop::Persist];

/// What a cell's schedule can hold: fixed by whether the cell keeps its
/// sessions in the stack's Postgres.
pub(crate) fn catalog(postgres: bool) -> Vec<(FaultKind, String)> {
    let mut entries: Vec<(FaultKind, String)> = RESTARTED
        .iter()
        .map(|c| (FaultKind::Restart, c.name().to_string()))
        .collect();
    let paused = PAUSED
        .iter()
        .chain(postgres.then_some(&BuiltinTarget::Store));
    entries.extend(paused.map(|c| (FaultKind::Pause, c.name().to_string())));
    for kind in [FaultKind::Partition, FaultKind::Reset, FaultKind::Latency] {
        entries.extend(HOPS.iter().map(|hop| (kind, hop.name().to_string())));
    }
    entries
}

/// The schedule of `seed` over `catalog(postgres)`: the same on every
/// machine (drawn with [`crate::seed::mix`], whose numbers are fixed).
pub(crate) fn draw(seed: u64, postgres: bool) -> Schedule {
    let catalog = catalog(postgres);
    let window_ms = WINDOW.as_millis() as u64;
    let mut counter = 0u64;
    let mut next = |below: u64| {
        counter += 1;
        crate::seed::mix(seed, counter) % below.max(1)
    };
    let mut faults: Vec<ScheduledFault> = Vec::new();
    // Enough tries that a collision is always resolved; fixed, so the
    // draw stays a function of the seed.
    for _ in 0..1000 {
        if faults.len() == FAULTS {
            break;
        }
        let (fault, on) = catalog[next(catalog.len() as u64) as usize].clone();
        let hold_ms = match fault {
            FaultKind::Restart => 0,
            FaultKind::Reset => 1000,
            FaultKind::Pause | FaultKind::Partition => 500 + next(2501),
            FaultKind::Latency => 1000 + next(2001),
        };
        let busy = hold_ms.max(if fault == FaultKind::Restart {
            RESTART_ROOM_MS
        } else {
            0
        });
        let at_ms = next(window_ms - busy + 1);
        let candidate = ScheduledFault {
            at_ms,
            hold_ms,
            fault,
            on,
        };
        if faults.iter().all(|f| !collides(f, &candidate)) {
            faults.push(candidate);
        }
    }
    faults.sort_by(|a, b| (a.at_ms, &a.on).cmp(&(b.at_ms, &b.on)));
    Schedule {
        seed,
        window_ms,
        faults,
    }
}

/// Two faults on the same component (or the same hop) whose spans meet.
fn collides(a: &ScheduledFault, b: &ScheduledFault) -> bool {
    let span = |f: &ScheduledFault| {
        let busy = match f.fault {
            FaultKind::Restart => RESTART_ROOM_MS,
            _ => f.hold_ms,
        };
        (f.at_ms, f.at_ms + busy)
    };
    let same = a.on == b.on && a.fault.on_hop() == b.fault.on_hop();
    let ((a0, a1), (b0, b1)) = (span(a), span(b));
    same && a0 <= b1 && b0 <= a1
}

/// What a stack gives its `chaos` target to act on.
pub(crate) struct ChaosParts {
    /// How each component is paused (the hold is each fault's own).
    pub pauses: Vec<(BuiltinTarget, PauseAction)>,
    /// Each hop's proxy.
    pub hops: Vec<FaultControl>,
    /// What must answer once a fault on a component or a hop is over.
    pub ready: Vec<(Resource, Readiness, Duration)>,
}

/// A component or a hop, as a schedule's `on` names it with its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resource {
    Component(BuiltinTarget),
    Hop(Hop),
}

/// The `chaos` action: the stack's parts a schedule acts on (one is one:
/// equal by identity).
#[derive(Clone)]
pub(crate) struct Chaos(pub Arc<ChaosParts>);

impl PartialEq for Chaos {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Chaos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Chaos")
    }
}

impl Chaos {
    pub(crate) fn describe(&self) -> String {
        format!(
            "chaos: {FAULTS} faults drawn from the seed within {} of the restart step, healed before the last phase",
            super::fmt_duration(WINDOW)
        )
    }
}

#[cfg(test)]
#[path = "chaos_tests.rs"]
mod tests;
