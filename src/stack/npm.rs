//! Installs pinned npm packages into a cache folder outside the repository,
//! once, with visible progress (a [`Note`] as each install starts and
//! ends); concurrent installers wait on a file lock, and say so.

use super::progress::Note;
use super::StackError;
use crate::errors::Invalid;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where downloaded programs live: `$CONTINUITY_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/continuity`, else `~/.cache/continuity`.
pub(crate) fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CONTINUITY_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("continuity");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp".into());
    home.join(".cache").join("continuity")
}

/// Whether a program is on `PATH`.
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// How long an install or a build may take: far past any seen here (a
/// few minutes on a loaded machine), short of for ever.
const HELPER_WITHIN: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// Makes sure `packages` (each `name@version`) are installed in `cache_dir()/npm/<slot>`
/// and returns that folder. `progress` hears when an install starts and ends.
pub(crate) fn ensure_installed(
    slot: &str,
    packages: &[String],
    progress: &mut dyn FnMut(Note),
) -> Result<PathBuf, StackError> {
    let dir = cache_dir().join("npm").join(slot);
    install_once(&dir, &packages.join(" "), progress, |dir| {
        let mut npm = Command::new("npm");
        npm.args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(dir)
        .args(packages);
        run_npm(npm, dir)
    })
}

/// Makes sure an npm app (its `package.json`, lock file and sources, given as
/// `(file name, contents)`) is installed in `cache_dir()/npm/<slot>-<hash>`,
/// where the hash covers every file, so an edited app installs afresh.
/// `npm install` rather than `npm ci`: the lock file lacks other platforms'
/// optional packages (the registry here has none), which `npm ci` refuses.
pub(crate) fn ensure_app_installed(
    slot: &str,
    files: &[(&str, &str)],
    progress: &mut dyn FnMut(Note),
) -> Result<PathBuf, StackError> {
    ensure_app_built(slot, files, progress, |_| Ok(()))
}

/// [`ensure_app_installed`], then `build` in the installed folder, as part
/// of the same once-only install (a failed build installs afresh next time).
pub(crate) fn ensure_app_built(
    slot: &str,
    files: &[(&str, &str)],
    progress: &mut dyn FnMut(Note),
    build: impl FnOnce(&Path) -> Result<(), StackError>,
) -> Result<PathBuf, StackError> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, contents) in files {
        for byte in name.bytes().chain(contents.bytes()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let dir = cache_dir()
        .join("npm")
        .join(format!("{slot}-{:08x}", hash as u32));
    install_once(&dir, &format!("the {slot} npm app"), progress, |dir| {
        for (name, contents) in files {
            let path = dir.join(name);
            std::fs::write(&path, contents)
                .map_err(StackError::io(format!("cannot write {}", path.display())))?;
        }
        let mut npm = Command::new("npm");
        npm.args([
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
        ])
        .current_dir(dir);
        run_npm(npm, dir)?;
        build(dir)
    })
}

/// Builds a package's native module inside an installed app (once; the
/// app installs with `--ignore-scripts`, and the prebuilt binaries those
/// scripts would download are not reachable here): npm's own node-gyp
/// against Debian's Node headers (`/usr/include/node`), nothing fetched.
pub(crate) fn ensure_native_module(
    app: &Path,
    package: &str,
    progress: &mut dyn FnMut(Note),
) -> Result<(), StackError> {
    let dir = app.join("node_modules").join(package);
    if !dir.is_dir() {
        return Err(StackError::Failed(format!(
            "{package} is not in {}",
            app.display()
        )));
    }
    let npm = which("npm").ok_or_else(|| {
        StackError::NotInstalled(
            "npm is not installed (Debian: apt-get install -y nodejs npm)".into(),
        )
    })?;
    let npm_root = std::fs::canonicalize(&npm)
        .ok()
        .and_then(|cli| Some(cli.parent()?.parent()?.to_path_buf()))
        .unwrap_or_default();
    let gyp = npm_root.join("node_modules/node-gyp/bin/node-gyp.js");
    let headers = Path::new("/usr/include/node/node_api.h");
    install_once(&dir, &format!("{package}'s native module"), progress, |dir| {
        if !gyp.is_file() || !headers.is_file() {
            return Err(StackError::NotInstalled(format!(
                "building {package} needs npm's node-gyp ({}) and Node's headers ({}): apt-get install -y nodejs npm libnode-dev g++ make python3",
                gyp.display(),
                headers.display()
            )));
        }
        let mut node = Command::new("node");
        node.arg(&gyp)
            .args(["rebuild", "--release", "--nodedir=/usr", "--loglevel=error"])
            .current_dir(dir);
        let output = crate::supervise::helper::output_blocking(node, HELPER_WITHIN, 1 << 20)
            .map_err(|source| StackError::Helper {
                what: "node-gyp".into(),
                source,
            })?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        Err(StackError::Failed(format!(
            "building {package} in {} failed ({}): {}",
            dir.display(),
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" ")
        )))
    })
    .map(drop)
}

