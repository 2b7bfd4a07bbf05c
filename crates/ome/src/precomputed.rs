//! Neuroglancer precomputed layers as multiscale images ([`Layout::Precomputed`]): a layer's
//! scales are the levels, with the axes `x, y, z` (space, nanometres) and `c` (channel) of its
//! arrays; a level's scale is the scale's `resolution`, its translation `voxel_offset ·
//! resolution` (the position of the voxel's corner, as Neuroglancer places it).
//!
//! Precomputed arrays are `x, y, z, channel` and OME-Zarr images `channel, z, y, x` (the channel
//! before the space axes, space axes as `z, y, x`): a conversion between the two reorders the
//! axes ([`axis_order`]) and copies each level chunk by chunk with its axes permuted
//! ([`copy_permuted`]).

use std::sync::Arc;

use neurochunk_array::precomputed::read_layer;
use neurochunk_array::{Array, ArrayBuilder, ArrayBytes, Codec, PrecomputedOptions, Selection};
use neurochunk_store::Store;

use crate::error::{OmeError, OmeResult};
use crate::image::{Axis, Layout, Level, MultiscaleImage};
use crate::write::MultiscaleWriter;

/// The layer at `path` as a multiscale image.
pub(crate) fn open(store: Arc<dyn Store>, path: &str) -> OmeResult<MultiscaleImage> {
    let info = read_layer(store.as_ref(), path)?.ok_or_else(|| {
        OmeError::not_image(path, "it has no Neuroglancer precomputed info document")
    })?;
    if info.scales.is_empty() {
        return Err(OmeError::not_image(path, "its info lists no scales"));
    }
    let space = |name: &str| Axis::new(name, Some("space"), Some("nanometer"));
    let levels = info
        .scales
        .iter()
        .map(|s| {
            let mut scale = s.resolution.to_vec();
            scale.push(1.0);
            let translation = s.voxel_offset.iter().any(|&o| o != 0).then(|| {
                let mut t: Vec<f64> = (0..3)
                    .map(|i| s.voxel_offset[i] as f64 * s.resolution[i])
                    .collect();
                t.push(0.0);
                t
            });
            Level {
                path: s.key.clone(),
                scale,
                translation,
            }
        })
        .collect();
    Ok(MultiscaleImage {
        store,
        path: path.trim_matches('/').to_string(),
        layout: Layout::Precomputed,
        version: None,
        name: None,
        axes: vec![
            space("x"),
            space("y"),
            space("z"),
            Axis::new("c", Some("channel"), None),
        ],
        levels,
        method: None,
        method_metadata: None,
        omero: None,
        labels: Vec::new(),
        image_label: None,
    })
}

/// Nanometres per unit of a spatial axis (no unit: nanometres).
fn nanometres(unit: Option<&str>) -> Option<f64> {
    Some(match unit {
        None | Some("nanometer") | Some("nm") => 1.0,
        Some("angstrom") => 0.1,
        Some("picometer") => 1e-3,
        Some("micrometer") | Some("micron") | Some("um") => 1e3,
        Some("millimeter") => 1e6,
        Some("centimeter") => 1e7,
        Some("meter") => 1e9,
        _ => return None,
    })
}

/// When converting `src` into `layout` reorders its axes: the source axis of each destination
/// axis (precomputed: `x, y, z[, channel]`; OME-Zarr from precomputed: `c, z, y, x`).
pub(crate) fn axis_order(src: &MultiscaleImage, layout: Layout) -> OmeResult<Option<Vec<usize>>> {
    let order = match (
        src.layout == Layout::Precomputed,
        layout == Layout::Precomputed,
    ) {
        (false, true) => {
            let find = |name: &str| {
                src.axes
                    .iter()
                    .position(|a| a.is_spatial() && a.name.eq_ignore_ascii_case(name))
            };
            let (Some(x), Some(y), Some(z)) = (find("x"), find("y"), find("z")) else {
                return Err(OmeError::invalid(
                    &src.path,
                    "precomputed volumes need the spatial axes x, y and z",
                ));
            };
            let mut order = vec![x, y, z];
            for (i, axis) in src.axes.iter().enumerate() {
                if order.contains(&i) {
                    continue;
                }
                if axis.kind.as_deref() == Some("channel") && order.len() == 3 {
                    order.push(i);
                } else {
                    return Err(OmeError::invalid(
                        &src.path,
                        format!(
                            "precomputed volumes have the axes x, y, z and one channel axis; \
                             axis '{}' has no place in them",
                            axis.name
                        ),
                    ));
                }
            }
            order
        }
        // Channel first, then space as z, y, x (OME-Zarr's order, and n5-viewer's as presented).
        (true, false) => vec![3, 2, 1, 0],
        _ => return Ok(None),
    };
    Ok((!order.iter().enumerate().all(|(i, &a)| i == a)).then_some(order))
}

/// `src` described with its axes in `order` (for a precomputed destination, spatial scales
/// and translations in nanometres).
pub(crate) fn permuted(
    src: &MultiscaleImage,
    order: &[usize],
    layout: Layout,
) -> OmeResult<MultiscaleImage> {
    let mut image = src.clone();
    let mut factors = vec![1.0; order.len()];
    if layout == Layout::Precomputed {
        for (i, &a) in order.iter().enumerate().take(3) {
            let unit = src.axes[a].unit.as_deref();
            factors[i] = nanometres(unit).ok_or_else(|| {
                OmeError::invalid(
                    &src.path,
                    format!(
                        "axis '{}' has the unit '{}', which has no length in nanometres",
                        src.axes[a].name,
                        unit.unwrap_or_default()
                    ),
                )
            })?;
        }
    }
    let pick = |values: &[f64]| -> Vec<f64> {
        order
            .iter()
            .zip(&factors)
            .map(|(&a, f)| values[a] * f)
            .collect()
    };
    image.axes = order.iter().map(|&a| src.axes[a].clone()).collect();
    if layout == Layout::Precomputed {
        for axis in image.axes.iter_mut().take(3) {
            axis.unit = Some("nanometer".into());
        }
    }
    for level in &mut image.levels {
        level.scale = pick(&level.scale);
        level.translation = level.translation.as_deref().map(pick);
    }
    Ok(image)
}

