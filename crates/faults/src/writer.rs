//! One direction's writer: takes the chunks its reader stamped and applies
//! the toxics in force to each (delays, slices, drops, holds, ends). It
//! wakes on every toxic change, so a toxic acts on open connections at
//! once, also while a write is blocked; nothing written twice, nothing
//! lost unless a toxic drops it.
//!
//! Over 400 lines on purpose: the writer is one loop over one direction's
//! chunks that wakes on every toxic change, and each toxic's effect (delays,
//! slices, drops, holds, ends) is a step of that loop over its state.

use super::state::{Active, ProxyAction, Shared, ToxicId, ToxicSet};
use super::toxic::{Stream, Toxic};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::WriteHalf;
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Duration, Instant};

pub(super) enum Chunk {
    Data {
        bytes: Bytes,
        at: Instant,
        /// This chunk's draw of the latency jitter, in [-1, 1).
        jitter: f64,
    },
    Eof,
    /// The source socket failed (a reset by its peer).
    Failed,
}

/// Why a connection ends before both streams finished.
pub(super) enum End {
    /// A toxic resets it, towards the receiver of `toward`.
    Reset { toward: Stream, toxic: ToxicId },
    /// A toxic closes it.
    Close { toxic: ToxicId },
    /// A socket failed: the side that did not is reset, as it would be
    /// without the proxy in between.
    Broken { failed: Side },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Client,
    Server,
}

/// What became of a chunk the writer took on.
enum Step {
    Done,
    /// A toxic changed before the chunk was through: what is left of it
    /// waits for the next round, under the toxics then in force.
    Hold(Chunk),
    Finished,
}

pub(super) struct Writer<'a> {
    stream: Stream,
    conn: u64,
    toxics: watch::Receiver<ToxicSet>,
    to: WriteHalf<'a>,
    /// Told of what the writer itself holds back (a `slow_close`'s FIN).
    shared: &'a Shared,
    /// `slow_close`: the toxic whose hold of this stream's end was told already.
    held_close: Option<ToxicId>,
    /// `limit_data`: bytes passed since each toxic applied.
    passed: HashMap<ToxicId, u64>,
    /// `timeout`: when each toxic began to act here.
    since: HashMap<ToxicId, Instant>,
    /// `reset_peer`: armed by a chunk, due then.
    reset_at: Option<(ToxicId, Instant)>,
    /// The toxics whose draw spared this connection, told already.
    spared: HashSet<ToxicId>,
    /// The slicer's cuts, from the connection's seed.
    rng: fastrand::Rng,
}

impl<'a> Writer<'a> {
    pub(super) fn new(
        stream: Stream,
        conn: u64,
        toxics: watch::Receiver<ToxicSet>,
        to: WriteHalf<'a>,
        shared: &'a Shared,
        rng: fastrand::Rng,
    ) -> Self {
        Writer {
            stream,
            conn,
            toxics,
            to,
            shared,
            held_close: None,
            passed: HashMap::new(),
            since: HashMap::new(),
            reset_at: None,
            spared: HashSet::new(),
            rng,
        }
    }

    pub(super) async fn run(mut self, mut chunks: mpsc::Receiver<Chunk>) -> Result<(), End> {
        let mut held: Option<Chunk> = None;
        loop {
            let set = self.toxics.borrow_and_update().clone();
            self.track(&set)?;
            let now = Instant::now();
            if let Some(end) = self.due(&set, now) {
                return Err(end);
            }
            let frozen = set.partition(self.conn).is_some();
            let chunk = match (frozen, held.take()) {
                (false, Some(chunk)) => chunk,
                (frozen, kept) => {
                    held = kept;
                    let wake = self.next_deadline(&set);
                    let waiting = held.is_some() || frozen;
                    tokio::select! {
                        biased;
                        changed = self.toxics.changed() => {
                            if changed.is_err() { return Ok(()) }
                            continue;
                        }
                        () = sleep_until(wake.unwrap_or(now)), if wake.is_some() => continue,
                        chunk = chunks.recv(), if !waiting => chunk.unwrap_or(Chunk::Eof),
                    }
                }
            };
            match self.take(chunk, &set).await? {
                Step::Done => {}
                Step::Hold(chunk) => held = Some(chunk),
                Step::Finished => return Ok(()),
            }
        }
    }