/// Runs `install` in `dir` unless an earlier run finished there; concurrent
/// callers wait on a lock, and a completion marker makes it happen once.
pub(super) fn install_once(
    dir: &Path,
    what: &str,
    progress: &mut dyn FnMut(Note),
    install: impl FnOnce(&Path) -> Result<(), StackError>,
) -> Result<PathBuf, StackError> {
    let marker = dir.join(".continuity-complete");
    if marker.is_file() {
        return Ok(dir.to_path_buf());
    }
    if which("npm").is_none() {
        return Err(StackError::NotInstalled(
            "npm is not installed; install Node.js and npm (Debian: apt-get install -y nodejs npm)"
                .into(),
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(StackError::io(format!("cannot create {}", dir.display())))?;
    let _lock = FileLock::acquire(&dir.join(".lock"), || {
        progress(Note::WaitingForInstall { what: what.into() })
    })?;
    if marker.is_file() {
        return Ok(dir.to_path_buf());
    }
    progress(Note::Installing {
        what: what.into(),
        dir: dir.to_path_buf(),
    });
    let started = std::time::Instant::now();
    let installed = install(dir).and_then(|()| {
        std::fs::write(&marker, what)
            .map_err(StackError::io(format!("cannot write {}", marker.display())))
    });
    progress(Note::Installed {
        what: what.into(),
        ok: installed.is_ok(),
        took: started.elapsed(),
    });
    installed.map(|()| dir.to_path_buf())
}

pub(super) fn run_npm(command: Command, dir: &Path) -> Result<(), StackError> {
    let output = crate::supervise::helper::output_blocking(command, HELPER_WITHIN, 1 << 20)
        .map_err(|source| StackError::Helper {
            what: format!("npm install in {}", dir.display()),
            source,
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(StackError::Failed(format!(
        "npm install in {} failed ({}):\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// Makes a file executable (npm may skip the package's chmod install script).
pub(crate) fn make_executable(path: &Path) -> Result<(), StackError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(StackError::io(format!("{} is missing", path.display())))?;
    let mut perms = meta.permissions();
    if perms.mode() & 0o111 != 0o111 {
        perms.set_mode(perms.mode() | 0o755);
        std::fs::set_permissions(path, perms)
            .map_err(StackError::io(format!("cannot chmod {}", path.display())))?;
    }
    Ok(())
}

/// An exclusive `flock` (std's file lock is flock(2) here) held until dropped.
struct FileLock(std::fs::File);

impl FileLock {
    /// Takes the lock, calling `contended` first when someone else holds it.
    fn acquire(path: &Path, contended: impl FnOnce()) -> Result<FileLock, StackError> {
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(StackError::io(format!(
                "cannot open lock {}",
                path.display()
            )))?;
        if file.try_lock().is_ok() {
            return Ok(FileLock(file));
        }
        contended();
        file.lock()
            .map_err(StackError::io(format!("cannot lock {}", path.display())))?;
        Ok(FileLock(file))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A published version number, `MAJOR.MINOR.PATCH` with an optional
/// `-prerelease` and `+build`: it becomes a folder name and an npm spec, so
/// nothing else (`../x`, `latest`, `1.0 || 2`) gets through.
pub(crate) fn check_version(text: &str) -> Result<(), Invalid> {
    let (core, rest) = match text.find(['-', '+']) {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let numeric = numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()));
    let suffix_ok = rest.len() <= 64
        && rest
            .split(['-', '+', '.'])
            .skip(1)
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric()));
    if numeric && suffix_ok {
        Ok(())
    } else {
        Err(Invalid::new(
            "expected a version such as 0.4.2 or 0.5.0-rc.1",
        ))
    }
}
