//! OME-Zarr (NGFF) metadata: reading `multiscales` of versions 0.1–0.5 and writing 0.4 / 0.5.

use std::sync::Arc;

use neurochunk_array::{open_node, NodeMetadata, Store, ZarrFormat};
use serde_json::{json, Map, Value};

use crate::error::{OmeError, OmeResult};
use crate::image::{Axis, Layout, Level, MultiscaleImage};

/// The object holding the OME keys of a group's attributes: `attributes.ome` (0.5) or the
/// attributes themselves (0.4 and earlier).
pub(crate) fn ome_object(attrs: &Map<String, Value>) -> &Map<String, Value> {
    match attrs.get("ome") {
        Some(Value::Object(ome)) => ome,
        _ => attrs,
    }
}

/// A group's attributes holding one OME key: at the top level for 0.4, under `ome` (with the
/// version) for 0.5.
pub(crate) fn ome_attributes(layout: Layout, key: &str, value: Value) -> Map<String, Value> {
    let mut attrs = Map::new();
    if layout == Layout::OmeZarr05 {
        let mut ome = Map::new();
        ome.insert("version".into(), Value::from("0.5"));
        ome.insert(key.into(), value);
        attrs.insert("ome".into(), Value::Object(ome));
    } else {
        attrs.insert(key.into(), value);
    }
    attrs
}

pub(crate) fn detect(format: ZarrFormat, attrs: &Map<String, Value>) -> Option<Layout> {
    let ome = ome_object(attrs);
    match ome.get("multiscales") {
        Some(Value::Array(list)) if !list.is_empty() => Some(match format {
            ZarrFormat::V3 => Layout::OmeZarr05,
            _ => Layout::OmeZarr04,
        }),
        _ => None,
    }
}

/// The version of the multiscales metadata: `attributes.ome.version` (0.5), else the first
/// multiscale's `version`.
pub(crate) fn version_of(attrs: &Map<String, Value>) -> Option<String> {
    let ome = ome_object(attrs);
    ome.get("version")
        .and_then(Value::as_str)
        .or_else(|| {
            ome.get("multiscales")?
                .as_array()?
                .first()?
                .get("version")?
                .as_str()
        })
        .map(str::to_string)
}