/// Copy level `k` of `src` (its array `array`) into `target` of `dst_store` with its axes in
/// `order`, as `writer` describes the destination: chunk by chunk of the destination, each
/// region read from the source, permuted and written. `progress(1)` per chunk.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_permuted(
    array: &Array,
    order: &[usize],
    writer: &MultiscaleWriter,
    k: usize,
    (chunks, codecs): (Option<Vec<usize>>, Option<Vec<Codec>>),
    dst_store: Arc<dyn Store>,
    target: &str,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<()> {
    let src_shape = array.shape();
    let shape: Vec<u64> = order.iter().map(|&a| src_shape[a]).collect();
    let src_chunks = &array.metadata().chunk_shape;
    let chunks = chunks.unwrap_or_else(|| order.iter().map(|&a| src_chunks[a]).collect());
    let mut builder = ArrayBuilder::new(shape.clone(), array.metadata().data_type.clone())
        .format(writer.format())
        .n5_axis_order(writer.n5_axis_order())
        .chunks(crate::write::fit_chunks(&shape, &chunks, None).0);
    if let Some(codecs) = codecs {
        builder = builder.codecs(codecs);
    }
    if let Some(names) = writer.dimension_names() {
        builder = builder.dimension_names(names.into_iter().map(Option::unwrap_or_default));
    }
    if writer.layout() == Layout::Precomputed {
        let (scale, translation) = writer.level_scale(k);
        let resolution = [scale[0], scale[1], scale[2]];
        let offset = |i: usize| {
            translation
                .as_ref()
                .map_or(0, |t| (t[i] / scale[i]).round() as i64)
        };
        builder = builder.precomputed(PrecomputedOptions {
            resolution: Some(resolution),
            voxel_offset: Some([offset(0), offset(1), offset(2)]),
            ..PrecomputedOptions::default()
        });
    }
    let dst = builder.create(dst_store, target)?;
    let dst_chunks = dst.metadata().chunk_shape.clone();
    let element = array.metadata().data_type.fixed_size().ok_or_else(|| {
        OmeError::invalid(
            target,
            "only arrays of fixed-size elements have their axes reordered",
        )
    })?;
    // The destination's chunk grid over the permuted axes (a channel axis the destination
    // added itself is whole in every chunk).
    let grid: Vec<u64> = shape
        .iter()
        .zip(&dst_chunks)
        .map(|(&n, &c)| n.div_ceil(c as u64))
        .collect();
    let count: u64 = grid.iter().product();
    let added = dst.shape().len() - shape.len();
    for flat in 0..count {
        let mut rest = flat;
        let mut start = vec![0u64; shape.len()];
        let mut extent = vec![0u64; shape.len()];
        for i in (0..shape.len()).rev() {
            let g = rest % grid[i];
            rest /= grid[i];
            start[i] = g * dst_chunks[i] as u64;
            extent[i] = (dst_chunks[i] as u64).min(shape[i] - start[i]);
        }
        let mut src_start = vec![0u64; order.len()];
        let mut src_extent = vec![0u64; order.len()];
        for (i, &a) in order.iter().enumerate() {
            src_start[a] = start[i];
            src_extent[a] = extent[i];
        }
        let (read_shape, data) = array.read(&Selection::from_box(&src_start, &src_extent))?;
        let ArrayBytes::Fixed(bytes) = data else {
            return Err(OmeError::invalid(target, "variable-length data"));
        };
        let out = permute(&bytes, &read_shape, order, element);
        let (mut dst_start, mut dst_extent) = (start, extent);
        for _ in 0..added {
            dst_start.push(0);
            dst_extent.push(1);
        }
        dst.write(
            &Selection::from_box(&dst_start, &dst_extent),
            &ArrayBytes::Fixed(out),
        )?;
        progress(1);
    }
    Ok(())
}

/// The C-ordered elements of `bytes` (shape `shape`, `element` bytes each) with their axes in
/// `order` (destination axis `i` is source axis `order[i]`).
fn permute(bytes: &[u8], shape: &[usize], order: &[usize], element: usize) -> Vec<u8> {
    let mut strides = vec![element; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let dst_shape: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
    let dst_strides: Vec<usize> = order.iter().map(|&a| strides[a]).collect();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = vec![0usize; dst_shape.len()];
    if dst_shape.contains(&0) {
        return out;
    }
    loop {
        let at: usize = index.iter().zip(&dst_strides).map(|(i, s)| i * s).sum();
        out.extend_from_slice(&bytes[at..at + element]);
        let mut axis = dst_shape.len();
        loop {
            if axis == 0 {
                return out;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < dst_shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn permute_reverses_and_reorders_axes() {
        // shape (2, 3), one byte each: [[0, 1, 2], [3, 4, 5]].
        let data: Vec<u8> = (0..6).collect();
        assert_eq!(permute(&data, &[2, 3], &[1, 0], 1), [0, 3, 1, 4, 2, 5]);
        assert_eq!(permute(&data, &[2, 3], &[0, 1], 1), data);
        // Two-byte elements keep their bytes together.
        let wide: Vec<u8> = (0..12).collect();
        assert_eq!(
            permute(&wide, &[2, 3], &[1, 0], 2),
            [0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11]
        );
    }
}
