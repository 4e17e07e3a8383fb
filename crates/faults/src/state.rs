//! What a proxy's connections share with its control: the toxics set now
//! (in a watch channel, so that a change wakes every connection at once,
//! open ones included), the counters, why the proxy stopped, and who is
//! told what the proxy did to a connection.

use super::toxic::{Stream, Toxic, ToxicSpec};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A toxic set on a proxy, until it is removed.
pub type ToxicId = u64;

/// What the proxy itself did to a connection because of a toxic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyAction {
    /// Reset (TCP RST) towards the receiver of `toward`: the client for
    /// `downstream`, the server for `upstream`.
    Reset { toward: Stream },
    /// Closed (FIN) both ways: `timeout`, `limit_data`, `down`, `idle_cut`.
    Closed,
    /// The server's close (FIN) is held back from the client: `slow_close`.
    /// The connection is still open; what the proxy did is wait.
    CloseHeld,
    /// Nothing: the toxic's draw (its `toxicity`, below 1) left this
    /// connection alone, told once as its data passed in the window.
    Spared,
}

/// Told of every [`ProxyAction`] a toxic causes, with the connection's
/// number within the cell on this hop (1 for its first; 0 for one opened
/// before the cell began).
pub type Observer = Arc<dyn Fn(ToxicId, u64, ProxyAction) + Send + Sync>;

/// A toxic in force.
#[derive(Clone)]
pub(super) struct Active {
    pub id: ToxicId,
    pub spec: ToxicSpec,
    /// Its toxicity draws: from the cell's seed and its place among the
    /// toxics the cell set on this hop.
    seed: u64,
    /// The cell's first connection on this hop: draws go by the
    /// connection's number within the cell.
    first_conn: u64,
}

/// The toxics in force, in the order they were set.
#[derive(Clone, Default)]
pub(super) struct ToxicSet {
    pub toxics: Arc<Vec<Active>>,
}

impl ToxicSet {
    /// Whether `toxic` applies to connection `conn` (its `toxicity` drawn
    /// once per connection and toxic, the same in both directions).
    fn applies(&self, active: &Active, conn: u64) -> bool {
        active.spec.toxicity >= 1.0
            || applies_to(
                active.seed,
                active.spec.toxicity,
                conn.wrapping_sub(active.first_conn),
            )
    }

    /// The toxics acting on `conn`'s data flowing `stream`.
    pub fn on(&self, conn: u64, stream: Stream) -> impl Iterator<Item = &Active> {
        self.toxics
            .iter()
            .filter(move |a| a.spec.stream == Some(stream) && self.applies(a, conn))
    }

    /// The toxics in force whose draw leaves `conn` alone: those on
    /// `stream`'s data, and the hop-wide ones when `hop_wide` (`down`
    /// spares none).
    pub fn spared(
        &self,
        conn: u64,
        stream: Stream,
        hop_wide: bool,
    ) -> impl Iterator<Item = &Active> {
        self.toxics.iter().filter(move |a| {
            let here = match a.spec.stream {
                Some(s) => s == stream,
                None => hop_wide && a.spec.toxic != Toxic::Down,
            };
            here && !self.applies(a, conn)
        })
    }

    /// A partition holding `conn`, if one is in force.
    pub fn partition(&self, conn: u64) -> Option<&Active> {
        self.toxics
            .iter()
            .find(|a| a.spec.toxic == Toxic::Partition && self.applies(a, conn))
    }

    /// The `idle_cut` acting on `conn`, if one is in force: its id and its idle limit.
    pub fn idle_cut(&self, conn: u64) -> Option<(ToxicId, std::time::Duration)> {
        self.toxics.iter().find_map(|a| match a.spec.toxic {
            Toxic::IdleCut { idle } if self.applies(a, conn) => Some((a.id, idle)),
            _ => None,
        })
    }

    /// The `down` toxic, if one is in force.
    pub fn down(&self) -> Option<&Active> {
        self.toxics.iter().find(|a| a.spec.toxic == Toxic::Down)
    }

    pub fn contains(&self, id: ToxicId) -> bool {
        self.toxics.iter().any(|a| a.id == id)
    }
}