pub(crate) fn open(
    store: Arc<dyn Store>,
    path: &str,
    format: ZarrFormat,
    attrs: &Map<String, Value>,
) -> OmeResult<MultiscaleImage> {
    let ome = ome_object(attrs);
    let multiscales = match ome.get("multiscales") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(Value::Array(_)) => {
            return Err(OmeError::metadata(path, "'multiscales' is an empty list"))
        }
        Some(_) => return Err(OmeError::metadata(path, "'multiscales' must be a list")),
        None => return Err(not_multiscale(store.as_ref(), path, attrs)),
    };
    let layout = match format {
        ZarrFormat::V3 => Layout::OmeZarr05,
        _ => Layout::OmeZarr04,
    };
    let version = version_of(attrs);
    if format == ZarrFormat::V3 && !attrs.contains_key("ome") {
        return Err(OmeError::metadata(
            path,
            "a Zarr v3 group keeps OME-Zarr metadata under 'attributes.ome' (OME-Zarr 0.5), \
             found 'multiscales' at the top level",
        ));
    }
    let ms = multiscales[0]
        .as_object()
        .ok_or_else(|| OmeError::metadata(path, "multiscales[0] must be an object"))?;
    let datasets = match ms.get("datasets") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => {
            return Err(OmeError::metadata(
                path,
                "multiscales[0].datasets must be a non-empty list",
            ))
        }
    };
    let mut paths = Vec::with_capacity(datasets.len());
    for (i, ds) in datasets.iter().enumerate() {
        match ds.get("path").and_then(Value::as_str) {
            Some(p) => paths.push(p.trim_matches('/').to_string()),
            None => {
                return Err(OmeError::metadata(
                    path,
                    format!("multiscales[0].datasets[{i}] has no 'path' string"),
                ))
            }
        }
    }
    let modern = version
        .as_deref()
        .is_none_or(|v| !matches!(v, "0.1" | "0.2" | "0.3"));
    // Axes: objects from 0.4 on, names in 0.3, implied t, c, z, y, x before.
    let axes = match ms.get("axes") {
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, a)| parse_axis(a, path, i))
            .collect::<OmeResult<Vec<_>>>()?,
        Some(_) => {
            return Err(OmeError::metadata(
                path,
                "multiscales[0].axes must be a list",
            ))
        }
        None if modern => {
            return Err(OmeError::metadata(
                path,
                "multiscales[0] has no 'axes' (required from OME-Zarr 0.4 on)",
            ))
        }
        None => {
            let rank = level_shape(store.as_ref(), path, &paths[0])?.len();
            implied_axes(rank)
        }
    };
    let rank = axes.len();
    let global = match ms.get("coordinateTransformations") {
        Some(t) => Some(parse_transforms(
            t,
            rank,
            path,
            "multiscales[0].coordinateTransformations",
        )?),
        None => None,
    };
    let mut levels = Vec::with_capacity(datasets.len());
    let mut first_shape: Option<Vec<u64>> = None;
    for (i, ds) in datasets.iter().enumerate() {
        let (mut scale, mut translation) = match ds.get("coordinateTransformations") {
            Some(t) => parse_transforms(
                t,
                rank,
                path,
                &format!("multiscales[0].datasets[{i}].coordinateTransformations"),
            )?,
            None if modern => {
                return Err(OmeError::metadata(
                    path,
                    format!(
                        "multiscales[0].datasets[{i}] has no coordinateTransformations \
                         (required from OME-Zarr 0.4 on)"
                    ),
                ))
            }
            None => {
                // Before 0.4 the scale is implied by the shapes: each level against level 0.
                let shape = level_shape(store.as_ref(), path, &paths[i])?;
                let first = first_shape.get_or_insert_with(|| shape.clone());
                let scale = first
                    .iter()
                    .zip(&shape)
                    .map(|(&a, &b)| if b == 0 { 1.0 } else { a as f64 / b as f64 })
                    .collect();
                (scale, None)
            }
        };
        if let Some((gs, gt)) = &global {
            // The multiscale-wide transformations apply after the dataset's.
            for d in 0..rank {
                scale[d] *= gs[d];
            }
            if translation.is_some() || gt.is_some() {
                let t: Vec<f64> = (0..rank)
                    .map(|d| {
                        translation.as_ref().map_or(0.0, |t| t[d] * gs[d])
                            + gt.as_ref().map_or(0.0, |t| t[d])
                    })
                    .collect();
                translation = Some(t);
            }
        }
        levels.push(Level {
            path: paths[i].clone(),
            scale,
            translation,
        });
    }
    let labels = read_labels(store.as_ref(), path)?;
    Ok(MultiscaleImage {
        store,
        path: path.to_string(),
        layout,
        version,
        name: ms.get("name").and_then(Value::as_str).map(str::to_string),
        axes,
        levels,
        method: ms.get("type").and_then(Value::as_str).map(str::to_string),
        method_metadata: ms.get("metadata").cloned(),
        omero: ome.get("omero").cloned(),
        labels,
        image_label: ome.get("image-label").cloned(),
    })
}

/// Why a Zarr group without `multiscales` is not an image, naming what it is instead.
fn not_multiscale(store: &dyn Store, path: &str, attrs: &Map<String, Value>) -> OmeError {
    let ome = ome_object(attrs);
    if ome.contains_key("plate") {
        return OmeError::not_image(
            path,
            "it is an OME-Zarr plate (HCS); open a field, e.g. 'A/1/0'",
        );
    }
    if ome.contains_key("well") {
        return OmeError::not_image(path, "it is an OME-Zarr well; open a field, e.g. '0'");
    }
    if ome.contains_key("labels") {
        return OmeError::not_image(
            path,
            "it is an OME-Zarr labels group; open one of its label images",
        );
    }
    if ome.contains_key("bioformats2raw.layout") {
        let series = neurochunk_store::join_key(path, "0");
        if open_node(store, &series).is_ok() {
            return OmeError::not_image(
                path,
                format!(
                    "it is a bioformats2raw container; open a series, e.g. '{}'",
                    crate::error::shown(&series)
                ),
            );
        }
    }
    OmeError::not_image(path, "the group has no 'multiscales' metadata")
}

