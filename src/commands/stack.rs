//! `continuity stack up|status|down`: the local stack by hand. `up` leaves
//! the components running, recorded in `stack.json` in the stack folder as
//! they start; `down` stops each component's process group, SIGKILLing what
//! outlives a grace period, then anything else carrying the stack's owner
//! tag (an engine a runner spawned). Only processes proven to be the
//! stack's — same start time as recorded, owner tag in their environment —
//! are ever signalled.

use super::{CommandError, Outcome};
use crate::stack::local::{Component, LocalStack, StackOptions};
use crate::stack::state::{self, FolderLock, StackState, STATE_FILE};
use crate::supervise::owner::{self, Pinned};
use crate::supervise::{self, keeper};
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
    let _lock = FolderLock::try_acquire(&dir).map_err(CommandError::stack_folder)?;
    if let Ok(previous) = StackState::read(&dir) {
        if previous
            .components
            .iter()
            .any(|c| verify(c, &previous.owner, &dir).is_some())
        {
            return Err(CommandError::usage(format!(
                "a stack is already up in {}; run `continuity stack down --dir {}` first",
                args.dir.display(),
                args.dir.display()
            )));
        }
    }
    let tag = owner::new_tag(&dir);
    owner::adopt(&tag);
    // Until the stack is handed over, a harness that dies takes it along.
    keeper::start(&tag).map_err(crate::stack::StackError::from)?;
    state::begin_journal(&dir, &tag)?;
    let options = StackOptions {
        run_dir: dir.clone(),
        server_version: args.server_version.clone(),
        agent_program: std::env::current_exe().map_err(|e| {
            CommandError::incomplete(format!("cannot find the continuity binary: {e}"))
        })?,
        only: Vec::new(),
        rivet_save: crate::stack::rivet::SaveMode::Immediate,
        rivet_stop: crate::stack::rivet::RunnerStop::Kill,
        agents: Vec::new(),
        sdk_version: None,
        postgres: false,
        hosted_sqlite: false,
    };
    let mut progress = |line: &str| crate::console::errln(&format!("stack: {line}"));
    let mut stack = match LocalStack::up(options, &mut progress).await {
        Ok(stack) => stack,
        Err(e) => {
            supervise::kill_all_groups();
            let _ = tokio::task::spawn_blocking(move || owner::sweep(&tag)).await;
            state::end_journal();
            let _ = std::fs::remove_file(dir.join(STATE_FILE));
            return Err(e.into());
        }
    };
    for u in &stack.skipped {
        crate::console::errln(&format!("stack: {} not running: {}", u.name, u.reason));
    }
    let state = StackState {
        base_url: stack.base_url.clone(),
        owner: tag,
        components: stack.detach(),
    };
    state.write(&dir)?;
    state::end_journal();
    keeper::release();
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
/// left alone, and said so.
pub async fn stack_down(args: crate::cli::StackArgs) -> Result<Outcome, CommandError> {
    let dir = absolute(&args.dir)?;
    let state = read_state(&dir)?;
    let _lock = FolderLock::try_acquire(&dir).map_err(CommandError::stack_folder)?;
    let mut running = Vec::new();
    for c in &state.components {
        match (c.pid, verify(c, &state.owner, &dir)) {
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
    for leader in &running {
        leader.send_to_group(libc::SIGTERM);
    }
    let deadline = Instant::now() + DOWN_GRACE;
    while running.iter().any(Pinned::running) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for leader in &running {
        leader.send_to_group(libc::SIGKILL);
    }
    if !state.owner.is_empty() {
        let tag = state.owner.clone();
        let _ = tokio::task::spawn_blocking(move || owner::sweep(&tag)).await;
    }
    // PTY processes the sandbox-agent started outlive its group (own session).
    // `stack up` made its folders absolute the same way.
    if let Ok(dir) = std::path::absolute(&args.dir) {
        crate::stack::orphans::kill_with_env(&crate::stack::orphans::agent_mark(
            &dir.join("sandbox-agent").join("data"),
        ));
    }
    let _ = std::fs::remove_file(args.dir.join(STATE_FILE));
    crate::console::outln(&format!("stack in {} is down", args.dir.display()));
    Ok(Outcome::Passed)
}
