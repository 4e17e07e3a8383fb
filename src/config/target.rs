//! The second stage for one `[targets.NAME]` table: its restart kind
//! (exactly one of managed, command, signal, http, with only the keys that
//! kind takes) and its readiness probe.

use super::raw::{RawManaged, RawReady, RawRestart, RawTarget};
use super::values::{
    check_addr, check_signal, check_status, check_url, invalid, positive_ms, Invalid,
};
use super::TargetEntry;
use crate::signal::Signal;
use crate::targets::{
    BuiltinTarget, ManagedSpec, Readiness, RestartAction, RestartKind, DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_GRACE, DEFAULT_HTTP_TIMEOUT, DEFAULT_PROBE_INTERVAL, DEFAULT_READY_TIMEOUT,
};
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;

pub(super) fn check_target(name: &str, raw: Spanned<RawTarget>) -> Result<TargetEntry, Invalid> {
    let span = raw.span();
    let raw = raw.into_inner();
    let key = format!("targets.{name}");
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid(
            &key,
            span,
            Some(format!("{name:?}")),
            "expected a target name of letters, digits, `-` and `_`",
        ));
    }
    let (action, hop_span) = match (&raw.restart, &raw.fault) {
        (Some(restart), None) => (check_restart(&key, restart)?, None),
        (None, Some(fault)) => {
            // The file's fault targets join the local stack's own: one
            // name for two would make two cells of one name.
            if BuiltinTarget::from_name(name).is_some() {
                return Err(invalid(
                    &key,
                    span,
                    Some(format!("{name:?}")),
                    "the name of a built-in target of the local stack (`continuity list` shows them); name the fault target otherwise",
                ));
            }
            if let Some(ready) = &raw.ready {
                return Err(invalid(
                    &format!("{key}.ready"),
                    ready.span(),
                    None,
                    "a fault target has no readiness probe: its window heals by itself",
                ));
            }
            let (action, hop_span) = super::faults::check_fault(&key, fault)?;
            (RestartAction::Fault(action), Some(hop_span))
        }
        (Some(_), Some(fault)) => {
            return Err(invalid(
                &key,
                fault.span(),
                None,
                "expected `restart` or `fault`, not both; keep one",
            ))
        }
        (None, None) => {
            return Err(invalid(
                &key,
                span,
                None,
                "expected `restart = { … }` (what restarts the component) or `fault = { hop, toxic, … }` (a network fault)",
            ))
        }
    };
    let readiness = check_ready(&key, raw.ready.as_ref())?;
    let ready_timeout = match &raw.ready_timeout_ms {
        Some(v) => positive_ms(&format!("{key}.ready_timeout_ms"), v)?,
        None => DEFAULT_READY_TIMEOUT,
    };
    Ok(TargetEntry {
        name: name.to_string(),
        action,
        readiness,
        ready_timeout,
        independent: raw.independent.unwrap_or(false),
        hop_span,
    })
}

/// The restart kinds that take each secondary key, for "does not apply" messages.
const RESTART_SECONDARY: &[(&str, &[RestartKind])] = &[
    ("timeout_ms", &[RestartKind::Command, RestartKind::Http]),
    ("pid_file", &[RestartKind::Signal]),
    ("method", &[RestartKind::Http]),
    ("expect_status", &[RestartKind::Http]),
];

/// The one kind a table sets, or an error naming what is missing or doubled.
fn exactly_one<K: Copy + std::fmt::Display>(
    key: &str,
    table: Range<usize>,
    candidates: &[(K, Option<Range<usize>>)],
    what: &str,
    choices: &str,
) -> Result<K, Invalid> {
    let kinds: Vec<(K, Range<usize>)> = candidates
        .iter()
        .filter_map(|(kind, span)| Some((*kind, span.clone()?)))
        .collect();
    match kinds.as_slice() {
        [] => Err(invalid(
            key,
            table,
            None,
            format!("expected one {what}: {choices}"),
        )),
        [(kind, _)] => Ok(*kind),
        [(first, _), (second, span), ..] => Err(invalid(
            key,
            span.clone(),
            None,
            format!("expected exactly one {what}, found `{first}` and `{second}`; keep one"),
        )),
    }
}

