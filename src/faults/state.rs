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
    /// Closed (FIN) both ways: `timeout`, `limit_data`, `down`.
    Closed,
    /// The server's close (FIN) is held back from the client: `slow_close`.
    /// The connection is still open; what the proxy did is wait.
    CloseHeld,
}

/// Told of every [`ProxyAction`] a toxic causes, with the connection's number.
pub type Observer = Arc<dyn Fn(ToxicId, u64, ProxyAction) + Send + Sync>;

/// A toxic in force.
#[derive(Clone)]
pub(super) struct Active {
    pub id: ToxicId,
    pub spec: ToxicSpec,
}

/// The toxics in force, in the order they were set.
#[derive(Clone, Default)]
pub(super) struct ToxicSet {
    pub toxics: Arc<Vec<Active>>,
    /// Mixed into each connection's toxicity draw.
    pub seed: u64,
}

impl ToxicSet {
    /// Whether `toxic` applies to connection `conn` (its `toxicity` drawn
    /// once per connection and toxic, the same in both directions).
    fn applies(&self, active: &Active, conn: u64) -> bool {
        active.spec.toxicity >= 1.0 || draw(self.seed ^ active.id, conn) < active.spec.toxicity
    }

    /// The toxics acting on `conn`'s data flowing `stream`.
    pub fn on(&self, conn: u64, stream: Stream) -> impl Iterator<Item = &Active> {
        self.toxics
            .iter()
            .filter(move |a| a.spec.stream == Some(stream) && self.applies(a, conn))
    }

    /// A partition holding `conn`, if one is in force.
    pub fn partition(&self, conn: u64) -> Option<&Active> {
        self.toxics
            .iter()
            .find(|a| a.spec.toxic == Toxic::Partition && self.applies(a, conn))
    }

    /// The `down` toxic, if one is in force.
    pub fn down(&self) -> Option<&Active> {
        self.toxics.iter().find(|a| a.spec.toxic == Toxic::Down)
    }

    pub fn contains(&self, id: ToxicId) -> bool {
        self.toxics.iter().any(|a| a.id == id)
    }
}

/// A number in [0, 1) from `seed` and `conn` (splitmix64): a fixed draw
/// per connection and toxic, with no state to keep.
fn draw(seed: u64, conn: u64) -> f64 {
    let mut z = seed.wrapping_add(conn.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

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
    pub hop: String,
    pub toxics: watch::Sender<ToxicSet>,
    pub counters: Counters,
    next_toxic: AtomicU64,
    next_conn: AtomicU64,
    observers: Mutex<VecDeque<(ToxicId, Observer)>>,
    /// Why the proxy stopped serving, once it has.
    stopped: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(hop: &str) -> Arc<Shared> {
        let set = ToxicSet {
            toxics: Arc::new(Vec::new()),
            seed: fastrand::u64(..),
        };
        Arc::new(Shared {
            hop: hop.to_string(),
            toxics: watch::Sender::new(set),
            counters: Counters::default(),
            next_toxic: AtomicU64::new(1),
            next_conn: AtomicU64::new(1),
            observers: Mutex::new(VecDeque::new()),
            stopped: Mutex::new(None),
        })
    }

    pub fn next_conn(&self) -> u64 {
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds a toxic; every connection sees it at its next wake-up, which the
    /// change itself causes.
    pub fn add(&self, spec: ToxicSpec, observer: Option<Observer>) -> ToxicId {
        let id = self.next_toxic.fetch_add(1, Ordering::Relaxed);
        if let Some(observer) = observer {
            let mut kept = self.observers.lock().unwrap_or_else(|p| p.into_inner());
            kept.push_back((id, observer));
            while kept.len() > KEPT_OBSERVERS {
                kept.pop_front();
            }
        }
        self.toxics.send_modify(|set| {
            let mut toxics = set.toxics.as_ref().clone();
            toxics.push(Active { id, spec });
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

    /// Counts what a toxic did and tells its observer.
    pub fn report(&self, toxic: ToxicId, conn: u64, action: ProxyAction) {
        let counter = match action {
            ProxyAction::Reset { .. } => &self.counters.resets,
            ProxyAction::Closed => &self.counters.closes,
            ProxyAction::CloseHeld => &self.counters.held_closes,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let observer = {
            let kept = self.observers.lock().unwrap_or_else(|p| p.into_inner());
            kept.iter()
                .find(|(id, _)| *id == toxic)
                .map(|(_, o)| Arc::clone(o))
        };
        if let Some(observer) = observer {
            observer(toxic, conn, action);
        }
    }

    pub fn passed_on(&self) {
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
        assert_eq!(draw(7, 3), draw(7, 3));
        let below = (0..1000).filter(|c| draw(42, *c) < 0.3).count();
        assert!((200..400).contains(&below), "{below} of 1000 under 0.3");
    }
}
