//! Candidate builds as points of the matrix: `--server-bin [LABEL=]PATH`
//! (a sandbox-agent binary) and `--sdk [LABEL=]PATH[,PATH…]` (an SDK's
//! packages), or the config's `server_bin` and `sdk`. Each is checked
//! before any stack starts (the path is there, the binary answers
//! `--version` as sandbox-agent does, every path is an npm package) and
//! labelled by LABEL or by the version it reports; a bad one is a usage
//! error naming the flag and the path. The SDK points are installed here
//! too, before the stacks, so a candidate that does not load or has no
//! `SandboxAgent` export is refused before any stack starts as well.

use super::CommandError;
use crate::client::hosted::Unhosted;
use crate::runner::{SdkPoint, SdkSource, ServedSdk, ServerPoint, ServerSource};
use crate::stack::StackError;
use crate::supervise::Supervisor;
use std::path::{Path, PathBuf};

/// Where a spec came from, for messages: `--server-bin` or the config's key.
#[derive(Debug, Clone, Copy)]
pub(super) struct Source<'a> {
    pub flag: &'a str,
}

/// `LABEL=REST`. What comes before the first `=` must be a label (see
/// [`check_label`]), or the spec is refused as a bad label, never read as
/// part of a path; the one exception is a spec whose first path (up to a
/// `,` when `list`) exists as it is: a path holding `=`, such as
/// `/opt/a=b`, is read as a path without a label.
fn split_label<'a>(
    spec: &'a str,
    list: bool,
    flag: &str,
) -> Result<(Option<&'a str>, &'a str), CommandError> {
    let Some((label, rest)) = spec.split_once('=') else {
        return Ok((None, spec));
    };
    let first = if list {
        spec.split(',').next().unwrap_or(spec)
    } else {
        spec
    };
    match check_label(label) {
        Ok(()) => Ok((Some(label), rest)),
        Err(_) if Path::new(first).exists() => Ok((None, spec)),
        Err(why) => Err(CommandError::usage(format!(
            "{flag} {spec:?}: bad label {label:?}: {why} (expected [LABEL=]PATH; a path holding `=` is taken as a path only when it exists)"
        ))),
    }
}

/// A point's label names its column in every report and may end up in a
/// file name: a short word.
pub(super) fn check_label(label: &str) -> Result<(), &'static str> {
    let ok = !label.is_empty()
        && label.len() <= 64
        && !label.starts_with('.')
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'));
    match ok {
        true => Ok(()),
        false => Err("a label is 1 to 64 letters, digits, `.`, `_`, `-` or `+`"),
    }
}

/// The semver in what a program or package reports (`sandbox-agent 0.4.2`
/// → `0.4.2`): its label when none is given.
fn version_word(text: &str) -> Option<String> {
    text.split_whitespace()
        .rev()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| semver::Version::parse(w).is_ok())
        .map(str::to_string)
}

/// One `--server-bin` spec as a server point, the binary checked.
pub(super) async fn server_bin(
    spec: &str,
    source: Source<'_>,
) -> Result<ServerPoint, CommandError> {
    let flag = source.flag;
    let (label, path) = split_label(spec, false, flag)?;
    if path.trim().is_empty() {
        return Err(CommandError::usage(format!(
            "{flag} {spec:?}: no path (expected [LABEL=]PATH)"
        )));
    }
    let absolute = absolute(path, flag, spec)?;
    let reports = crate::stack::sandbox_agent::check_binary(&absolute)
        .await
        .map_err(|why| CommandError::usage(format!("{flag} {spec}: {why}")))?;
    let label = match label {
        Some(label) => label.to_string(),
        None => version_word(&reports).ok_or_else(|| {
            CommandError::usage(format!(
                "{flag} {spec}: it reports {reports:?}, which holds no version to label it by: give it a label, {flag} NAME={path}"
            ))
        })?,
    };
    let sha256 = crate::digest::sha256_file(&absolute)
        .map_err(|e| CommandError::usage(format!("{flag} {spec}: cannot read it: {e}")))?;
    Ok(ServerPoint {
        label,
        source: ServerSource::Binary {
            path: absolute,
            reports,
            sha256,
        },
    })
}

/// One `--sdk` spec as an SDK point, every package read (not installed yet).
pub(super) fn sdk(spec: &str, source: Source<'_>) -> Result<SdkPoint, CommandError> {
    let flag = source.flag;
    let (label, paths) = split_label(spec, true, flag)?;
    let given: Vec<&str> = paths.split(',').map(str::trim).collect();
    if given.iter().any(|p| p.is_empty()) {
        return Err(CommandError::usage(format!(
            "{flag} {spec:?}: an empty path (expected [LABEL=]PATH[,PATH…])"
        )));
    }
    let mut absolute_paths = Vec::new();
    for path in &given {
        absolute_paths.push(absolute(path, flag, spec)?);
    }
    let packages = crate::stack::sdk::read_candidate(&absolute_paths).map_err(|(path, why)| {
        let shown = given
            .iter()
            .zip(&absolute_paths)
            .find(|(_, a)| **a == path)
            .map(|(g, _)| g.to_string())
            .unwrap_or_else(|| path.display().to_string());
        CommandError::usage(format!("{flag} {spec}: {shown}: {why}"))
    })?;
    let version = packages[0].version.clone();
    let label = match label {
        Some(label) => label.to_string(),
        None => version_word(&version).ok_or_else(|| {
            CommandError::usage(format!(
                "{flag} {spec}: its version {version:?} is not one to label it by: give it a label, {flag} NAME={paths}"
            ))
        })?,
    };
    let sha256 = crate::stack::sdk::content_digest(&packages)
        .map_err(|e| CommandError::usage(format!("{flag} {spec}: cannot read it: {e}")))?;
    Ok(SdkPoint {
        label,
        source: SdkSource::Package {
            paths: absolute_paths,
            version,
            sha256,
        },
    })
}