    /// Starts the clocks of toxics new to this stream and forgets removed
    /// ones; a removed `timeout` closes the connection (its stream has a hole).
    fn track(&mut self, set: &ToxicSet) -> Result<(), End> {
        let now = Instant::now();
        let mine: Vec<&Active> = set.on(self.conn, self.stream).collect();
        for a in &mine {
            if matches!(a.spec.toxic, Toxic::Timeout { .. }) {
                self.since.entry(a.id).or_insert(now);
            }
            if matches!(a.spec.toxic, Toxic::LimitData { .. }) {
                self.passed.entry(a.id).or_insert(0);
            }
        }
        if let Some(gone) = self.since.keys().copied().find(|id| !set.contains(*id)) {
            self.since.remove(&gone);
            return Err(End::Close { toxic: gone });
        }
        self.passed.retain(|id, _| set.contains(*id));
        if self.reset_at.is_some_and(|(id, _)| !set.contains(id)) {
            self.reset_at = None;
        }
        Ok(())
    }

    /// An end that is due without any data: `down`, a `timeout` run out,
    /// an armed `reset_peer`.
    fn due(&self, set: &ToxicSet, now: Instant) -> Option<End> {
        if let Some(down) = set.down() {
            return Some(End::Close { toxic: down.id });
        }
        if let Some((toxic, _)) = self.reset_at.filter(|(_, at)| *at <= now) {
            return Some(End::Reset {
                toward: self.stream,
                toxic,
            });
        }
        set.on(self.conn, self.stream)
            .find_map(|a| match a.spec.toxic {
                Toxic::Timeout { timeout } if !timeout.is_zero() => self
                    .since
                    .get(&a.id)
                    .filter(|since| **since + timeout <= now)
                    .map(|_| End::Close { toxic: a.id }),
                _ => None,
            })
    }

    fn next_deadline(&self, set: &ToxicSet) -> Option<Instant> {
        let timeouts = set
            .on(self.conn, self.stream)
            .filter_map(|a| match a.spec.toxic {
                Toxic::Timeout { timeout } if !timeout.is_zero() => {
                    self.since.get(&a.id).map(|since| *since + timeout)
                }
                _ => None,
            });
        timeouts.chain(self.reset_at.map(|(_, at)| at)).min()
    }

    async fn take(&mut self, chunk: Chunk, set: &ToxicSet) -> Result<Step, End> {
        match chunk {
            Chunk::Failed => Err(End::Broken {
                failed: match self.stream {
                    Stream::Upstream => Side::Client,
                    Stream::Downstream => Side::Server,
                },
            }),
            Chunk::Eof => self.finish(set).await,
            Chunk::Data { bytes, at, jitter } => self.data(bytes, at, jitter, set).await,
        }
    }

    /// The end of the stream passes on, late under `slow_close` (whose
    /// observer hears of the hold once, as it begins: the peer that closed
    /// is gone while the other still writes into the connection).
    async fn finish(&mut self, set: &ToxicSet) -> Result<Step, End> {
        let slow = set
            .on(self.conn, self.stream)
            .filter_map(|a| match a.spec.toxic {
                Toxic::SlowClose { delay } => Some((delay, a.id)),
                _ => None,
            })
            .max_by_key(|(delay, _)| *delay);
        if let Some((delay, toxic)) = slow {
            if self.held_close.replace(toxic) != Some(toxic) {
                self.shared.report(toxic, self.conn, ProxyAction::CloseHeld);
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = self.toxics.changed() => return Ok(Step::Hold(Chunk::Eof)),
            }
        }
        let _ = self.to.shutdown().await;
        Ok(Step::Finished)
    }

