//! `--persist memory --persist postgres …`: the matrix's persistence axis.
//! Each store runs the same clients × targets × scenarios (× agents) on the
//! same stacks, one after the other; each worker resolves the store to its
//! own stack's server (its Postgres, its Rivet actor) or to the reason it
//! cannot run there. With one store (or none: the stack's default) cells
//! name no store, so such reports are exactly what they were before the
//! axis existed. (The runner's own matrix, once it owns every axis, takes
//! this loop over.)

use super::clients;
use crate::cli::{ClientArg, PersistArg};
use crate::persist::PersistChoice;
use crate::report::{Report, Totals};
use crate::runner::{RunEvent, RunSettings, RunStacks};
use tokio::sync::watch;

/// The `--persist` values (else the config's), each once, in their order;
/// empty means the stack's default store.
pub(super) fn distinct(flags: &[PersistArg], config: &[PersistChoice]) -> Vec<PersistChoice> {
    let given: Vec<PersistChoice> = match flags.is_empty() {
        true => config.to_vec(),
        false => flags.iter().map(|f| PersistChoice::from(*f)).collect(),
    };
    let mut stores: Vec<PersistChoice> = Vec::new();
    for store in given {
        if !stores.contains(&store) {
            stores.push(store);
        }
    }
    stores
}

/// Runs the clients' cells once per store; every cell names its store
/// when there are several.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_persists(
    stores: &[PersistChoice],
    settings: &RunSettings,
    stacks: &mut RunStacks,
    clients: &[ClientArg],
    agent_names: &[String],
    agent_skips: &[(String, String)],
    cancel: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(RunEvent) + Send),
) -> Report {
    if stores.len() <= 1 {
        return clients::run_clients(
            settings,
            stacks,
            clients,
            agent_names,
            agent_skips,
            cancel,
            on_event,
        )
        .await;
    }
    let mut parts: Vec<Report> = Vec::new();
    for store in stores {
        if !parts.is_empty() && (*cancel.borrow() || parts.iter().any(|p| p.run.interrupted)) {
            break;
        }
        crate::console::errln(&format!("persist {}:", store.name()));
        for worker in std::iter::once(&mut stacks.own).chain(stacks.workers.iter_mut()) {
            worker.persist = worker.stores.resolve(store);
            worker.persist_tag = format!("{}-", store.name());
        }
        let mut part = clients::run_clients(
            settings,
            stacks,
            clients,
            agent_names,
            agent_skips,
            cancel.clone(),
            on_event,
        )
        .await;
        for cell in &mut part.cells {
            cell.persist = Some(store.name().to_string());
        }
        parts.push(part);
    }
    let mut parts = parts.into_iter();
    let mut report = parts.next().expect("at least one store ran");
    for part in parts {
        report.run.finished_at = part.run.finished_at;
        report.run.duration_ms += part.run.duration_ms;
        report.run.interrupted |= part.run.interrupted;
        report.cells.extend(part.cells);
    }
    report.run.persist = stores
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(",");
    report.totals = Totals::of(&report.cells);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_config_and_repeats_collapse() {
        assert!(distinct(&[], &[]).is_empty());
        assert_eq!(
            distinct(&[], &[PersistChoice::Sqlite]),
            [PersistChoice::Sqlite]
        );
        assert_eq!(
            distinct(
                &[
                    PersistArg::Postgres,
                    PersistArg::Memory,
                    PersistArg::Postgres
                ],
                &[PersistChoice::Sqlite]
            ),
            [PersistChoice::Postgres, PersistChoice::Memory]
        );
    }
}
