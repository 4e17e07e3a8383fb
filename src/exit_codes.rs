//! The exit codes of `continuity`, in one place: the constants, and
//! [`ALL`], the table `--help` prints and the README's table is checked
//! against (quick::docs_links).

/// Every cell passed (or `validate` / `list` succeeded).
pub const OK: u8 = 0;
/// At least one cell failed or could not run.
pub const FAILED: u8 = 1;
/// The run could not be completed: the server was unreachable before the
/// first phase, the stack (or an SDK's install) would not start, a part of
/// continuity's own failed under a cell, or the run was interrupted.
pub const INCOMPLETE: u8 = 2;
/// Bad usage or configuration (as BSD's `EX_USAGE`).
pub const USAGE: u8 = 64;
/// A second Ctrl-C: everything was killed at once.
pub const KILLED: u8 = 130;

/// Every code `continuity` exits with, and what it means in a few words.
pub const ALL: &[(u8, &str)] = &[
    (OK, "every cell passed (with --expect: every cell as expected)"),
    (FAILED, "a cell failed (or is not as expected)"),
    (
        INCOMPLETE,
        "the run could not be completed (server unreachable, a stack or SDK install that failed, an interrupt)",
    ),
    (USAGE, "bad usage or config (a flag, a file, a busy --out folder)"),
    (KILLED, "a second Ctrl-C killed everything at once"),
];

/// The table as `--help` ends with it.
pub fn help() -> String {
    let mut text = String::from("Exit codes:");
    for (code, meaning) in ALL {
        text.push_str(&format!("\n  {code:>3}  {meaning}"));
    }
    text
}
