//! The exit codes of `continuity`, in one place (documented in the README).

/// Every cell passed (or `validate` / `list` succeeded).
pub const OK: u8 = 0;
/// At least one cell failed or could not run.
pub const FAILED: u8 = 1;
/// The run could not be completed: the server was unreachable before the
/// first phase, the stack would not start, a part of continuity's own
/// failed under a cell, or the run was interrupted.
pub const INCOMPLETE: u8 = 2;
/// Bad usage or configuration (as BSD's `EX_USAGE`).
pub const USAGE: u8 = 64;
/// A second Ctrl-C: everything was killed at once.
pub const KILLED: u8 = 130;
