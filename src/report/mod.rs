//! Reports: the matrix model (`report.json`, schema v1) and its renderings.
//! Only this module knows about comfy-table and quick-junit.

pub mod model;

pub use model::*;
