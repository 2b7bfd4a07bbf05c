//! The pyramid builder: a multiscale image from one array, each level computed from the
//! previous one by streaming chunk-aligned blocks in parallel.
//!
//! Every level's array is created first. When the chunk grids nest, [`crate::stream`] builds
//! all levels in one pass over the source, each chunk of level k+1 reduced from level k's
//! chunks held in memory. Otherwise the levels are built one after another: level 0 is the
//! source copied with the array layer's conversion (`copy_data`), and level k+1 is written
//! chunk by chunk (shard by shard when sharded, so no two tasks touch one stored value)
//! through the array layer's `write_chunks`: each task reads the box of level k its output
//! chunk covers (a chunk-aligned region, decoded in parallel), reduces it with the typed
//! kernel of [`crate::kernels`] and encodes the result. Batches hold a few output chunks and
//! their input boxes, so memory is bounded by the chunk size, never the level size.

use std::sync::Arc;

use neurochunk_array::convert::{
    copy_data, copy_stored_chunks, derive_metadata, write_chunks, ConvertOptions, SourceAdapter,
};
use neurochunk_array::{
    Array, ArrayBytes, ArrayError, ArrayMetadata, Codec, N5AxisOrder, Selection, Store,
};
use serde_json::json;

use crate::error::{OmeError, OmeResult};
use crate::image::{Axis, Layout, MultiscaleImage};
use crate::kernels::{downsample_block, Method};
use crate::stream;
use crate::write::{fit_chunks, MultiscaleWriter};

/// How each level's downsampling factors are chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Factors {
    /// The same factor per axis at every level (an axis already of length 1 keeps 1).
    Explicit(Vec<u64>),
    /// 2 on spatial axes, 1 elsewhere, halving first the spatial axes whose voxels are finer
    /// than the coarsest one by more than √2 (see docs/ome.md).
    AutoIsotropic,
}

