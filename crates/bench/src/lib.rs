//! Side-by-side benchmark harness for neurochunk.
//!
//! The harness compares neurochunk with a peer implementation on the same data, in one run,
//! and reports throughput ratios. It is split in two so that the peer (the `zarrs` crate) stays
//! a dev-dependency: this library holds everything that does not need the peer (test data,
//! row definitions, the neurochunk side, the child-process protocol, RSS readings, the table),
//! and the `arrays` bench target (`benches/arrays.rs`) adds the zarrs side and calls
//! [`harness::main`].
//!
//! Every (library, row, operation) is measured in a fresh child process (the bench executable
//! re-executed with `--child …`) so that the peak resident set size read from
//! `/proc/self/status` belongs to that one measurement.

pub mod codec_rows;
pub mod error;
pub mod harness;
pub mod neurochunk_side;
pub mod nwb_bench;
pub mod nwb_rows;
pub mod protocol;
pub mod rows;
pub mod rss;
pub mod table_bench;
pub mod table_rows;
pub mod volume;

pub use error::{BenchError, BenchResult, Context};
pub use rows::{
    Compression, Element, Format, Layout, Library, Op, Row, Serializer, CODEC_ROWS, ROWS,
};