    /// Tells the observer, once per toxic, that its draw spared this
    /// connection (a `toxicity` below 1) as its data passes: the seed's
    /// decision shows for every connection that carried data in the
    /// window, not only for those the toxic acted on. A hop-wide toxic is
    /// told by the upstream writer, which carries a connection's first data
    /// (its request).
    fn tell_spared(&mut self, set: &ToxicSet) {
        let upstream = self.stream == Stream::Upstream;
        for a in set.spared(self.conn, self.stream, upstream) {
            if self.spared.insert(a.id) {
                self.shared.report(a.id, self.conn, ProxyAction::Spared);
            }
        }
    }

    async fn data(
        &mut self,
        mut bytes: Bytes,
        at: Instant,
        jitter: f64,
        set: &ToxicSet,
    ) -> Result<Step, End> {
        let hold = |bytes: Bytes| Ok(Step::Hold(Chunk::Data { bytes, at, jitter }));
        self.tell_spared(set);
        let mine: Vec<Active> = set.on(self.conn, self.stream).cloned().collect();
        for a in &mine {
            match a.spec.toxic {
                // The first chunk arms the reset; it and all after it are dropped.
                Toxic::ResetPeer { timeout } => {
                    self.reset_at
                        .get_or_insert((a.id, Instant::now() + timeout));
                    return Ok(Step::Done);
                }
                Toxic::Timeout { .. } => return Ok(Step::Done),
                _ => {}
            }
        }
        let delay: Duration = mine
            .iter()
            .filter_map(|a| match a.spec.toxic {
                Toxic::Latency { latency, jitter: j } => {
                    let ms = latency.as_secs_f64() + j.as_secs_f64() * jitter;
                    Some(Duration::from_secs_f64(ms.max(0.0)))
                }
                _ => None,
            })
            .sum();
        let due = at + delay;
        if due > Instant::now() {
            tokio::select! {
                () = sleep_until(due) => {}
                _ = self.toxics.changed() => return hold(bytes),
            }
        }
        // `limit_data`: what may still pass, and which toxic closes after it.
        let mut close_after = None;
        for a in &mine {
            if let Toxic::LimitData { bytes: limit } = a.spec.toxic {
                let left = limit.saturating_sub(self.passed.get(&a.id).copied().unwrap_or(0));
                if bytes.len() as u64 >= left {
                    bytes.truncate(left as usize);
                    close_after = Some(a.id);
                }
            }
        }
        let slicer = mine.iter().find_map(|a| match a.spec.toxic {
            Toxic::Slicer {
                average_size,
                size_variation,
                delay,
            } => Some((average_size, size_variation, delay)),
            _ => None,
        });
        let rate = mine
            .iter()
            .filter_map(|a| match a.spec.toxic {
                Toxic::Bandwidth { rate } => Some(rate),
                _ => None,
            })
            .min();
        let pieces = match slicer {
            Some((average, variation, _)) => slices(bytes.len(), average, variation, &mut self.rng),
            None => vec![bytes.len()],
        };
        let mut start = 0;
        for (i, end) in pieces.into_iter().enumerate() {
            if i > 0 {
                if let Some((_, _, pause)) = slicer.filter(|s| !s.2.is_zero()) {
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        _ = self.toxics.changed() => return hold(bytes.slice(start..)),
                    }
                }
            }
            let piece = bytes.slice(start..end);
            if let Some(left) = self.write_paced(piece, rate).await? {
                let left = bytes.slice(end - left..);
                return hold(left);
            }
            start = end;
        }
        if let Some(toxic) = close_after {
            return Err(End::Close { toxic });
        }
        Ok(Step::Done)
    }

    /// Writes `piece` (at most `rate` KB/s), counting it against every
    /// `limit_data`; returns how many bytes are left when a toxic changed first.
    async fn write_paced(&mut self, piece: Bytes, rate: Option<u64>) -> Result<Option<usize>, End> {
        let Some(rate) = rate else {
            return self.write_watching(&piece).await;
        };
        // At most 100 ms worth at a time, as Toxiproxy does.
        let step = (rate as usize * 100).max(1);
        let mut start = 0;
        while start < piece.len() {
            let end = (start + step).min(piece.len());
            if let Some(left) = self.write_watching(&piece[start..end]).await? {
                return Ok(Some(piece.len() - end + left));
            }
            let took = Duration::from_micros(((end - start) as u64 * 1000) / rate.max(1));
            tokio::select! {
                () = tokio::time::sleep(took) => {}
                _ = self.toxics.changed() => return Ok(Some(piece.len() - end)),
            }
            start = end;
        }
        Ok(None)
    }

    /// Writes all of `data`, unless a toxic changes first: then returns how
    /// much is left (none of it written twice, none lost).
    async fn write_watching(&mut self, data: &[u8]) -> Result<Option<usize>, End> {
        let mut written = 0;
        let left = loop {
            if written == data.len() {
                break None;
            }
            tokio::select! {
                biased;
                _ = self.toxics.changed() => break Some(data.len() - written),
                n = self.to.write(&data[written..]) => match n {
                    Ok(0) | Err(_) => return Err(self.broken_receiver()),
                    Ok(n) => written += n,
                },
            }
        };
        for passed in self.passed.values_mut() {
            *passed += written as u64;
        }
        Ok(left)
    }

    fn broken_receiver(&self) -> End {
        End::Broken {
            failed: match self.stream {
                Stream::Upstream => Side::Server,
                Stream::Downstream => Side::Client,
            },
        }
    }
}