impl Factors {
    /// `auto-isotropic`, or factors separated by commas (`2,2,2`).
    pub fn parse(text: &str) -> Result<Factors, String> {
        if text == "auto-isotropic" {
            return Ok(Factors::AutoIsotropic);
        }
        text.split(',')
            .map(|f| match f.trim().parse::<u64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!(
                    "factors must be positive integers separated by commas or 'auto-isotropic', not '{text}'"
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Factors::Explicit)
    }
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
    /// on spatial axes of 3-D images (256 for 2-D), 1 on others.
    pub chunks: Option<Vec<usize>>,
    /// Shard shape (OME-Zarr 0.5 only), clipped likewise.
    pub shards: Option<Vec<usize>>,
    /// Compressions (bytes→bytes codecs); `None`: the source's (level 0 is then a copy of the
    /// source's chunks, stored bytes and all, when the chunking matches too).
    pub codecs: Option<Vec<Codec>>,
    /// Axis names; default the source's dimension names, else the last three `z, y, x` with
    /// `t`, `c` before them.
    pub axes: Option<Vec<String>>,
    /// Axis types (`space`, `time`, `channel`, custom); default from the names.
    pub axis_types: Option<Vec<String>>,
    /// Units per axis (an empty string: none).
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

/// The factors of each level transition (`levels - 1` rows; level k+1 = level k / row k),
/// from level 0's `shape` and `scale`. Errors, naming `path`, when a level would not shrink
/// (every axis to downsample already of length 1).
pub fn level_factors(
    axes: &[Axis],
    shape: &[u64],
    scale: &[f64],
    levels: usize,
    factors: Option<&Factors>,
    path: &str,
) -> OmeResult<Vec<Vec<u64>>> {
    let rank = shape.len();
    if let Some(Factors::Explicit(f)) = factors {
        if f.len() != rank || f.contains(&0) {
            return Err(OmeError::invalid(
                path,
                format!("factors {f:?} must give {rank} positive integers, one per axis"),
            ));
        }
    }
    let spatial: Vec<bool> = axes.iter().map(Axis::is_spatial).collect();
    let mut shape = shape.to_vec();
    let mut scale = scale.to_vec();
    let mut rows = Vec::new();
    for k in 1..levels {
        let wanted: Vec<u64> = match factors {
            Some(Factors::Explicit(f)) => f.clone(),
            None => spatial.iter().map(|&s| if s { 2 } else { 1 }).collect(),
            Some(Factors::AutoIsotropic) => {
                let live = |d: usize| spatial[d] && shape[d] > 1;
                let coarsest = (0..rank)
                    .filter(|&d| live(d))
                    .map(|d| scale[d])
                    .fold(f64::NEG_INFINITY, f64::max);
                let fine: Vec<u64> = (0..rank)
                    .map(|d| {
                        u64::from(live(d) && scale[d] < coarsest / std::f64::consts::SQRT_2) + 1
                    })
                    .collect();
                if fine.iter().any(|&f| f > 1) {
                    fine
                } else {
                    spatial.iter().map(|&s| if s { 2 } else { 1 }).collect()
                }
            }
        };
        let row: Vec<u64> = wanted
            .iter()
            .zip(&shape)
            .map(|(&f, &n)| if n <= 1 { 1 } else { f })
            .collect();
        if row.iter().all(|&f| f == 1) {
            return Err(OmeError::invalid(
                path,
                format!(
                    "cannot build {levels} levels: level {k} would not be smaller than level {} \
                     (shape {shape:?}; every axis to downsample is already of length 1), at most \
                     {k} levels",
                    k - 1
                ),
            ));
        }
        for d in 0..rank {
            shape[d] = shape[d].div_ceil(row[d]);
            scale[d] *= row[d] as f64;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The axes of the image from the options and the source array.
fn resolve_axes(src: &Array, options: &PyramidOptions) -> OmeResult<Vec<Axis>> {
    let rank = src.shape().len();
    let path = src.path();
    let count = |what: &str, n: usize| -> OmeResult<()> {
        if n != rank {
            return Err(OmeError::invalid(
                path,
                format!("{what} gives {n} values, the array has {rank} dimensions"),
            ));
        }
        Ok(())
    };
    let names: Vec<String> = match &options.axes {
        Some(names) => {
            count("the axis names", names.len())?;
            names.clone()
        }
        None => match &src.metadata().dimension_names {
            Some(names)
                if names
                    .iter()
                    .all(|n| n.as_ref().is_some_and(|n| !n.is_empty())) =>
            {
                names.iter().flatten().cloned().collect()
            }
            _ => {
                let defaults = ["t", "c", "z", "y", "x"];
                if rank > defaults.len() {
                    return Err(OmeError::invalid(
                        path,
                        format!("{rank} dimensions: give the axis names"),
                    ));
                }
                defaults[defaults.len() - rank..]
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            }
        },
    };
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(OmeError::invalid(
            path,
            format!("axis name '{dup}' is given twice"),
        ));
    }
    if let Some(types) = &options.axis_types {
        count("the axis types", types.len())?;
    }
    if let Some(units) = &options.units {
        count("the units", units.len())?;
    }
    Ok(names
        .iter()
        .enumerate()
        .map(|(d, name)| {
            let kind = match &options.axis_types {
                Some(types) => Some(types[d].clone()).filter(|t| !t.is_empty()),
                None => match name.to_ascii_lowercase().as_str() {
                    "x" | "y" | "z" => Some("space".to_string()),
                    "t" | "time" => Some("time".to_string()),
                    "c" | "channel" => Some("channel".to_string()),
                    _ => None,
                },
            };
            let unit = options
                .units
                .as_ref()
                .map(|u| u[d].clone())
                .filter(|u| !u.is_empty());
            Axis {
                name: name.clone(),
                kind,
                unit,
            }
        })
        .collect())
}

/// Output chunks whose input boxes together stay under this many bytes per batch.
const BATCH_BYTES: usize = 256 << 20;

/// A large output chunk (a shard) is computed in slabs reading at most about this many bytes.
const SLAB_BYTES: u64 = 32 << 20;

/// Build a multiscale image from `src` at `dst_path` of `dst_store` (which should be empty
/// there): level 0 is a copy of the source, level k+1 is level k downsampled with
/// `options.method`. `progress(n)` counts written chunks (shards when sharded) of all levels;
/// [`pyramid_chunk_count`] gives their total.
pub fn build_pyramid(
    src: &Array,
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &PyramidOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<MultiscaleImage> {
    let plan = Plan::new(src, options)?;
    plan.writer.write(&dst_store, dst_path)?;
    let levels = plan
        .shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let level_path =
                neurochunk_store::join_key(dst_path.trim_matches('/'), &plan.writer.level_path(k));
            Ok(Array::create(
                dst_store.clone(),
                &level_path,
                plan.metadata(k, shape)?,
            )?)
        })
        .collect::<OmeResult<Vec<Array>>>()?;
    if stream::streamable(&levels, &plan.factors) {
        // All levels in one pass, each from the one below held in memory.
        stream::build(src, &levels, &plan.factors, options.method, progress)?;
    } else {
        // Level by level, each read back from the store.
        for (k, level) in levels.iter().enumerate() {
            if k == 0 {
                // Level 0 is the source: its chunks as stored when the encoding is the same.
                if !copy_stored_chunks(src, level, progress)? {
                    copy_data(src, level, progress)?
                }
            } else {
                downsample_level(
                    &levels[k - 1],
                    level,
                    &plan.factors[k - 1],
                    options.method,
                    progress,
                )?
            }
        }
    }
    if options.format == Layout::N5Bdv {
        // The BigDataViewer XML records level 0's size: written again now that it exists.
        plan.writer.write(&dst_store, dst_path)?;
    }
    MultiscaleImage::open(dst_store, dst_path)
}

/// The number of chunks (shards when sharded) [`build_pyramid`] writes, for progress bars.
pub fn pyramid_chunk_count(src: &Array, options: &PyramidOptions) -> OmeResult<u64> {
    let plan = Plan::new(src, options)?;
    Ok(plan
        .shapes
        .iter()
        .map(|shape| {
            let (chunks, shards) = plan.chunking(shape);
            let grid = shards.unwrap_or(chunks);
            shape
                .iter()
                .zip(&grid)
                .map(|(&n, &c)| n.div_ceil(c as u64))
                .product::<u64>()
        })
        .sum())
}

/// Everything decided before writing: axes, level shapes, factors, the metadata writer.
struct Plan {
    source: ArrayMetadata,
    shapes: Vec<Vec<u64>>,
    factors: Vec<Vec<u64>>,
    chunks: Vec<usize>,
    shards: Option<Vec<usize>>,
    codecs: Option<Vec<Codec>>,
    writer: MultiscaleWriter,
}

impl Plan {
    fn new(src: &Array, options: &PyramidOptions) -> OmeResult<Plan> {
        let path = src.path();
        let meta = src.metadata();
        let shape = meta.shape.clone();
        let rank = shape.len();
        if options.levels == 0 {
            return Err(OmeError::invalid(path, "a pyramid needs at least 1 level"));
        }
        if rank == 0 || shape.contains(&0) {
            return Err(OmeError::invalid(
                path,
                format!(
                    "an image needs at least one axis and no empty ones, the shape is {shape:?}"
                ),
            ));
        }
        // Refuse data types the kernels cannot reduce before writing anything.
        let probe = vec![0u8; meta.data_type.fixed_size().unwrap_or(0)];
        downsample_block(
            &meta.data_type,
            &probe,
            &vec![1; rank],
            &vec![1; rank],
            options.method,
        )
        .map_err(|e| OmeError::invalid(path, e))?;
        let axes = resolve_axes(src, options)?;
        let layout = options.format;
        if layout == Layout::N5Bdv && (rank != 3 || !axes.iter().all(Axis::is_spatial)) {
            return Err(OmeError::invalid(
                path,
                "BigDataViewer N5 holds 3-D images with three spatial axes (use n5-viewer or \
                 OME-Zarr for others)",
            ));
        }
        if options.shards.is_some() && layout != Layout::OmeZarr05 {
            return Err(OmeError::invalid(
                path,
                format!("shards need OME-Zarr 0.5 (Zarr v3), not {layout}"),
            ));
        }
        let scale0 = match &options.scale {
            Some(s) if s.len() != rank || s.iter().any(|v| !(v.is_finite() && *v > 0.0)) => {
                return Err(OmeError::invalid(
                    path,
                    format!("the scale must give {rank} positive numbers, one per axis"),
                ))
            }
            Some(s) => s.clone(),
            None => vec![1.0; rank],
        };
        if let Some(t) = &options.translation {
            if t.len() != rank || t.iter().any(|v| !v.is_finite()) {
                return Err(OmeError::invalid(
                    path,
                    format!("the translation must give {rank} numbers, one per axis"),
                ));
            }
        }
        let factors = level_factors(
            &axes,
            &shape,
            &scale0,
            options.levels,
            options.factors.as_ref(),
            path,
        )?;
        let mut shapes = vec![shape.clone()];
        let mut cumulative = vec![1u64; rank];
        let mut scales = vec![(scale0.clone(), options.translation.clone())];
        for row in &factors {
            let last = shapes.last().cloned().unwrap_or_default();
            shapes.push(last.iter().zip(row).map(|(&n, &f)| n.div_ceil(f)).collect());
            for d in 0..rank {
                cumulative[d] *= row[d];
            }
            let scale: Vec<f64> = (0..rank)
                .map(|d| scale0[d] * cumulative[d] as f64)
                .collect();
            let translation: Vec<f64> = (0..rank)
                .map(|d| {
                    options.translation.as_ref().map_or(0.0, |t| t[d])
                        + (cumulative[d] as f64 - 1.0) * scale0[d] / 2.0
                })
                .collect();
            scales.push((scale, Some(translation)));
        }
        let chunks = match &options.chunks {
            Some(c) if c.len() != rank || c.contains(&0) => {
                return Err(OmeError::invalid(
                    path,
                    format!("the chunk shape must give {rank} positive sizes"),
                ))
            }
            Some(c) => c.clone(),
            None => {
                let spatial = axes.iter().filter(|a| a.is_spatial()).count();
                let side = if spatial <= 2 { 256 } else { 64 };
                axes.iter()
                    .map(|a| if a.is_spatial() { side } else { 1 })
                    .collect()
            }
        };
        if let Some(s) = &options.shards {
            if s.len() != rank || s.contains(&0) {
                return Err(OmeError::invalid(
                    path,
                    format!("the shard shape must give {rank} positive sizes"),
                ));
            }
        }
        let writer = MultiscaleWriter::new(layout, axes, scales)
            .data_type(src.metadata().data_type.clone())
            .name(options.name.clone())
            .method(
                Some(options.method.name().to_string()),
                Some(json!({
                    "description": format!(
                        "block {} over factors per level; edge blocks use the voxels that exist",
                        options.method
                    ),
                    "method": "neurochunk build_pyramid",
                    "version": env!("CARGO_PKG_VERSION"),
                    "kwargs": {"factors": factors},
                })),
            );
        let plan = Plan {
            source: meta.clone(),
            shapes,
            factors,
            chunks,
            shards: options.shards.clone(),
            codecs: options.codecs.clone(),
            writer,
        };
        // Refuse chunkings and codecs the format cannot hold before writing anything.
        for (k, shape) in plan.shapes.iter().enumerate() {
            plan.metadata(k, shape)?;
        }
        Ok(plan)
    }

    fn chunking(&self, shape: &[u64]) -> (Vec<usize>, Option<Vec<usize>>) {
        fit_chunks(shape, &self.chunks, self.shards.as_deref())
    }

    /// Level `k`'s description: the source's, re-described for the target format with the
    /// chosen chunks, shards and codecs (the source's codecs when none are given), shaped
    /// like the level, with the level's attributes and dimension names.
    fn metadata(&self, k: usize, shape: &[u64]) -> OmeResult<ArrayMetadata> {
        let (chunks, shards) = self.chunking(shape);
        let attributes = self.writer.level_attributes(k);
        let names = self.writer.dimension_names();
        let shape = shape.to_vec();
        let options = ConvertOptions {
            format: Some(self.writer.format()),
            chunks: Some(chunks),
            shards,
            compressors: self.codecs.clone(),
            n5_axis_order: N5AxisOrder::Reversed,
            source_adapter: Some(SourceAdapter::new(move |meta| {
                meta.shape = shape.clone();
                meta.attributes = attributes.clone();
                meta.dimension_names = names.clone();
            })),
            ..ConvertOptions::default()
        };
        let path = self.writer.level_path(k);
        Ok(derive_metadata(&self.source, &options, &path)?)
    }
}

/// Write `level` from `prev` reduced by `factors`, one output chunk (shard) per task.
fn downsample_level(
    prev: &Array,
    level: &Array,
    factors: &[u64],
    method: Method,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<()> {
    let meta = level.metadata();
    let element = meta.data_type.fixed_size().unwrap_or(1);
    let chunk_elements: usize = meta.chunk_shape.iter().product();
    let block: u64 = factors.iter().product();
    let per_task = chunk_elements
        .saturating_mul(element)
        .saturating_mul(block as usize + 1);
    let batch = (BATCH_BYTES / per_task.max(1)).clamp(1, rayon::current_num_threads() * 4);
    let factors_usize: Vec<usize> = factors.iter().map(|&f| f as usize).collect();
    let prev_shape = prev.shape().to_vec();
    // One output box is made slab by slab along the first axis, each slab from the input
    // rows it covers, so a large output chunk (a shard) never holds its whole input box.
    let prev_chunk0 = prev.metadata().chunk_shape.first().copied().unwrap_or(1) as u64;
    let f0 = factors.first().copied().unwrap_or(1);
    let slab = |origin: &[u64], extent: &[u64]| -> Result<Vec<u8>, ArrayError> {
        let in_origin: Vec<u64> = origin.iter().zip(factors).map(|(&o, &f)| o * f).collect();
        let in_extent: Vec<u64> = (0..origin.len())
            .map(|d| ((origin[d] + extent[d]) * factors[d]).min(prev_shape[d]) - in_origin[d])
            .collect();
        let (_, data) = prev.read(&Selection::from_box(&in_origin, &in_extent))?;
        let ArrayBytes::Fixed(bytes) = data else {
            return Err(ArrayError::Unsupported {
                path: neurochunk_array::display_path(prev.path()),
                message: "variable-length elements cannot be downsampled".into(),
            });
        };
        let in_shape: Vec<usize> = in_extent.iter().map(|&e| e as usize).collect();
        downsample_block(&meta.data_type, &bytes, &in_shape, &factors_usize, method).map_err(
            |message| ArrayError::Unsupported {
                path: neurochunk_array::display_path(level.path()),
                message,
            },
        )
    };
    let produce = |origin: &[u64], extent: &[u64]| -> Result<ArrayBytes, ArrayError> {
        if extent.is_empty() {
            return slab(origin, extent).map(ArrayBytes::Fixed);
        }
        // Input bytes of one output row of the first axis.
        let row_in: u64 = extent[1..]
            .iter()
            .zip(&factors[1..])
            .map(|(&e, &f)| e * f)
            .product::<u64>()
            * f0
            * element as u64;
        // Slabs of whole input chunks of the previous level, within the budget.
        let unit = prev_chunk0.div_ceil(f0).max(1);
        let rows = ((SLAB_BYTES / row_in.max(1)) / unit).max(1) * unit;
        if rows >= extent[0] {
            return slab(origin, extent).map(ArrayBytes::Fixed);
        }
        let mut out = Vec::with_capacity(extent.iter().product::<u64>() as usize * element);
        let mut start = 0;
        while start < extent[0] {
            let take = rows.min(extent[0] - start);
            let mut o = origin.to_vec();
            let mut e = extent.to_vec();
            o[0] += start;
            e[0] = take;
            out.extend_from_slice(&slab(&o, &e)?);
            start += take;
        }
        Ok(ArrayBytes::Fixed(out))
    };
    let grid = meta.grid_shape();
    let total: u64 = grid.iter().product();
    let indices = (0..total).map(|i| {
        let mut rest = i;
        let mut index = vec![0u64; grid.len()];
        for d in (0..grid.len()).rev() {
            index[d] = rest % grid[d];
            rest /= grid[d];
        }
        index
    });
    write_chunks(level, indices, batch, &produce, progress)?;
    Ok(())
}