/// `restart = { … }`: exactly one kind, only the keys that kind takes, and
/// that kind's own values.
fn check_restart(target_key: &str, raw: &Spanned<RawRestart>) -> Result<RestartAction, Invalid> {
    let key = format!("{target_key}.restart");
    let r = raw.get_ref();
    let kinds = [
        (RestartKind::Managed, r.managed.as_ref().map(Spanned::span)),
        (RestartKind::Command, r.command.as_ref().map(Spanned::span)),
        (RestartKind::Signal, r.signal.as_ref().map(Spanned::span)),
        (RestartKind::Http, r.http.as_ref().map(Spanned::span)),
    ];
    let kind = exactly_one(
        &key,
        raw.span(),
        &kinds,
        "restart kind",
        "`managed`, `command`, `signal` or `http`",
    )?;
    check_secondary_keys(&key, r, kind)?;
    match kind {
        // A fault is its own table, never a restart kind.
        RestartKind::Fault => Err(invalid(
            &key,
            raw.span(),
            None,
            "a fault goes in `fault = { … }`",
        )),
        RestartKind::Managed => check_managed(
            &format!("{key}.managed"),
            r.managed.as_ref().map(Spanned::get_ref),
        ),
        RestartKind::Command => check_command(&key, raw),
        RestartKind::Signal => check_signal_restart(&key, raw),
        RestartKind::Http => check_http(&key, r),
        // Only the local stack makes these: no config key selects them.
        RestartKind::Clients
        | RestartKind::LeftDown
        | RestartKind::Timeout
        | RestartKind::Pause
        | RestartKind::KillAgent
        | RestartKind::Reboot
        | RestartKind::Chaos => Err(invalid(
            &key,
            raw.span(),
            None,
            "expected one of managed, command, signal or http",
        )),
    }
}