/// Whether a toxic of `toxicity` drawn from `seed` applies to the
/// `index`th connection of the cell (0-based): a fixed draw per
/// connection and toxic, with no state to keep.
pub(super) fn applies_to(seed: u64, toxicity: f64, index: u64) -> bool {
    continuity_base::seed::unit(continuity_base::seed::mix(seed, index)) < toxicity
}

/// Where the current cell's draws start on this hop
/// ([`Shared::begin_cell`]).
struct CellDraws {
    /// The cell's seed mixed with the hop's name.
    seed: u64,
    /// The number of the cell's first connection.
    first_conn: u64,
    /// The id of the cell's first toxic.
    first_toxic: ToxicId,
}

/// Salts that keep a connection's jitter and slicer draws apart from its
/// toxicity draws.
const JITTER: u64 = 1;

/// A proxy's counters since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyStats {
    pub accepted: u64,
    pub open: u64,
    /// Connections the proxy reset because of a toxic.
    pub resets: u64,
    /// Connections the proxy closed because of a toxic.
    pub closes: u64,
    /// Server closes (FIN) the proxy held back from the client (`slow_close`).
    pub held_closes: u64,
    /// Connections whose server side failed (a reset by the server, a
    /// refused connect), passed on to the client as a reset.
    pub passed_on: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    accepted: AtomicU64,
    open: AtomicU64,
    resets: AtomicU64,
    closes: AtomicU64,
    held_closes: AtomicU64,
    passed_on: AtomicU64,
}

/// Observers kept after their toxic is removed, for the actions its
/// removal causes (`timeout` closes its connections then).
const KEPT_OBSERVERS: usize = 64;

pub(super) struct Shared {
    pub hop: super::Hop,
    pub toxics: watch::Sender<ToxicSet>,
    pub counters: Counters,
    next_toxic: AtomicU64,
    next_conn: AtomicU64,
    observers: Mutex<VecDeque<(ToxicId, Observer)>>,
    cell: Mutex<CellDraws>,
    /// Why the proxy stopped serving, once it has.
    stopped: Mutex<Option<String>>,
    /// Who hears of the event streams the hop carries, while a cell runs.
    tap: Mutex<Option<super::tap::Tap>>,
}

impl Shared {
    pub fn new(hop: super::Hop) -> Arc<Shared> {
        let set = ToxicSet {
            toxics: Arc::new(Vec::new()),
        };
        Arc::new(Shared {
            hop,
            toxics: watch::Sender::new(set),
            counters: Counters::default(),
            next_toxic: AtomicU64::new(1),
            next_conn: AtomicU64::new(1),
            observers: Mutex::new(VecDeque::new()),
            // Until a cell begins: a proxy used outside a run draws at random.
            cell: Mutex::new(CellDraws {
                seed: continuity_base::seed::fresh(),
                first_conn: 1,
                first_toxic: 1,
            }),
            stopped: Mutex::new(None),
            tap: Mutex::new(None),
        })
    }

    /// Sets (or, with `None`, removes) the stream tap.
    pub fn set_tap(&self, tap: Option<super::tap::Tap>) {
        *self.tap.lock().unwrap_or_else(|p| p.into_inner()) = tap;
    }

