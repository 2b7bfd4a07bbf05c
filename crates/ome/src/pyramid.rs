//! The pyramid builder: a multiscale image from one array, each level computed from the
//! previous one by streaming chunk-aligned blocks in parallel.

use std::sync::Arc;

use neurochunk_array::{Array, Codec, Store};

use crate::error::{OmeError, OmeResult};
use crate::image::{Axis, Layout, MultiscaleImage};
use crate::kernels::Method;

/// How each level's downsampling factors are chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Factors {
    /// The same factor per axis at every level (an axis already of length 1 keeps 1).
    Explicit(Vec<u64>),
    /// 2 on spatial axes, 1 elsewhere, halving first the spatial axes whose voxels are finer
    /// than the coarsest one by more than √2 (see docs/ome.md).
    AutoIsotropic,
}

/// What [`build_pyramid`] writes.
#[derive(Clone, Debug)]
pub struct PyramidOptions {
    /// Number of levels, level 0 (the copy of the source) included.
    pub levels: usize,
    /// The downsampling method.
    pub method: Method,
    /// The factors; `None` is 2 on spatial axes and 1 on the others.
    pub factors: Option<Factors>,
    /// The target layout.
    pub format: Layout,
    /// Chunk shape (inner chunk shape when sharded), clipped to each level's shape; default 64
    /// on spatial axes, 1 on others.
    pub chunks: Option<Vec<usize>>,
    /// Shard shape (OME-Zarr 0.5 only), clipped likewise.
    pub shards: Option<Vec<usize>>,
    /// Compressions (bytes→bytes codecs); `None`: the format's default.
    pub codecs: Option<Vec<Codec>>,
    /// Axis names; default the source's dimension names, else `t, c, z, y, x` ending in `x`.
    pub axes: Option<Vec<String>>,
    /// Axis types (`space`, `time`, `channel`, custom); default from the names.
    pub axis_types: Option<Vec<String>>,
    /// Units per axis (empty string: none).
    pub units: Option<Vec<String>>,
    /// Level 0 voxel size per axis (default 1).
    pub scale: Option<Vec<f64>>,
    /// Level 0 translation per axis (default none).
    pub translation: Option<Vec<f64>>,
    /// The image name.
    pub name: Option<String>,
}

impl PyramidOptions {
    /// `levels` levels with `method`, written as `format`, everything else by default.
    pub fn new(levels: usize, method: Method, format: Layout) -> Self {
        PyramidOptions {
            levels,
            method,
            factors: None,
            format,
            chunks: None,
            shards: None,
            codecs: None,
            axes: None,
            axis_types: None,
            units: None,
            scale: None,
            translation: None,
            name: None,
        }
    }
}

/// The factors of each level transition (`levels - 1` rows): level k+1 = level k / row k.
pub fn level_factors(
    axes: &[Axis],
    shape: &[u64],
    scale: &[f64],
    levels: usize,
    factors: Option<&Factors>,
    path: &str,
) -> OmeResult<Vec<Vec<u64>>> {
    let _ = (axes, shape, scale, levels, factors);
    Err(OmeError::invalid(path, "pyramids are not built yet"))
}

/// Build a multiscale image from `src` at `dst_path` of `dst_store`: level 0 is a copy of the
/// source, level k+1 is level k downsampled. `progress(n)` counts written chunks.
pub fn build_pyramid(
    src: &Array,
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &PyramidOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<MultiscaleImage> {
    let _ = (dst_store, dst_path, options, progress);
    Err(OmeError::invalid(src.path(), "pyramids are not built yet"))
}