/// Toxiproxy's slicer: halves `len` around the middle (± `variation`)
/// until the pieces are about `average` long; returns each piece's end.
fn slices(len: usize, average: usize, variation: usize, rng: &mut fastrand::Rng) -> Vec<usize> {
    struct Cutter<'r> {
        average: usize,
        variation: usize,
        rng: &'r mut fastrand::Rng,
        out: Vec<usize>,
    }
    impl Cutter<'_> {
        fn cut(&mut self, start: usize, end: usize) {
            if (end - start).saturating_sub(self.average) <= self.variation || end - start < 2 {
                self.out.push(end);
                return;
            }
            let mut mid = start + (end - start) / 2;
            if self.variation > 0 {
                let shift = self.rng.usize(..self.variation * 2) as isize - self.variation as isize;
                mid = (mid as isize + shift).clamp(start as isize + 1, end as isize - 1) as usize;
            }
            self.cut(start, mid);
            self.cut(mid, end);
        }
    }
    let mut cutter = Cutter {
        average,
        variation,
        rng,
        out: Vec::new(),
    };
    if len > 0 {
        cutter.cut(0, len);
    }
    cutter.out
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Chunk::Data { bytes, .. } => write!(f, "Data({} bytes)", bytes.len()),
            Chunk::Eof => f.write_str("Eof"),
            Chunk::Failed => f.write_str("Failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::slices;

    #[test]
    fn slices_cover_the_chunk_in_order() {
        for (len, avg, var) in [(1000, 10, 5), (7, 3, 0), (1, 1, 0), (16384, 64, 32)] {
            let ends = slices(len, avg, var, &mut fastrand::Rng::with_seed(len as u64));
            assert_eq!(*ends.last().unwrap(), len);
            assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
            let starts = std::iter::once(0).chain(ends.iter().copied());
            let longest = starts.zip(ends.iter()).map(|(s, e)| e - s).max().unwrap();
            assert!(longest <= avg + var, "{len} {avg} {var}: {longest}");
        }
    }

    #[test]
    fn the_same_seed_cuts_the_same_slices() {
        let cut = |seed| slices(16384, 64, 32, &mut fastrand::Rng::with_seed(seed));
        assert_eq!(cut(5), cut(5));
        assert_ne!(cut(5), cut(6));
    }
}
