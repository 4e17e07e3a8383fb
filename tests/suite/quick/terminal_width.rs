//! `continuity show RUN` fits the terminal: no line wider than its columns
//! (display width: ✅ and ❌ take two), the layout pinned at 80 and 120
//! columns, the width read from a real terminal (a pty made by `script`)
//! and `COLUMNS` winning over it. The run is a real default-matrix report
//! (trimmed of details) with an expected failure and a regression.

use crate::support;

use std::path::Path;
use std::process::Command;
use unicode_width::UnicodeWidthStr;

/// The fixture run, as the tests name it (relative to the package).
const RUN: &str = "tests/fixtures/terminal";

fn show_with_columns(columns: &str) -> String {
    let out = support::continuity_command(["show", RUN])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("COLUMNS", columns)
        .output()
        .unwrap();
    support::assert_exit(&out, continuity::exit_codes::OK);
    String::from_utf8(out.stdout).unwrap()
}

fn widest(text: &str) -> (usize, &str) {
    text.lines()
        .map(|l| (l.width(), l))
        .max_by_key(|(w, _)| *w)
        .unwrap_or((0, ""))
}

#[test]
fn show_at_80_columns_has_no_line_wider_than_80() {
    let text = show_with_columns("80");
    let (width, line) = widest(&text);
    assert!(width <= 80, "{width} columns: {line}\n{text}");
    // What the grid had, still there: the summary, the failures, the regression.
    assert!(text.contains("│ gateway        ┆ ✅ expected ┆"), "{text}");
    assert!(text.contains("FAIL [  2.2 s] gateway × sandbox-reconnect @ oldTerminalSend"));
    assert!(text.contains("  regressed (expected pass): nginx keeps terminal sockets open"));
    assert!(text.contains("full grids: tests/fixtures/terminal/report.{txt,md,html}"));
}

#[test]
fn show_layout_at_80_columns() {
    insta::assert_snapshot!(show_with_columns("80"));
}

#[test]
fn show_layout_at_120_columns() {
    let text = show_with_columns("120");
    assert!(widest(&text).0 <= 120);
    insta::assert_snapshot!(text);
}

/// `show` on a pty of `columns` columns (`script` from util-linux), with `COLUMNS` set or not.
fn show_on_a_terminal(columns: u16, env_columns: Option<&str>) -> String {
    let bin = env!("CARGO_BIN_EXE_continuity");
    // Set on the command itself: the shell `script` starts would reset an
    // exported COLUMNS to the terminal's size after `stty` (checkwinsize).
    let columns_var = env_columns
        .map(|c| format!("COLUMNS={c} "))
        .unwrap_or_default();
    let out = Command::new("script")
        .args(["-q", "-e", "-c"])
        .arg(format!(
            "stty cols {columns} rows 50; exec env -u COLUMNS {columns_var}{bin} show {RUN}"
        ))
        .arg("/dev/null")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("`script` (util-linux) runs the command on a pty");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
}

#[test]
fn on_a_terminal_the_width_is_the_terminals_and_columns_wins() {
    assert!(Path::new(env!("CARGO_BIN_EXE_continuity")).is_file());
    let narrow = show_on_a_terminal(80, None);
    assert!(widest(&narrow).0 <= 80, "{narrow}");
    assert_eq!(
        narrow,
        show_with_columns("80"),
        "a terminal of 80 lays out as COLUMNS=80"
    );
    let wide = show_on_a_terminal(200, None);
    assert!(
        widest(&wide).0 > 80,
        "a wide terminal gets the wide grid: {wide}"
    );
    assert_eq!(wide, show_with_columns("200"));
    let asked = show_on_a_terminal(200, Some("80"));
    assert_eq!(asked, narrow, "COLUMNS takes precedence over the terminal");
}
