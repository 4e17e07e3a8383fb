//! Where a byte offset of a source text (a scenario, config or expectations
//! file) is, as the 1-based line error messages name.

/// The 1-based line holding byte `offset` (the last line past the end).
/// One count over the text: for many offsets of one text, [`Lines`].
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// A text's line starts, found once, so that the line of each of many
/// offsets (every entry of an expectations file) is a binary search rather
/// than a count from the start (which made reading a file quadratic).
pub struct Lines {
    /// The offset just past each `\n`.
    starts: Vec<usize>,
    len: usize,
}

impl Lines {
    pub fn new(text: &str) -> Lines {
        let starts = text
            .bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        Lines {
            starts,
            len: text.len(),
        }
    }

    /// [`line_of`] the text these lines are of.
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.len);
        self.starts.partition_point(|start| *start <= offset) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::{line_of, Lines};

    #[test]
    fn lines_count_from_one_and_stop_at_the_end() {
        let text = "a\nbc\n\nd";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 2), 2);
        assert_eq!(line_of(text, 5), 3);
        assert_eq!(line_of(text, 6), 4);
        assert_eq!(line_of(text, 1_000), 4);
        let lines = Lines::new(text);
        for offset in 0..=text.len() + 2 {
            assert_eq!(lines.line_of(offset), line_of(text, offset), "{offset}");
        }
    }
}