    pub(crate) fn tap(&self) -> Option<super::tap::Tap> {
        self.tap.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A cell with `seed` begins: the toxics it sets and the connections
    /// it opens from now on draw from `seed` and the hop's name, counted
    /// from here.
    pub fn begin_cell(&self, seed: u64) {
        *self.cell.lock().unwrap_or_else(|p| p.into_inner()) = CellDraws {
            seed: continuity_base::seed::mix(seed, continuity_base::seed::of_text(self.hop.name())),
            first_conn: self.next_conn.load(Ordering::Relaxed),
            first_toxic: self.next_toxic.load(Ordering::Relaxed),
        };
    }

    /// Connection `conn`'s number within the current cell (1: its first
    /// connection on this hop; 0: one opened before the cell began).
    pub(crate) fn in_cell(&self, conn: u64) -> u64 {
        let cell = self.cell.lock().unwrap_or_else(|p| p.into_inner());
        conn.checked_sub(cell.first_conn).map_or(0, |i| i + 1)
    }

    /// The seed of connection `conn`'s own draws (a latency's jitter, the
    /// slicer's cuts).
    pub(crate) fn conn_seed(&self, conn: u64) -> u64 {
        let cell = self.cell.lock().unwrap_or_else(|p| p.into_inner());
        continuity_base::seed::mix(cell.seed ^ JITTER, conn.wrapping_sub(cell.first_conn))
    }

    pub(crate) fn next_conn(&self) -> u64 {
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds a toxic; every connection sees it at its next wake-up, which the
    /// change itself causes.
    pub fn add(&self, spec: ToxicSpec, observer: Option<Observer>) -> ToxicId {
        let (id, seed, first_conn) = {
            let cell = self.cell.lock().unwrap_or_else(|p| p.into_inner());
            let id = self.next_toxic.fetch_add(1, Ordering::Relaxed);
            let seed = continuity_base::seed::mix(cell.seed, id.wrapping_sub(cell.first_toxic));
            (id, seed, cell.first_conn)
        };
        if let Some(observer) = observer {
            let mut kept = self.observers.lock().unwrap_or_else(|p| p.into_inner());
            kept.push_back((id, observer));
            while kept.len() > KEPT_OBSERVERS {
                kept.pop_front();
            }
        }
        self.toxics.send_modify(|set| {
            let mut toxics = set.toxics.as_ref().clone();
            toxics.push(Active {
                id,
                spec,
                seed,
                first_conn,
            });
            set.toxics = Arc::new(toxics);
        });
        id
    }

    /// Removes toxics (`None`: all of them).
    pub fn remove(&self, id: Option<ToxicId>) {
        self.toxics.send_if_modified(|set| {
            let before = set.toxics.len();
            let kept: Vec<Active> = set
                .toxics
                .iter()
                .filter(|a| id.is_some_and(|id| a.id != id))
                .cloned()
                .collect();
            set.toxics = Arc::new(kept);
            set.toxics.len() != before
        });
    }

    /// Counts what a toxic did (a connection spared is not counted) and
    /// tells its observer.
    pub fn report(&self, toxic: ToxicId, conn: u64, action: ProxyAction) {
        let counter = match action {
            ProxyAction::Reset { .. } => Some(&self.counters.resets),
            ProxyAction::Closed => Some(&self.counters.closes),
            ProxyAction::CloseHeld => Some(&self.counters.held_closes),
            ProxyAction::Spared => None,
        };
        if let Some(counter) = counter {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let observer = {
            let kept = self.observers.lock().unwrap_or_else(|p| p.into_inner());
            kept.iter()
                .find(|(id, _)| *id == toxic)
                .map(|(_, o)| Arc::clone(o))
        };
        if let Some(observer) = observer {
            observer(toxic, self.in_cell(conn), action);
        }
    }

    pub(crate) fn passed_on(&self) {
        self.counters.passed_on.fetch_add(1, Ordering::Relaxed);
    }

    pub fn opened(&self) -> OpenGuard<'_> {
        self.counters.open.fetch_add(1, Ordering::Relaxed);
        OpenGuard(self)
    }

    pub fn stats(&self) -> ProxyStats {
        let c = &self.counters;
        ProxyStats {
            accepted: c.accepted.load(Ordering::Relaxed),
            open: c.open.load(Ordering::Relaxed),
            resets: c.resets.load(Ordering::Relaxed),
            closes: c.closes.load(Ordering::Relaxed),
            held_closes: c.held_closes.load(Ordering::Relaxed),
            passed_on: c.passed_on.load(Ordering::Relaxed),
        }
    }

    /// Records why the proxy stopped (the first reason wins).
    pub fn stop(&self, reason: impl Into<String>) {
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        stopped.get_or_insert_with(|| reason.into());
    }

    pub fn stopped(&self) -> Option<String> {
        self.stopped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Counts a connection open while it lives.
pub(super) struct OpenGuard<'a>(&'a Shared);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draw_is_fixed_per_connection_and_spread_over_connections() {
        assert_eq!(applies_to(7, 0.5, 3), applies_to(7, 0.5, 3));
        let below = (0..1000).filter(|c| applies_to(42, 0.3, *c)).count();
        assert!((200..400).contains(&below), "{below} of 1000 under 0.3");
    }
}
