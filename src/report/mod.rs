//! Reports: the matrix model (`report.json`, schema v2) and its renderings.
//! Only this module knows about comfy-table and quick-junit.

pub mod attempts;
pub mod baseline;
pub mod clients;
pub mod compare;
pub mod expect;
pub mod fix_location;
pub mod gate;
pub mod github;
pub mod html;
pub mod judgement;
pub mod junit;
pub mod markdown;
pub mod merge;
pub mod model;
pub mod table;
pub mod timeline;
pub mod upgrade;
pub mod versions;
pub mod write;

pub use junit::render_junit;
pub use markdown::render_markdown;
pub use model::*;
pub use table::{render_summary, render_text};
pub use write::{default_run_dir, FolderError, ReportFiles, RunFolder, RUN_FOLDER_ENTRIES};

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;