fn absolute(path: &str, flag: &str, spec: &str) -> Result<PathBuf, CommandError> {
    std::path::absolute(Path::new(path))
        .map_err(|e| CommandError::usage(format!("{flag} {spec}: {path}: {e}")))
}

/// Every SDK point installed (registry versions and candidates, each
/// once into the cache) before any stack starts. A registry version npm
/// cannot install leaves its cells skipped with why; a candidate that
/// does not load or has no `SandboxAgent` export is a usage error.
pub(super) async fn install_sdks(
    sdks: &[SdkPoint],
    shown: &super::Progress,
) -> Result<Vec<ServedSdk>, CommandError> {
    let mut served = Vec::new();
    for point in sdks {
        let stack = format!("sdk {}", point.label);
        let mut progress = |note| shown.note(&stack, note);
        let module = match &point.source {
            SdkSource::Registry(version) => {
                match crate::stack::sdk::install_registry(version, &mut progress).await {
                    Ok(module) => Ok(module),
                    Err(e) => Err(Unhosted(format!(
                        "the sandbox-agent SDK {version} could not be installed from the npm registry: {}",
                        e.to_string().lines().take(4).collect::<Vec<_>>().join(" ")
                    ))),
                }
            }
            SdkSource::Package { paths, .. } => {
                let packages =
                    crate::stack::sdk::read_candidate(paths).map_err(|(path, why)| {
                        CommandError::usage(format!(
                            "--sdk {}: {}: {why}",
                            point.label,
                            path.display()
                        ))
                    })?;
                let shown = paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                match crate::stack::sdk::install_candidate(&packages, &mut progress).await {
                    Ok(module) => Ok(module),
                    Err(StackError::Invalid(why)) => {
                        return Err(CommandError::usage(format!(
                            "--sdk {}={shown}: {why}",
                            point.label
                        )))
                    }
                    Err(e) => {
                        return Err(CommandError::incomplete(format!(
                            "--sdk {}={shown}: cannot install it: {e}",
                            point.label
                        )))
                    }
                }
            }
        };
        served.push(ServedSdk {
            label: point.label.clone(),
            module,
        });
    }
    Ok(served)
}

/// Proves each candidate binary starts and answers `/v1/health` (in
/// `dir/LABEL`), before any stack does: one that never gets healthy is
/// the run's end, naming the binary and the end of its log.
pub(super) async fn check_servers_start(
    servers: &[ServerPoint],
    dir: &Path,
    agent_program: &Path,
    within: std::time::Duration,
    supervisor: &Supervisor,
) -> Result<(), CommandError> {
    for server in servers {
        let ServerSource::Binary { path, .. } = &server.source else {
            continue;
        };
        crate::console::errln(&format!(
            "server {}: checking that {} starts",
            server.label,
            path.display()
        ));
        crate::stack::sandbox_agent::check_starts(
            path,
            &dir.join(&server.label),
            agent_program,
            within,
            supervisor,
        )
        .await
        .map_err(|e| {
            CommandError::incomplete(format!(
                "--server-bin {}={}: it started but did not become a working server: {e}",
                server.label,
                path.display()
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_what_comes_before_an_equals_sign_and_a_bad_one_is_said_so() {
        let split = |spec| split_label(spec, true, "--sdk").map_err(|e| e.to_string());
        assert_eq!(
            split("candidate=./sandbox-agent"),
            Ok((Some("candidate"), "./sandbox-agent"))
        );
        assert_eq!(split("./sandbox-agent"), Ok((None, "./sandbox-agent")));
        // Not a label and no such path: a bad label, not "no such file".
        for spec in ["/opt/a=b/sandbox-agent", "=x", "my fix=./x", "../x=./y"] {
            let e = split(spec).unwrap_err();
            assert!(e.contains("bad label"), "{spec}: {e}");
        }
        // A path holding `=` that exists is that path.
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a=b");
        std::fs::write(&odd, "x").unwrap();
        let odd = odd.to_str().unwrap();
        assert_eq!(split(odd), Ok((None, odd)));
        let list = format!("{odd},./dep");
        assert_eq!(split(&list), Ok((None, list.as_str())));
        assert!(check_label("fix-189").is_ok());
        assert!(check_label("../x").is_err());
        assert!(check_label(&"x".repeat(65)).is_err());
    }

    #[test]
    fn a_version_labels_a_point_that_has_no_label() {
        assert_eq!(
            version_word("sandbox-agent 0.4.2").as_deref(),
            Some("0.4.2")
        );
        assert_eq!(
            version_word("sandbox-agent v0.5.0-rc.1").as_deref(),
            Some("0.5.0-rc.1")
        );
        assert_eq!(version_word("sandbox-agent dev"), None);
    }
}
