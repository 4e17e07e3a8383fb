//! continuity's leaves: what every other crate of the workspace shares and
//! nothing of theirs reaches down into. Each module imports no other crate
//! of the workspace but the schema (`continuity-schema`, below it), and
//! none of them starts a runtime (no tokio here).
//!
//! - `errors`: the cause chain on one line, a rejected value's reason, a
//!   part of continuity's own that failed under a cell
//! - `secret`: tokens that never show themselves, and the run's redactor
//! - `untrusted`: the one sanitiser of text continuity did not write
//!   (the schema crate's, re-exported)
//! - `fit`: text measured and cut by display width
//! - `file_name`: file names from user text
//! - `wire_name`: an enum's name as serde writes it
//! - `source_line`: a byte offset's line
//! - `run_path`: a run folder held open, and every file of it opened
//!   beneath it (the one confined reader of run folders)
//! - `user_file`: a user's file checked for its type (and size) before
//!   anything reads it
//! - `folder_lock`: one command at a time per folder
//! - `seed`: a run's seed and what derives from it

#![forbid(unsafe_code)]

pub mod errors;
pub mod file_name;
pub mod fit;
pub mod folder_lock;
pub mod run_path;
pub mod secret;
pub mod seed;
pub mod source_line;
pub mod user_file;
pub mod wire_name;

/// The one sanitiser lives in the schema crate, beside the report text it
/// is for (a point's name is displayed through it); its old path stays.
pub use continuity_schema::untrusted;
#[cfg(test)]
#[path = "untrusted/tests.rs"]
mod untrusted_tests;
