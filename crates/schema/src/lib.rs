//! The published shape of continuity's output, as serde types and
//! nothing else: `report.json` (schema `continuity.report/v2`: the run,
//! its cells, their attempts, phases, signatures and points, and the typed
//! details a phase's `detail` object is written from), each cell's
//! `trace.jsonl` lines ([`trace::Line`], one [`trace::Event`] per `ev`),
//! the checker's verdict a cell carries, and the JSON events `run
//! --message-format json` prints ([`events::RunMessage`]). Like
//! nextest-metadata for nextest: a tool that only reads what continuity
//! wrote depends on this crate alone, which depends on serde and
//! serde_json only (`tests/layers.rs` holds it to that).
//!
//! The types keep the methods that need nothing but the data (a
//! signature's short form, a cell's label, a point's joins). What renders,
//! judges against expectations, merges, splits into shards or reads and
//! writes a run folder lives above, in `continuity-report`, which
//! re-exports these types under their old paths.

#![forbid(unsafe_code)]

pub mod axis;
pub mod checked;
pub mod client_kind;
pub mod detail;
pub mod events;
pub mod judgement;
pub mod named;
pub mod part;
pub mod point;
pub mod recipe;
pub mod report;
pub mod schedule;
pub mod signature;
pub mod store;
pub mod target;
pub mod trace;
pub mod untrusted;
pub mod wire_name;

pub use client_kind::{ClientKind, ClientRestart, UnknownClient};
pub use part::HarnessPart;
pub use recipe::{FileIdentity, Recipe, ScenarioIdentity};
pub use report::*;
pub use schedule::{FaultKind, Schedule, ScheduledFault};
pub use store::{Store, UnknownStore};
pub use target::TargetName;
