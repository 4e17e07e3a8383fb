//! The local stack's built-in targets, restarts and faults, as one enum:
//! each one's name (spelled once, in its serde attribute), what it does,
//! whether a run without `--target` has it, and the facts code would
//! otherwise read off its name (its family, the parts of continuity's own
//! it restarts on purpose, a fault target's toxic on its hop, a timeout
//! target's timeout). Nothing
//! outside this module compares a target's name with a built-in one.
//!
//! Over 400 lines on purpose: every fact of every built-in target is one
//! exhaustive match here, so a new target is one file's change (ARCHITECTURE.md,
//! "A restart target"), its tests apart in `builtin_tests.rs`.

use crate::errors::HarnessPart;
use crate::faults::{parse_toxic, LocalHop, Param};
use crate::targets::{FaultAction, PathTimeout};
use std::fmt;
use std::time::Duration;

/// One built-in target of the local stack. The order is the report's:
/// restarts, then faults, default ones first.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
pub enum BuiltinTarget {
    Agent,
    Gateway,
    GatewayReload,
    GatewayReloadIdle,
    Rivet,
    RivetEngine,
    Client,
    Store,
    ServerKill,
    GatewayPartition,
    GatewayReset,
    GatewayDown,
    GatewayLatency,
    GatewayTimeout,
    GatewaySlowClose,
    GatewayBandwidth,
    GatewaySlicer,
    GatewayLimitData,
    AgentPartition,
    AgentReset,
    AgentDown,
    PersistPartition,
    PersistReset,
    PersistLatency,
    RunnerPartition,
    RunnerReset,
    RunnerDown,
    GatewayReadTimeout,
    GatewayIdleCut,
    ClientHeadersTimeout,
    AgentPause,
    AgentPauseLong,
    GatewayPause,
    GatewayPauseLong,
    RivetPause,
    RivetPauseLong,
    RivetEnginePause,
    RivetEnginePauseLong,
    StorePause,
    StorePauseLong,
    AgentProcess,
    WholeStack,
    Chaos,
}

/// A short pause: under every deadline a client has (a prompt's 30 s, a
/// probe's, the turn's), so the clients should only wait.
pub(crate) const SHORT_PAUSE: Duration = Duration::from_secs(2);
/// A long pause lasts the phase deadline (`--timeout-ms`) and this much
/// more: the client gives up while the component is frozen, then it wakes.
pub(crate) const PAST_DEADLINE: Duration = Duration::from_secs(2);

/// How long a pause target keeps its component stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PauseLength {
    /// Under every deadline the clients have ([`SHORT_PAUSE`]).
    Short,
    /// Past the phase deadline (`--timeout-ms`, [`PAST_DEADLINE`] more).
    Long,
}

/// The built-in timeout targets' limit: well under the long turn's 3 s,
/// well over what a request of the stack takes to be answered.
pub(super) const TIMEOUT_LIMIT: Duration = Duration::from_secs(2);

/// What a built-in target acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// The sandbox-agent server.
    Server,
    /// The nginx gateway in front of it.
    Gateway,
    /// The Rivet layer (RivetKit runner, Rivet Engine).
    Rivet,
    /// The clients themselves (the application holding the SDK).
    Client,
    /// The session store's server.
    Store,
    /// A toxic on a hop for a window; nothing restarts.
    Fault,
    /// A timeout on the path, for the whole cell; nothing restarts.
    Timeout,
    /// A fault of the nemesis package: a component paused, the agent
    /// process killed, the whole stack rebooted, a schedule of faults.
    Nemesis,
}

/// A built-in fault target's toxic on its hop, as a table row.
struct FaultRow {
    hop: LocalHop,
    toxic: &'static str,
    params: &'static [(&'static str, i64)],
    stream: Option<&'static str>,
    hold_ms: u64,
}

const fn row(
    hop: LocalHop,
    toxic: &'static str,
    params: &'static [(&'static str, i64)],
    stream: Option<&'static str>,
    hold_ms: u64,
) -> FaultRow {
    FaultRow {
        hop,
        toxic,
        params,
        stream,
        hold_ms,
    }
}

