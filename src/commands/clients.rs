//! `--client rust --client ts-sdk`: the matrix's client axis. Each client
//! runs the same targets × scenarios (× agents) on the same stack, one after
//! the other; every cell carries its client, and the parts join into one
//! report. With `rust` alone (the default) cells carry no client, so such
//! reports are exactly what they were before the axis existed.

use super::agents;
use super::CommandError;
use crate::cli::ClientArg;
use crate::report::{Report, Totals};
use crate::runner::{ClientChoice, RunEvent, RunSettings, RunStacks};
use tokio::sync::watch;

/// The `--client` values, each once, `rust` when none.
pub(super) fn distinct(given: &[ClientArg]) -> Vec<ClientArg> {
    let mut clients: Vec<ClientArg> = Vec::new();
    for c in given {
        if !clients.contains(c) {
            clients.push(*c);
        }
    }
    if clients.is_empty() {
        clients.push(ClientArg::Rust);
    }
    clients
}

/// Whether cells name their client: anything but `rust` alone.
pub(super) fn is_axis(clients: &[ClientArg]) -> bool {
    clients != [ClientArg::Rust]
}

/// The usage error for a hosted client on a deployment continuity did not start.
pub(super) fn refuse_without_rivet(clients: &[ClientArg]) -> Result<(), CommandError> {
    if clients.contains(&ClientArg::TsSdk) {
        return Err(CommandError::usage("--client ts-sdk runs the TypeScript SDK inside a RivetKit actor of continuity's local stack; a --base-url/--config deployment has no Rivet layer continuity can host it in (run without --base-url and --config targets, or use --client rust)"));
    }
    Ok(())
}

/// Runs the cells once per client; a hosted client is called through the
/// own stack's Rivet Engine (each worker's through its own), or cannot run.
pub(super) async fn run_clients(
    settings: &RunSettings,
    stacks: &mut RunStacks,
    clients: &[ClientArg],
    agent_names: &[String],
    agent_skips: &[(String, String)],
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    let mut parts: Vec<Report> = Vec::new();
    for client in clients {
        if !parts.is_empty() && (*cancel.borrow() || parts.iter().any(|p| p.run.interrupted)) {
            break;
        }
        let client = match client {
            ClientArg::Rust => ClientChoice::Rust,
            ClientArg::TsSdk => ClientChoice::TsSdk(stacks.own.sdk_host.clone()),
        };
        if is_axis(clients) {
            crate::console::errln(&format!("client {}:", client.name()));
        }
        let name = client.name();
        let at = agents::Outer {
            client,
            version: None,
            overall_timeout: settings.overall_timeout,
        };
        let mut part = agents::run_agents(
            settings,
            stacks,
            &at,
            agent_names,
            agent_skips,
            cancel.clone(),
            on_event,
        )
        .await;
        if is_axis(clients) {
            for cell in &mut part.cells {
                cell.client = Some(name.to_string());
            }
        }
        parts.push(part);
    }
    let mut parts = parts.into_iter();
    let mut report = parts.next().expect("at least one client ran");
    for part in parts {
        report.run.finished_at = part.run.finished_at;
        report.run.duration_ms += part.run.duration_ms;
        report.run.interrupted |= part.run.interrupted;
        report.cells.extend(part.cells);
    }
    report.totals = Totals::of(&report.cells);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_alone_is_no_axis_and_repeats_collapse() {
        assert_eq!(distinct(&[]), [ClientArg::Rust]);
        assert!(!is_axis(&distinct(&[ClientArg::Rust, ClientArg::Rust])));
        let both = distinct(&[ClientArg::TsSdk, ClientArg::Rust, ClientArg::TsSdk]);
        assert_eq!(both, [ClientArg::TsSdk, ClientArg::Rust]);
        assert!(is_axis(&both));
        assert!(is_axis(&[ClientArg::TsSdk]));
        assert!(refuse_without_rivet(&[ClientArg::Rust]).is_ok());
        assert!(refuse_without_rivet(&both)
            .unwrap_err()
            .to_string()
            .contains("Rivet"));
    }
}
