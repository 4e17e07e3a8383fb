//! The SDK the hosted client runs, installed once per SDK point: a registry
//! version (`sandbox-agent@VERSION`; the pinned one is the Rivet app's
//! own), or a candidate's packages (`--sdk`: folders or `npm pack`
//! tarballs, the first the SDK, the others replacing its dependencies of
//! the same name) installed into a cache folder keyed by their content, so
//! a changed candidate installs afresh and an unchanged one does not. Every
//! install is loaded once by node and must export `SandboxAgent`; what it
//! gives is the module the Rivet app's actor imports for that point's cells.

use super::npm;
use super::progress::{blocking_with_notes, Progress};
use super::StackError;
use crate::errors::Invalid;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a package given to `--sdk` says it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Package {
    /// Absolute.
    pub path: PathBuf,
    pub name: String,
    pub version: String,
    /// The names it depends on (dependencies, optional and peer ones).
    pub dependencies: Vec<String>,
}

/// The largest package.json read (npm's own are a few KiB).
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// Reads what `path`, a package folder or an `npm pack` tarball, says it
/// is (its `package.json`); otherwise why it is not a package.
pub(crate) fn read_package(path: &Path) -> Result<Package, Invalid> {
    use crate::user_file::{check_kind, read_text, Kind, Why};
    // A FIFO (which tar would wait on forever), a socket or a device is
    // refused before anything opens it.
    let meta = check_kind(path, Kind::FileOrFolder).map_err(|e| match e.why {
        Why::Missing => Invalid::new("no such file or folder"),
        Why::Io(e) => Invalid(format!("cannot read it: {e}")),
        why => Invalid(why.to_string()),
    })?;
    let text = if meta.is_dir() {
        let manifest = path.join("package.json");
        read_text(&manifest, MAX_MANIFEST_BYTES).map_err(|e| match e.why {
            Why::Missing => Invalid::new("not an npm package: the folder holds no package.json (give the SDK's package folder, e.g. sdks/typescript, or a tarball from `npm pack`)"),
            why => Invalid(format!("its package.json: {why}")),
        })?
    } else {
        tarball_manifest(path)?
    };
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Invalid(format!(
            "not an npm package: its package.json is not JSON: {e}"
        ))
    })?;
    let field = |key: &str| {
        json.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                Invalid(format!(
                    "not an npm package: its package.json has no `{key}`"
                ))
            })
    };
    let mut dependencies: Vec<String> = Vec::new();
    for table in ["dependencies", "optionalDependencies", "peerDependencies"] {
        if let Some(deps) = json.get(table).and_then(serde_json::Value::as_object) {
            dependencies.extend(
                deps.keys()
                    .filter(|k| !dependencies.contains(k))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
        }
    }
    Ok(Package {
        path: std::path::absolute(path).map_err(|e| Invalid(e.to_string()))?,
        name: field("name")?,
        version: field("version")?,
        dependencies,
    })
}