const DOWN: Option<&str> = Some("downstream");

/// How many built-in targets there are.
const COUNT: usize = <BuiltinTarget as strum::VariantArray>::VARIANTS.len();

impl BuiltinTarget {
    /// Every built-in target, in the report's order: the enum's own,
    /// derived (strum's `VariantArray`), so a new variant is in it.
    pub(crate) const ALL: [BuiltinTarget; COUNT] = {
        let variants = <BuiltinTarget as strum::VariantArray>::VARIANTS;
        let mut all = [BuiltinTarget::Agent; COUNT];
        let mut i = 0;
        while i < COUNT {
            all[i] = variants[i];
            i += 1;
        }
        all
    };

    /// Its name, as `--target`, the report and `continuity list` write it.
    pub(crate) fn name(self) -> &'static str {
        crate::wire_name::of(&self)
    }

    /// The built-in target of this name, if one is.
    pub(crate) fn from_name(name: &str) -> Option<BuiltinTarget> {
        crate::wire_name::parse(name)
    }

    /// Whether a run without `--target` has its cells. The others restart
    /// what a plain run keeps (the clients, the session store's server),
    /// make a known race happen every time, or are faults beyond the two
    /// on the clients' hop.
    pub(crate) fn in_default_matrix(self) -> bool {
        use BuiltinTarget::*;
        match self.family() {
            Family::Client | Family::Store | Family::Timeout | Family::Nemesis => false,
            Family::Fault => matches!(self, GatewayPartition | GatewayReset),
            _ => !matches!(self, GatewayReloadIdle | ServerKill),
        }
    }

    /// What it acts on.
    pub(crate) fn family(self) -> Family {
        use BuiltinTarget::*;
        match self {
            Agent | ServerKill => Family::Server,
            Gateway | GatewayReload | GatewayReloadIdle => Family::Gateway,
            Rivet | RivetEngine => Family::Rivet,
            Client => Family::Client,
            Store => Family::Store,
            GatewayReadTimeout | GatewayIdleCut | ClientHeadersTimeout => Family::Timeout,
            AgentPause | AgentPauseLong | GatewayPause | GatewayPauseLong | RivetPause
            | RivetPauseLong | RivetEnginePause | RivetEnginePauseLong | StorePause
            | StorePauseLong | AgentProcess | WholeStack | Chaos => Family::Nemesis,
            _ => Family::Fault,
        }
    }

    /// The parts of continuity's own it takes down on purpose, for a cell
    /// whose client `hosted` the SDK in the Rivet app: the `store` target's
    /// Postgres; the Rivet targets', the faults on the hops to the Rivet
    /// Engine and a hosted client's own restart (its runner), the Rivet
    /// app; the gateway's restarts and reloads, nginx. Chromium is none's:
    /// a reload keeps the browser.
    pub(crate) fn restarted_parts(self, hosted: bool) -> Vec<HarnessPart> {
        match self.family() {
            Family::Store => vec![HarnessPart::Postgres],
            Family::Rivet => vec![HarnessPart::RivetApp],
            Family::Client if hosted => vec![HarnessPart::RivetApp],
            Family::Gateway => vec![HarnessPart::Nginx],
            Family::Fault => match self.fault_row().map(|r| r.hop) {
                Some(LocalHop::Persist | LocalHop::Runner) => vec![HarnessPart::RivetApp],
                _ => Vec::new(),
            },
            // A timeout restarts nothing: its own gateway, if it has one, keeps running.
            Family::Server | Family::Client | Family::Timeout => Vec::new(),
            Family::Nemesis => match self.paused() {
                Some((component, _)) => component.restarted_parts(hosted),
                // The whole stack, or a schedule over it: any of them.
                None if matches!(self, BuiltinTarget::WholeStack | BuiltinTarget::Chaos) => vec![
                    HarnessPart::Nginx,
                    HarnessPart::RivetApp,
                    HarnessPart::Postgres,
                ],
                None => Vec::new(),
            },
        }
    }

    /// The part of continuity's own it brings back that stands for no
    /// component of the deployment under test, for a cell whose client
    /// `hosted` the SDK in the Rivet app: the `store` target's Postgres;
    /// the RivetKit runner when it hosts that SDK (the `rivet` target, the
    /// hosted `client` restart). When it does not come back the harness
    /// failed; any other target that does not come back (the server, the
    /// gateway, the Rivet Engine, the Rivet layer as the session store) is
    /// the system's failure. The Engine is the deployment's program, not
    /// the SDK's host: after a freeze past its ping timeout it stopped
    /// placing actors while the hosted SDK went on answering, and that was
    /// blamed on continuity. A pause's is its component's; the whole
    /// stack's and a schedule's depend on which component did not come
    /// back (the caller asks it).
    pub(crate) fn own_part_brought_back(self, hosted: bool) -> Option<HarnessPart> {
        match self {
            BuiltinTarget::RivetEngine => None,
            BuiltinTarget::Rivet | BuiltinTarget::Client if hosted => Some(HarnessPart::RivetApp),
            _ => match self.family() {
                Family::Store => Some(HarnessPart::Postgres),
                Family::Nemesis => self
                    .paused()
                    .and_then(|(component, _)| component.own_part_brought_back(hosted)),
                _ => None,
            },
        }
    }

    /// The part of continuity's own whose not coming back is the
    /// harness's failure, when `component` of the stack did not come back
    /// from this target's fault (a reboot's, a schedule's, a pause's; none:
    /// the target itself did not).
    pub(crate) fn own_part_not_back(
        self,
        component: Option<BuiltinTarget>,
        hosted: bool,
    ) -> Option<HarnessPart> {
        component.unwrap_or(self).own_part_brought_back(hosted)
    }

    /// The steps of this component's repair after a fault it did not
    /// come back from, in order until one brings it back
    /// ([`super::repair`]): itself restarted, then what its probe is
    /// answered through. The Rivet Engine's probe is the persist actor,
    /// which the RivetKit runner serves: after a long freeze the engine
    /// routes the actor's requests to a runner that no longer has it
    /// ("received request for unknown actor") until the runner starts
    /// again; and when the Engine's workflow worker ended in the freeze,
    /// no restart on its data places an actor again, so it is started
    /// afresh ([`super::Afresh`]) and the runner after it.
    pub(crate) fn repair_steps(self) -> Vec<Repair> {
        use BuiltinTarget::{Rivet, RivetEngine};
        match self {
            RivetEngine => vec![
                Repair::Restart(RivetEngine),
                Repair::Restart(Rivet),
                Repair::Afresh(RivetEngine),
                Repair::Restart(Rivet),
            ],
            _ => vec![Repair::Restart(self)],
        }
    }

    /// The components its repair acts on, each once, in the order it first
    /// does ([`BuiltinTarget::repair_steps`]).
    pub(crate) fn repaired_with(self) -> Vec<BuiltinTarget> {
        let mut parts = Vec::new();
        for part in self.repair_steps().into_iter().map(Repair::part) {
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
        parts
    }

    /// A pause target's component (the restart target whose process it
    /// stops) and how long; `None` for the others.
    pub(crate) fn paused(self) -> Option<(BuiltinTarget, PauseLength)> {
        use BuiltinTarget::*;
        use PauseLength::{Long, Short};
        Some(match self {
            AgentPause => (Agent, Short),
            AgentPauseLong => (Agent, Long),
            GatewayPause => (Gateway, Short),
            GatewayPauseLong => (Gateway, Long),
            RivetPause => (Rivet, Short),
            RivetPauseLong => (Rivet, Long),
            RivetEnginePause => (RivetEngine, Short),
            RivetEnginePauseLong => (RivetEngine, Long),
            StorePause => (Store, Short),
            StorePauseLong => (Store, Long),
            _ => return None,
        })
    }

    /// A timeout target's timeout; `None` for the others.
    pub(crate) fn timeout(self) -> Option<PathTimeout> {
        use BuiltinTarget::*;
        let limit = TIMEOUT_LIMIT;
        Some(match self {
            GatewayReadTimeout => PathTimeout::GatewayRead { limit },
            GatewayIdleCut => PathTimeout::IdleCut {
                hop: LocalHop::Gateway.into(),
                limit,
            },
            ClientHeadersTimeout => PathTimeout::ClientHeaders { limit },
            _ => return None,
        })
    }

    /// A fault target's toxic on its hop; `None` for a restart target.
    pub(crate) fn fault(self) -> Option<FaultAction> {
        let row = self.fault_row()?;
        let mut params: Vec<(String, Param)> = row
            .params
            .iter()
            .map(|(k, v)| (k.to_string(), Param::Int(*v)))
            .collect();
        if let Some(stream) = row.stream {
            params.push(("stream".into(), Param::Text(stream.into())));
        }
        // The table is constant: a bad row fails this module's tests.
        let toxic = parse_toxic(row.toxic, &params)
            .unwrap_or_else(|e| panic!("built-in fault target {self}: {e}"));
        Some(FaultAction {
            hop: row.hop.into(),
            toxic,
            hold: Duration::from_millis(row.hold_ms),
        })
    }

    fn fault_row(self) -> Option<FaultRow> {
        use BuiltinTarget::*;
        let reset: &[(&str, i64)] = &[("timeout", 0)];
        let latency: &[(&str, i64)] = &[("latency", 2000), ("jitter", 0)];
        Some(match self {
            GatewayPartition => row(LocalHop::Gateway, "partition", &[], None, 3000),
            GatewayReset => row(LocalHop::Gateway, "reset_peer", reset, DOWN, 1000),
            GatewayDown => row(LocalHop::Gateway, "down", &[], None, 2000),
            GatewayLatency => row(LocalHop::Gateway, "latency", latency, DOWN, 5000),
            GatewayTimeout => row(
                LocalHop::Gateway,
                "timeout",
                &[("timeout", 1000)],
                DOWN,
                3000,
            ),
            GatewaySlowClose => row(
                LocalHop::Gateway,
                "slow_close",
                &[("delay", 2000)],
                DOWN,
                5000,
            ),
            GatewayBandwidth => row(LocalHop::Gateway, "bandwidth", &[("rate", 1)], DOWN, 5000),
            GatewaySlicer => row(
                LocalHop::Gateway,
                "slicer",
                &[("average_size", 16), ("size_variation", 8), ("delay", 2000)],
                DOWN,
                5000,
            ),
            GatewayLimitData => row(
                LocalHop::Gateway,
                "limit_data",
                &[("bytes", 512)],
                DOWN,
                3000,
            ),
            AgentPartition => row(LocalHop::Agent, "partition", &[], None, 3000),
            AgentReset => row(LocalHop::Agent, "reset_peer", reset, DOWN, 1000),
            AgentDown => row(LocalHop::Agent, "down", &[], None, 2000),
            PersistPartition => row(LocalHop::Persist, "partition", &[], None, 3000),
            PersistReset => row(LocalHop::Persist, "reset_peer", reset, DOWN, 1000),
            PersistLatency => row(LocalHop::Persist, "latency", latency, DOWN, 5000),
            RunnerPartition => row(LocalHop::Runner, "partition", &[], None, 3000),
            RunnerReset => row(LocalHop::Runner, "reset_peer", reset, DOWN, 1000),
            RunnerDown => row(LocalHop::Runner, "down", &[], None, 2000),
            Agent | Gateway | GatewayReload | GatewayReloadIdle | Rivet | RivetEngine | Client
            | Store | ServerKill | GatewayReadTimeout | GatewayIdleCut | ClientHeadersTimeout
            | AgentPause | AgentPauseLong | GatewayPause | GatewayPauseLong | RivetPause
            | RivetPauseLong | RivetEnginePause | RivetEnginePauseLong | StorePause
            | StorePauseLong | AgentProcess | WholeStack | Chaos => return None,
        })
    }

    /// One line for `continuity list`: what it restarts (or its fault),
    /// and when it runs only if named.
    pub(crate) fn describe(self) -> String {
        let what = match (self.restart_text(), self.timeout()) {
            _ if self.paused().is_some() => self.pause_text(),
            (Some(text), _) => text.to_string(),
            (None, Some(timeout)) => timeout.describe(),
            (None, None) => self.fault().map(|f| f.describe()).unwrap_or_default(),
        };
        match self.in_default_matrix() {
            true => what,
            false => format!("{what} (only with --target)"),
        }
    }

    fn restart_text(self) -> Option<&'static str> {
        use BuiltinTarget::*;
        Some(match self {
            Agent => "the sandbox-agent server (SIGTERM to its process group, start again on the same port)",
            Gateway => "the nginx gateway in front of it (stop the master, start again)",
            GatewayReload => "the nginx gateway, gracefully (SIGHUP: reload the config, keep the master)",
            GatewayReloadIdle => "the nginx gateway, gracefully (SIGHUP), while the client holds an idle keep-alive connection: the old worker's close of it is held in flight on the gateway hop (3 s) so the next request goes out on it, the race a plain reload meets at random",
            Rivet => "the RivetKit runner holding the session-persistence actor",
            RivetEngine => "the Rivet Engine the runner connects to",
            Client => "the application holding the SDK: continuity's clients are made anew over the same store; the hosted SDK's process (the RivetKit runner) is SIGKILLed and started again",
            Store => "the session store's server: Postgres, fast shutdown and start again on the same port and data (--persist postgres)",
            ServerKill => "the sandbox-agent server of each sandbox the cell's SDK started through the stack's sandbox provider: SIGKILL to its process group, left down; only the provider's ensureServer (called by the SDK) brings it back (scenario sandbox-provider)",
            AgentProcess => "the ACP agent process under the sandbox-agent server (the scripted agent, opencode, claude-agent-acp, codex-acp): SIGKILL to it and what it started, the server kept running (same pid); seen gone",
            WholeStack => "the whole stack, as a host reboot: every component down in reverse dependency order (the gateway, the server, the RivetKit runner, the Rivet Engine, then Postgres under --persist postgres), then up in order on the same data, each seen down and back",
            Chaos => "a schedule of 3 faults drawn from the seed (restarts, pauses, partitions, resets, latency over the components and hops) within an 8 s window from the restart step, all healed before the scenario's last phase; the schedule goes into report.json",
            _ => return None,
        })
    }

    /// A pause target's line: its component and how long.
    fn pause_text(self) -> String {
        let Some((component, length)) = self.paused() else {
            return String::new();
        };
        let whose = match component {
            BuiltinTarget::Agent => "the sandbox-agent server (with its agent processes)",
            BuiltinTarget::Gateway => "the nginx gateway (master and workers)",
            BuiltinTarget::Rivet => "the RivetKit runner",
            BuiltinTarget::RivetEngine => "the Rivet Engine",
            _ => "the session store's Postgres (--persist postgres)",
        };
        let long = super::fmt_duration(PAST_DEADLINE);
        let hold = match length {
            PauseLength::Short => format!(
                "for {}, under the clients' deadlines",
                super::fmt_duration(SHORT_PAUSE)
            ),
            PauseLength::Long => {
                format!("for the phase deadline (--timeout-ms) and {long}: the client gives up while it is frozen")
            }
        };
        format!("pause {whose}: SIGSTOP to its whole process group and its descendants {hold}, then SIGCONT; seen stopped and running again")
    }
}

impl fmt::Display for BuiltinTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// One step of a component's repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repair {
    /// The part restarted as its own restart target does it: the repair
    /// is over once the part answers its probe.
    Restart(BuiltinTarget),
    /// The part stopped, the data folder it keeps set aside (kept, never
    /// deleted) and started on an empty one, seen booting
    /// ([`super::Target::restart_afresh`]): whether the stack answers again is
    /// the next step's to say.
    Afresh(BuiltinTarget),
}

impl Repair {
    /// The component the step acts on.
    pub(crate) fn part(self) -> BuiltinTarget {
        match self {
            Repair::Restart(part) | Repair::Afresh(part) => part,
        }
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;
