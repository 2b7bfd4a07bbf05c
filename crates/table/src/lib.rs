//! neurarrow tables for neurochunk.
//!
//! Skeletons, point clouds, dotprops and connections as Arrow tables following
//! the neurarrow 0.2 specification: schemas as data with computed inheritance
//! ([`schema`]), a validator grading every MUST and SHOULD ([`validate`],
//! [`rules`]), Arrow IPC / Parquet / Hive-partitioned Parquet IO that streams
//! record batches through any [`neurochunk_store::Store`] ([`io`]), derived
//! fields ([`derive`](mod@derive)), SWC import and export ([`swc`]), table summaries
//! ([`info`]) and a demo ([`demo`](mod@demo)).
//!
//! Not in scope: chunked N-d arrays (see the array crate) and NWB.

pub mod demo;
pub mod derive;
pub mod error;
pub mod info;
pub mod io;
pub mod pep440;
pub mod rules;
pub mod schema;
pub mod swc;
pub mod synth;
pub mod tree;
pub mod validate;

pub use demo::demo;
pub use error::{Result, TableError};
pub use io::{Format, TableSource, TableWriter, WriteOptions};
pub use rules::RuleId;
pub use schema::{Registry, SPEC_VERSION};
pub use validate::{
    validate_path, validate_paths, validate_sources, Severity, TableReport, ValidateOptions,
    Violation,
};
