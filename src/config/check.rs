//! The second stage: raw tables to checked values, for the `[run]` table
//! here and per target in `target`, both with the value checks of
//! `values`. Every failure names the key, the span to point at and what was
//! expected.

use super::raw::{RawConfig, RawRun};
use super::target::check_target;
use super::values::{check_agent_name, check_base_url, invalid, is_env_name, positive_ms, Invalid};
use super::{RunDefaults, TargetEntry};
use crate::faults::{Hop, LocalHop};
use crate::persist::Store;
use crate::secret::display_url;
use std::time::Duration;

/// A `[run]` key holding a list of strings.
type SpannedList = toml::Spanned<Vec<toml::Spanned<String>>>;

/// The checked contents of a file, before it is tied to a path.
pub(super) struct Checked {
    pub run: RunDefaults,
    pub targets: Vec<TargetEntry>,
    pub faults: Option<super::FaultHops>,
}

impl TryFrom<RawConfig> for Checked {
    type Error = Invalid;

    fn try_from(raw: RawConfig) -> Result<Self, Invalid> {
        let run = match raw.run {
            Some(run) => check_run(run)?,
            None => RunDefaults::default(),
        };
        let mut targets = Vec::new();
        for (name, target) in raw.targets.map(|t| t.0).unwrap_or_default() {
            targets.push(check_target(&name, target)?);
        }
        let faults = raw.faults.map(super::faults::check_faults).transpose()?;
        // A fault's hop is one of `[faults]`, or without it one of the local stack's.
        let hops: Vec<Hop> = match &faults {
            Some(f) => f.hops().into_iter().cloned().collect(),
            None => LocalHop::ALL.map(Hop::from).into(),
        };
        let names: Vec<&str> = hops.iter().map(Hop::name).collect();
        for t in &targets {
            if let (crate::targets::RestartAction::Fault(fault), Some(span)) =
                (&t.action, &t.hop_span)
            {
                if !hops.contains(&fault.hop) {
                    let hint = crate::faults::closest(fault.hop.name(), names.iter().copied())
                        .map(|c| format!(" (did you mean `{c}`?)"))
                        .unwrap_or_default();
                    let whose = match &faults {
                        Some(_) => "of [faults]",
                        None => "of the local stack (a deployment lists its own in [faults])",
                    };
                    return Err(invalid(
                        &format!("targets.{}.fault.hop", t.name),
                        span.clone(),
                        Some(format!("{:?}", fault.hop.name())),
                        format!("unknown hop{hint}; the hops {whose}: {}", names.join(", ")),
                    ));
                }
            }
        }
        Ok(Checked {
            run,
            targets,
            faults,
        })
    }
}

/// The `[run]` table: each key checked in turn, the first bad one reported.
fn check_run(raw: RawRun) -> Result<RunDefaults, Invalid> {
    let mut run = RunDefaults::default();
    check_server(&raw, &mut run)?;
    run.timeout = raw
        .timeout_ms
        .as_ref()
        .map(|v| positive_ms("run.timeout_ms", v))
        .transpose()?;
    run.overall_timeout = raw
        .overall_timeout_ms
        .as_ref()
        .map(|v| positive_ms("run.overall_timeout_ms", v))
        .transpose()?;
    run.hang_grace = raw
        .hang_grace_ms
        .as_ref()
        .map(|v| {
            count(
                "run.hang_grace_ms",
                v,
                |_| true,
                "expected a whole number of milliseconds (0: wait every phase's deadline out)",
            )
        })
        .transpose()?
        .map(|ms| Duration::from_millis(ms.into()));
    run.repeat = raw
        .repeat
        .as_ref()
        .map(|repeat| {
            count(
                "run.repeat",
                repeat,
                |n| n > 0,
                "expected a whole number of runs, at least 1",
            )
        })
        .transpose()?;
    run.expect = check_expect(raw.expect.as_ref())?;
    run.retries = raw
        .retries
        .as_ref()
        .map(|retries| {
            count(
                "run.retries",
                retries,
                |n| n <= 100,
                "expected a whole number of retries from 0 to 100",
            )
        })
        .transpose()?;
    run.jobs = raw
        .jobs
        .as_ref()
        .map(|jobs| {
            count(
                "run.jobs",
                jobs,
                |n| (1..=64).contains(&n),
                "expected a number of jobs from 1 to 64",
            )
        })
        .transpose()?;
    if let Some(persist) = &raw.persist {
        run.persist = check_persist(persist)?;
    }
    if let Some(seed) = &raw.seed {
        let value = *seed.get_ref();
        run.seed = Some(u64::try_from(value).map_err(|_| {
            invalid(
                "run.seed",
                seed.span(),
                Some(value.to_string()),
                "expected a whole number from 0",
            )
        })?);
    }
    run.token_env = check_token_env(raw.token_env.as_ref())?;
    run.secret_env = check_secret_env(raw.secret_env)?;
    run.server_bin = check_specs("run.server_bin", raw.server_bin)?;
    run.sdk = check_specs("run.sdk", raw.sdk)?;
    run.headers = check_headers(raw.headers.map(|h| h.0).unwrap_or_default())?;
    Ok(run)
}

