//! Label images of an OME-Zarr image: a segmentation stored as a multiscale image of its own
//! at `labels/NAME` inside the image, listed by the `labels` group and marked with
//! `image-label` metadata, its levels on the image's grid.
//!
//! [`label_pyramid_options`] derives a pyramid's options from the image (axes, units, voxel
//! size, translation, the factors of its levels, its layout), so that [`build_pyramid`]
//! builds the label's levels on the image's grid; [`add_label`] checks that they are and
//! registers the label.
//!
//! [`build_pyramid`]: crate::build_pyramid

use std::sync::Arc;

use neurochunk_array::{create_group, open_node, DataType, NodeMetadata, Store};
use neurochunk_store::join_key;
use serde_json::{json, Map, Value};

use crate::error::{OmeError, OmeResult};
use crate::image::{Layout, MultiscaleImage};
use crate::kernels::Method;
use crate::pyramid::{level_factors, Factors, PyramidOptions};

/// The options that build a label pyramid of a `source_shape` array on the grid of `image`:
/// the image's layout, axes (without its channel axes when the label has fewer dimensions),
/// units, level 0 voxel size and translation, and the factors between its levels (as one
/// factor per axis, or `auto-isotropic` when that reproduces them); `levels` defaults to the
/// image's count. The label must have the image's level 0 shape on those axes. `method` is
/// usually [`Method::Mode`] (the most frequent label of each block).
pub fn label_pyramid_options(
    image: &MultiscaleImage,
    source_shape: &[u64],
    levels: Option<usize>,
    method: Method,
) -> OmeResult<PyramidOptions> {
    let image_path = image.path();
    if !image.layout().is_ome_zarr() {
        return Err(OmeError::invalid(
            image_path,
            format!(
                "label images belong to OME-Zarr images; this is {}",
                image.layout()
            ),
        ));
    }
    let axes = label_axes(image, source_shape.len())?;
    let image_shape = image.level_array(0)?.shape().to_vec();
    let on_axes = |values: &[u64]| -> Vec<u64> { axes.iter().map(|&d| values[d]).collect() };
    if on_axes(&image_shape) != source_shape {
        return Err(OmeError::invalid(
            image_path,
            format!(
                "a label of shape {source_shape:?} does not cover the image's level 0, {:?} on \
                 axes {}",
                on_axes(&image_shape),
                axis_names(image, &axes)
            ),
        ));
    }
    let levels = levels.unwrap_or(image.levels().len());
    if levels > image.levels().len() {
        return Err(OmeError::invalid(
            image_path,
            format!(
                "the image has {} levels; a label cannot have more ({levels})",
                image.levels().len()
            ),
        ));
    }
    let scale: Vec<f64> = axes.iter().map(|&d| image.levels()[0].scale[d]).collect();
    // The factors between the image's levels, on the label's axes.
    let mut rows: Vec<Vec<u64>> = Vec::new();
    let mut previous = source_shape.to_vec();
    for k in 1..levels {
        let shape = on_axes(image.level_array(k)?.shape());
        let row: Vec<u64> = previous
            .iter()
            .zip(&shape)
            .map(|(&p, &n)| if n == 0 { 1 } else { p.div_ceil(n).max(1) })
            .collect();
        rows.push(row);
        previous = shape;
    }
    let label_axes: Vec<_> = axes.iter().map(|&d| image.axes()[d].clone()).collect();
    let factors = [
        rows.first().map(|row| Factors::Explicit(row.clone())),
        Some(Factors::AutoIsotropic),
    ]
    .into_iter()
    .flatten()
    .find(|f| {
        level_factors(
            &label_axes,
            source_shape,
            &scale,
            levels,
            Some(f),
            image_path,
        )
        .is_ok_and(|derived| derived == rows)
    })
    .ok_or_else(|| {
        OmeError::invalid(
            image_path,
            format!(
                "the image's levels are not built with one factor per axis or auto-isotropic \
                 factors (factors {rows:?}); a label pyramid cannot follow them"
            ),
        )
    })?;
    let mut options = PyramidOptions::new(levels, method, image.layout());
    options.factors = Some(factors);
    options.axes = Some(label_axes.iter().map(|a| a.name.clone()).collect());
    // Types as the image states them (an axis without one gets the default of its name).
    options.axis_types = label_axes
        .iter()
        .map(|a| a.kind.clone())
        .collect::<Option<Vec<String>>>();
    options.units = Some(
        label_axes
            .iter()
            .map(|a| a.unit.clone().unwrap_or_default())
            .collect(),
    );
    options.scale = Some(scale);
    options.translation = image.levels()[0]
        .translation
        .as_ref()
        .map(|t| axes.iter().map(|&d| t[d]).collect());
    Ok(options)
}

