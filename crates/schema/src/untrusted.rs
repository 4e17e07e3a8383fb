//! Text continuity did not write (a server's or gateway's error detail, an
//! agent's message, Postgres's or Chromium's words, a command's stderr)
//! and how it may appear in each output. This is the one sanitiser: every
//! renderer takes such text through [`Untrusted`], whose only ways out are
//! the forms below, and the console passes every printed line through
//! [`printable`].
//!
//! - terminal (stdout, stderr, `show`, report.txt): one line; control
//!   characters, escape sequences, line and paragraph separators and bidi
//!   overrides shown as escapes (`\r`, `\x1b`, `\u{202e}`), never
//!   interpreted; a leading `::` shown as `\x3a:`, so `cat report.txt` in a
//!   CI step cannot start a workflow command.
//! - GitHub: the runner splits what it reads at `\r` and `\n`, and reads a
//!   line beginning with `::` (after blanks) as a workflow command. The
//!   terminal form holds neither a line break nor a leading `::`, and
//!   [`printable`] defuses any printed line that begins with `::` except
//!   continuity's own commands (written with [`command_data`] and
//!   [`command_property`]).
//! - Markdown (report.md, the step summary): one line, no raw HTML, no
//!   link, image or autolink, no code span, table pipes escaped; the
//!   characters that would make them are HTML entities, so the text reads
//!   as it was sent.
//! - JSON is written by serde from the model, which keeps the text exact.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Text from outside continuity, borrowed from the report model or an
/// error; it reaches an output only as one of its rendered forms.
#[derive(Debug, Clone, Copy)]
pub struct Untrusted<'a>(&'a str);

impl<'a> Untrusted<'a> {
    pub fn new(text: &'a str) -> Untrusted<'a> {
        Untrusted(text)
    }

    /// For a terminal line or report.txt: every character that a terminal
    /// or the GitHub runner would act on, shown as an escape.
    pub fn terminal(self) -> String {
        defuse_command_start(visible(self.0))
    }

    /// For Markdown: blank runs (line breaks included) as one space, other
    /// controls as in [`Untrusted::terminal`], then markup characters as
    /// entities: `<` `>` `&` (HTML, comments), `]` before `(`, `[` or `:`
    /// (links, images, references; `[redacted]` stays as it is),
    /// `` ` `` (code spans), `@` before a name, `:` before `//` and the
    /// dot of `www.` (autolinks), `|` as
    /// `\|` (table cells). The form of a form is itself: an entity or an
    /// escaped pipe it wrote is kept as it is, so text shown this way
    /// already (a report rendered from its inert form) is never escaped twice.
    pub fn markdown(self) -> String {
        let one_line = self.0.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut out = String::with_capacity(one_line.len());
        let mut rest = one_line.as_str();
        while let Some(ch) = rest.chars().next() {
            let after = &rest[ch.len_utf8()..];
            match ch {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' if is_entity(after) => out.push('&'),
                '&' => out.push_str("&amp;"),
                '\\' if after.starts_with('|') => {
                    out.push_str("\\|");
                    rest = &after[1..];
                    continue;
                }
                ']' if after.starts_with(['(', '[', ':']) => out.push_str("&#93;"),
                '`' => out.push_str("&#96;"),
                '@' if after.starts_with(|c: char| c.is_alphanumeric()) => out.push_str("&#64;"),
                '|' => out.push_str("\\|"),
                ':' if after.starts_with("//") => out.push_str("&#58;"),
                '.' if out.ends_with("www") => out.push_str("&#46;"),
                ch => push_visible(&mut out, ch),
            }
            rest = after;
        }
        defuse_command_start(out)
    }
}

/// The first character of `text` that a terminal or a reader would act on
/// rather than show (see [`Untrusted::terminal`]): what a name a user
/// gives (a scenario's, a phase's) may not hold.
pub fn first_acting(text: &str) -> Option<char> {
    text.chars().find(|ch| acts(*ch))
}

/// Whether `after` (what follows a `&`) completes an entity
/// [`Untrusted::markdown`] writes: `lt;`, `gt;`, `amp;`, `#NN;`.
fn is_entity(after: &str) -> bool {
    if ["lt;", "gt;", "amp;"].iter().any(|e| after.starts_with(e)) {
        return true;
    }
    let Some(number) = after.strip_prefix('#') else {
        return false;
    };
    let digits = number.bytes().take_while(u8::is_ascii_digit).count();
    (1..=7).contains(&digits) && number[digits..].starts_with(';')
}

/// Whether a terminal, or a reader of the text, would act on `ch` rather
/// than show it: C0 and C1 controls, DEL, the line and paragraph
/// separators, and the bidi embeddings, overrides, isolates and marks.
pub fn acts(ch: char) -> bool {
    ch.is_control()
        || matches!(
            ch,
            '\u{2028}'
                | '\u{2029}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character that [`acts`] as its escape.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        push_visible(&mut out, ch);
    }
    out
}

/// `ch`, or its escape when it [`acts`]: `\n`, `\r`, `\t`, `\x1b`, `\u{202e}`.
fn push_visible(out: &mut String, ch: char) {
    if !acts(ch) {
        out.push(ch);
        return;
    }
    match ch {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        ch if (ch as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", ch as u32);
        }
        ch => {
            let _ = write!(out, "\\u{{{:x}}}", ch as u32);
        }
    }
}

/// A line that would begin with `::` after its blanks, with that first
/// colon shown as `\x3a`: the runner no longer reads it as a command.
fn defuse_command_start(line: String) -> String {
    let blanks = line.len() - line.trim_start().len();
    if line[blanks..].starts_with("::") {
        format!("{}\\x3a{}", &line[..blanks], &line[blanks + 1..])
    } else {
        line
    }
}

/// What a printed text may be, for [`printable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printed {
    /// stdout: maybe JSON lines (`--message-format json`), whose strings
    /// serde escaped for C0 only; DEL, C1 and bidi characters are left as
    /// they are, so the JSON stays exact (the renderers escaped them in
    /// the foreign text of human output already).
    MaybeJson,
    /// stderr: only text for people; every character that acts is escaped.
    Text,
}

