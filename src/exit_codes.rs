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
/// `run --bisect-exit`: the build could not be judged (`git bisect run`
/// skips it): every code but [`OK`], [`FAILED`] and [`KILLED`] becomes it.
pub const SKIP: u8 = 125;
/// A second Ctrl-C: everything was killed at once.
pub const KILLED: u8 = 130;

/// Every code `continuity` exits with, and what it means in a few words.
pub const ALL: &[(u8, &str)] = &[
    (
        OK,
        "every cell passed or was not applicable (with --expect: every cell as expected)",
    ),
    (FAILED, "a cell failed (or is not as expected)"),
    (
        INCOMPLETE,
        "the run could not be completed (server unreachable, a stack or SDK install that failed, an interrupt; `check`: a trace it could not read)",
    ),
    (USAGE, "bad usage or config (a flag, a file, a busy --out folder)"),
    (
        SKIP,
        "with run --bisect-exit: the build could not be judged (git bisect run skips it); 2 and 64 become 125",
    ),
    (KILLED, "a second Ctrl-C killed everything at once"),
];

/// The code `run --bisect-exit` exits with for `code`, as `git bisect
/// run` reads it: 0 good, 1 bad, 125 skip (this build cannot be judged:
/// its stack or binary would not start, a candidate path that is not
/// there, the run was cut short), and 130, above 127, aborts the bisect.
pub fn for_git_bisect(code: u8) -> u8 {
    match code {
        OK | FAILED | KILLED => code,
        _ => SKIP,
    }
}

/// The table as `--help` ends with it.
pub(crate) fn help() -> String {
    let mut text = String::from("Exit codes:");
    for (code, meaning) in ALL {
        text.push_str(&format!("\n  {code:>3}  {meaning}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_bisect_reads_a_judgement_a_skip_or_an_abort() {
        assert_eq!(for_git_bisect(OK), 0);
        assert_eq!(for_git_bisect(FAILED), 1);
        assert_eq!(for_git_bisect(INCOMPLETE), SKIP);
        assert_eq!(for_git_bisect(USAGE), SKIP);
        // Above 127: git bisect run stops.
        assert_eq!(for_git_bisect(KILLED), KILLED);
        const { assert!(KILLED > 127 && SKIP == 125) };
    }
}