/// Register the multiscale image at `labels/NAME` of the OME-Zarr image at `image_path` as
/// one of its label images: its levels must lie on the image's grid (the shapes of the
/// image's levels on the label's axes) and hold integers; the label group gains
/// `image-label` metadata pointing at the image (`source.image` = `../../`, existing
/// `colors`/`properties` kept) and the `labels` group lists `NAME` (created when missing).
/// Returns the label image.
pub fn add_label(
    store: &Arc<dyn Store>,
    image_path: &str,
    name: &str,
) -> OmeResult<MultiscaleImage> {
    let image_path = image_path.trim_matches('/');
    let label_path = label_path(image_path, name)?;
    let image = MultiscaleImage::open(store.clone(), image_path)?;
    let labels_path = join_key(image_path, "labels");
    let label = MultiscaleImage::open(store.clone(), &label_path)?;
    if label.layout() != image.layout() {
        return Err(OmeError::invalid(
            &label_path,
            format!(
                "the label is {}, its image {}",
                label.layout(),
                image.layout()
            ),
        ));
    }
    let axes = label_axes(&image, label.axes().len())?;
    for k in 0..label.levels().len().min(image.levels().len()) {
        let array = label.level_array(k)?;
        if !is_integer(&array.metadata().data_type) {
            return Err(OmeError::invalid(
                &label_path,
                format!(
                    "label level {k} holds {}, not integers",
                    array.metadata().data_type
                ),
            ));
        }
        let image_shape = image.level_array(k)?.shape().to_vec();
        let want: Vec<u64> = axes.iter().map(|&d| image_shape[d]).collect();
        if array.shape() != want.as_slice() {
            return Err(OmeError::invalid(
                &label_path,
                format!(
                    "label level {k} has shape {:?}; the image's level {k} is {want:?} on axes {}",
                    array.shape(),
                    axis_names(&image, &axes)
                ),
            ));
        }
    }
    let layout = image.layout();
    update_ome_attributes(store.as_ref(), &label_path, layout, |ome| {
        let mut entry = match ome.remove("image-label") {
            Some(Value::Object(existing)) => existing,
            _ => Map::new(),
        };
        if layout == Layout::OmeZarr04 {
            entry.insert("version".into(), json!("0.4"));
        }
        entry.insert("source".into(), json!({"image": "../../"}));
        ome.insert("image-label".into(), Value::Object(entry));
    })?;
    let group_exists = matches!(
        open_node(store.as_ref(), &labels_path).map(|n| n.metadata),
        Ok(NodeMetadata::Group(_))
    );
    if !group_exists {
        create_group(store.as_ref(), &labels_path, layout.format(), Map::new())?;
    }
    update_ome_attributes(store.as_ref(), &labels_path, layout, |ome| {
        let mut names: Vec<Value> = match ome.remove("labels") {
            Some(Value::Array(names)) => names,
            _ => Vec::new(),
        };
        if !names.iter().any(|n| n.as_str() == Some(name)) {
            names.push(Value::from(name));
        }
        ome.insert("labels".into(), Value::Array(names));
    })?;
    MultiscaleImage::open(store.clone(), &label_path)
}

/// Where the label image `name` of the image at `image_path` lives: `image_path/labels/name`.
/// A name must be one path segment.
pub fn label_path(image_path: &str, name: &str) -> OmeResult<String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(OmeError::invalid(
            image_path,
            format!("'{name}' is not a label name (one path segment)"),
        ));
    }
    Ok(join_key(
        &join_key(image_path.trim_matches('/'), "labels"),
        name,
    ))
}

/// The image axes a label of `rank` dimensions has: all of them, or without the channel axes.
fn label_axes(image: &MultiscaleImage, rank: usize) -> OmeResult<Vec<usize>> {
    let all: Vec<usize> = (0..image.axes().len()).collect();
    if rank == all.len() {
        return Ok(all);
    }
    let no_channel: Vec<usize> = all
        .into_iter()
        .filter(|&d| image.axes()[d].kind.as_deref() != Some("channel"))
        .collect();
    if rank == no_channel.len() {
        return Ok(no_channel);
    }
    Err(OmeError::invalid(
        image.path(),
        format!(
            "a label of {rank} dimensions does not fit the image's axes {} (a label has the \
             image's axes, its channel axes optional)",
            axis_names(image, &(0..image.axes().len()).collect::<Vec<_>>())
        ),
    ))
}

fn is_integer(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64
    )
}

fn axis_names(image: &MultiscaleImage, axes: &[usize]) -> String {
    axes.iter()
        .map(|&d| image.axes()[d].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rewrite the OME attributes of the group at `path` (top level for 0.4, under `ome` for 0.5)
/// with `edit`, keeping every other attribute.
fn update_ome_attributes(
    store: &dyn Store,
    path: &str,
    layout: Layout,
    edit: impl FnOnce(&mut Map<String, Value>),
) -> OmeResult<()> {
    let mut attrs = match open_node(store, path)?.metadata {
        NodeMetadata::Group(group) => group.attributes,
        NodeMetadata::Array(_) => {
            return Err(OmeError::invalid(path, "an array, not a group"));
        }
    };
    if layout == Layout::OmeZarr05 {
        let mut ome = match attrs.remove("ome") {
            Some(Value::Object(ome)) => ome,
            _ => Map::new(),
        };
        ome.entry("version").or_insert_with(|| json!("0.5"));
        edit(&mut ome);
        attrs.insert("ome".into(), Value::Object(ome));
    } else {
        edit(&mut attrs);
    }
    create_group(store, path, layout.format(), attrs)?;
    Ok(())
}