/// `package/package.json` of a gzipped tarball, as `npm pack` writes it.
fn tarball_manifest(path: &Path) -> Result<String, Invalid> {
    let mut tar = Command::new("tar");
    tar.arg("-xzOf").arg(path).arg("package/package.json");
    // A tarball is the user's (or an artifact's): its manifest is read
    // within a bound of time and size, as a package.json in a folder is.
    let output = crate::supervise::helper::output_blocking(
        tar,
        std::time::Duration::from_secs(30),
        MAX_MANIFEST_BYTES,
    )
    .map_err(|e| Invalid(format!("cannot read it: tar: {e}")))?;
    if !output.status.success() {
        return Err(Invalid::new(
            "not an npm package: not a gzipped tarball holding package/package.json (as `npm pack` makes)",
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Checks a candidate's packages (`paths`, the SDK first): each is a
/// package, no name comes twice, and each further one replaces a
/// dependency of one of them (a name nothing depends on would change
/// nothing, so it is a mistake).
pub(crate) fn read_candidate(paths: &[PathBuf]) -> Result<Vec<Package>, (PathBuf, Invalid)> {
    let mut packages: Vec<Package> = Vec::new();
    for path in paths {
        let package = read_package(path).map_err(|e| (path.clone(), e))?;
        if packages.iter().any(|p| p.name == package.name) {
            return Err((
                path.clone(),
                Invalid(format!("a second package named `{}`", package.name)),
            ));
        }
        packages.push(package);
    }
    for package in packages.iter().skip(1) {
        if !packages
            .iter()
            .any(|p| p.dependencies.contains(&package.name))
        {
            return Err((
                package.path.clone(),
                Invalid(format!(
                    "`{}` is not a dependency of `{}` (a further path replaces one of the SDK's dependencies of the same name)",
                    package.name, packages[0].name
                )),
            ));
        }
    }
    Ok(packages)
}

/// Installs `sandbox-agent@version` (once) and returns the module the actor
/// imports: the Rivet app's own copy for the pinned version.
pub(crate) async fn install_registry(
    version: &str,
    progress: &mut Progress<'_>,
) -> Result<PathBuf, StackError> {
    npm::check_version(version)
        .map_err(|e| StackError::from(e).context(format!("sandbox-agent SDK {version:?}")))?;
    let dir = if version == super::rivet::PINNED_SDK_VERSION {
        super::rivet::install_app(progress).await?
    } else {
        let version = version.to_string();
        blocking_with_notes(progress, move |lines| {
            let dir = npm::cache_dir()
                .join("npm")
                .join(format!("sdk-sandbox-agent-{version}"));
            npm::install_once(
                &dir,
                &format!("sandbox-agent SDK {version}"),
                lines,
                |dir| {
                    let mut command = npm_install(dir);
                    command.arg(format!("sandbox-agent@{version}"));
                    npm::run_npm(command, dir)
                },
            )
        })
        .await??
    };
    sdk_module(&dir).await
}

/// Installs a candidate's `packages` (once per content) and returns the
/// module the actor imports. The SDK is the first package; the others
/// replace its dependencies of the same name, at every depth (npm
/// `overrides`). A candidate that does not load or exports no
/// `SandboxAgent` is [`StackError::Invalid`].
pub(crate) async fn install_candidate(
    packages: &[Package],
    progress: &mut Progress<'_>,
) -> Result<PathBuf, StackError> {
    let key = content_key(packages)?;
    let manifest = candidate_manifest(packages);
    let what = format!(
        "the candidate SDK {}",
        packages
            .iter()
            .map(|p| p.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let dir = blocking_with_notes(progress, move |lines| {
        let dir = npm::cache_dir()
            .join("npm")
            .join(format!("sdk-candidate-{key}"));
        npm::install_once(&dir, &what, lines, |dir| {
            let path = dir.join("package.json");
            std::fs::write(&path, manifest)
                .map_err(StackError::io(format!("cannot write {}", path.display())))?;
            npm::run_npm(npm_install(dir), dir)
        })
    })
    .await??;
    sdk_module(&dir).await
}

/// `npm install` in `dir`: folders are packed and copied as a tarball
/// would be (`--install-links`), so the candidate's checkout is neither
/// linked nor written to; no install scripts; without the SDK's optional
/// CLI binary, which the hosted client never runs.
fn npm_install(dir: &Path) -> Command {
    let mut command = Command::new("npm");
    command
        .args([
            "install",
            "--install-links",
            "--ignore-scripts",
            "--omit=optional",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(dir);
    command
}

/// The install folder's `package.json`: every package as a `file:`
/// dependency, each after the first also an override of that name, so
/// the SDK (and anything else) gets it instead of the registry's.
fn candidate_manifest(packages: &[Package]) -> String {
    let mut dependencies = serde_json::Map::new();
    let mut overrides = serde_json::Map::new();
    for (i, package) in packages.iter().enumerate() {
        let name = if i == 0 {
            "sandbox-agent"
        } else {
            package.name.as_str()
        };
        dependencies.insert(
            name.to_string(),
            format!("file:{}", package.path.display()).into(),
        );
        if i > 0 {
            overrides.insert(name.to_string(), format!("${name}").into());
        }
    }
    let manifest = serde_json::json!({
        "name": "continuity-candidate-sdk",
        "private": true,
        "description": "Written by continuity: a candidate sandbox-agent SDK for the hosted client",
        "dependencies": dependencies,
        "overrides": overrides,
    });
    serde_json::to_string_pretty(&manifest).expect("a JSON value serialises")
}

/// The name of a candidate's install folder: the first 8 bytes of its
/// [`content_digest`].
fn content_key(packages: &[Package]) -> Result<String, StackError> {
    let mut digest = content_digest(packages)?;
    digest.truncate(16);
    Ok(digest)
}

/// The SHA-256 (hex) of everything the candidate's packages hold (a
/// folder's files but `node_modules` and `.git`, a tarball's bytes), in
/// order: what `report.json` records of an SDK point, and what names its
/// install folder.
pub(crate) fn content_digest(packages: &[Package]) -> Result<String, StackError> {
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    for package in packages {
        hash.update(package.name.as_bytes());
        hash.update(&[0]);
        add_content(&mut hash, &package.path, Path::new(""))?;
        hash.update(&[0xff]);
    }
    Ok(crate::digest::hex(hash.finish().as_ref()))
}

fn add_content(
    hash: &mut ring::digest::Context,
    path: &Path,
    relative: &Path,
) -> Result<(), StackError> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(StackError::io(format!("cannot read {}", path.display())))?;
    hash.update(relative.as_os_str().as_encoded_bytes());
    hash.update(&[0]);
    if meta.is_dir() {
        let mut entries: Vec<std::ffi::OsString> = std::fs::read_dir(path)
            .map_err(StackError::io(format!("cannot read {}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .filter(|name| name != "node_modules" && name != ".git")
            .collect();
        entries.sort();
        for name in entries {
            add_content(hash, &path.join(&name), &relative.join(&name))?;
        }
    } else if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .map_err(StackError::io(format!("cannot read {}", path.display())))?;
        hash.update(target.as_os_str().as_encoded_bytes());
    } else {
        // A FIFO would block the read and a device never end it: a package
        // holds files, folders and links only.
        let (file, meta) = crate::user_file::open_regular(path).map_err(|e| match e.why {
            crate::user_file::Why::WrongKind(what) => StackError::Invalid(Invalid(format!(
                "{} is {what}: a package holds files, folders and links",
                path.display()
            ))),
            why => StackError::Invalid(Invalid(format!("cannot read {}: {why}", path.display()))),
        })?;
        hash.update(&meta.len().to_le_bytes());
        let mut reader = std::io::Read::take(file, meta.len());
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let n = std::io::Read::read(&mut reader, &mut buffer)
                .map_err(StackError::io(format!("cannot read {}", path.display())))?;
            if n == 0 {
                break;
            }
            hash.update(&buffer[..n]);
        }
    }
    Ok(())
}

/// Loads the `sandbox-agent` installed in `dir` with node, as the actor
/// will: its module, if it loads and exports `SandboxAgent`.
async fn sdk_module(dir: &Path) -> Result<PathBuf, StackError> {
    const CHECK: &str = r#"
import { fileURLToPath } from "node:url";
const url = import.meta.resolve("sandbox-agent");
const sdk = await import(url);
process.stdout.write(JSON.stringify({
  module: fileURLToPath(url),
  sandboxAgent: typeof sdk.SandboxAgent,
  exports: Object.keys(sdk).slice(0, 12),
}));
"#;
    let node = super::rivet::find_node()?;
    let mut command = tokio::process::Command::new(node);
    command
        .args(["--input-type=module", "-e", CHECK])
        .current_dir(dir);
    let output =
        crate::supervise::helper::output(command, std::time::Duration::from_secs(60), 1 << 20)
            .await
            .map_err(|source| StackError::Helper {
                what: "node's check of the SDK".into(),
                source,
            })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("Node.js v"))
            .collect();
        let said = said[said.len().saturating_sub(4)..].join(" ");
        return Err(Invalid(format!("the SDK does not load in node: {said}")).into());
    }
    let answer: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|source| StackError::NoJson {
            what: format!("node's check of the SDK in {}", dir.display()),
            source,
        })?;
    if answer["sandboxAgent"] != "function" {
        return Err(Invalid(format!(
            "the SDK has no `SandboxAgent` export (it exports: {})",
            answer["exports"]
                .as_array()
                .map(|names| names
                    .iter()
                    .filter_map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "))
                .filter(|names| !names.is_empty())
                .unwrap_or_else(|| "nothing".into())
        ))
        .into());
    }
    answer["module"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| StackError::Failed("node's check of the SDK named no module".into()))
}

#[cfg(test)]
mod tests;
