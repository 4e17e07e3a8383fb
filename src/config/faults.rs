//! The second stage for network faults: the `[faults]` table (the name of
//! the hop in front of the base URL, and more hops with their loopback
//! addresses) and a target's `fault = { hop, toxic, hold_ms, … }`, whose
//! toxic is checked by the fault proxy's own rules and whose hop must be
//! one the file (or, without `[faults]`, the local stack) has.

use super::raw::{RawFaults, RawHop};
use super::values::{invalid, Invalid};
use crate::faults::{parse_toxic, Hop, Param};
use crate::targets::FaultAction;
use std::net::SocketAddr;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

/// The hop in front of the base URL when `[faults]` does not name it.
pub(super) const DEFAULT_BASE_URL_HOP: &str = "front";
/// A fault target's window when it sets no `hold_ms`.
pub(super) const DEFAULT_HOLD: Duration = Duration::from_secs(3);
/// The longest window: longer would outlast any phase.
const MAX_HOLD_MS: i64 = 10 * 60 * 1000;

/// The checked `[faults]` table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FaultHops {
    /// The hop whose proxy the cells reach the base URL through.
    pub base_url_hop: Hop,
    /// More hops, each a proxy the user points a component at.
    pub hops: Vec<HopAddr>,
}

/// One `[faults.hops.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HopAddr {
    pub name: Hop,
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
}

impl FaultHops {
    /// Every hop it names, the base URL's first.
    pub(crate) fn hops(&self) -> Vec<&Hop> {
        std::iter::once(&self.base_url_hop)
            .chain(self.hops.iter().map(|h| &h.name))
            .collect()
    }
}

fn check_hop_name(key: &str, name: &str, span: Range<usize>) -> Result<(), Invalid> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            key,
            span,
            Some(format!("{name:?}")),
            "expected a hop name of letters, digits, `-` and `_`",
        ))
    }
}

fn loopback(key: &str, value: &Spanned<String>) -> Result<SocketAddr, Invalid> {
    value
        .get_ref()
        .trim()
        .parse::<SocketAddr>()
        .ok()
        .filter(|a| a.ip().is_loopback())
        .ok_or_else(|| {
            invalid(
                key,
                value.span(),
                Some(format!("{:?}", value.get_ref())),
                "expected a loopback address and port, e.g. \"127.0.0.1:15432\" (fault proxies listen and connect on 127.0.0.0/8 only)",
            )
        })
}

pub(super) fn check_faults(raw: Spanned<RawFaults>) -> Result<FaultHops, Invalid> {
    let raw = raw.into_inner();
    let base_url_hop = match &raw.base_url_hop {
        Some(name) => {
            check_hop_name("faults.base_url_hop", name.get_ref(), name.span())?;
            Hop::named(name.get_ref())
        }
        None => Hop::named(DEFAULT_BASE_URL_HOP),
    };
    let mut hops: Vec<HopAddr> = Vec::new();
    for (name, hop) in raw.hops.map(|h| h.0).unwrap_or_default() {
        let key = format!("faults.hops.{name}");
        let span = hop.span();
        check_hop_name(&key, &name, span.clone())?;
        let name = Hop::named(&name);
        if name == base_url_hop {
            return Err(invalid(
                &key,
                span,
                None,
                format!("`{name}` is the base URL's hop already; give this hop another name"),
            ));
        }
        let RawHop { listen, upstream } = hop.into_inner();
        let listen_addr = loopback(&format!("{key}.listen"), &listen)?;
        let upstream_addr = loopback(&format!("{key}.upstream"), &upstream)?;
        if listen_addr == upstream_addr {
            return Err(invalid(
                &format!("{key}.listen"),
                listen.span(),
                Some(format!("{:?}", listen.get_ref())),
                "the proxy cannot listen where it forwards to",
            ));
        }
        if let Some(other) = hops
            .iter()
            .find(|h| h.listen == listen_addr && listen_addr.port() != 0)
        {
            return Err(invalid(
                &format!("{key}.listen"),
                listen.span(),
                Some(format!("{:?}", listen.get_ref())),
                format!("hop `{}` listens there already", other.name),
            ));
        }
        hops.push(HopAddr {
            name,
            listen: listen_addr,
            upstream: upstream_addr,
        });
    }
    Ok(FaultHops { base_url_hop, hops })
}

/// A target's `fault` table: its action, and the span of its hop (checked
/// against the file's hops once every table is read).
pub(super) fn check_fault(
    target_key: &str,
    table: &Spanned<toml::Table>,
) -> Result<(FaultAction, Range<usize>), Invalid> {
    let key = format!("{target_key}.fault");
    let span = table.span();
    let t = table.get_ref();
    let text = |name: &str| -> Result<String, Invalid> {
        match t.get(name) {
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(other) => Err(invalid(
                &format!("{key}.{name}"),
                span.clone(),
                Some(other.to_string()),
                format!("expected the {name}'s name as a string"),
            )),
            None => Err(invalid(
                &key,
                span.clone(),
                None,
                format!("a fault needs `{name}` (e.g. fault = {{ hop = \"front\", toxic = \"reset_peer\", hold_ms = 1000 }})"),
            )),
        }
    };
    let hop = text("hop")?;
    let toxic = text("toxic")?;
    let hold = match t.get("hold_ms") {
        None => DEFAULT_HOLD,
        Some(toml::Value::Integer(ms)) if (1..=MAX_HOLD_MS).contains(ms) => {
            Duration::from_millis(*ms as u64)
        }
        Some(other) => {
            return Err(invalid(
                &format!("{key}.hold_ms"),
                span,
                Some(other.to_string()),
                format!("expected the window in milliseconds, from 1 to {MAX_HOLD_MS}"),
            ))
        }
    };
    let mut params = Vec::new();
    for (name, value) in t {
        if matches!(name.as_str(), "hop" | "toxic" | "hold_ms") {
            continue;
        }
        let param = match value {
            toml::Value::Integer(i) => Param::Int(*i),
            toml::Value::Float(x) => Param::Float(*x),
            toml::Value::String(s) => Param::Text(s.clone()),
            other => {
                return Err(invalid(
                    &format!("{key}.{name}"),
                    span,
                    Some(other.to_string()),
                    "expected a number (or a string for `stream`)",
                ))
            }
        };
        params.push((name.clone(), param));
    }
    let toxic = parse_toxic(&toxic, &params).map_err(|e| {
        let at = if e.key.is_empty() {
            format!("{key}.toxic")
        } else {
            format!("{key}.{}", e.key)
        };
        invalid(&at, span.clone(), None, e.reason)
    })?;
    let hop = Hop::named(&hop);
    Ok((FaultAction { hop, toxic, hold }, span))
}
