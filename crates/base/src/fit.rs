//! Text measured and cut by display width, the columns a terminal gives it
//! (✅ and ❌ take two, a combining mark none), so what is printed for an
//! 80-column terminal is never wider than 80. Text is cut with an ellipsis,
//! never wrapped into fragments.

use std::borrow::Cow;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The ellipsis a cut text ends with (one column).
pub(crate) const ELLIPSIS: char = '…';

/// How many columns `text` takes. ANSI colour sequences take none.
pub fn width(text: &str) -> usize {
    if !text.contains('\x1b') {
        return text.width();
    }
    strip_ansi(text).width()
}

/// `text` cut to at most `max` columns, ending with `…` when it was cut.
/// Takes plain text: colour is added after fitting.
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.width() <= max {
        return Cow::Borrowed(text);
    }
    if max == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        used += w;
        out.push(ch);
    }
    out.push(ELLIPSIS);
    Cow::Owned(out)
}

/// `text` cut to at most `max` columns by taking out its middle: for paths,
/// whose start and end (the run folder's name) say the most.
pub fn cut_middle(text: &str, max: usize) -> Cow<'_, str> {
    if text.width() <= max {
        return Cow::Borrowed(text);
    }
    if max < 5 {
        return cut(text, max);
    }
    let tail_budget = (max - 1) / 2;
    let head_budget = max - 1 - tail_budget;
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for ch in text.chars().rev() {
        let w = ch.width().unwrap_or(0);
        if used + w > tail_budget {
            break;
        }
        used += w;
        tail.push(ch);
    }
    let mut head = cut(text, head_budget + 1).into_owned();
    // `cut` ended it with an ellipsis: that is the one in the middle.
    if !head.ends_with(ELLIPSIS) {
        head.push(ELLIPSIS);
    }
    head.extend(tail.into_iter().rev());
    Cow::Owned(head)
}

/// `text` followed by spaces up to `columns` (nothing added when it is wider).
pub fn pad(text: &str, columns: usize) -> String {
    let w = width(text);
    format!("{text}{}", " ".repeat(columns.saturating_sub(w)))
}

/// `text` preceded by spaces up to `columns`.
pub fn pad_left(text: &str, columns: usize) -> String {
    let w = width(text);
    format!("{}{text}", " ".repeat(columns.saturating_sub(w)))
}

/// The widest line of `text`, in columns.
pub fn widest_line(text: &str) -> usize {
    text.lines().map(width).max().unwrap_or(0)
}

/// `text` without its ANSI CSI sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_take_two_columns_and_colour_none() {
        assert_eq!(width("✅ pass"), 7);
        assert_eq!(width("❌"), 2);
        assert_eq!(width("\x1b[31mFAIL\x1b[0m"), 4);
        assert_eq!(widest_line("ab\n✅✅✅\nc"), 6);
    }

    #[test]
    fn a_cut_ends_with_an_ellipsis_and_never_passes_the_width() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("exactly10!", 10), "exactly10!");
        assert_eq!(cut("HTTP 400 invalid_request", 10), "HTTP 400 …");
        // A double-width glyph that would straddle the edge is left out whole.
        assert_eq!(cut("ab✅cd", 4), "ab…");
        assert_eq!(width(&cut("ab✅cd", 4)), 3);
        assert_eq!(cut("anything", 1), "…");
        assert_eq!(cut("anything", 0), "");
        for max in 0..30 {
            assert!(width(&cut("❌ ws close 1006 (protocol error)", max)) <= max);
        }
    }

    #[test]
    fn a_middle_cut_keeps_both_ends() {
        let path = "../reports/20261201T222456Z-44653cdb";
        assert_eq!(cut_middle(path, 80), path);
        let cut = cut_middle(path, 21);
        assert_eq!(width(&cut), 21, "{cut}");
        assert!(
            cut.starts_with("../report") && cut.ends_with("-44653cdb"),
            "{cut}"
        );
        assert!(cut.contains(ELLIPSIS));
    }

    #[test]
    fn padding_counts_columns_not_bytes() {
        assert_eq!(pad("✅", 4), "✅  ");
        assert_eq!(pad_left("77 ms", 7), "  77 ms");
        assert_eq!(pad("toolong", 3), "toolong");
    }
}
