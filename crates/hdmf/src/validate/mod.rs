//! Validation of NWB files against their specifications.

pub mod schema;
