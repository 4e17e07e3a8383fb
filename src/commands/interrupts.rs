//! The stopping signals (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT), handled from
//! a command's first instruction to its last: `main` starts [`listen`]ing
//! before the command runs, and every signal is counted here. A command
//! that stops gracefully on one (`run`, whose cells clean up and whose
//! partial report is written; `bisect` between its points) holds a
//! [`Handling`] while it does and watches the count ([`presses`]). While
//! none does (a candidate's `--version` check before the run's watch
//! starts, `show`, `merge`…), a signal kills every process group the
//! harness started (each helper child leads one, in the registry) and
//! exits 2, the code of an interrupted run: never the default action,
//! which exits 130 or 143 and leaves the children behind.
//!
//! Signals are process-wide, so this is too: the count and the number of
//! handlers, as the supervision registry of live groups is.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// The signals that stop a run: Ctrl-C, `kill`, a closed terminal or a
/// dropped SSH session (SIGHUP), Ctrl-\ (SIGQUIT); nextest treats them alike.
const STOPPING: [(SignalKind, &str); 4] = [
    (SignalKind::interrupt(), "Ctrl-C"),
    (SignalKind::terminate(), "SIGTERM"),
    (SignalKind::hangup(), "SIGHUP"),
    (SignalKind::quit(), "SIGQUIT"),
];

/// How many stopping signals arrived, and the last one's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Presses {
    pub count: u32,
    pub last: &'static str,
}

static PRESSES: OnceLock<watch::Sender<Presses>> = OnceLock::new();
static HANDLERS: AtomicUsize = AtomicUsize::new(0);

/// Starts counting the stopping signals (once; later calls do nothing);
/// with no handler, a signal exits with `code` (2, or 125 for `run
/// --bisect-exit`). Must run inside the runtime.
pub fn listen(code: u8) {
    let (tx, _) = watch::channel(Presses::default());
    if PRESSES.set(tx).is_err() {
        return;
    }
    let mut streams = Vec::new();
    for (kind, name) in STOPPING {
        match signal(kind) {
            Ok(stream) => streams.push((stream, name)),
            Err(e) => crate::console::errln(&format!("warning: cannot handle {name}: {e}")),
        }
    }
    tokio::spawn(async move {
        loop {
            let next =
                futures_util::future::select_all(streams.iter_mut().map(|(stream, name)| {
                    Box::pin(async move { stream.recv().await.map(|_| *name) })
                }));
            let (received, _, _) = next.await;
            let Some(name) = received else { return };
            if let Some(tx) = PRESSES.get() {
                tx.send_modify(|p| {
                    p.count += 1;
                    p.last = name;
                });
            }
            if HANDLERS.load(Ordering::SeqCst) == 0 {
                stop_now(name, code);
            }
        }
    });
}

/// No command stops gracefully here: every group the harness started
/// goes (a helper's with it), and the command ends as interrupted.
fn stop_now(name: &str, code: u8) -> ! {
    crate::supervise::kill_all_groups();
    crate::console::live::clear();
    crate::console::errln(&format!("\ninterrupted ({name}): stopped"));
    std::process::exit(i32::from(code));
}

/// The count as it goes (`None`: not listening, as in a unit test).
pub(crate) fn presses() -> Option<watch::Receiver<Presses>> {
    PRESSES.get().map(watch::Sender::subscribe)
}

/// Whether a stopping signal has arrived.
pub(crate) fn interrupted() -> bool {
    PRESSES.get().is_some_and(|tx| tx.borrow().count > 0)
}

/// Held by a command that stops gracefully on a signal: while any is
/// held, a signal only counts, and the holders act on it.
pub(crate) struct Handling(());

impl Handling {
    pub(crate) fn take() -> Handling {
        HANDLERS.fetch_add(1, Ordering::SeqCst);
        Handling(())
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        HANDLERS.fetch_sub(1, Ordering::SeqCst);
    }
}
