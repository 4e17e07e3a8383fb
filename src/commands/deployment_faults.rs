//! A deployment's `[faults]` table at run time: a fault proxy in front of
//! the base URL (the cells connect through it) and one per hop the file
//! lists, each fault target tied to its hop's proxy, every target watching
//! them all. Set up whole before any cell, or the run does not start
//! (exit 64): a port taken, a base URL a proxy cannot stand in front of.

use super::CommandError;
use crate::config::FaultHops;
use crate::faults::{FaultControl, FaultProxy};
use crate::targets::{Action, Target};
use std::net::{SocketAddr, ToSocketAddrs};

/// The proxies of a deployment's hops; the run keeps them until it ends.
pub(super) struct DeploymentHops {
    /// Held, never read: dropping them closes every proxy and connection.
    _proxies: Vec<FaultProxy>,
    /// The base URL the cells use: through the proxy in front of it.
    pub base_url: String,
}

/// Starts the proxies `[faults]` asks for and wires the targets to them.
/// Without `[faults]`, a fault target is refused.
pub(super) fn wire(
    faults: Option<&FaultHops>,
    base_url: &str,
    targets: &mut [Target],
) -> Result<Option<DeploymentHops>, CommandError> {
    let Some(faults) = faults else {
        if let Some(t) = targets
            .iter()
            .find(|t| matches!(t.action(), Action::Fault(_)))
        {
            return Err(CommandError::usage(format!(
                "target `{}` is a network fault, but the config file has no [faults] table: on a deployment, [faults] puts the proxies its hops run through (docs/faults.md)",
                t.id
            )));
        }
        return Ok(None);
    };
    let (front_upstream, proxied_base) = front_of(base_url)?;
    let usage = |e: crate::faults::ProxyError| CommandError::usage(e.to_string());
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    let front =
        FaultProxy::start(faults.base_url_hop.clone(), any, front_upstream).map_err(usage)?;
    let base_url = proxied_base.replace("{port}", &front.addr().port().to_string());
    let mut proxies = vec![front];
    for hop in &faults.hops {
        proxies.push(FaultProxy::start(hop.name.clone(), hop.listen, hop.upstream).map_err(usage)?);
    }
    let controls: Vec<FaultControl> = proxies.iter().map(FaultProxy::control).collect();
    for target in targets.iter_mut() {
        if let Action::Fault(window) = target.action() {
            let fault = window.fault();
            let Some(control) = controls.iter().find(|c| *c.hop() == fault.hop) else {
                return Err(CommandError::usage(format!(
                    "target `{}`: the deployment has no `{}` hop (its hops: {})",
                    target.id,
                    fault.hop,
                    faults
                        .hops()
                        .iter()
                        .map(|h| h.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            let control = control.clone();
            target.set_fault_proxy(control);
        }
        target.watch_hops(controls.clone());
    }
    Ok(Some(DeploymentHops {
        _proxies: proxies,
        base_url,
    }))
}

/// Where the base URL's server listens, and the base URL with `{port}`
/// where the proxy's port goes. Only plain HTTP on loopback: a TLS name
/// would not match `127.0.0.1`, and proxies stay on 127.0.0.0/8.
fn front_of(base_url: &str) -> Result<(SocketAddr, String), CommandError> {
    let refuse = |why: &str| {
        CommandError::usage(format!(
            "[faults]: cannot put a fault proxy in front of {}: {why}",
            crate::secret::display_url(base_url)
        ))
    };
    let url = url::Url::parse(base_url).map_err(|e| refuse(&e.to_string()))?;
    if url.scheme() != "http" {
        return Err(refuse("only an http:// base URL can be proxied (a TLS name would not match the proxy's address)"));
    }
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let addr = (host.trim_matches(['[', ']']), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.ip().is_loopback()))
        .ok_or_else(|| refuse("its host is not on loopback (127.0.0.0/8)"))?;
    let mut proxied = url.clone();
    proxied
        .set_host(Some("127.0.0.1"))
        .map_err(|e| refuse(&e.to_string()))?;
    proxied.set_port(Some(1)).map_err(|_| refuse("no port"))?;
    let text = proxied
        .as_str()
        .replacen("127.0.0.1:1", "127.0.0.1:{port}", 1)
        .trim_end_matches('/')
        .to_string();
    Ok((addr, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_http_base_url_gets_a_proxy() {
        let (addr, text) = front_of("http://localhost:2468/sandbox").unwrap();
        assert_eq!(
            (addr.port(), text.as_str()),
            (2468, "http://127.0.0.1:{port}/sandbox")
        );
        assert!(front_of("https://127.0.0.1:2468").is_err());
        let e = front_of("http://192.0.2.1:80").err().unwrap().to_string();
        assert!(e.contains("not on loopback"), "{e}");
    }
}
