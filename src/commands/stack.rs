//! `continuity stack up|status|down`: the local stack by hand. `up` leaves
//! the components running (their pids and ports in `stack.json` in the stack
//! folder); `down` stops each process group, SIGKILLing what outlives a grace
//! period, and any Rivet Engine a runner spawned.

use super::{incomplete, usage, Failure};
use crate::exit_codes;
use crate::stack::local::{LocalStack, StackOptions};
use std::path::Path;
use std::time::Duration;

const STACK_STATE: &str = "stack.json";

/// What `stack up` leaves behind for `status` and `down`.
#[derive(serde::Serialize, serde::Deserialize)]
struct StackState {
    base_url: String,
    components: Vec<crate::stack::local::Component>,
}

fn read_state(dir: &Path) -> Result<StackState, Failure> {
    let path = dir.join(STACK_STATE);
    let text = std::fs::read_to_string(&path).map_err(|_| {
        usage(format!(
            "no stack is up in {} (no {STACK_STATE}); start one with `continuity stack up`",
            dir.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| usage(format!("{}: {e}", path.display())))
}

fn print_components(state: &StackState) {
    crate::console::outln(&format!("base URL: {}", state.base_url));
    for c in &state.components {
        let alive = c
            .pid
            .is_some_and(|p| crate::stack::process::group_alive(p as i32));
        crate::console::outln(&format!(
            "  {:<13} {:<24} pid {:<8} {:<8} {}  log {}",
            c.target,
            c.program,
            c.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            if alive { "running" } else { "stopped" },
            c.url,
            c.log.display()
        ));
    }
}

/// `continuity stack up`: starts the local stack and leaves it running.
pub async fn stack_up(args: crate::cli::StackArgs) -> Result<u8, Failure> {
    if read_state(&args.dir).is_ok_and(|s| {
        s.components.iter().any(|c| {
            c.pid
                .is_some_and(|p| crate::stack::process::group_alive(p as i32))
        })
    }) {
        return Err(usage(format!(
            "a stack is already up in {}; run `continuity stack down --dir {}` first",
            args.dir.display(),
            args.dir.display()
        )));
    }
    let dir = std::path::absolute(&args.dir)
        .map_err(|e| usage(format!("{}: {e}", args.dir.display())))?;
    let options = StackOptions {
        run_dir: dir.clone(),
        server_version: args.server_version.clone(),
        agent_program: std::env::current_exe()
            .map_err(|e| incomplete(format!("cannot find the continuity binary: {e}")))?,
        only: Vec::new(),
        rivet_save: crate::stack::rivet::SaveMode::Immediate,
        agents: Vec::new(),
    };
    let mut progress = |line: &str| crate::console::errln(&format!("stack: {line}"));
    let mut stack = LocalStack::up(options, &mut progress)
        .await
        .map_err(incomplete)?;
    for u in &stack.skipped {
        crate::console::errln(&format!("stack: {} not running: {}", u.name, u.reason));
    }
    let state = StackState {
        base_url: stack.base_url.clone(),
        components: stack.detach(),
    };
    let json = serde_json::to_string_pretty(&state).map_err(|e| incomplete(e.to_string()))?;
    std::fs::write(dir.join(STACK_STATE), json).map_err(|e| {
        incomplete(format!(
            "cannot write {}: {e}",
            dir.join(STACK_STATE).display()
        ))
    })?;
    print_components(&state);
    Ok(exit_codes::OK)
}

/// `continuity stack status`.
pub fn stack_status(args: crate::cli::StackArgs) -> Result<u8, Failure> {
    let state = read_state(&args.dir)?;
    print_components(&state);
    let all_up = state.components.iter().all(|c| {
        c.pid
            .is_some_and(|p| crate::stack::process::group_alive(p as i32))
    });
    Ok(if all_up {
        exit_codes::OK
    } else {
        exit_codes::FAILED
    })
}

/// `continuity stack down`: SIGTERM each component's group, then SIGKILL what is left.
pub async fn stack_down(args: crate::cli::StackArgs) -> Result<u8, Failure> {
    let state = read_state(&args.dir)?;
    let groups: Vec<i32> = state
        .components
        .iter()
        .filter_map(|c| c.pid)
        .map(|p| p as i32)
        .collect();
    for &g in &groups {
        crate::stack::process::signal_group(g, libc::SIGTERM);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while groups
        .iter()
        .any(|&g| crate::stack::process::group_alive(g))
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for &g in &groups {
        crate::stack::process::signal_group(g, libc::SIGKILL);
    }
    // PTY processes the sandbox-agent started outlive its group (own session).
    // `stack up` made its folders absolute the same way.
    if let Ok(dir) = std::path::absolute(&args.dir) {
        crate::stack::orphans::kill_with_env(&crate::stack::orphans::agent_mark(
            &dir.join("sandbox-agent").join("data"),
        ));
    }
    for pid in crate::stack::rivet::stray_engines() {
        // SAFETY: kill(2) on an engine process a runner spawned.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = std::fs::remove_file(args.dir.join(STACK_STATE));
    crate::console::outln(&format!("stack in {} is down", args.dir.display()));
    Ok(exit_codes::OK)
}