/// What the console writes, for every line it prints: control characters
/// other than line feed and tab shown as escapes (on stderr also DEL, C1
/// and bidi characters), except the SGR colour sequences
/// (`ESC [ digits ; m`) continuity paints with; a line that would begin a
/// workflow command defused. JSON (serde escapes every C0 character)
/// passes unchanged.
pub fn printable(text: &str, printed: Printed) -> Cow<'_, str> {
    let escaped = |ch: char| match printed {
        Printed::MaybeJson => ch.is_ascii_control() && ch != '\x7f',
        Printed::Text => acts(ch),
    };
    let needs = text
        .chars()
        .any(|ch| ch != '\n' && ch != '\t' && escaped(ch))
        || text
            .split('\n')
            .any(|line| line.trim_start().starts_with("::"));
    if !needs {
        return Cow::Borrowed(text);
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| defuse_command_start(escape_keeping_colour(line, escaped)))
        .collect();
    Cow::Owned(lines.join("\n"))
}

fn escape_keeping_colour(line: &str, escaped: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(ch) = rest.chars().next() {
        if ch == '\x1b' {
            if let Some(len) = sgr_len(rest) {
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
        }
        if ch == '\t' || !escaped(ch) {
            out.push(ch);
        } else {
            push_visible(&mut out, ch);
        }
        rest = &rest[ch.len_utf8()..];
    }
    out
}

/// The length of the SGR sequence `text` starts with, if it starts with one.
fn sgr_len(text: &str) -> Option<usize> {
    let body = text.strip_prefix("\x1b[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

/// A workflow command's data (what follows `::command ...::`): `%`, CR and
/// LF encoded as the runner decodes them. Untrusted parts are in their
/// [`Untrusted::terminal`] form already.
pub(crate) fn command_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: [`command_data`], plus `:` and `,`.
pub(crate) fn command_property(text: &str) -> String {
    command_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// A line continuity writes as a workflow command, printed whole (the only
/// way a printed line may start with `::`). `name` is `error` or
/// `warning`; the title and message hold untrusted parts in their terminal
/// form, and any character that acts is shown as an escape here again, so
/// the line holds no control character before it is encoded.
pub fn command_line(name: &str, title: &str, message: &str) -> CommandLine {
    CommandLine(format!(
        "::{name} title={}::{}",
        command_property(&visible(title)),
        command_data(&visible(message))
    ))
}

/// A workflow command continuity wrote (see [`command_line`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine(String);

impl CommandLine {
    /// The line, for the console to print as it is (it holds no control
    /// character: [`command_data`] encoded CR and LF, and the untrusted
    /// parts were in their terminal form).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
