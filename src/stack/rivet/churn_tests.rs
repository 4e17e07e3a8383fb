//! The hosted client's actors one after another on a busy machine, as the
//! ts-sdk cells make them: each cell's `sdkClient` actor is created, called
//! and destroyed (`retire`), and the next cell's is created at once. The
//! Rivet Engine sheds workflow admission by CPU use (its default curve
//! pulls 5 % of workflows above 90 % of the CPU), and a shed actor-create
//! workflow stays unleased across polls: the next cell's actor was not
//! placed for minutes (`route_resolve_query_timeout`), which a run saw
//! after a lost turn (a long, busy cell) on a loaded machine. The stack's
//! engine takes every workflow (`worker_load_shedding_curve` in
//! `stack/rivet/engine.json.example`); this test loads every core while
//! the actors churn, and fails on the engine's default curve.

use super::*;
use crate::client::hosted::{HostedClient, HostedConfig};
use crate::client::sdk_action::SdkAction;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Actors created and destroyed in a row (the default curve stalled by the fourth).
const ACTORS: usize = 10;

/// Busy threads on every core until dropped: the CPU use the engine measures.
struct Busy(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Busy {
    fn every_core() -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores * 2)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Busy(stop, threads)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for thread in self.1.drain(..) {
            let _ = thread.join();
        }
    }
}

/// One cell's actor: created by its first action (answered on the first
/// try: the engine's own 15 s route deadline, no retry), then retired.
async fn one_cell(endpoint: &str, key: String) -> Result<(), String> {
    let client = HostedClient::new(HostedConfig {
        endpoint: endpoint.to_string(),
        namespace: "default".into(),
        key: key.clone(),
    })
    .map_err(|e| e.to_string())?;
    let setup = SdkAction::Faults {
        phase: "setup".into(),
    };
    client
        .call(&setup, Duration::ZERO)
        .await
        .map_err(|e| format!("actor {key} was not placed: {e}"))?;
    let retire = SdkAction::Retire {
        phase: "retire".into(),
    };
    client
        .call(&retire, Duration::from_secs(10))
        .await
        .map(drop)
        .map_err(|e| format!("actor {key} did not retire: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cells_actor_is_placed_at_once_while_every_core_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let mut stack = tests::real_stack(dir.path()).await;
    let endpoint = stack.endpoint().to_string();
    let busy = Busy::every_core();
    let mut outcome = Ok(());
    for n in 0..ACTORS {
        outcome = one_cell(&endpoint, format!("{}-churn-{n}", stack.key)).await;
        if outcome.is_err() {
            break;
        }
    }
    drop(busy);
    stack.down().await;
    outcome.unwrap();
}
