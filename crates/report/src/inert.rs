//! What a human rendering (the terminal, `show`, report.txt, report.md,
//! junit.xml, the step summary, `compare`) sees of a report: every string
//! it holds in its one-line terminal form (`untrusted::Untrusted`), so no
//! field of a report, whoever wrote it (a server's version, an agent's
//! name, a phase name, a run id in a report from elsewhere), can break a
//! line, start a workflow command or act on a terminal, whichever format
//! string a renderer puts it in. Renderers still take the text they know to
//! be foreign through `Untrusted` for their own form (Markdown's entities);
//! this is the floor under all of them. `report.json` is written by serde
//! from the model, exact.
//!
//! A report whose strings need nothing (the usual case) is borrowed as it
//! is: one pass over its JSON, streamed, looks for what would need it.

use crate::untrusted::Untrusted;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// The form every string of a report takes for a rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// [`Untrusted::terminal`]: the terminal, report.txt, junit.xml.
    Terminal,
    /// [`Untrusted::markdown`]: report.md, the step summary. Its own
    /// form again is itself, so a renderer's `markdown()` of a field adds nothing.
    Markdown,
}

/// `value` with every string (and map key) in it in its terminal form;
/// borrowed when none needed it.
pub(crate) fn of<T: Serialize + DeserializeOwned + Clone>(value: &T) -> Cow<'_, T> {
    in_form(value, Form::Terminal)
}

/// [`of`], in `form`.
pub(crate) fn in_form<T: Serialize + DeserializeOwned + Clone>(
    value: &T,
    form: Form,
) -> Cow<'_, T> {
    let mut scan = Scan {
        markup: form == Form::Markdown,
        ..Scan::default()
    };
    if serde_json::to_writer(&mut scan, value).is_err() || !scan.needs {
        return Cow::Borrowed(value);
    }
    let Ok(mut tree) = serde_json::to_value(value) else {
        return Cow::Borrowed(value);
    };
    make_inert(&mut tree, form);
    match serde_json::from_value(tree) {
        Ok(inert) => Cow::Owned(inert),
        // A word of the model's own vocabulary never needs it; should a
        // value fail to read back, nothing is shown rather than raw text.
        Err(_) => Cow::Owned(value.clone()),
    }
}

fn make_inert(value: &mut Value, form: Form) {
    let shown = |text: &str| match form {
        Form::Terminal => Untrusted::new(text).terminal(),
        Form::Markdown => Untrusted::new(text).markdown(),
    };
    match value {
        Value::String(text) => {
            let new = shown(text);
            if new != *text {
                *text = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| make_inert(i, form)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                make_inert(&mut item, form);
                map.insert(shown(&key), item);
            }
        }
        _ => {}
    }
}

/// A writer that reads serde's JSON as it is written and notes whether a
/// string in it holds what the terminal form changes: an escaped control
/// character (`\n`, `\u001b`), DEL, a C1 control, a line or paragraph
/// separator, a bidi control, or `::` (which, leading, starts a workflow
/// command; anywhere else it only costs a copy).
#[derive(Default)]
struct Scan {
    /// Markdown's characters count too (`<`, `&`, `|`, a backquote, `]`,
    /// `@`, `:` and `.`, and runs of blanks), which its form changes.
    markup: bool,
    needs: bool,
    in_string: bool,
    escaped: bool,
    /// The two bytes before this one.
    before: [u8; 2],
}

impl Scan {
    fn byte(&mut self, b: u8) {
        let [two, one] = self.before;
        self.before = [one, b];
        if self.escaped {
            self.escaped = false;
            self.needs |= !matches!(b, b'"' | b'\\');
            return;
        }
        match b {
            b'\\' if self.in_string => self.escaped = true,
            b'"' => self.in_string = !self.in_string,
            b':' => self.needs |= self.in_string && (one == b':' || self.markup),
            b'<' | b'>' | b'&' | b'|' | b'`' | b']' | b'@' | b'.' if self.markup => {
                self.needs |= self.in_string
            }
            b' ' if self.markup => self.needs |= self.in_string && one == b' ',
            0x7f => self.needs = true,
            _ => {
                // C1 controls (U+0080-9F): C2 80-9F. U+061C: D8 9C.
                // U+200E/F, U+2028-202E: E2 80 8E/8F/A8-AE. U+2066-2069: E2 81 A6-A9.
                self.needs |= (one == 0xc2 && (0x80..=0x9f).contains(&b))
                    || (one == 0xd8 && b == 0x9c)
                    || (two == 0xe2 && one == 0x80 && matches!(b, 0x8e | 0x8f | 0xa8..=0xae))
                    || (two == 0xe2 && one == 0x81 && (0xa6..=0xa9).contains(&b));
            }
        }
    }
}

impl std::io::Write for Scan {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.needs {
            for b in buf {
                self.byte(*b);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(text: &str) -> bool {
        matches!(of(&vec![text.to_string()]), Cow::Owned(_))
    }

    #[test]
    fn only_what_the_terminal_form_changes_is_copied() {
        for plain in ["plain", "a \"quoted\" \\ back", "é ü 中 → ✓", "a: b", ""] {
            assert!(!needs(plain), "{plain:?}");
        }
        for acting in [
            "a\nb",
            "\x1b[2J",
            "::error::x",
            "  ::x",
            "\u{202e}x",
            "x\u{2028}",
            "\u{85}",
            "\u{7f}",
            "\u{2066}",
            "\u{61c}",
            "tab\t",
            "x::y",
        ] {
            assert!(needs(acting), "{acting:?}");
        }
        let shown = of(&vec!["a\nb".to_string()]).into_owned();
        assert_eq!(shown, vec!["a\\nb".to_string()]);
        // Every Untrusted change is seen by the scan.
        for ch in (0u32..0x3000).filter_map(char::from_u32) {
            let text = format!("x{ch}y");
            let changes = Untrusted::new(&text).terminal() != text;
            assert_eq!(needs(&text), changes, "{ch:?}");
        }
    }
}
