//! Reports: the matrix model (`report.json`, schema v1) and its renderings.
//! Only this module knows about comfy-table and quick-junit.

pub mod compare;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod model;
pub mod table;
pub mod timeline;
pub mod write;

pub use junit::render_junit;
pub use markdown::render_markdown;
pub use model::*;
pub use table::{render_summary, render_text};
pub use write::{default_run_dir, write_report_dir, ReportFiles};

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;
