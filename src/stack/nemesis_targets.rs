//! The local stack's nemesis targets: a short and a long pause of each
//! component that runs as a process, the agent process killed under the
//! server, the whole stack rebooted, and `chaos`, a seeded schedule of
//! faults. Each finds its processes through the stack's own record
//! (`stack.json`: pid and start time) or the pid file nginx writes, never
//! by a name; one whose component does not run here is unavailable,
//! saying why.

use super::hops::Hops;
use super::state::StackJournal;
use crate::faults::Hop;
use crate::targets::chaos::{self, ChaosParts, Resource};
use crate::targets::{
    AgentKill, BuiltinTarget, Chaos, Nemesis, PauseAction, PauseLength, ProcessOf, Readiness,
    Reboot, Recorded, RestartAction, Selection, Target, Unavailable, PAST_DEADLINE, SHORT_PAUSE,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The components that run as processes, in dependency order (what a
/// reboot brings up first).
const COMPONENTS: [BuiltinTarget; 5] = [
    BuiltinTarget::Store,
    BuiltinTarget::RivetEngine,
    BuiltinTarget::Rivet,
    BuiltinTarget::Agent,
    BuiltinTarget::Gateway,
];

/// Why a nemesis target cannot run here (its cells are skipped, saying so).
struct Absent(String);

/// What the stack has that its nemesis targets act on.
pub(super) struct Parts<'a> {
    /// Every component target the stack started (run's or background).
    pub components: Vec<&'a Target>,
    /// Why a component does not run (`store` without Postgres), by target.
    pub absent: Vec<(BuiltinTarget, String)>,
    pub journal: &'a StackJournal,
    /// nginx's folder, where it writes `nginx.pid` and runs.
    pub gateway_prefix: PathBuf,
    /// The run's owner tag, which every process of the stack carries.
    pub owner: Option<String>,
    pub hops: &'a Hops,
    /// The Rivet Engine's own health URL (its restart probe is the actor's).
    pub engine_health: Option<String>,
    /// What answers once a fault on a hop heals ([`super::local`]'s rule).
    pub hop_ready: &'a dyn Fn(&Hop) -> Option<(Readiness, Duration)>,
    /// The phase deadline, which a long pause outlasts.
    pub phase_deadline: Duration,
}

/// The process a component's target started, as the stack's journal
/// records it under the target's name.
struct JournalRecord {
    journal: StackJournal,
    target: BuiltinTarget,
}

impl Recorded for JournalRecord {
    fn recorded(&self) -> Option<(u32, Option<u64>)> {
        self.journal.recorded(self.target.name())
    }
}

impl Parts<'_> {
    fn component(&self, id: BuiltinTarget) -> Option<&Target> {
        self.components.iter().copied().find(|t| t.id == id)
    }

    /// Why `id` cannot be acted on here.
    fn absent(&self, id: BuiltinTarget) -> Absent {
        Absent(
            self.absent
                .iter()
                .find(|(of, _)| *of == id)
                .map(|(_, why)| why.clone())
                .unwrap_or_else(|| format!("the `{id}` component is not running on this stack")),
        )
    }

    /// Where `id`'s process is found: nginx's pid file, else the journal.
    fn process_of(&self, id: BuiltinTarget) -> ProcessOf {
        let what = match id {
            BuiltinTarget::Agent => "the sandbox-agent server",
            BuiltinTarget::Gateway => "the nginx gateway's master",
            BuiltinTarget::Rivet => "the RivetKit runner",
            BuiltinTarget::RivetEngine => "the Rivet Engine",
            _ => "the session store's Postgres",
        };
        match id {
            BuiltinTarget::Gateway => ProcessOf::PidFile {
                what: what.into(),
                path: self.gateway_prefix.join("nginx.pid"),
                folder: self.gateway_prefix.clone(),
                owner: self.owner.clone(),
            },
            _ => ProcessOf::Recorded {
                what: format!("{what} (stack.json's `{id}`)"),
                record: Arc::new(JournalRecord {
                    journal: self.journal.clone(),
                    target: id,
                }),
            },
        }
    }

    fn pause(&self, id: BuiltinTarget, hold: Duration) -> PauseAction {
        PauseAction {
            component: id,
            process: self.process_of(id),
            hold,
        }
    }
}

