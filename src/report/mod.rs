//! Reports: the matrix model (`report.json`, schema v2) and its renderings.
//! Only this module knows about comfy-table and quick-junit.

pub(crate) mod attempts;
pub(crate) mod axis_compare;
pub(crate) mod baseline;
pub(crate) mod chrome_trace;
pub(crate) mod clients;
pub(crate) mod compare;
pub mod detail;
pub(crate) mod expect;
pub(crate) mod fix_location;
pub(crate) mod floor;
pub(crate) mod gate;
pub(crate) mod github;
pub(crate) mod html;
pub(crate) mod join;
pub(crate) mod judgement;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod merge;
pub(crate) mod model;
pub(crate) mod point;
pub(crate) mod summary;
pub(crate) mod table;
pub(crate) mod terminal;
pub(crate) mod timeline;
pub(crate) mod turn_fate;
pub(crate) mod upgrade;
pub(crate) mod write;

pub use junit::render_junit;
pub use markdown::render_markdown;
pub use model::*;
pub use summary::{fitted_summary, render_summary};
pub use table::render_text;
pub use terminal::{render_terminal, Layout};
pub use upgrade::MAX_REPORT_BYTES;
pub use write::{
    default_run_dir, FolderError, ReadBackError, ReportFiles, RunFolder, RUN_FOLDER_ENTRIES,
    RUN_LOCK_FILE,
};

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod terminal_tests;
#[cfg(test)]
mod tests;