fn level_shape(store: &dyn Store, path: &str, level: &str) -> OmeResult<Vec<u64>> {
    let full = neurochunk_store::join_key(path, level);
    match open_node(store, &full) {
        Ok(node) => match node.metadata {
            NodeMetadata::Array(meta) => Ok(meta.shape.clone()),
            NodeMetadata::Group(_) => Err(OmeError::metadata(
                path,
                format!("dataset '{level}' is a group, not an array"),
            )),
        },
        Err(neurochunk_array::ArrayError::NotFound(_)) => Err(OmeError::metadata(
            path,
            format!("dataset '{level}' does not exist"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Axes implied before OME-Zarr 0.3: the last `rank` of t, c, z, y, x.
fn implied_axes(rank: usize) -> Vec<Axis> {
    let all = [
        ("t", "time"),
        ("c", "channel"),
        ("z", "space"),
        ("y", "space"),
        ("x", "space"),
    ];
    all[all.len().saturating_sub(rank)..]
        .iter()
        .map(|(n, k)| Axis::new(*n, Some(k), None))
        .collect()
}

fn axis_kind_of_name(name: &str) -> Option<&'static str> {
    match name {
        "x" | "y" | "z" => Some("space"),
        "t" => Some("time"),
        "c" => Some("channel"),
        _ => None,
    }
}

fn parse_axis(value: &Value, path: &str, i: usize) -> OmeResult<Axis> {
    match value {
        // OME-Zarr 0.3: axis names only.
        Value::String(name) => Ok(Axis::new(name.as_str(), axis_kind_of_name(name), None)),
        Value::Object(map) => {
            let name = map.get("name").and_then(Value::as_str).ok_or_else(|| {
                OmeError::metadata(
                    path,
                    format!("multiscales[0].axes[{i}] has no 'name' string"),
                )
            })?;
            let text = |key: &str| -> OmeResult<Option<String>> {
                match map.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(other) => Err(OmeError::metadata(
                        path,
                        format!("multiscales[0].axes[{i}].{key} must be a string, found {other}"),
                    )),
                }
            };
            Ok(Axis {
                name: name.to_string(),
                kind: text("type")?,
                unit: text("unit")?,
            })
        }
        other => Err(OmeError::metadata(
            path,
            format!("multiscales[0].axes[{i}] must be an object, found {other}"),
        )),
    }
}

type Transforms = (Vec<f64>, Option<Vec<f64>>);

/// A list of coordinate transformations: one `scale`, then at most one `translation`
/// (`identity` entries are ignored).
fn parse_transforms(value: &Value, rank: usize, path: &str, what: &str) -> OmeResult<Transforms> {
    let list = value
        .as_array()
        .ok_or_else(|| OmeError::metadata(path, format!("{what} must be a list")))?;
    let mut scale = None;
    let mut translation = None;
    for (j, t) in list.iter().enumerate() {
        let kind = t.get("type").and_then(Value::as_str).unwrap_or("");
        let numbers = |key: &str| -> OmeResult<Vec<f64>> {
            if t.get("path").is_some() && t.get(key).is_none() {
                return Err(OmeError::metadata(
                    path,
                    format!("{what}[{j}] keeps its {key} in a binary file ('path'), which is not supported"),
                ));
            }
            let values = t.get(key).and_then(Value::as_array).ok_or_else(|| {
                OmeError::metadata(path, format!("{what}[{j}] has no '{key}' list"))
            })?;
            let numbers: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
            let numbers = numbers.ok_or_else(|| {
                OmeError::metadata(path, format!("{what}[{j}].{key} must hold numbers"))
            })?;
            if numbers.len() != rank {
                return Err(OmeError::metadata(
                    path,
                    format!(
                        "{what}[{j}].{key} has {} values for {rank} axes",
                        numbers.len()
                    ),
                ));
            }
            Ok(numbers)
        };
        match kind {
            "scale" if scale.is_none() => scale = Some(numbers("scale")?),
            "translation" if translation.is_none() => translation = Some(numbers("translation")?),
            "identity" => {}
            other => {
                return Err(OmeError::metadata(
                    path,
                    format!(
                        "{what}[{j}]: a '{other}' transformation is not understood here \
                         (one 'scale', optionally followed by one 'translation')"
                    ),
                ))
            }
        }
    }
    let scale = scale.unwrap_or_else(|| vec![1.0; rank]);
    Ok((scale, translation))
}

/// The label images listed by the `labels` group below the image, if any.
fn read_labels(store: &dyn Store, path: &str) -> OmeResult<Vec<String>> {
    let labels_path = neurochunk_store::join_key(path, "labels");
    let node = match open_node(store, &labels_path) {
        Ok(node) => node,
        Err(neurochunk_array::ArrayError::NotFound(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let NodeMetadata::Group(group) = node.metadata else {
        return Ok(Vec::new());
    };
    Ok(ome_object(&group.attributes)
        .get("labels")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default())
}

/// The `multiscales` entry of an image for writing (0.4 puts `version` in it, 0.5 on `ome`).
pub(crate) fn multiscale_json(image: &MultiscaleImage, layout: Layout) -> Value {
    let axes: Vec<Value> = image
        .axes
        .iter()
        .map(|a| {
            let mut axis = Map::new();
            axis.insert("name".into(), json!(a.name));
            if let Some(kind) = &a.kind {
                axis.insert("type".into(), json!(kind));
            }
            if let Some(unit) = &a.unit {
                axis.insert("unit".into(), json!(unit));
            }
            Value::Object(axis)
        })
        .collect();
    let datasets: Vec<Value> = image
        .levels
        .iter()
        .map(|level| {
            let mut transforms = vec![json!({"type": "scale", "scale": level.scale})];
            if let Some(t) = &level.translation {
                transforms.push(json!({"type": "translation", "translation": t}));
            }
            json!({"path": level.path, "coordinateTransformations": transforms})
        })
        .collect();
    let mut ms = Map::new();
    if layout == Layout::OmeZarr04 {
        ms.insert("version".into(), json!("0.4"));
    }
    if let Some(name) = &image.name {
        ms.insert("name".into(), json!(name));
    }
    ms.insert("axes".into(), Value::Array(axes));
    ms.insert("datasets".into(), Value::Array(datasets));
    if let Some(method) = &image.method {
        ms.insert("type".into(), json!(method));
    }
    if let Some(meta) = &image.method_metadata {
        ms.insert("metadata".into(), meta.clone());
    }
    Value::Object(ms)
}

/// The group attributes of an OME-Zarr image (`layout` 0.4 or 0.5), merged into `base`.
pub(crate) fn image_attributes(
    image: &MultiscaleImage,
    layout: Layout,
    mut base: Map<String, Value>,
) -> Map<String, Value> {
    let mut ome = Map::new();
    ome.insert(
        "multiscales".into(),
        json!([multiscale_json(image, layout)]),
    );
    if let Some(omero) = &image.omero {
        ome.insert("omero".into(), omero.clone());
    }
    if let Some(label) = &image.image_label {
        ome.insert("image-label".into(), label.clone());
    }
    match layout {
        Layout::OmeZarr05 => {
            let mut wrapped = Map::new();
            wrapped.insert("version".into(), json!("0.5"));
            wrapped.extend(ome);
            base.insert("ome".into(), Value::Object(wrapped));
        }
        _ => base.extend(ome),
    }
    base
}