/// The nemesis targets `selection` has, and those that cannot run here.
pub(super) fn build(parts: &Parts<'_>, selection: &Selection) -> (Vec<Target>, Vec<Unavailable>) {
    let (mut targets, mut unavailable) = (Vec::new(), Vec::new());
    for builtin in BuiltinTarget::ALL {
        if !selection.includes(&builtin.into()) {
            continue;
        }
        let made = match builtin {
            BuiltinTarget::AgentProcess => agent_process(parts),
            BuiltinTarget::WholeStack => Ok(reboot(parts)),
            BuiltinTarget::Chaos => chaos_target(parts),
            _ => match builtin.paused() {
                Some((of, length)) => pause_target(parts, builtin, of, length),
                None => continue,
            },
        };
        match made {
            Ok(target) => targets.push(target),
            Err(absent) => unavailable.push(Unavailable::skipped(builtin, &absent.0)),
        }
    }
    (targets, unavailable)
}

fn pause_target(
    parts: &Parts<'_>,
    builtin: BuiltinTarget,
    of: BuiltinTarget,
    length: PauseLength,
) -> Result<Target, Absent> {
    let component = parts.component(of).ok_or_else(|| parts.absent(of))?;
    let hold = match length {
        PauseLength::Short => SHORT_PAUSE,
        PauseLength::Long => parts.phase_deadline + PAST_DEADLINE,
    };
    let pause = parts.pause(of, hold);
    let target = Target::new(
        builtin,
        RestartAction::Nemesis(Nemesis::Pause(pause)),
        component.readiness.clone(),
    )
    .with_ready_timeout(component.ready_timeout);
    // A component off the clients' requests (the Rivet layer, the store)
    // cuts none of another cell's while paused.
    Ok(match component.keeps_open_requests {
        true => target.keeping_open_requests(),
        false => target,
    })
}

fn agent_process(parts: &Parts<'_>) -> Result<Target, Absent> {
    parts
        .component(BuiltinTarget::Agent)
        .ok_or_else(|| parts.absent(BuiltinTarget::Agent))?;
    let kill = AgentKill {
        server: parts.process_of(BuiltinTarget::Agent),
        owner: parts.owner.clone(),
    };
    Ok(Target::new(
        BuiltinTarget::AgentProcess,
        RestartAction::Nemesis(Nemesis::KillAgent(kill)),
        Readiness::None,
    ))
}

fn reboot(parts: &Parts<'_>) -> Target {
    let order: Vec<BuiltinTarget> = COMPONENTS
        .into_iter()
        .filter(|c| parts.component(*c).is_some())
        .collect();
    let boot_probes = parts
        .engine_health
        .iter()
        .map(|url| (BuiltinTarget::RivetEngine, Readiness::http(url.clone())))
        .collect();
    Target::new(
        BuiltinTarget::WholeStack,
        RestartAction::Nemesis(Nemesis::Reboot(Reboot { order, boot_probes })),
        Readiness::None,
    )
}

/// `chaos` needs every component and hop its catalog names (the store's
/// only when Postgres runs: then a cell keeping its sessions elsewhere
/// draws no fault on it).
fn chaos_target(parts: &Parts<'_>) -> Result<Target, Absent> {
    let mut pauses = Vec::new();
    let mut ready = Vec::new();
    for of in COMPONENTS {
        let Some(component) = parts.component(of) else {
            if of == BuiltinTarget::Store {
                continue;
            }
            return Err(Absent(format!(
                "its schedule acts on every component: {}",
                parts.absent(of).0
            )));
        };
        pauses.push((of, parts.pause(of, Duration::ZERO)));
        ready.push((
            Resource::Component(of),
            component.readiness.clone(),
            component.ready_timeout,
        ));
    }
    let mut hops = Vec::new();
    for hop in chaos::HOPS {
        let Some(control) = parts.hops.control(&hop) else {
            return Err(Absent(format!(
                "its schedule acts on the {hop} hop: {}",
                parts.hops.why_no_proxy(&hop)
            )));
        };
        hops.push(control);
        let hop = Hop::from(hop);
        if let Some((probe, within)) = (parts.hop_ready)(&hop) {
            ready.push((Resource::Hop(hop), probe, within));
        }
    }
    let chaos = Chaos(Arc::new(ChaosParts {
        pauses,
        hops,
        ready,
    }));
    Ok(Target::new(
        BuiltinTarget::Chaos,
        RestartAction::Nemesis(Nemesis::Chaos(chaos)),
        Readiness::None,
    ))
}

#[cfg(test)]
#[path = "nemesis_targets_tests.rs"]
mod tests;
