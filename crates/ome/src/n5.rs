//! N5 multiscale layouts: BigDataViewer (`setupN/timepointM/sK`) and n5-viewer (`s0..sN`).
//!
//! N5 lists axes fastest-varying first (`x, y, z`); levels are presented in C order, so every
//! per-axis list read here (`downsamplingFactors`, `resolution`, `axes`, `units`) is reversed.

use std::sync::Arc;

use neurochunk_array::n5::n5_data_type_name;
use neurochunk_array::{open_node, DataType, NodeMetadata, Store};
use neurochunk_store::join_key;
use serde_json::{json, Map, Value};

use crate::error::{OmeError, OmeResult};
use crate::image::{Axis, Layout, Level, MultiscaleImage};

/// The children of `path` whose names are `prefix` followed by a number, sorted by number.
pub(crate) fn numbered_children(
    store: &dyn Store,
    path: &str,
    prefix: &str,
) -> OmeResult<Vec<(u64, String)>> {
    let dir = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let listing = store.list_dir(&dir)?;
    let mut found: Vec<(u64, String)> = listing
        .prefixes
        .iter()
        .map(|p| {
            p.trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter_map(|name| {
            let n = name.strip_prefix(prefix)?.parse::<u64>().ok()?;
            Some((n, name))
        })
        .collect();
    found.sort();
    found.dedup();
    Ok(found)
}

fn group_attributes(store: &dyn Store, path: &str) -> Option<Map<String, Value>> {
    match open_node(store, path).ok()?.metadata {
        NodeMetadata::Group(group) => Some(group.attributes),
        NodeMetadata::Array(_) => None,
    }
}

fn array_attributes(store: &dyn Store, path: &str) -> Option<Map<String, Value>> {
    match open_node(store, path).ok()?.metadata {
        NodeMetadata::Array(meta) => Some(meta.attributes.clone()),
        NodeMetadata::Group(_) => None,
    }
}

/// The time points (`timepointM`, by number) of the BigDataViewer setup group at
/// `setup_path`; none when the group is not a setup (no `downsamplingFactors`).
pub(crate) fn bdv_setup_timepoints(store: &dyn Store, setup_path: &str) -> OmeResult<Vec<String>> {
    match group_attributes(store, setup_path) {
        Some(attrs) if attrs.contains_key("downsamplingFactors") => {
            Ok(numbered_children(store, setup_path, "timepoint")?
                .into_iter()
                .map(|(_, name)| name)
                .collect())
        }
        _ => Ok(Vec::new()),
    }
}

/// `(setup attributes, the setup group's path, prefix of the level paths relative to the
/// image)`.
type BdvLocation = (Map<String, Value>, String, String);

/// Where the BigDataViewer setup and time point of an image at `path` are.
fn bdv_location(
    store: &dyn Store,
    path: &str,
    attrs: &Map<String, Value>,
) -> OmeResult<Option<BdvLocation>> {
    let first_timepoint = |setup: &str| -> OmeResult<Option<String>> {
        Ok(numbered_children(store, setup, "timepoint")?
            .into_iter()
            .next()
            .map(|(_, name)| name))
    };
    // A setup group.
    if attrs.contains_key("downsamplingFactors") && !attrs.contains_key("dimensions") {
        if let Some(tp) = first_timepoint(path)? {
            return Ok(Some((attrs.clone(), path.to_string(), tp)));
        }
    }
    // A time point below a setup.
    if let Some((parent, name)) = path.rsplit_once('/').or(Some(("", path))) {
        if name.starts_with("timepoint") && !path.is_empty() {
            if let Some(setup) = group_attributes(store, parent) {
                if setup.contains_key("downsamplingFactors") {
                    return Ok(Some((setup, parent.to_string(), String::new())));
                }
            }
        }
    }
    // A container holding setups: its first setup.
    if let Some((_, setup)) = numbered_children(store, path, "setup")?.into_iter().next() {
        let setup_path = join_key(path, &setup);
        if let Some(setup_attrs) = group_attributes(store, &setup_path) {
            if setup_attrs.contains_key("downsamplingFactors") {
                if let Some(tp) = first_timepoint(&setup_path)? {
                    return Ok(Some((setup_attrs, setup_path, format!("{setup}/{tp}"))));
                }
            }
        }
    }
    Ok(None)
}

pub(crate) fn detect(store: &dyn Store, path: &str, attrs: &Map<String, Value>) -> Option<Layout> {
    let path = path.trim_matches('/');
    if let Ok(Some(_)) = bdv_location(store, path, attrs) {
        return Some(Layout::N5Bdv);
    }
    // n5-viewer: `scales` on the group, or `s0` with `downsamplingFactors`, or `s0` and `s1`.
    let s0 = array_attributes(store, &join_key(path, "s0"));
    let viewer = attrs.contains_key("scales")
        || s0
            .as_ref()
            .is_some_and(|a| a.contains_key("downsamplingFactors"))
        || (s0.is_some() && array_attributes(store, &join_key(path, "s1")).is_some());
    viewer.then_some(Layout::N5Viewer)
}

fn numbers(value: &Value) -> Option<Vec<f64>> {
    value.as_array()?.iter().map(Value::as_f64).collect()
}

fn factor_rows(value: &Value) -> Option<Vec<Vec<f64>>> {
    value.as_array()?.iter().map(numbers).collect()
}

fn reversed<T: Clone>(v: &[T]) -> Vec<T> {
    v.iter().rev().cloned().collect()
}

/// A level's translation from its cumulative factors (pixel-centre convention): `None` at
/// full resolution.
pub(crate) fn centre_translation(
    factors: &[f64],
    resolution: &[f64],
    base: Option<&[f64]>,
) -> Option<Vec<f64>> {
    if factors.iter().all(|&f| f == 1.0) && base.is_none() {
        return None;
    }
    Some(
        factors
            .iter()
            .zip(resolution)
            .enumerate()
            .map(|(d, (&f, &r))| base.map_or(0.0, |b| b[d]) + (f - 1.0) * r / 2.0)
            .collect(),
    )
}

/// `resolution` (or `pixelResolution`) and units, in N5's listed order.
fn resolution_and_units(
    attrs: &Map<String, Value>,
    rank: usize,
) -> (Option<Vec<f64>>, Vec<Option<String>>) {
    let mut units: Vec<Option<String>> = vec![None; rank];
    let mut resolution = attrs.get("resolution").and_then(numbers);
    if let Some(pixel) = attrs.get("pixelResolution") {
        match pixel {
            Value::Array(_) => resolution = resolution.or_else(|| numbers(pixel)),
            Value::Object(map) => {
                resolution = resolution.or_else(|| map.get("dimensions").and_then(numbers));
                if let Some(unit) = map.get("unit").and_then(Value::as_str) {
                    units = vec![Some(unit.to_string()); rank];
                }
            }
            _ => {}
        }
    }
    if let Some(list) = attrs.get("units").and_then(Value::as_array) {
        if list.len() == rank {
            units = list
                .iter()
                .map(|u| u.as_str().map(str::to_string))
                .collect();
        }
    }
    (resolution.filter(|r| r.len() == rank), units)
}

/// Axis names in N5's listed order: `axes` when given, else `x, y, z`, then `c`, `t`.
fn listed_axes(attrs: &Map<String, Value>, rank: usize) -> Vec<String> {
    if let Some(list) = attrs.get("axes").and_then(Value::as_array) {
        let names: Option<Vec<String>> = list
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect();
        if let Some(names) = names.filter(|n| n.len() == rank) {
            return names;
        }
    }
    ["x", "y", "z", "c", "t"]
        .iter()
        .map(|s| s.to_string())
        .chain((5..rank).map(|d| format!("d{d}")))
        .take(rank)
        .collect()
}

fn axes_from(names: Vec<String>, units: Vec<Option<String>>) -> Vec<Axis> {
    // Listed order in; C order out.
    names
        .into_iter()
        .zip(units)
        .rev()
        .map(|(name, unit)| {
            let kind = match name.to_ascii_lowercase().as_str() {
                "x" | "y" | "z" => Some("space".to_string()),
                "t" | "time" => Some("time".to_string()),
                "c" | "channel" => Some("channel".to_string()),
                _ => None,
            };
            Axis { name, kind, unit }
        })
        .collect()
}

fn dataset_rank(store: &dyn Store, path: &str) -> OmeResult<usize> {
    match open_node(store, path) {
        Ok(node) => match node.metadata {
            NodeMetadata::Array(meta) => Ok(meta.shape.len()),
            NodeMetadata::Group(_) => {
                Err(OmeError::metadata(path, "level is a group, not a dataset"))
            }
        },
        Err(neurochunk_array::ArrayError::NotFound(_)) => {
            Err(OmeError::metadata(path, "level dataset does not exist"))
        }
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn open(
    store: Arc<dyn Store>,
    path: &str,
    attrs: &Map<String, Value>,
) -> OmeResult<MultiscaleImage> {
    if let Some((setup, setup_path, prefix)) = bdv_location(store.as_ref(), path, attrs)? {
        let xml = bdv_xml_voxel_size(store.as_ref(), &setup_path)?;
        return open_bdv(store, path, &setup, &prefix, xml);
    }
    let levels = numbered_children(store.as_ref(), path, "s")?;
    let is_level = |name: &str| array_attributes(store.as_ref(), &join_key(path, name)).is_some();
    let levels: Vec<(u64, String)> = levels
        .into_iter()
        .enumerate()
        .take_while(|(i, (n, name))| *n == *i as u64 && is_level(name))
        .map(|(_, l)| l)
        .collect();
    if levels.is_empty() {
        return Err(OmeError::not_image(
            path,
            "an N5 group with neither BigDataViewer setups ('setupN' with 'downsamplingFactors') \
             nor n5-viewer scale levels ('s0', 's1', ...)",
        ));
    }
    open_viewer(
        store,
        path,
        attrs,
        &levels.into_iter().map(|l| l.1).collect::<Vec<_>>(),
    )
}

fn open_bdv(
    store: Arc<dyn Store>,
    path: &str,
    setup: &Map<String, Value>,
    prefix: &str,
    xml: Option<(Vec<f64>, Option<String>)>,
) -> OmeResult<MultiscaleImage> {
    let rows = setup
        .get("downsamplingFactors")
        .and_then(factor_rows)
        .filter(|rows| !rows.is_empty())
        .ok_or_else(|| {
            OmeError::metadata(
                path,
                "BigDataViewer 'downsamplingFactors' must be a non-empty list of number lists",
            )
        })?;
    let level_path = |k: usize| {
        if prefix.is_empty() {
            format!("s{k}")
        } else {
            format!("{prefix}/s{k}")
        }
    };
    let rank = dataset_rank(store.as_ref(), &join_key(path, &level_path(0)))?;
    if let Some((k, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != rank) {
        return Err(OmeError::metadata(
            path,
            format!(
                "downsamplingFactors[{k}] has {} values for {rank} dimensions",
                row.len()
            ),
        ));
    }
    let (mut resolution, mut units) = resolution_and_units(setup, rank);
    // Without a resolution on the setup, the voxel size of the BigDataViewer XML.
    if let Some((size, unit)) = xml.filter(|(size, _)| size.len() == rank) {
        if resolution.is_none() {
            resolution = Some(size);
            if units.iter().all(Option::is_none) {
                units = vec![unit; rank];
            }
        }
    }
    let resolution = resolution.unwrap_or_else(|| vec![1.0; rank]);
    let names = listed_axes(setup, rank);
    let levels = rows
        .iter()
        .enumerate()
        .map(|(k, row)| {
            let scale: Vec<f64> = row.iter().zip(&resolution).map(|(f, r)| f * r).collect();
            Level {
                path: level_path(k),
                scale: reversed(&scale),
                translation: centre_translation(row, &resolution, None).map(|t| reversed(&t)),
            }
        })
        .collect();
    Ok(n5_image(
        store,
        path,
        Layout::N5Bdv,
        setup,
        axes_from(names, units),
        levels,
    ))
}

fn open_viewer(
    store: Arc<dyn Store>,
    path: &str,
    attrs: &Map<String, Value>,
    names: &[String],
) -> OmeResult<MultiscaleImage> {
    let rank = dataset_rank(store.as_ref(), &join_key(path, &names[0]))?;
    let scales = attrs.get("scales").and_then(factor_rows);
    let first_attrs =
        array_attributes(store.as_ref(), &join_key(path, &names[0])).unwrap_or_default();
    // Resolution and units: on the group, else on s0.
    let (mut resolution, mut units) = resolution_and_units(attrs, rank);
    if resolution.is_none() {
        let (r, u) = resolution_and_units(&first_attrs, rank);
        resolution = r;
        if units.iter().all(Option::is_none) {
            units = u;
        }
    }
    let resolution = resolution.unwrap_or_else(|| vec![1.0; rank]);
    let axis_source = if attrs.contains_key("axes") {
        attrs
    } else {
        &first_attrs
    };
    let axis_names = listed_axes(axis_source, rank);
    let mut shape0: Option<Vec<u64>> = None;
    let mut levels = Vec::with_capacity(names.len());
    for (k, name) in names.iter().enumerate() {
        let level_path = join_key(path, name);
        let level_attrs = array_attributes(store.as_ref(), &level_path).unwrap_or_default();
        let factors = match (
            level_attrs.get("downsamplingFactors").and_then(numbers),
            scales.as_ref().and_then(|s| s.get(k).cloned()),
        ) {
            (Some(f), _) | (None, Some(f)) => f,
            (None, None) if k == 0 => vec![1.0; rank],
            (None, None) => {
                // No factors recorded: the ratio of the shapes (listed order).
                let node = open_node(store.as_ref(), &level_path)?;
                let NodeMetadata::Array(meta) = node.metadata else {
                    return Err(OmeError::metadata(
                        path,
                        format!("'{name}' is not a dataset"),
                    ));
                };
                let first = match &shape0 {
                    Some(s) => s.clone(),
                    None => {
                        let NodeMetadata::Array(m0) =
                            open_node(store.as_ref(), &join_key(path, &names[0]))?.metadata
                        else {
                            return Err(OmeError::metadata(path, "'s0' is not a dataset"));
                        };
                        shape0 = Some(m0.shape.clone());
                        m0.shape.clone()
                    }
                };
                first
                    .iter()
                    .zip(&meta.shape)
                    .map(|(&a, &b)| {
                        if b == 0 {
                            1.0
                        } else {
                            (a as f64 / b as f64).round()
                        }
                    })
                    .collect()
            }
        };
        if factors.len() != rank {
            return Err(OmeError::metadata(
                path,
                format!(
                    "the downsampling factors of '{name}' have {} values for {rank} dimensions",
                    factors.len()
                ),
            ));
        }
        let scale: Vec<f64> = factors
            .iter()
            .zip(&resolution)
            .map(|(f, r)| f * r)
            .collect();
        levels.push(Level {
            path: name.clone(),
            scale: reversed(&scale),
            translation: centre_translation(&factors, &resolution, None).map(|t| reversed(&t)),
        });
    }
    Ok(n5_image(
        store,
        path,
        Layout::N5Viewer,
        attrs,
        axes_from(axis_names, units),
        levels,
    ))
}

/// An N5 image: name and method from the group `attrs`, no OME-only metadata.
fn n5_image(
    store: Arc<dyn Store>,
    path: &str,
    layout: Layout,
    attrs: &Map<String, Value>,
    axes: Vec<Axis>,
    levels: Vec<Level>,
) -> MultiscaleImage {
    let text = |key: &str| attrs.get(key).and_then(Value::as_str).map(str::to_string);
    MultiscaleImage {
        store,
        path: path.to_string(),
        layout,
        version: None,
        name: text("name"),
        axes,
        levels,
        method: text("downsamplingMethod"),
        method_metadata: None,
        omero: None,
        labels: Vec::new(),
        image_label: None,
    }
}

/// The factors of level `k` against level 0, in C order, from the scales (rounded).
pub(crate) fn cumulative_factors(image: &MultiscaleImage, k: usize) -> Vec<f64> {
    let s0 = &image.levels[0].scale;
    image.levels[k]
        .scale
        .iter()
        .zip(s0)
        .map(|(&s, &b)| {
            if b == 0.0 {
                1.0
            } else {
                (s / b).round().max(1.0)
            }
        })
        .collect()
}

/// Group attributes and per-level dataset attributes of an N5 image of `layout`; a
/// BigDataViewer setup also states its levels' `data_type` (as `dataType`, which
/// BigDataViewer's N5 loader requires).
pub(crate) fn n5_attributes(
    image: &MultiscaleImage,
    layout: Layout,
    data_type: Option<&DataType>,
) -> (Map<String, Value>, Vec<Map<String, Value>>) {
    let rank = image.axes.len();
    let resolution: Vec<f64> = reversed(&image.levels[0].scale);
    let factors: Vec<Vec<f64>> = (0..image.levels.len())
        .map(|k| reversed(&cumulative_factors(image, k)))
        .collect();
    let int_rows: Vec<Vec<Value>> = factors
        .iter()
        .map(|row| row.iter().map(|&f| number(f)).collect())
        .collect();
    let names: Vec<String> = image.axes.iter().rev().map(|a| a.name.clone()).collect();
    let units: Vec<String> = image
        .axes
        .iter()
        .rev()
        .map(|a| a.unit.clone().unwrap_or_default())
        .collect();
    let any_unit = image.axes.iter().any(|a| a.unit.is_some());
    let mut group = Map::new();
    let mut per_level = vec![Map::new(); image.levels.len()];
    match layout {
        Layout::N5Bdv => {
            group.insert("downsamplingFactors".into(), json!(int_rows));
            if let Some(name) = data_type.and_then(n5_data_type_name) {
                group.insert("dataType".into(), json!(name));
            }
            group.insert("resolution".into(), json!(resolution));
            if any_unit {
                group.insert("units".into(), json!(units));
            }
            group.insert("axes".into(), json!(names));
            // BigDataViewer's export also states each level's own factors on its dataset.
            for (attrs, row) in per_level.iter_mut().zip(&int_rows) {
                attrs.insert("downsamplingFactors".into(), json!(row));
            }
        }
        _ => {
            group.insert("axes".into(), json!(names));
            group.insert("resolution".into(), json!(resolution));
            if any_unit {
                group.insert("units".into(), json!(units));
            }
            group.insert("scales".into(), json!(int_rows));
            let unit = image
                .axes
                .iter()
                .rev()
                .find(|a| a.is_spatial())
                .and_then(|a| a.unit.clone())
                .unwrap_or_else(|| "pixel".into());
            group.insert(
                "pixelResolution".into(),
                json!({"dimensions": resolution, "unit": unit}),
            );
            for (k, attrs) in per_level.iter_mut().enumerate() {
                attrs.insert("downsamplingFactors".into(), json!(int_rows[k]));
                let level_res: Vec<f64> = resolution
                    .iter()
                    .zip(&factors[k])
                    .map(|(r, f)| r * f)
                    .collect();
                attrs.insert(
                    "pixelResolution".into(),
                    json!({"dimensions": level_res, "unit": unit}),
                );
            }
        }
    }
    if let Some(name) = &image.name {
        group.insert("name".into(), json!(name));
    }
    if let Some(method) = &image.method {
        group.insert("downsamplingMethod".into(), json!(method));
    }
    let _ = rank;
    (group, per_level)
}

/// A JSON number: an integer when the value is one.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// The voxel size (x first) and unit of the view setup at `setup_path` (`.../setupN`) in a
/// BigDataViewer XML file at the container's root (`dataset.xml` or another `.xml`), if any.
fn bdv_xml_voxel_size(
    store: &dyn Store,
    setup_path: &str,
) -> OmeResult<Option<(Vec<f64>, Option<String>)>> {
    let (root, name) = setup_path.rsplit_once('/').unwrap_or(("", setup_path));
    let Some(id) = name.strip_prefix("setup") else {
        return Ok(None);
    };
    let dir = if root.is_empty() {
        String::new()
    } else {
        format!("{root}/")
    };
    for key in store.list_dir(&dir)?.keys {
        if !key.to_ascii_lowercase().ends_with(".xml") {
            continue;
        }
        let Some(bytes) = store.get(&join_key(root, &key))? else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for block in elements(&text, "ViewSetup") {
            if elements(block, "id").next().map(str::trim) != Some(id) {
                continue;
            }
            let Some(voxel) = elements(block, "voxelSize").next() else {
                continue;
            };
            let size: Option<Vec<f64>> = elements(voxel, "size")
                .next()
                .map(|s| {
                    s.split_whitespace()
                        .map(str::parse)
                        .collect::<Result<_, _>>()
                        .ok()
                })
                .unwrap_or(None);
            let unit = elements(voxel, "unit")
                .next()
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty() && u != "pixel");
            if let Some(size) = size {
                return Ok(Some((size, unit)));
            }
        }
    }
    Ok(None)
}

/// The contents of the `<tag>…</tag>` elements in `text` (no attributes on the tag, as
/// BigDataViewer writes these).
fn elements<'a>(text: &'a str, tag: &str) -> impl Iterator<Item = &'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(&open)? + open.len();
        let end = start + rest[start..].find(&close)?;
        let inner = &rest[start..end];
        rest = &rest[end + close.len()..];
        Some(inner)
    })
}