/// A key of `restart` that only some kinds take, set for another kind.
fn check_secondary_keys(key: &str, r: &RawRestart, kind: RestartKind) -> Result<(), Invalid> {
    let present = [
        ("timeout_ms", r.timeout_ms.as_ref().map(Spanned::span)),
        ("pid_file", r.pid_file.as_ref().map(Spanned::span)),
        ("method", r.method.as_ref().map(Spanned::span)),
        ("expect_status", r.expect_status.as_ref().map(Spanned::span)),
    ];
    for (secondary, span) in present {
        let Some(span) = span else { continue };
        let owners = RESTART_SECONDARY
            .iter()
            .find(|(k, _)| *k == secondary)
            .map_or(&[][..], |(_, o)| *o);
        if !owners.contains(&kind) {
            return Err(invalid(
                &format!("{key}.{secondary}"),
                span,
                None,
                format!(
                    "`{secondary}` belongs to a {} restart, not to a {kind} restart",
                    owners
                        .iter()
                        .map(|o| o.as_str())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            ));
        }
    }
    Ok(())
}

/// A command or HTTP restart's `timeout_ms`, else its kind's default.
fn restart_timeout(key: &str, r: &RawRestart, default: Duration) -> Result<Duration, Invalid> {
    match &r.timeout_ms {
        Some(v) => positive_ms(&format!("{key}.timeout_ms"), v),
        None => Ok(default),
    }
}

fn check_command(key: &str, raw: &Spanned<RawRestart>) -> Result<RestartAction, Invalid> {
    let r = raw.get_ref();
    let command = r
        .command
        .as_ref()
        .map(Spanned::get_ref)
        .cloned()
        .unwrap_or_default();
    if command.trim().is_empty() {
        return Err(invalid(
            &format!("{key}.command"),
            raw.span(),
            None,
            "expected a shell command",
        ));
    }
    Ok(RestartAction::Command {
        command,
        timeout: restart_timeout(key, r, DEFAULT_COMMAND_TIMEOUT)?,
    })
}

fn check_signal_restart(key: &str, raw: &Spanned<RawRestart>) -> Result<RestartAction, Invalid> {
    let r = raw.get_ref();
    let signal = r
        .signal
        .as_ref()
        .map(|s| check_signal(&format!("{key}.signal"), s))
        .transpose()?;
    let pid_file = r
        .pid_file
        .as_ref()
        .filter(|p| !p.get_ref().trim().is_empty())
        .ok_or_else(|| {
            invalid(
                key,
                raw.span(),
                None,
                "a signal restart needs `pid_file`, the file that holds the process id",
            )
        })?;
    Ok(RestartAction::Signal {
        pid_file: PathBuf::from(pid_file.get_ref()),
        signal: signal.unwrap_or(Signal::HUP),
    })
}

fn check_http(key: &str, r: &RawRestart) -> Result<RestartAction, Invalid> {
    let url = r
        .http
        .as_ref()
        .map(|u| check_url(&format!("{key}.http"), u))
        .transpose()?
        .unwrap_or_default();
    let method = match &r.method {
        Some(m) => {
            let upper = m.get_ref().trim().to_ascii_uppercase();
            if upper.is_empty() || reqwest::Method::from_bytes(upper.as_bytes()).is_err() {
                return Err(invalid(
                    &format!("{key}.method"),
                    m.span(),
                    Some(format!("{:?}", m.get_ref())),
                    "expected an HTTP method such as \"POST\"",
                ));
            }
            upper
        }
        None => "POST".to_string(),
    };
    let expect_status = r
        .expect_status
        .as_ref()
        .map(|s| check_status(&format!("{key}.expect_status"), s))
        .transpose()?;
    Ok(RestartAction::Http {
        url,
        method,
        expect_status,
        timeout: restart_timeout(key, r, DEFAULT_HTTP_TIMEOUT)?,
    })
}

fn check_managed(key: &str, raw: Option<&RawManaged>) -> Result<RestartAction, Invalid> {
    let Some(raw) = raw else {
        return Err(invalid(key, 0..0, None, "expected a managed process table"));
    };
    let argv = raw.command.get_ref();
    let Some(program) = argv.first().filter(|p| !p.trim().is_empty()) else {
        return Err(invalid(
            &format!("{key}.command"),
            raw.command.span(),
            None,
            "expected the program and its arguments, e.g. [\"sandbox-agent\", \"server\"]",
        ));
    };
    let mut spec = ManagedSpec::new(program, argv[1..].iter().cloned());
    spec.env = raw.env.as_ref().map(|e| e.0.clone()).unwrap_or_default();
    spec.cwd = raw.cwd.as_ref().map(PathBuf::from);
    spec.log = raw.log.as_ref().map(PathBuf::from);
    if let Some(signal) = &raw.stop_signal {
        spec.stop_signal = check_signal(&format!("{key}.stop_signal"), signal)?;
    }
    spec.grace = match &raw.grace_ms {
        Some(v) => positive_ms(&format!("{key}.grace_ms"), v)?,
        None => DEFAULT_GRACE,
    };
    Ok(RestartAction::Managed(spec))
}

fn check_ready(target_key: &str, raw: Option<&Spanned<RawReady>>) -> Result<Readiness, Invalid> {
    let key = format!("{target_key}.ready");
    let Some(raw) = raw else {
        return Ok(Readiness::None);
    };
    let r = raw.get_ref();
    let kinds = [
        ("http", r.http.as_ref().map(Spanned::span)),
        ("tcp", r.tcp.as_ref().map(Spanned::span)),
        ("delay_ms", r.delay_ms.as_ref().map(Spanned::span)),
    ];
    let kind = exactly_one(
        &key,
        raw.span(),
        &kinds,
        "probe",
        "`http`, `tcp` or `delay_ms`",
    )?;
    for (secondary, span) in [
        ("status", r.status.as_ref().map(Spanned::span)),
        ("interval_ms", r.interval_ms.as_ref().map(Spanned::span)),
    ] {
        if let (Some(span), false) = (span, kind == "http") {
            return Err(invalid(
                &format!("{key}.{secondary}"),
                span,
                None,
                format!("`{secondary}` belongs to an http probe, not to a {kind} probe"),
            ));
        }
    }
    match (&r.http, &r.tcp, &r.delay_ms) {
        (Some(url), _, _) => Ok(Readiness::Http {
            url: check_url(&format!("{key}.http"), url)?,
            expect_status: match &r.status {
                Some(s) => check_status(&format!("{key}.status"), s)?,
                None => 200,
            },
            interval: match &r.interval_ms {
                Some(v) => positive_ms(&format!("{key}.interval_ms"), v)?,
                None => DEFAULT_PROBE_INTERVAL,
            },
        }),
        (_, Some(addr), _) => Ok(Readiness::Tcp {
            addr: check_addr(&format!("{key}.tcp"), addr)?,
        }),
        (_, _, Some(ms)) => Ok(Readiness::Delay {
            duration: positive_ms(&format!("{key}.delay_ms"), ms)?,
        }),
        _ => Ok(Readiness::None),
    }
}
