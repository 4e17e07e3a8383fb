//! Durations as the reports count them: whole milliseconds, saturating.

use std::time::Duration;

/// `d` in whole milliseconds (`u64::MAX` beyond ~584 million years).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::millis;
    use std::time::Duration;

    #[test]
    fn whole_milliseconds_and_saturation() {
        assert_eq!(millis(Duration::from_micros(1_999)), 1);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }
}
