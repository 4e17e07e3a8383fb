//! The local stack's built-in fault targets: a toxic on one of its hops
//! for a window, where a restart target would restart a component. Two run
//! by default (a partition and a reset on the gateway hop, the client's
//! side of the stack); the others only when named with `--target`, like
//! opt-in scenarios.

use super::hops::{Hops, PROXIES_ENV};
use crate::faults::{parse_toxic, Param, ToxicSpec};
use crate::targets::{FaultAction, Readiness, RestartAction, Target, Unavailable};
use std::time::Duration;

/// One built-in fault target.
pub struct BuiltinFault {
    pub name: &'static str,
    pub hop: &'static str,
    pub toxic: &'static str,
    pub params: &'static [(&'static str, i64)],
    pub stream: Option<&'static str>,
    pub hold_ms: u64,
    /// Runs without `--target` naming it.
    pub default: bool,
}

const fn fault(
    name: &'static str,
    hop: &'static str,
    toxic: &'static str,
    params: &'static [(&'static str, i64)],
    stream: Option<&'static str>,
    hold_ms: u64,
    default: bool,
) -> BuiltinFault {
    BuiltinFault {
        name,
        hop,
        toxic,
        params,
        stream,
        hold_ms,
        default,
    }
}

/// The built-in fault targets, default ones first.
pub const BUILTIN: &[BuiltinFault] = &[
    fault(
        "gateway-partition",
        "gateway",
        "partition",
        &[],
        None,
        3000,
        true,
    ),
    fault(
        "gateway-reset",
        "gateway",
        "reset_peer",
        &[("timeout", 0)],
        Some("downstream"),
        1000,
        true,
    ),
    fault("gateway-down", "gateway", "down", &[], None, 2000, false),
    fault(
        "gateway-latency",
        "gateway",
        "latency",
        &[("latency", 2000), ("jitter", 0)],
        Some("downstream"),
        5000,
        false,
    ),
    fault(
        "gateway-timeout",
        "gateway",
        "timeout",
        &[("timeout", 1000)],
        Some("downstream"),
        3000,
        false,
    ),
    fault(
        "gateway-slow-close",
        "gateway",
        "slow_close",
        &[("delay", 2000)],
        Some("downstream"),
        5000,
        false,
    ),
    fault(
        "gateway-bandwidth",
        "gateway",
        "bandwidth",
        &[("rate", 1)],
        Some("downstream"),
        5000,
        false,
    ),
    fault(
        "gateway-slicer",
        "gateway",
        "slicer",
        &[("average_size", 16), ("size_variation", 8), ("delay", 2000)],
        Some("downstream"),
        5000,
        false,
    ),
    fault(
        "gateway-limit-data",
        "gateway",
        "limit_data",
        &[("bytes", 512)],
        Some("downstream"),
        3000,
        false,
    ),
    fault(
        "agent-partition",
        "agent",
        "partition",
        &[],
        None,
        3000,
        false,
    ),
    fault(
        "agent-reset",
        "agent",
        "reset_peer",
        &[("timeout", 0)],
        Some("downstream"),
        1000,
        false,
    ),
    fault("agent-down", "agent", "down", &[], None, 2000, false),
    fault(
        "persist-partition",
        "persist",
        "partition",
        &[],
        None,
        3000,
        false,
    ),
    fault(
        "persist-reset",
        "persist",
        "reset_peer",
        &[("timeout", 0)],
        Some("downstream"),
        1000,
        false,
    ),
    fault(
        "persist-latency",
        "persist",
        "latency",
        &[("latency", 2000), ("jitter", 0)],
        Some("downstream"),
        5000,
        false,
    ),
    fault(
        "runner-partition",
        "runner",
        "partition",
        &[],
        None,
        3000,
        false,
    ),
    fault(
        "runner-reset",
        "runner",
        "reset_peer",
        &[("timeout", 0)],
        Some("downstream"),
        1000,
        false,
    ),
    fault("runner-down", "runner", "down", &[], None, 2000, false),
];

impl BuiltinFault {
    pub fn action(&self) -> FaultAction {
        let mut params: Vec<(String, Param)> = self
            .params
            .iter()
            .map(|(k, v)| (k.to_string(), Param::Int(*v)))
            .collect();
        if let Some(stream) = self.stream {
            params.push(("stream".into(), Param::Text(stream.into())));
        }
        let toxic: ToxicSpec = parse_toxic(self.toxic, &params)
            .unwrap_or_else(|e| panic!("built-in fault target {}: {e}", self.name));
        FaultAction {
            hop: self.hop.into(),
            toxic,
            hold: Duration::from_millis(self.hold_ms),
        }
    }

    /// One line for `continuity list`.
    pub fn what(&self) -> String {
        let describe = self.action().describe();
        if self.default {
            describe
        } else {
            format!("{describe} (only with --target)")
        }
    }
}

/// The fault targets a run selects (`selected`, by name), built in and the
/// config file's (`custom`), each on its hop's proxy and with `ready`'s
/// probe for its hop (what must answer once the fault heals); one whose
/// hop has no proxy here is unavailable, saying why.
pub fn on_hops(
    selected: &[String],
    custom: &[(String, FaultAction)],
    hops: &Hops,
    ready: &dyn Fn(&str) -> Option<(Readiness, Duration)>,
) -> (Vec<Target>, Vec<Unavailable>) {
    let builtin = BUILTIN.iter().map(|f| (f.name.to_string(), f.action()));
    let (mut targets, mut unavailable) = (Vec::new(), Vec::new());
    for (name, action) in builtin.chain(custom.iter().cloned()) {
        if !selected.contains(&name) {
            continue;
        }
        match hops.control(&action.hop) {
            Some(control) => {
                let hop = action.hop.clone();
                let mut target = fault_target(&name, action, control);
                if let Some((readiness, timeout)) = ready(&hop) {
                    target.readiness = readiness;
                    target.ready_timeout = timeout;
                }
                targets.push(target);
            }
            None if !hops.is_on() => unavailable.push(Unavailable::skipped(
                &name,
                &format!("the stack runs without fault proxies ({PROXIES_ENV}=off)"),
            )),
            None => unavailable.push(Unavailable::skipped(
                &name,
                &format!(
                    "the {} hop is not running here (its component did not start)",
                    action.hop
                ),
            )),
        }
    }
    (targets, unavailable)
}

/// A fault target on its hop's proxy. Off the clients' requests (the
/// session store's hops), its window may cut no other cell's DELETE.
pub fn fault_target(
    name: &str,
    action: FaultAction,
    control: crate::faults::FaultControl,
) -> Target {
    let hop = action.hop.clone();
    let target =
        Target::new(name, RestartAction::Fault(action), Readiness::None).with_fault_proxy(control);
    match hop.as_str() {
        "persist" | "runner" => target.keeping_open_requests(),
        _ => target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_fault_is_a_valid_toxic_on_a_stack_hop() {
        for f in BUILTIN {
            let action = f.action();
            assert!(
                crate::faults::LOCAL_HOPS.iter().any(|(h, _)| *h == f.hop),
                "{}",
                f.name
            );
            assert_eq!(action.toxic.name(), f.toxic);
        }
        let defaults: Vec<&str> = BUILTIN
            .iter()
            .filter(|f| f.default)
            .map(|f| f.name)
            .collect();
        assert_eq!(defaults, ["gateway-partition", "gateway-reset"]);
        assert_eq!(
            BUILTIN[1].what(),
            "fault: reset_peer downstream (timeout 0 ms) on the gateway hop for 1 s"
        );
    }
}
