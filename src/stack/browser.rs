//! The browser client's side of the stack (`--client browser`): Debian's
//! Chromium, the page app (the `sandbox-agent` SDK 0.4.2 and the page's
//! own modules bundled for the browser by esbuild, both from the npm
//! registry into the shared cache, once), the page's web server on
//! loopback (its origin is the one sandbox-agent allows cross-origin
//! calls from), and one headless Chromium per cell attempt, its profile
//! (and so its IndexedDB) in the run folder.

use super::npm;
use super::progress::{blocking_with_notes, Progress};
use super::StackError;
use crate::supervise::{ManagedProcess, ProcessSpec, Supervisor};
use bytes::Bytes;
use http_body_util::Full;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The install command a missing Chromium is named with.
pub(crate) const INSTALL: &str = "apt-get install -y --no-install-recommends chromium";

const PACKAGE: &str = include_str!("../../stack/browser/package.json");
const PACKAGE_LOCK: &str = include_str!("../../stack/browser/package-lock.json");
const PAGE: &str = include_str!("../../stack/browser/page.mjs");
const INDEXEDDB: &str = include_str!("../../stack/browser/indexeddb.mjs");
const INDEX: &str = include_str!("../../stack/browser/index.html");
// The hosted Node client's `counted`/`allEvents` and record paging, shared.
const DRIVERS: &str = include_str!("../../stack/rivet/drivers.mjs");
const RECORDS: &str = include_str!("../../stack/rivet/records.mjs");
// The SDK's turns, sandbox and terminal steps, shared with the hosted actor.
const SDK_STEPS: &str = include_str!("../../stack/rivet/sdk-steps.mjs");
// The stack's own SandboxProvider and the reconnect route, shared by both hosts.
const SANDBOX_PROVIDER: &str = include_str!("../../stack/rivet/sandbox-provider.mjs");
// The log of records continuity acknowledges, and what the SDK handed its
// application and stored (the page's network is traced over DevTools).
const WIRE: &str = include_str!("../../stack/rivet/wire.mjs");
const LEDGER: &str = include_str!("../../stack/rivet/ledger.mjs");

/// How long a started Chromium may take to open its DevTools endpoint.
const DEVTOOLS_WAIT: Duration = Duration::from_secs(30);

/// Chromium: `CONTINUITY_CHROMIUM`, else `chromium` on `PATH`.
pub(crate) fn find_chromium() -> Result<PathBuf, StackError> {
    if let Some(path) = std::env::var_os("CONTINUITY_CHROMIUM") {
        let path = PathBuf::from(path);
        return match path.is_file() {
            true => Ok(path),
            false => Err(StackError::NotInstalled(format!(
                "CONTINUITY_CHROMIUM names {}, which is not a file (Debian: {INSTALL})",
                path.display()
            ))),
        };
    }
    npm::which("chromium").ok_or_else(|| {
        StackError::NotInstalled(format!(
            "the browser client needs Chromium, which is not installed (Debian: {INSTALL})"
        ))
    })
}

/// The page app installed and bundled: the folder holding `index.html`
/// and `bundle.js`.
pub(crate) async fn prepare_app(progress: &mut Progress<'_>) -> Result<PathBuf, StackError> {
    let files: Vec<(&'static str, &'static str)> = vec![
        ("package.json", PACKAGE),
        ("package-lock.json", PACKAGE_LOCK),
        ("page.mjs", PAGE),
        ("indexeddb.mjs", INDEXEDDB),
        ("drivers.mjs", DRIVERS),
        ("records.mjs", RECORDS),
        ("sdk-steps.mjs", SDK_STEPS),
        ("sandbox-provider.mjs", SANDBOX_PROVIDER),
        ("wire.mjs", WIRE),
        ("ledger.mjs", LEDGER),
        ("index.html", INDEX),
    ];
    blocking_with_notes(progress, move |note| {
        npm::ensure_app_built("browser-app", &files, note, bundle)
    })
    .await?
}

