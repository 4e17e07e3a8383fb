//! Whether a restart happened: what shows that a target went down, chosen
//! per kind of restart action, and the words a failed check leaves.
//!
//! A restart is judged done only when the harness saw the target go down
//! and come back; an action that merely returned proves nothing (a
//! `--server-bin` that daemonises escapes its process group's SIGTERM, a
//! restart command may do nothing). What counts as "down":
//!
//! - `managed`: the process group was stopped, and the probe's listener
//!   (the host and port of an HTTP GET or TCP probe) then refused a
//!   connection. A listener still accepting after the group is gone is
//!   served by something that escaped it: the target never went down.
//! - `signal`: the process named in the pid file is gone or replaced, or
//!   its children changed (an nginx reload renews its workers).
//! - `command` and `http`: from the action's start until the probe passes,
//!   a probe attempt failed (connection refused, a 502 from a gateway
//!   whose upstream boots, no answer), or the probe's loopback listener is
//!   served by another process than before.
//! - `clients` and `fault` restart no process: nothing to observe.
//!
//! Coming back is the target's readiness probe within its deadline
//! ([`super::Target::restart`]).

use super::readiness::{ProbeAuth, Readiness};
use super::{fmt_duration, DEFAULT_PROBE_INTERVAL};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How long a managed target's listener may keep accepting after its
/// process group is gone (the kernel closes it as the last holder exits).
const LISTENER_CLOSE: Duration = Duration::from_secs(1);
/// How long one attempt of the watch over a command's restart may take.
const WATCH_ATTEMPT: Duration = Duration::from_secs(2);

/// The `host:port` a probe connects to, when the probe is the target's own
/// listener: an HTTP GET or a TCP connect (a POST probes an operation,
/// often through another component; a command probe has no address).
pub(super) fn probe_addr(readiness: &Readiness) -> Option<String> {
    match readiness {
        Readiness::Http { url, .. } => {
            let url = url::Url::parse(url).ok()?;
            let host = url.host_str()?;
            let port = url.port_or_known_default()?;
            Some(match host.contains(':') {
                true => format!("[{}]:{port}", host.trim_matches(['[', ']'])),
                false => format!("{host}:{port}"),
            })
        }
        Readiness::Tcp { addr } => Some(addr.clone()),
        _ => None,
    }
}

/// What was seen instead of a target going down: a restart that proved
/// nothing ([`super::RestartFailure::NeverDown`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(super) struct NotDown(pub String);

/// Why a TCP connect did not succeed.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("no answer within {}", fmt_duration(WATCH_ATTEMPT))]
    Silent,
}

/// Whether a TCP connect to `addr` succeeds now; why not otherwise.
async fn accepts(addr: &str) -> Result<(), Refused> {
    match tokio::time::timeout(WATCH_ATTEMPT, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Refused::Io(e)),
        Err(_) => Err(Refused::Silent),
    }
}

/// After a managed target's group was stopped (`exit` says how its leader
/// ended): its listener must refuse connections. `Ok` says how it went
/// down, `Err` what was seen instead.
pub(super) async fn managed_down(exit: &str, addr: Option<&str>) -> Result<String, NotDown> {
    let Some(addr) = addr else {
        return Ok(format!("the process {exit}"));
    };
    let deadline = Instant::now() + LISTENER_CLOSE;
    loop {
        if let Err(error) = accepts(addr).await {
            return Ok(format!(
                "the process {exit} and {addr} refused connections ({error})"
            ));
        }
        if Instant::now() >= deadline {
            let owner = listener_owner(addr).await;
            return Err(NotDown(format!(
                "its process group was stopped (the process {exit}), yet {addr} still accepted connections {} later{}",
                fmt_duration(LISTENER_CLOSE),
                owner.map_or_else(String::new, |pid| format!(
                    ", served by process {pid}, which escaped the group"
                ))
            )));
        }
        tokio::time::sleep(DEFAULT_PROBE_INTERVAL).await;
    }
}

/// A command's or hook's restart under watch: from the action's start,
/// one probe attempt at a time until the first that fails.
pub(super) struct Watch {
    task: JoinHandle<Option<String>>,
    addr: Option<String>,
    owner_before: Option<u32>,
    started: Instant,
}

