//! Where a byte offset of a source text (a scenario, config or expectations
//! file) is, as the 1-based line error messages name.

/// The 1-based line holding byte `offset` (the last line past the end).
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::line_of;

    #[test]
    fn lines_count_from_one_and_stop_at_the_end() {
        let text = "a\nbc\n\nd";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 2), 2);
        assert_eq!(line_of(text, 5), 3);
        assert_eq!(line_of(text, 6), 4);
        assert_eq!(line_of(text, 1_000), 4);
    }
}
