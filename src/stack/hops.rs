//! The local stack's network hops, each with a fault proxy in front of the
//! component it reaches: clients → the nginx gateway, the gateway →
//! sandbox-agent, the persist driver → the Rivet Engine, the RivetKit
//! runner → the Rivet Engine. Always on in a run, no toxic set until a
//! fault target sets one; the proxies run in the harness's own process,
//! so a stack left running by `stack up` has none.

use super::StackError;
use crate::faults::{FaultControl, FaultProxy, Hop, LocalHop};
use std::fmt::Display;
use std::net::SocketAddr;

/// Set to `off` to run the local stack without its fault proxies (the
/// fault targets are then skipped): what `bench/faults.sh` compares with.
pub(crate) const PROXIES_ENV: &str = "CONTINUITY_FAULT_PROXIES";

/// Whether a run's stack puts proxies on its hops.
pub(crate) fn proxies_wanted() -> bool {
    std::env::var(PROXIES_ENV).map_or(true, |v| v != "off")
}

/// The fault proxies of one stack; dropping it closes them all.
#[derive(Default)]
pub(crate) struct Hops {
    on: bool,
    proxies: Vec<FaultProxy>,
    /// Hops whose component cannot run here, with why (its program is
    /// missing, with the command that installs it; it did not start).
    absent: Vec<(LocalHop, String)>,
}

impl Hops {
    /// Hops that get a proxy each (`on`), or none.
    pub(crate) fn new(on: bool) -> Hops {
        Hops {
            on,
            proxies: Vec::new(),
            absent: Vec::new(),
        }
    }

    /// `hop` gets no proxy: its component cannot run here, for `reason`.
    pub(crate) fn absent(&mut self, hop: LocalHop, reason: &str) {
        self.absent.push((hop, reason.to_string()));
    }

    /// Why `hop` has no proxy here, for a target that needs one: the
    /// proxies are off, or its component cannot run (the reason names the
    /// missing program and its install command).
    pub(crate) fn why_no_proxy<H: PartialEq<LocalHop> + Display>(&self, hop: &H) -> String {
        if !self.on {
            return format!("the stack runs without fault proxies ({PROXIES_ENV}=off)");
        }
        match self.absent.iter().find(|(h, _)| hop == h) {
            Some((_, reason)) => format!("the {hop} hop's component cannot run here: {reason}"),
            None => format!("the {hop} hop is not running here (its component did not start)"),
        }
    }

    /// Puts a proxy for `hop` in front of `upstream_port` on loopback and
    /// returns the port its clients use instead: the proxy's, or the
    /// component's own when the hops have no proxies.
    pub(crate) fn front(&mut self, hop: LocalHop, upstream_port: u16) -> Result<u16, StackError> {
        if !self.on {
            return Ok(upstream_port);
        }
        let listen: SocketAddr = ([127, 0, 0, 1], 0).into();
        let upstream: SocketAddr = ([127, 0, 0, 1], upstream_port).into();
        let proxy = FaultProxy::start(hop.into(), listen, upstream)?;
        let port = proxy.addr().port();
        self.proxies.push(proxy);
        Ok(port)
    }

    /// The control of `hop`'s proxy (a [`LocalHop`] or a [`Hop`]), when
    /// it has one.
    pub(crate) fn control<H>(&self, hop: &H) -> Option<FaultControl>
    where
        Hop: PartialEq<H>,
    {
        self.proxies
            .iter()
            .map(FaultProxy::control)
            .find(|c| c.hop() == hop)
    }

    /// Every hop's control, in the order the proxies started.
    pub(crate) fn controls(&self) -> Vec<FaultControl> {
        self.proxies.iter().map(FaultProxy::control).collect()
    }

    /// Closes every proxy and its connections.
    pub(crate) fn stop(&mut self) {
        self.proxies.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hop_fronts_its_component_with_a_proxy_unless_off() {
        let mut hops = Hops::new(true);
        let port = hops.front(LocalHop::Agent, 9).unwrap();
        assert_ne!(port, 9);
        let control = hops.control(&LocalHop::Agent).unwrap();
        assert_eq!(control.upstream().port(), 9);
        assert_eq!(control.addr().port(), port);
        assert_eq!(
            hops.control(&Hop::named("agent")).unwrap().addr(),
            control.addr()
        );
        assert!(hops.control(&LocalHop::Gateway).is_none());
        hops.stop();
        assert!(control.check().is_err(), "stopped with the stack");
        let mut off = Hops::new(false);
        assert_eq!(off.front(LocalHop::Agent, 9).unwrap(), 9);
        assert!(off.control(&LocalHop::Agent).is_none());
        assert!(off.why_no_proxy(&LocalHop::Agent).contains("=off"));
    }

    #[test]
    fn a_hop_whose_component_cannot_run_says_why() {
        let mut hops = Hops::new(true);
        hops.absent(
            LocalHop::Gateway,
            "nginx is not installed (Debian: apt-get install -y nginx)",
        );
        assert_eq!(
            hops.why_no_proxy(&Hop::named("gateway")),
            "the gateway hop's component cannot run here: nginx is not installed (Debian: apt-get install -y nginx)"
        );
        assert!(hops
            .why_no_proxy(&LocalHop::Persist)
            .contains("did not start"));
    }
}