impl Watch {
    /// Starts watching `readiness`'s endpoint (sending `auth` as its probe
    /// would) before the action runs; `None` when the probe cannot be
    /// attempted once (no probe, a delay, a command probe).
    pub(super) async fn start(readiness: &Readiness, auth: &ProbeAuth) -> Option<Watch> {
        if !readiness.attempts_once() {
            return None;
        }
        let addr = probe_addr(readiness);
        let owner_before = match &addr {
            Some(addr) => listener_owner(addr).await,
            None => None,
        };
        let started = Instant::now();
        let (probe, auth) = (readiness.clone(), auth.clone());
        let task = tokio::spawn(async move {
            let mut beat = tokio::time::interval(DEFAULT_PROBE_INTERVAL);
            beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                beat.tick().await;
                let at = started.elapsed();
                if let Err(error) = probe.attempt_once(&auth, WATCH_ATTEMPT).await {
                    return Some(format!(
                        "{} failed {} into the restart: {error}",
                        probe.describe(),
                        fmt_duration(at)
                    ));
                }
            }
        });
        Some(Watch {
            task,
            addr,
            owner_before,
            started,
        })
    }

    /// What the watch saw while the action ran (and any wait after it).
    pub(super) async fn during(&mut self) -> Option<String> {
        if self.task.is_finished() {
            return (&mut self.task).await.ok().flatten();
        }
        self.task.abort();
        None
    }

    /// Once the target is ready again: how it was seen to go down, given
    /// what the watch saw during the action and the probe's first failure
    /// after it; `Err` says what was seen instead.
    pub(super) async fn judge(
        &self,
        during: Option<String>,
        after: Option<String>,
    ) -> Result<String, NotDown> {
        if let Some(seen) = during {
            return Ok(seen);
        }
        if let Some(error) = after {
            return Ok(format!(
                "the probe failed after the action returned: {error}"
            ));
        }
        let owner_after = match &self.addr {
            Some(addr) => listener_owner(addr).await,
            None => None,
        };
        match (self.owner_before, owner_after, &self.addr) {
            (Some(before), Some(after), Some(addr)) if before != after => Ok(format!(
                "{addr} is served by a new process (pid {before} before, {after} after)"
            )),
            (Some(before), _, Some(addr)) => Err(NotDown(format!(
                "its probe answered throughout the {} from the action's start until ready, and {addr} is still served by the same process (pid {before})",
                fmt_duration(self.started.elapsed())
            ))),
            _ => Err(NotDown(format!(
                "its probe answered throughout the {} from the action's start until ready",
                fmt_duration(self.started.elapsed())
            ))),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The process a pid file names and its children, before a signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Family {
    pid: i32,
    children: BTreeSet<i32>,
}

impl Family {
    pub(super) fn of(pid: i32) -> Family {
        Family {
            pid,
            children: children_of(pid),
        }
    }

    /// Polls until the process named in `pid_file` is gone or replaced, or
    /// its children changed, up to `within`. `Ok` says which, `Err` what
    /// stayed the same.
    pub(super) async fn changed(
        &self,
        pid_file: &std::path::Path,
        within: Duration,
    ) -> Result<String, NotDown> {
        let deadline = Instant::now() + within;
        loop {
            let named = super::signal::read_pid_file(pid_file).ok();
            if named.is_some_and(|p| p != self.pid) {
                return Ok(format!(
                    "{} names process {} instead of {}",
                    pid_file.display(),
                    named.unwrap_or_default(),
                    self.pid
                ));
            }
            if !super::signal::process_exists(self.pid) {
                return Ok(format!("process {} is gone", self.pid));
            }
            let now = children_of(self.pid);
            if now != self.children {
                return Ok(format!(
                    "process {} renewed its children ({} before, {} after)",
                    self.pid,
                    pids(&self.children),
                    pids(&now)
                ));
            }
            if Instant::now() >= deadline {
                return Err(NotDown(format!(
                    "process {} named in {} and its children ({}) were the same {} after the signal",
                    self.pid,
                    pid_file.display(),
                    pids(&self.children),
                    fmt_duration(within)
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn pids(set: &BTreeSet<i32>) -> String {
    if set.is_empty() {
        return "none".into();
    }
    set.iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The live children of `pid`, from `/proc/*/stat`.
fn children_of(pid: i32) -> BTreeSet<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|child| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
                return false;
            };
            // After the parenthesised command: state, ppid, ...
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let parent = fields.next().and_then(|p| p.parse::<i32>().ok());
            parent == Some(pid) && !matches!(state, Some("Z" | "X"))
        })
        .collect()
}

/// The process listening on `addr`'s port, when `addr` is on loopback and
/// the process is visible here (`/proc/net/tcp*`, then `/proc/*/fd`).
pub(super) async fn listener_owner(addr: &str) -> Option<u32> {
    let (host, port) = addr.rsplit_once(':')?;
    let host = host.trim_matches(['[', ']']);
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let port: u16 = port.parse().ok()?;
    if !loopback {
        return None;
    }
    tokio::task::spawn_blocking(move || owner_of_port(port))
        .await
        .ok()
        .flatten()
}

fn owner_of_port(port: u16) -> Option<u32> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()? {
        let Some(pid) = entry
            .ok()
            .and_then(|e| e.file_name().to_str()?.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.to_string_lossy();
            let inode = link
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'));
            if inode.is_some_and(|i| inodes.contains(i)) {
                return Some(pid);
            }
        }
    }
    None
}

/// The inodes of the TCP sockets listening on `port`, IPv4 and IPv6.
fn listening_inodes(port: u16) -> BTreeSet<String> {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let listening = *state == "0A";
            let on_port = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port);
            if listening && on_port {
                inodes.insert((*inode).to_string());
            }
        }
    }
    inodes
}
