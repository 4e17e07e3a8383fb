//! A run's seed and the seeds taken from it. One number decides every
//! random choice of a run (the fault proxies' `toxicity` draws, a
//! latency's jitter, the slicer's variation); each cell's seed is mixed
//! from it and the cell's name, each connection's from the cell's and the
//! connection's number on its hop within the cell, so a cell's draws do
//! not depend on which cells ran beside it or before it.

/// The largest seed a run draws: JSON readers that hold numbers as
/// doubles (JavaScript) keep every seed up to 2^53 exact.
pub(crate) const DRAWN_MAX: u64 = (1 << 53) - 1;

/// A fresh seed, for a run given none.
pub fn fresh() -> u64 {
    fastrand::u64(..=DRAWN_MAX)
}

/// `seed` and `salt` mixed into one well-spread number (splitmix64's
/// finaliser): neighbouring inputs give unrelated outputs.
pub fn mix(seed: u64, salt: u64) -> u64 {
    let mut z = seed.wrapping_add(salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable hash of `text` (FNV-1a, 64 bits): the same on every machine
/// and Rust release, which std's `DefaultHasher` does not promise.
pub fn of_text(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A number in [0, 1) from a mixed seed.
pub fn unit(mixed: u64) -> f64 {
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}

/// The seed of one attempt of one cell: the run's, the cell's name
/// (every coordinate of its point) and the attempt's number.
pub fn for_cell(run: u64, cell: &str, attempt: u32) -> u64 {
    mix(mix(run, of_text(cell)), u64::from(attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draw_is_fixed_per_input_and_spread_over_inputs() {
        assert_eq!(mix(7, 3), mix(7, 3));
        let below = (0..1000).filter(|c| unit(mix(42, *c)) < 0.3).count();
        assert!((200..400).contains(&below), "{below} of 1000 under 0.3");
    }

    #[test]
    fn cells_and_attempts_get_seeds_of_their_own() {
        let a = for_cell(1, "gateway-reset × native-continuity", 1);
        assert_eq!(a, for_cell(1, "gateway-reset × native-continuity", 1));
        assert_ne!(a, for_cell(1, "gateway-reset × native-continuity", 2));
        assert_ne!(a, for_cell(1, "gateway-reset × restart-mid-turn", 1));
        assert_ne!(a, for_cell(2, "gateway-reset × native-continuity", 1));
        // FNV-1a's published value for "a": the hash must not drift.
        assert_eq!(of_text("a"), 0xaf63_dc4c_8601_ec8c);
        assert!(fresh() <= DRAWN_MAX);
    }
}
