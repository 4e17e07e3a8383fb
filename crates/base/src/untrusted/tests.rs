//! The sanitiser's properties (it lives in the schema crate, which has
//! no dev-dependencies; proptest is this crate's).

use crate::untrusted::*;
use proptest::prelude::*;
use std::borrow::Cow;

/// The hostile texts of issue 30, one string.
const HOSTILE: &str = "bad\r::error::X\n::add-mask::x \x1b]0;title\x07\x1b[2J <img src=x onerror=alert(1)> <script> [link](http://evil) ![i](http://evil/i.png) <http://evil> <!-- a|b `c` \u{202e}txt \u{9b}31m";

/// Strings rich in what the forms must neutralise.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\r".to_string()),
        Just("\n".to_string()),
        Just("::".to_string()),
        Just("::error::".to_string()),
        Just(" ".to_string()),
        Just("\x1b".to_string()),
        Just("\x1b[31m".to_string()),
        Just("<".to_string()),
        Just("](".to_string()),
        Just("[x](http://e)".to_string()),
        Just("http://".to_string()),
        Just("www.".to_string()),
        Just("`".to_string()),
        Just("|".to_string()),
        Just("\u{202e}".to_string()),
        any::<char>().prop_map(String::from),
        "[a-z]{1,4}",
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

fn starts_a_command(line: &str) -> bool {
    line.trim_start().starts_with("::")
}

proptest! {
    #[test]
    fn the_terminal_form_is_one_line_without_anything_a_terminal_acts_on(text in hostile_text()) {
        let out = Untrusted::new(&text).terminal();
        prop_assert!(!out.chars().any(acts), "{out:?}");
        prop_assert!(!out.bytes().any(|b| b < 0x20 || b == 0x7f), "{out:?}");
        prop_assert!(!starts_a_command(&out), "{out:?}");
    }

    #[test]
    fn the_markdown_form_has_no_markup_and_no_line_break(text in hostile_text()) {
        let out = Untrusted::new(&text).markdown();
        for bad in ["<", ">", "](", "][", "]:", "`", "://", "www.", "\n", "\r"] {
            prop_assert!(!out.contains(bad), "{bad:?} in {out:?}");
        }
        prop_assert!(!out.chars().any(acts), "{out:?}");
        // Every pipe is escaped for a table cell.
        prop_assert!(!out.replace("\\|", "").contains('|'), "{out:?}");
    }

    #[test]
    fn a_printed_text_starts_no_command_and_keeps_only_lf_tab_and_colour(text in hostile_text()) {
        for printed in [Printed::MaybeJson, Printed::Text] {
            let out = printable(&text, printed);
            for line in out.split('\n') {
                prop_assert!(!starts_a_command(line), "{line:?}");
                let without_colour = line.replace("\x1b[31m", "");
                prop_assert!(
                    !without_colour.bytes().any(|b| b < 0x20 && b != b'\t'),
                    "{line:?}"
                );
                if printed == Printed::Text {
                    prop_assert!(!without_colour.chars().any(|c| c != '\t' && acts(c)), "{line:?}");
                }
            }
        }
    }

    #[test]
    fn a_workflow_command_is_one_line_whatever_it_carries(title in hostile_text(), message in hostile_text()) {
        let line = command_line("error", &title, &message);
        let line = line.as_str();
        prop_assert!(!line.contains(['\r', '\n']), "{line:?}");
        prop_assert!(!line.chars().any(acts), "{line:?}");
        let (head, _) = line[2..].split_once("::").expect("command and data");
        prop_assert!(head.starts_with("error title="), "{line:?}");
        prop_assert!(!head["error title=".len()..].contains([':', ',']), "{line:?}");
    }
}

#[test]
fn the_terminal_form_shows_each_escape_as_written() {
    assert_eq!(
        Untrusted::new("a\r::error::X\n\t\x1b]0;t\x07\x1b[2J\u{7f}\u{9b}\u{202e}z").terminal(),
        "a\\r::error::X\\n\\t\\x1b]0;t\\x07\\x1b[2J\\x7f\\u{9b}\\u{202e}z"
    );
    assert_eq!(
        Untrusted::new("  ::add-mask::x").terminal(),
        "  \\x3a:add-mask::x"
    );
    assert_eq!(
        Untrusted::new("plain, ünïcode ✅").terminal(),
        "plain, ünïcode ✅"
    );
}

#[test]
fn the_markdown_form_reads_as_sent() {
    assert_eq!(
        Untrusted::new("<img src=x onerror=alert(1)>\n<!-- [l](http://e) `c` a|b x@y.z www.e.com").markdown(),
        "&lt;img src=x onerror=alert(1)&gt; &lt;!-- [l&#93;(http&#58;//e) &#96;c&#96; a\\|b x&#64;y.z www&#46;e.com"
    );
    assert_eq!(Untrusted::new("AT&T").markdown(), "AT&amp;T");
    assert_eq!(
        Untrusted::new("Bearer [redacted] [a][b] [c]: x").markdown(),
        "Bearer [redacted] [a&#93;[b] [c&#93;: x"
    );
    assert_eq!(
        Untrusted::new("http 400 invalid_request").markdown(),
        "http 400 invalid_request"
    );
}

#[test]
fn printing_keeps_json_and_colour_and_defuses_foreign_commands() {
    let json =
        serde_json::to_string(&serde_json::json!({ "detail": HOSTILE, "del": "\u{7f}" })).unwrap();
    assert!(matches!(
        printable(&json, Printed::MaybeJson),
        Cow::Borrowed(_)
    ));
    let coloured = "\x1b[31mFAIL\x1b[0m agent\n  next\tline\n";
    for printed in [Printed::MaybeJson, Printed::Text] {
        assert_eq!(printable(coloured, printed), coloured);
        assert_eq!(
            printable("ok\n  ::error::X\x1b]0;t\x07\rz\n", printed),
            "ok\n  \\x3a:error::X\\x1b]0;t\\x07\\rz\n"
        );
    }
    assert_eq!(
        printable("a\u{202e}b\u{9b}c\u{7f}", Printed::Text),
        "a\\u{202e}b\\u{9b}c\\x7f"
    );
}

#[test]
fn continuitys_own_command_encodes_what_the_runner_decodes() {
    let line = command_line("warning", "continuity: a, b", "50% \r\nx");
    assert_eq!(
        line.as_str(),
        "::warning title=continuity%3A a%2C b::50%25 \\r\\nx"
    );
    let printed = Untrusted::new(HOSTILE).terminal();
    assert!(
        !printed.contains(['\r', '\n', '\x1b', '\u{7}']),
        "{printed}"
    );
}
