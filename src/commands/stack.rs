//! `continuity stack up|status|down`: the local stack by hand. `up` leaves
//! the components running, recorded in `stack.json` in the stack folder as
//! they start; `down` stops each component's process group, SIGKILLing what
//! outlives a grace period, then anything else carrying the stack's owner
//! tag (an engine a runner spawned). Only processes proven to be the
//! stack's — same start time as recorded, owner tag in their environment —
//! are ever signalled.

use super::{CommandError, Outcome};
use crate::stack::local::{Component, LocalStack, StackOptions};
use crate::stack::state::{lock_folder, StackState, STATE_FILE};
use crate::supervise::owner::{self, Pinned};
use crate::supervise::{self, Supervisor};
use std::path::Path;
use std::time::{Duration, Instant};

const DOWN_GRACE: Duration = Duration::from_secs(10);

fn read_state(dir: &Path) -> Result<StackState, CommandError> {
    if !dir.join(STATE_FILE).exists() {
        return Err(CommandError::usage(format!(
            "no stack is up in {} (no {STATE_FILE}); start one with `continuity stack up`",
            dir.display()
        )));
    }
    StackState::read(dir).map_err(CommandError::stack_folder)
}

/// The component's process, pinned, if it is still the one the stack in
/// `dir` started: same start time as recorded, and our owner tag in its
/// environment or its working folder inside the stack's (nginx overwrites
/// its environment block with its process title).
fn verify(component: &Component, owner: &str, dir: &Path) -> Option<Pinned> {
    let pinned = owner::verified(component.pid? as i32, component.started?)?;
    let ours = pinned.owned_by(owner) || pinned.runs_in(dir);
    (pinned.running() && ours).then_some(pinned)
}

fn absolute(dir: &Path) -> Result<std::path::PathBuf, CommandError> {
    std::path::absolute(dir).map_err(|e| CommandError::usage(format!("{}: {e}", dir.display())))
}

fn print_components(state: &StackState, dir: &Path) {
    if !state.base_url.is_empty() {
        crate::console::outln(&format!("base URL: {}", state.base_url));
    }
    for c in &state.components {
        let status = match (c.pid, verify(c, &state.owner, dir)) {
            (_, Some(_)) => "running",
            (Some(pid), None) if Pinned::open(pid as i32).is_some() => {
                "stopped (pid now names another process)"
            }
            _ => "stopped",
        };
        crate::console::outln(&format!(
            "  {:<13} {:<24} pid {:<8} {:<8} {}  log {}",
            c.target,
            c.program,
            c.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            status,
            c.url,
            c.log.display()
        ));
    }
}

/// `continuity stack up`: starts the local stack and leaves it running. One
/// at a time per folder: a second `up` while one is starting fails at once
/// (exit 64), as does `up` on a folder whose stack still runs.
pub async fn stack_up(args: crate::cli::StackArgs) -> Result<Outcome, CommandError> {
    let dir = absolute(&args.dir)?;
    let _lock = lock_folder(&dir, "continuity stack up").map_err(CommandError::stack_folder)?;
    let already_up = || {
        CommandError::usage(format!(
            "a stack is already up in {}; run `continuity stack down --dir {}` first",
            args.dir.display(),
            args.dir.display()
        ))
    };
    match StackState::read(&dir) {
        Ok(previous) => {
            if previous
                .components
                .iter()
                .any(|c| verify(c, &previous.owner, &dir).is_some())
            {
                return Err(already_up());
            }
        }
        // A state file it cannot read may describe a stack that still runs:
        // overwriting it would lose the only record of it.
        Err(e) if dir.join(STATE_FILE).exists() => {
            return Err(CommandError::usage(format!(
                "{e}: a stack started in {} may still run; `continuity stack down --dir {}` finds and stops it without the file",
                args.dir.display(),
                args.dir.display()
            )));
        }
        Err(_) => {}
    }
    if !crate::stack::orphans::started_in(&dir).stoppable.is_empty() {
        return Err(already_up());
    }
    let tag = owner::new_tag(&dir);
    // Until the stack is handed over, a harness that dies takes it along.
    let supervisor = Supervisor::owned(tag.clone()).map_err(crate::stack::StackError::from)?;
    let options = StackOptions {
        run_dir: dir.clone(),
        server: crate::stack::local::StackServer::Version(args.server_version.clone()),
        agent_program: std::env::current_exe().map_err(|e| {
            CommandError::incomplete(format!("cannot find the continuity binary: {e}"))
        })?,
        selection: crate::targets::Selection::default(),
        rivet_save: crate::stack::rivet::SaveMode::Immediate,
        rivet_stop: crate::stack::rivet::RunnerStop::Kill,
        agents: Vec::new(),
        postgres: false,
        hosted_sqlite: false,
        browser: false,
        supervisor: supervisor.clone(),
        fault_proxies: false,
        custom_faults: Vec::new(),
        phase_deadline: std::time::Duration::from_secs(30),
    };
    let mut progress =
        |note: crate::stack::progress::Note| crate::console::errln(&format!("stack: {note}"));
    let mut stack = match LocalStack::up(options, &mut progress).await {
        Ok(stack) => stack,
        Err(e) => {
            supervise::kill_all_groups();
            supervisor.sweep().await;
            let _ = std::fs::remove_file(dir.join(STATE_FILE));
            return Err(e.into());
        }
    };
    for u in &stack.skipped {
        crate::console::errln(&format!("stack: {} not running: {}", u.id, u.reason));
    }
    let state = StackState {
        base_url: stack.base_url.clone(),
        owner: tag,
        components: stack.detach(),
    };
    state.write(&dir)?;
    supervisor.release_keeper();
    print_components(&state, &dir);
    Ok(Outcome::Passed)
}