/// `[run] base_url` and `agent`: where the run goes and which agent it drives.
fn check_server(raw: &RawRun, run: &mut RunDefaults) -> Result<(), Invalid> {
    if let Some(url) = &raw.base_url {
        run.base_url = Some(check_base_url(url.get_ref()).map_err(|why| {
            invalid(
                "run.base_url",
                url.span(),
                Some(format!("{:?}", display_url(url.get_ref().trim()))),
                why.to_string(),
            )
        })?);
    }
    if let Some(agent) = &raw.agent {
        check_agent_name(agent.get_ref()).map_err(|why| {
            invalid(
                "run.agent",
                agent.span(),
                Some(format!("{:?}", agent.get_ref())),
                why.to_string(),
            )
        })?;
        run.agent = Some(agent.get_ref().clone());
    }
    Ok(())
}

/// `[run] expect`: the path of an expectations file, never blank.
fn check_expect(
    expect: Option<&toml::Spanned<String>>,
) -> Result<Option<std::path::PathBuf>, Invalid> {
    let Some(expect) = expect else {
        return Ok(None);
    };
    if expect.get_ref().trim().is_empty() {
        return Err(invalid(
            "run.expect",
            expect.span(),
            None,
            "expected the path of an expectations file",
        ));
    }
    Ok(Some(expect.get_ref().into()))
}

/// `[run] token_env`: the name of the variable holding the token.
fn check_token_env(name: Option<&toml::Spanned<String>>) -> Result<Option<String>, Invalid> {
    let Some(name) = name else {
        return Ok(None);
    };
    if !is_env_name(name.get_ref()) {
        // The value is not shown: a user who misread the key may have pasted the token itself.
        return Err(invalid(
            "run.token_env",
            name.span(),
            None,
            "expected the name of an environment variable (letters, digits, `_`), not the token itself",
        ));
    }
    Ok(Some(name.get_ref().clone()))
}

/// `[run] secret_env`: names of variables whose values are redacted.
fn check_secret_env(names: Option<SpannedList>) -> Result<Vec<String>, Invalid> {
    let mut checked = Vec::new();
    for name in names.map(|n| n.into_inner()).unwrap_or_default() {
        if !is_env_name(name.get_ref()) {
            return Err(invalid(
                "run.secret_env",
                name.span(),
                None,
                "expected names of environment variables (letters, digits, `_`), not their values",
            ));
        }
        checked.push(name.into_inner());
    }
    Ok(checked)
}

/// `[run] server_bin` and `sdk`: `[LABEL=]PATH` specs as their flags
/// take them (checked there), none blank.
fn check_specs(key: &str, list: Option<SpannedList>) -> Result<Vec<String>, Invalid> {
    let mut checked = Vec::new();
    for spec in list.map(|l| l.into_inner()).unwrap_or_default() {
        if spec.get_ref().trim().is_empty() {
            return Err(invalid(
                key,
                spec.span(),
                None,
                "expected `[LABEL=]PATH`, as the flag takes",
            ));
        }
        checked.push(spec.into_inner());
    }
    Ok(checked)
}

/// A count of `[run]` (`repeat`, `retries`, `jobs`): a whole number that
/// fits a `u32` and that `allowed` accepts, else `expected`.
fn count(
    key: &str,
    value: &toml::Spanned<i64>,
    allowed: impl Fn(u32) -> bool,
    expected: &str,
) -> Result<u32, Invalid> {
    let n = *value.get_ref();
    u32::try_from(n)
        .ok()
        .filter(|n| allowed(*n))
        .ok_or_else(|| invalid(key, value.span(), Some(n.to_string()), expected))
}

/// `[run] persist`: one store name or a list of them, each once, in order.
fn check_persist(persist: &toml::Spanned<toml::Value>) -> Result<Vec<Store>, Invalid> {
    let quoted: Vec<String> = Store::all()
        .iter()
        .map(|s| format!("{:?}", s.name()))
        .collect();
    let expected = match quoted.split_last() {
        Some((last, rest)) => format!("expected {} or {last}, or a list of them", rest.join(", ")),
        None => "expected a list of stores".to_string(),
    };
    let names: Vec<&toml::Value> = match persist.get_ref() {
        toml::Value::Array(items) if !items.is_empty() => items.iter().collect(),
        one @ toml::Value::String(_) => vec![one],
        other => {
            return Err(invalid(
                "run.persist",
                persist.span(),
                Some(other.to_string()),
                &expected,
            ))
        }
    };
    let mut chosen = Vec::new();
    for name in names {
        let Some(choice) = name.as_str().and_then(|n| n.parse::<Store>().ok()) else {
            return Err(invalid(
                "run.persist",
                persist.span(),
                Some(name.to_string()),
                &expected,
            ));
        };
        if !chosen.contains(&choice) {
            chosen.push(choice);
        }
    }
    Ok(chosen)
}

/// `[run.headers]`: sent on every request, so never the token (that is
/// `token_env`'s), and each a valid HTTP header.
fn check_headers(
    headers: Vec<(String, toml::Spanned<String>)>,
) -> Result<Vec<(String, String)>, Invalid> {
    let mut checked = Vec::new();
    for (name, value) in headers {
        let key = format!("run.headers.{name}");
        if name.eq_ignore_ascii_case("authorization") {
            return Err(invalid(
                &key,
                value.span(),
                None,
                "no Authorization header in the file: put the token in an environment variable and name it with `token_env`",
            ));
        }
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(invalid(
                &key,
                value.span(),
                None,
                "expected a valid HTTP header name",
            ));
        }
        if reqwest::header::HeaderValue::from_str(value.get_ref()).is_err() {
            return Err(invalid(
                &key,
                value.span(),
                None,
                "expected a header value of visible ASCII characters",
            ));
        }
        checked.push((name, value.into_inner()));
    }
    Ok(checked)
}