/// The BigDataViewer XML (`dataset.xml` at the container's root) of a BDV N5 image: one view
/// setup, one time point, the voxel size of level 0 and an affine holding it, so BigDataViewer
/// and BigStitcher open the container directly.
pub(crate) fn write_bdv_xml(
    store: &dyn Store,
    path: &str,
    image: &MultiscaleImage,
) -> OmeResult<()> {
    // BDV axes are x, y, z: the C-order axes reversed.
    let res: Vec<f64> = reversed(&image.levels[0].scale);
    let unit = image
        .axes
        .iter()
        .find(|a| a.is_spatial())
        .and_then(|a| a.unit.clone())
        .unwrap_or_else(|| "pixel".into());
    let get = |i: usize| res.get(i).copied().unwrap_or(1.0);
    let sizes = match image.levels.first() {
        Some(level) => match image
            .store
            .get(&join_key(&join_key(path, &level.path), "attributes.json"))?
        {
            Some(bytes) => serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v.get("dimensions").cloned())
                .and_then(|d| d.as_array().cloned())
                .map(|d| {
                    d.iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default(),
            None => String::new(),
        },
        None => String::new(),
    };
    let name = image.name.clone().unwrap_or_else(|| "setup0".into());
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<SpimData version="0.2">
  <BasePath type="relative">.</BasePath>
  <SequenceDescription>
    <ImageLoader format="bdv.n5" version="1.0">
      <n5 type="relative">.</n5>
    </ImageLoader>
    <ViewSetups>
      <ViewSetup>
        <id>0</id>
        <name>{name}</name>
        <size>{sizes}</size>
        <voxelSize>
          <unit>{unit}</unit>
          <size>{} {} {}</size>
        </voxelSize>
      </ViewSetup>
    </ViewSetups>
    <Timepoints type="range">
      <first>0</first>
      <last>0</last>
    </Timepoints>
  </SequenceDescription>
  <ViewRegistrations>
    <ViewRegistration timepoint="0" setup="0">
      <ViewTransform type="affine">
        <affine>{} 0.0 0.0 0.0 0.0 {} 0.0 0.0 0.0 0.0 {} 0.0</affine>
      </ViewTransform>
    </ViewRegistration>
  </ViewRegistrations>
</SpimData>
"#,
        get(0),
        get(1),
        get(2),
        get(0),
        get(1),
        get(2),
    );
    let _ = store;
    image
        .store
        .set(&join_key(path, "dataset.xml"), xml.into_bytes().into())?;
    Ok(())
}