/// esbuild, from the app's own install: the page and the SDK as one
/// script for the browser. The Node-only drivers' imports stay out (the
/// page never opens them).
fn bundle(dir: &Path) -> Result<(), StackError> {
    let esbuild = dir.join("node_modules/.bin/esbuild");
    let mut command = std::process::Command::new(&esbuild);
    command
        .args([
            "page.mjs",
            "--bundle",
            "--platform=browser",
            "--format=iife",
            "--target=es2022",
            "--outfile=bundle.js",
            "--external:better-sqlite3",
            "--external:pg",
            "--log-level=warning",
        ])
        .current_dir(dir);
    let output =
        crate::supervise::helper::output_blocking(command, Duration::from_secs(300), 1 << 20)
            .map_err(|source| StackError::Helper {
                what: esbuild.display().to_string(),
                source,
            })?;
    if output.status.success() {
        return Ok(());
    }
    Err(StackError::Failed(format!(
        "esbuild could not bundle the browser client in {} ({}): {}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .take(6)
            .collect::<Vec<_>>()
            .join(" ")
    )))
}

/// The page app's web server on 127.0.0.1: `/` and `/bundle.js`.
pub(crate) struct PageServer {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl PageServer {
    pub(crate) async fn start(app: &Path) -> Result<PageServer, StackError> {
        let read = |name: &str| {
            std::fs::read(app.join(name))
                .map(Bytes::from)
                .map_err(StackError::io(format!(
                    "cannot read {}",
                    app.join(name).display()
                )))
        };
        let files = Arc::new((read("index.html")?, read("bundle.js")?));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(StackError::io("cannot listen on 127.0.0.1"))?;
        let port = listener
            .local_addr()
            .map_err(StackError::io("the page server's address"))?
            .port();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let files = files.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let files = files.clone();
                        async move { Ok::<_, std::convert::Infallible>(page_file(&request, &files)) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(PageServer { port, task })
    }

    /// The page's origin, which sandbox-agent lets the page call.
    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn page_file(
    request: &hyper::Request<hyper::body::Incoming>,
    files: &(Bytes, Bytes),
) -> hyper::Response<Full<Bytes>> {
    let (body, kind) = match request.uri().path() {
        "/" | "/index.html" => (files.0.clone(), "text/html; charset=utf-8"),
        "/bundle.js" => (files.1.clone(), "text/javascript; charset=utf-8"),
        _ => {
            return hyper::Response::builder()
                .status(404)
                .body(Full::new(Bytes::from_static(b"not found")))
                .unwrap_or_default()
        }
    };
    hyper::Response::builder()
        .header("content-type", kind)
        .header("cache-control", "no-store")
        .body(Full::new(body))
        .unwrap_or_default()
}

/// Where this stack's browser client runs: Chromium and the page's URL.
#[derive(Debug, Clone)]
pub(crate) struct BrowserHost {
    pub chromium: PathBuf,
    pub page_url: String,
    pub supervisor: Supervisor,
}

/// Hosts are the same when they run the same Chromium on the same page.
impl PartialEq for BrowserHost {
    fn eq(&self, other: &Self) -> bool {
        self.chromium == other.chromium && self.page_url == other.page_url
    }
}

/// One headless Chromium, killed (with its whole group) when dropped.
pub(crate) struct Chromium {
    process: ManagedProcess,
    /// Its DevTools endpoint (`ws://127.0.0.1:PORT/devtools/browser/…`).
    pub ws_url: String,
    /// Its `TMPDIR`, a folder of its own in the temp directory: Chromium
    /// makes its singleton socket's folder there and, killed, never
    /// removes it, so it is removed with the Chromium (it had piled up in
    /// `/tmp`). Not beside the profile: a socket's path is at most 107
    /// bytes, and a run folder's can be longer.
    _tmp: TempFolder,
}

/// A folder removed when dropped: made before Chromium starts, so a
/// launch cut short (Ctrl-C drops the launch where it waits) or failed
/// leaves nothing in `/tmp` either.
struct TempFolder(PathBuf);

impl TempFolder {
    /// `continuity-chromium-<pid>-<profile>` in the temp directory (the
    /// profile's path hashed: one Chromium per profile at a time); the
    /// folders of processes that are gone (killed before any drop ran) go
    /// first.
    fn create(temp: &Path, profile: &Path) -> Result<TempFolder, StackError> {
        sweep_dead_temp_folders(temp);
        let path = temp.join(Self::name(profile));
        std::fs::create_dir_all(&path)
            .map_err(StackError::io(format!("cannot create {}", path.display())))?;
        Ok(TempFolder(path))
    }
}

impl TempFolder {
    fn name(profile: &Path) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in profile.as_os_str().as_encoded_bytes() {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
        format!(
            "continuity-chromium-{}-{:012x}",
            std::process::id(),
            hash & 0xffff_ffff_ffff
        )
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes the Chromium temp folders whose continuity process is gone (a
/// second Ctrl-C exits at once, SIGKILL runs no drop).
fn sweep_dead_temp_folders(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("continuity-chromium-"))
        else {
            continue;
        };
        let Some(pid) = rest
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Chromium {
    /// Starts Chromium with its profile in `profile` (made afresh) and waits
    /// for its DevTools endpoint.
    pub(crate) async fn launch(host: &BrowserHost, profile: &Path) -> Result<Chromium, StackError> {
        Self::launch_in(host, profile, &std::env::temp_dir()).await
    }

    /// [`Chromium::launch`] with its temp folder under `temp` (the temp
    /// directory; a test's own folder).
    async fn launch_in(
        host: &BrowserHost,
        profile: &Path,
        temp: &Path,
    ) -> Result<Chromium, StackError> {
        let _ = std::fs::remove_dir_all(profile);
        std::fs::create_dir_all(profile).map_err(StackError::io(format!(
            "cannot create {}",
            profile.display()
        )))?;
        let mut args: Vec<String> = [
            "--headless=new",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--password-store=basic",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Chromium's sandbox needs user namespaces a root CI container lacks.
        if is_root() {
            args.push("--no-sandbox".into());
        }
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push("about:blank".into());
        let tmp = TempFolder::create(temp, profile)?;
        let spec = ProcessSpec {
            name: "chromium".into(),
            program: host.chromium.clone(),
            args,
            env: vec![("TMPDIR".into(), tmp.0.display().to_string())],
            cwd: Some(profile.to_path_buf()),
            log: profile.with_extension("log"),
        };
        let mut process = ManagedProcess::new(spec, host.supervisor.clone());
        process.start()?;
        let port_file = profile.join("DevToolsActivePort");
        let started = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    return Ok(Chromium {
                        process,
                        ws_url: format!("ws://127.0.0.1:{port}{path}"),
                        _tmp: tmp,
                    });
                }
            }
            if !matches!(
                process.state(),
                crate::supervise::ProcessState::Running { .. }
            ) || started.elapsed() > DEVTOOLS_WAIT
            {
                let tail = process.log_tail(5);
                process
                    .stop(crate::signal::Signal::KILL, Duration::ZERO)
                    .await;
                return Err(StackError::Failed(format!(
                    "Chromium ({}) opened no DevTools endpoint within {} s: {tail}",
                    host.chromium.display(),
                    DEVTOOLS_WAIT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops Chromium and everything it started.
    pub(crate) async fn stop(&mut self) {
        self.process
            .stop(crate::signal::Signal::TERM, Duration::from_secs(2))
            .await;
    }
}

fn is_root() -> bool {
    crate::supervise::os::is_root()
}

#[cfg(test)]
mod contract;

#[cfg(test)]
mod tests;
