#![warn(missing_docs)]
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
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt64Array};
//! use neurochunk_store::{MemoryStore, Store};
//! use neurochunk_table::synth::{base_metadata, canonical_schema};
//! use neurochunk_table::validate::validate_source;
//! use neurochunk_table::{TableSource, TableWriter, ValidateOptions, WriteOptions};
//!
//! // One neuron of three samples: a root and two children, coordinates in nanometres.
//! let metadata = base_metadata("urn:uuid:1b4e28ba-doc", Some("nanometer"));
//! let schema = canonical_schema("skeletons", &[], &metadata);
//! let columns: Vec<ArrayRef> = vec![
//!     Arc::new(UInt64Array::from(vec![1, 2, 3])),                   // sample_id
//!     Arc::new(UInt64Array::from(vec![7, 7, 7])),                   // fragment_id
//!     Arc::new(Float64Array::from(vec![0.0, 10.0, 20.0])),          // x
//!     Arc::new(Float64Array::from(vec![0.0, 0.0, 5.0])),            // y
//!     Arc::new(Float64Array::from(vec![0.0, 0.0, 0.0])),            // z
//!     Arc::new(UInt64Array::from(vec![None, Some(1), Some(1)])),    // parent_id
//! ];
//! let batch = RecordBatch::try_new(schema.clone(), columns)?;
//!
//! // Write it as Parquet (chosen from the key's extension) into a store.
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let key = "tables/neuron.skeletons.parquet";
//! let mut writer = TableWriter::create_in(store.clone(), key, schema, &WriteOptions::default())?;
//! writer.write(&batch)?;
//! assert_eq!(writer.finish()?, 3);
//!
//! // Read it back in record batches, and grade it against the specification.
//! let table = TableSource::open_store(store, key)?;
//! assert_eq!(table.num_rows()?, 3);
//! let mut read = 0;
//! for batch in table.batches(1024)? {
//!     read += batch?.num_rows();
//! }
//! assert_eq!(read, 3);
//! let report = validate_source(&table, &ValidateOptions::default());
//! assert!(report.is_valid(), "{:?}", report.lines());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Not in scope: chunked N-d arrays (see the array crate) and NWB.

pub mod annotation;
pub mod demo;
pub mod derive;
pub mod error;
pub mod info;
pub mod io;
pub mod mesh;
pub mod pep440;
pub mod precomputed;
pub mod rules;
pub mod schema;
pub mod swc;
pub mod synth;
pub mod tree;
pub mod validate;

pub use demo::{demo, demo_in_store, demo_with};
pub use error::{Result, TableError};
pub use io::{Durability, Format, RowFilter, TableSource, TableTarget, TableWriter, WriteOptions};
pub use rules::RuleId;
pub use schema::{Registry, SPEC_VERSION};
pub use validate::{
    validate_path, validate_paths, validate_sources, Severity, TableReport, ValidateOptions,
    Violation,
};