/// `continuity stack status`: 0 when every component runs, 1 otherwise.
pub fn stack_status(args: crate::cli::StackArgs) -> Result<Outcome, CommandError> {
    let dir = absolute(&args.dir)?;
    let state = read_state(&dir)?;
    print_components(&state, &dir);
    let all_up = !state.components.is_empty()
        && state
            .components
            .iter()
            .all(|c| verify(c, &state.owner, &dir).is_some());
    Ok(Outcome::failed_if(!all_up))
}

/// `continuity stack down`: SIGTERM each component's group, SIGKILL what is
/// left after a grace period, then sweep what carries the owner tag. A pid
/// in `stack.json` that no longer names the process the stack started is
/// left alone, and said so. Without a readable `stack.json` (gone, or
/// corrupt) it stops what the folder's stacks started all the same (see
/// [`crate::stack::orphans::started_in`]); a folder with no stack is
/// already down (exit 0, said so).
pub async fn stack_down(args: crate::cli::StackArgs) -> Result<Outcome, CommandError> {
    let dir = absolute(&args.dir)?;
    let state = match StackState::read(&dir) {
        Ok(state) => Some(state),
        Err(e) if dir.join(STATE_FILE).exists() => {
            crate::console::errln(&format!(
                "stack: {e}; stopping what this folder's stacks started, found by their owner tags and the gateway's pid file"
            ));
            None
        }
        Err(_) => None,
    };
    let _lock = lock_folder(&dir, "continuity stack down").map_err(CommandError::stack_folder)?;
    let mut running = Vec::new();
    for c in state.iter().flat_map(|s| &s.components) {
        let owner = state.as_ref().map(|s| s.owner.as_str()).unwrap_or_default();
        match (c.pid, verify(c, owner, &dir)) {
            (_, Some(pinned)) => running.push(pinned),
            (Some(pid), None) if Pinned::open(pid as i32).is_some() => {
                crate::console::errln(&format!(
                    "stack: pid {pid} ({}) is not the process this stack started; left alone",
                    c.target
                ))
            }
            _ => {}
        }
    }
    let found = crate::stack::orphans::started_in(&dir);
    for owner in &found.live_owners {
        crate::console::errln(&format!(
            "stack: processes owned by {owner} are left alone: the run or `stack up` that started them still runs"
        ));
    }
    let listed = running.len();
    let mut owners = found.owners;
    for process in found.stoppable {
        if !running.iter().any(|r| r.pid() == process.pid()) {
            running.push(process);
        }
    }
    if state.is_none() && running.is_empty() {
        crate::console::outln(&format!(
            "no stack is up in {}; nothing to stop",
            args.dir.display()
        ));
        return Ok(Outcome::Passed);
    }
    if running.len() > listed {
        crate::console::errln(&format!(
            "stack: {} process(es) the folder's stacks started were not in {STATE_FILE}; stopping them too",
            running.len() - listed
        ));
    }
    for leader in &running {
        leader.send_to_group(crate::signal::Signal::TERM.number());
    }
    let deadline = Instant::now() + DOWN_GRACE;
    while running.iter().any(Pinned::running) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for leader in &running {
        leader.send_to_group(crate::signal::Signal::KILL.number());
    }
    owners.extend(state.map(|s| s.owner).filter(|t| !t.is_empty()));
    owners.dedup();
    for tag in owners {
        let _ = tokio::task::spawn_blocking(move || owner::sweep(&tag)).await;
    }
    // PTY processes the sandbox-agent started outlive its group (own session).
    // `stack up` made its folders absolute the same way.
    crate::stack::orphans::kill_with_env(&crate::stack::orphans::agent_mark(
        &dir.join("sandbox-agent").join("data"),
    ));
    let _ = std::fs::remove_file(dir.join(STATE_FILE));
    crate::console::outln(&format!("stack in {} is down", args.dir.display()));
    Ok(Outcome::Passed)
}
