//! Reports: the matrix model (`report.json`, schema v2, whose types are
//! the schema crate's, re-exported here) and its renderings. Only this
//! crate knows about comfy-table and quick-junit. It starts no
//! runtime (no tokio) and knows nothing of the stack, the runner or the
//! executor: they hand it what they saw, it judges, joins and renders.
//! `partition` (which shard a cell belongs to) lives here beside the merge
//! that puts shards back together.

#![forbid(unsafe_code)]

// The lower crates, by the names the whole workspace knows them by.
use continuity_base::{
    errors, file_name, fit, folder_lock, run_path, secret, source_line, untrusted, user_file,
    wire_name,
};
use continuity_trace as trace;

pub mod attempts;
pub mod axis_compare;
pub mod baseline;
pub mod checker;
pub mod chrome_trace;
pub mod clients;
pub mod compare;
pub mod expect;
pub(crate) mod fix_location;
pub mod floor;
pub mod fold;
pub mod gate;
pub mod github;
pub mod html;
pub(crate) mod inert;
pub(crate) mod integrity_fix;
pub mod join;
pub mod junit;
pub mod markdown;
pub mod merge;
pub mod partition;
pub mod run_dir;
pub mod summary;
pub mod table;
pub mod terminal;
pub mod timeline;
pub(crate) mod turn_fate;
pub mod upgrade;
pub mod write;

// The published shape is the schema crate's (`continuity-schema`, serde
// alone): its modules keep their paths here (`report::point::Point`,
// `report::Cell`), so nothing above names the schema crate to read a
// report.
pub use client_kind::{ClientKind, ClientRestart, UnknownClient};
pub use continuity_schema::report as model;
pub use continuity_schema::TargetName;
pub use continuity_schema::{
    axis, client_kind, detail, judgement, named, point, recipe, schedule, store,
};
pub use model::*;
pub use recipe::{FileIdentity, Recipe, ScenarioIdentity};
pub use run_dir::{RunDir, RunDirError, REPORT_FILE};
pub use schedule::{FaultKind, Schedule, ScheduledFault};
pub use store::{Store, UnknownStore};
pub use terminal::{render_terminal, Layout};
pub use turn_fate::fate_of_turn;
pub use upgrade::MAX_REPORT_BYTES;
pub use write::{
    default_run_dir, write_atomic, FolderError, ReadBackError, ReportFiles, RunFolder,
    RUN_FOLDER_ENTRIES, RUN_LOCK_FILE,
};

// The renderers by their short names, for this crate's tests.
#[cfg(test)]
use {junit::render_junit, markdown::render_markdown, summary::render_summary, table::render_text};

/// The hand-made report of the renderer tests; other crates' tests take it
/// through the `fixture` feature.
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod terminal_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_tests;
