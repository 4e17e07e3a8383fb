//! The second stage: raw tables to checked values, for the `[run]` table
//! here and per target in `target`, both with the value checks of
//! `values`. Every failure names the key, the span to point at and what was
//! expected.

use super::raw::{RawConfig, RawRun};
use super::target::check_target;
use super::values::{check_agent_name, check_base_url, invalid, is_env_name, positive_ms, Invalid};
use super::{RunDefaults, TargetEntry};
use crate::persist::PersistChoice;
use crate::secret::display_url;

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
        let hops: Vec<&str> = match &faults {
            Some(f) => f.names(),
            None => crate::faults::LOCAL_HOPS.iter().map(|(h, _)| *h).collect(),
        };
        for t in &targets {
            if let (crate::targets::RestartAction::Fault(fault), Some(span)) =
                (&t.action, &t.hop_span)
            {
                if !hops.contains(&fault.hop.as_str()) {
                    let hint = crate::faults::closest(&fault.hop, hops.iter().copied())
                        .map(|c| format!(" (did you mean `{c}`?)"))
                        .unwrap_or_default();
                    let whose = match &faults {
                        Some(_) => "of [faults]",
                        None => "of the local stack (a deployment lists its own in [faults])",
                    };
                    return Err(invalid(
                        &format!("targets.{}.fault.hop", t.name),
                        span.clone(),
                        Some(format!("{:?}", fault.hop)),
                        format!("unknown hop{hint}; the hops {whose}: {}", hops.join(", ")),
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

fn check_run(raw: RawRun) -> Result<RunDefaults, Invalid> {
    let mut run = RunDefaults::default();
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
    if let Some(repeat) = &raw.repeat {
        let value = *repeat.get_ref();
        run.repeat = Some(
            u32::try_from(value)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    invalid(
                        "run.repeat",
                        repeat.span(),
                        Some(value.to_string()),
                        "expected a whole number of runs, at least 1",
                    )
                })?,
        );
    }
    if let Some(expect) = &raw.expect {
        if expect.get_ref().trim().is_empty() {
            return Err(invalid(
                "run.expect",
                expect.span(),
                None,
                "expected the path of an expectations file",
            ));
        }
        run.expect = Some(expect.get_ref().into());
    }
    if let Some(retries) = &raw.retries {
        let value = *retries.get_ref();
        run.retries = Some(
            u32::try_from(value)
                .ok()
                .filter(|n| *n <= 100)
                .ok_or_else(|| {
                    invalid(
                        "run.retries",
                        retries.span(),
                        Some(value.to_string()),
                        "expected a whole number of retries from 0 to 100",
                    )
                })?,
        );
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
    if let Some(jobs) = &raw.jobs {
        let value = *jobs.get_ref();
        run.jobs = Some(
            u32::try_from(value)
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| {
                    invalid(
                        "run.jobs",
                        jobs.span(),
                        Some(value.to_string()),
                        "expected a number of jobs from 1 to 64",
                    )
                })?,
        );
    }
    if let Some(persist) = &raw.persist {
        let expected =
            "expected \"memory\", \"sqlite\", \"postgres\", \"rivet\" or \"indexeddb\", or a list of them";
        let names: Vec<&toml::Value> = match persist.get_ref() {
            toml::Value::Array(items) if !items.is_empty() => items.iter().collect(),
            one @ toml::Value::String(_) => vec![one],
            other => {
                return Err(invalid(
                    "run.persist",
                    persist.span(),
                    Some(other.to_string()),
                    expected,
                ))
            }
        };
        for name in names {
            let choice = match name.as_str() {
                Some("sqlite") => PersistChoice::Sqlite,
                Some("memory") => PersistChoice::Memory,
                Some("postgres") => PersistChoice::Postgres,
                Some("rivet") => PersistChoice::Rivet,
                Some("indexeddb") => PersistChoice::IndexedDb,
                _ => {
                    return Err(invalid(
                        "run.persist",
                        persist.span(),
                        Some(name.to_string()),
                        expected,
                    ))
                }
            };
            if !run.persist.contains(&choice) {
                run.persist.push(choice);
            }
        }
    }
    if let Some(name) = &raw.token_env {
        if !is_env_name(name.get_ref()) {
            // The value is not shown: a user who misread the key may have pasted the token itself.
            return Err(invalid(
                "run.token_env",
                name.span(),
                None,
                "expected the name of an environment variable (letters, digits, `_`), not the token itself",
            ));
        }
        run.token_env = Some(name.get_ref().clone());
    }
    for name in raw.secret_env.map(|n| n.into_inner()).unwrap_or_default() {
        if !is_env_name(name.get_ref()) {
            return Err(invalid(
                "run.secret_env",
                name.span(),
                None,
                "expected names of environment variables (letters, digits, `_`), not their values",
            ));
        }
        run.secret_env.push(name.into_inner());
    }
    for (key, list, into) in [
        ("run.server_bin", raw.server_bin, &mut run.server_bin),
        ("run.sdk", raw.sdk, &mut run.sdk),
    ] {
        for spec in list.map(|l| l.into_inner()).unwrap_or_default() {
            if spec.get_ref().trim().is_empty() {
                return Err(invalid(
                    key,
                    spec.span(),
                    None,
                    "expected `[LABEL=]PATH`, as the flag takes",
                ));
            }
            into.push(spec.into_inner());
        }
    }
    for (name, value) in raw.headers.map(|h| h.0).unwrap_or_default() {
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
        run.headers.push((name, value.into_inner()));
    }
    Ok(run)
}
