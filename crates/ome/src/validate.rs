//! Validation of multiscale metadata against the NGFF rules of OME-Zarr 0.4 and 0.5 (and the
//! consistency of the N5 layouts).
//!
//! The rules checked are the specification's MUST rules (errors) and the SHOULD rules whose
//! breach readers notice (warnings: units outside the UDUNITS-2 lists of the spec, missing
//! `dimension_names` in 0.5, `omero` shapes). Each [`Problem`] names the group or array and a
//! short rule identifier.

use std::collections::HashSet;
use std::sync::Arc;

use neurochunk_array::{open_node, ArrayMetadata, NodeMetadata, Store, ZarrFormat};
use neurochunk_store::join_key;
use serde_json::{Map, Value};

use crate::error::{shown, OmeError, OmeResult};
use crate::image::MultiscaleImage;
use crate::ngff::ome_object;

/// How serious a problem is (the one severity of neurochunk's validators).
pub use neurochunk_report::Severity;

/// One rule a multiscale image breaks.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// The group or array concerned (`/` for the root).
    pub path: String,
    /// The rule, a short stable identifier (e.g. `axes.space-count`).
    pub rule: String,
    /// What is wrong.
    pub message: String,
}

/// The space units of the NGFF specification (UDUNITS-2 names).
const SPACE_UNITS: &[&str] = &[
    "angstrom",
    "attometer",
    "centimeter",
    "decimeter",
    "exameter",
    "femtometer",
    "foot",
    "gigameter",
    "hectometer",
    "inch",
    "kilometer",
    "megameter",
    "meter",
    "micrometer",
    "mile",
    "millimeter",
    "nanometer",
    "parsec",
    "petameter",
    "picometer",
    "terameter",
    "yard",
    "yoctometer",
    "yottameter",
    "zeptometer",
    "zettameter",
];

/// The time units of the NGFF specification.
const TIME_UNITS: &[&str] = &[
    "attosecond",
    "centisecond",
    "day",
    "decisecond",
    "exasecond",
    "femtosecond",
    "gigasecond",
    "hectosecond",
    "hour",
    "kilosecond",
    "megasecond",
    "microsecond",
    "millisecond",
    "minute",
    "nanosecond",
    "petasecond",
    "picosecond",
    "second",
    "terasecond",
    "yoctosecond",
    "yottasecond",
    "zeptosecond",
    "zettasecond",
];

struct Checker {
    problems: Vec<Problem>,
}

impl Checker {
    fn error(&mut self, path: &str, rule: &str, message: impl Into<String>) {
        self.push(Severity::Error, path, rule, message);
    }

    fn warn(&mut self, path: &str, rule: &str, message: impl Into<String>) {
        self.push(Severity::Warning, path, rule, message);
    }

    fn push(&mut self, severity: Severity, path: &str, rule: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            severity,
            path: shown(path),
            rule: rule.to_string(),
            message: message.into(),
        });
    }
}

/// Check the multiscale image at `path` (and, for OME-Zarr, its label images). An empty list
/// means valid; [`Problem::severity`] tells errors from warnings. Errors only when the node
/// cannot be read at all.
pub fn validate(store: Arc<dyn Store>, path: &str) -> OmeResult<Vec<Problem>> {
    let path = path.trim_matches('/');
    let node = open_node(store.as_ref(), path)?;
    let mut checker = Checker {
        problems: Vec::new(),
    };
    match node.metadata {
        NodeMetadata::Array(_) => {
            return Err(OmeError::not_image(
                path,
                "it is an array; a multiscale image is a group of level arrays",
            ))
        }
        NodeMetadata::Group(group) => match group.format {
            ZarrFormat::V2 | ZarrFormat::V3 => check_ngff(
                &mut checker,
                store.as_ref(),
                path,
                group.format,
                &group.attributes,
            )?,
            ZarrFormat::N5 => check_n5(&mut checker, store, path),
            // The layer's `info` was checked when it was parsed.
            ZarrFormat::Precomputed => {}
        },
    }
    Ok(checker.problems)
}

fn check_ngff(
    c: &mut Checker,
    store: &dyn Store,
    path: &str,
    format: ZarrFormat,
    attrs: &Map<String, Value>,
) -> OmeResult<()> {
    let v05 = format == ZarrFormat::V3;
    let ome = if v05 {
        match attrs.get("ome") {
            Some(Value::Object(ome)) => {
                match ome.get("version").and_then(Value::as_str) {
                    Some("0.5") => {}
                    Some(other) => c.error(
                        path,
                        "version",
                        format!(
                            "attributes.ome.version is '{other}'; Zarr v3 images are OME-Zarr 0.5"
                        ),
                    ),
                    None => c.error(
                        path,
                        "version",
                        "attributes.ome has no 'version' (must be \"0.5\")",
                    ),
                }
                ome
            }
            _ => {
                c.error(path, "ome.missing", "a Zarr v3 image keeps its metadata in attributes.ome (OME-Zarr 0.5); there is none");
                return Ok(());
            }
        }
    } else {
        ome_object(attrs)
    };
    let Some(multiscales) = ome.get("multiscales") else {
        c.error(
            path,
            "multiscales.missing",
            "the group has no 'multiscales' metadata",
        );
        return Ok(());
    };
    let Some(list) = multiscales.as_array().filter(|l| !l.is_empty()) else {
        c.error(
            path,
            "multiscales.type",
            "'multiscales' must be a non-empty list",
        );
        return Ok(());
    };
    let mut label_dtype_ok = true;
    for (m, ms) in list.iter().enumerate() {
        let at = |key: &str| format!("multiscales[{m}].{key}");
        let Some(ms) = ms.as_object() else {
            c.error(
                path,
                "multiscales.type",
                format!("multiscales[{m}] must be an object"),
            );
            continue;
        };
        if v05 {
            if ms.contains_key("version") {
                c.warn(
                    path,
                    "version",
                    format!(
                        "{}: OME-Zarr 0.5 keeps the version on attributes.ome only",
                        at("version")
                    ),
                );
            }
        } else {
            match ms.get("version").and_then(Value::as_str) {
                Some("0.4") => {}
                Some(v) => c.error(
                    path,
                    "version",
                    format!(
                        "{} is '{v}'; only 0.4 (Zarr v2) and 0.5 (Zarr v3) are validated",
                        at("version")
                    ),
                ),
                None => c.error(
                    path,
                    "version",
                    format!("{} is missing (must be \"0.4\")", at("version")),
                ),
            }
        }
        let rank = check_axes(c, path, ms.get("axes"), &at("axes"));
        if let Some(t) = ms.get("coordinateTransformations") {
            check_transforms(c, path, t, rank, &at("coordinateTransformations"));
        }
        let Some(datasets) = ms
            .get("datasets")
            .and_then(Value::as_array)
            .filter(|d| !d.is_empty())
        else {
            c.error(
                path,
                "datasets.missing",
                format!("{} must be a non-empty list", at("datasets")),
            );
            continue;
        };
        let mut seen = HashSet::new();
        let mut previous_scale: Option<Vec<f64>> = None;
        let mut first_dtype: Option<String> = None;
        for (i, ds) in datasets.iter().enumerate() {
            let where_ = format!("{}[{i}]", at("datasets"));
            let Some(level) = ds
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            else {
                c.error(
                    path,
                    "datasets.path",
                    format!("{where_} has no non-empty 'path'"),
                );
                continue;
            };
            if !seen.insert(level.to_string()) {
                c.error(
                    path,
                    "datasets.path-unique",
                    format!("{where_}: path '{level}' is listed twice"),
                );
            }
            let scale = match ds.get("coordinateTransformations") {
                Some(t) => check_transforms(
                    c,
                    path,
                    t,
                    rank,
                    &format!("{where_}.coordinateTransformations"),
                ),
                None => {
                    c.error(
                        path,
                        "transformations.missing",
                        format!("{where_} has no coordinateTransformations"),
                    );
                    None
                }
            };
            if let (Some(prev), Some(scale)) = (&previous_scale, &scale) {
                if scale.iter().zip(prev).any(|(s, p)| s < p) {
                    c.error(path, "datasets.order", format!("{where_}: scale {scale:?} is finer than the previous level's {prev:?}; datasets go from highest to lowest resolution"));
                }
            }
            if scale.is_some() {
                previous_scale = scale;
            }
            let level_path = join_key(path, level);
            match open_node(store, &level_path) {
                Ok(node) => match node.metadata {
                    NodeMetadata::Array(meta) => {
                        check_level_array(c, &level_path, &meta, rank, format, ms.get("axes"));
                        let dtype = meta.data_type_name();
                        if !matches!(
                            dtype.as_str(),
                            "int8"
                                | "int16"
                                | "int32"
                                | "int64"
                                | "uint8"
                                | "uint16"
                                | "uint32"
                                | "uint64"
                        ) {
                            label_dtype_ok = false;
                        }
                        match &first_dtype {
                            None => first_dtype = Some(dtype),
                            Some(first) if *first != dtype => c.warn(
                                &level_path,
                                "datasets.dtype",
                                format!("data type {dtype} differs from level 0's {first}"),
                            ),
                            _ => {}
                        }
                    }
                    NodeMetadata::Group(_) => c.error(
                        &level_path,
                        "datasets.array",
                        format!("{where_}: '{level}' is a group, not an array"),
                    ),
                },
                Err(neurochunk_array::ArrayError::NotFound(_)) => c.error(
                    path,
                    "datasets.array",
                    format!("{where_}: no array at '{level}'"),
                ),
                Err(e) => c.error(&level_path, "datasets.array", format!("{where_}: {e}")),
            }
        }
    }
    if let Some(omero) = ome.get("omero") {
        check_omero(c, path, omero);
    }
    if let Some(label) = ome.get("image-label") {
        check_image_label(c, path, label);
        if !label_dtype_ok {
            c.error(
                path,
                "image-label.dtype",
                "the arrays of a label image must have an integer data type",
            );
        }
    }
    check_labels(c, store, path, format)?;
    Ok(())
}

/// The axes rules; returns the number of axes (0 when unknown).
fn check_axes(c: &mut Checker, path: &str, axes: Option<&Value>, at: &str) -> usize {
    let Some(axes) = axes.and_then(Value::as_array) else {
        c.error(
            path,
            "axes.missing",
            format!("{at} must be a list of axis objects"),
        );
        return 0;
    };
    if !(2..=5).contains(&axes.len()) {
        c.error(
            path,
            "axes.count",
            format!("{at} has {} axes; an image has 2 to 5", axes.len()),
        );
    }
    let mut names = HashSet::new();
    let mut kinds = Vec::new();
    for (i, axis) in axes.iter().enumerate() {
        let Some(axis) = axis.as_object() else {
            c.error(path, "axes.type", format!("{at}[{i}] must be an object"));
            continue;
        };
        match axis.get("name").and_then(Value::as_str) {
            Some(name) if !names.insert(name.to_string()) => c.error(
                path,
                "axes.name-unique",
                format!("{at}[{i}]: axis name '{name}' is used twice"),
            ),
            Some(_) => {}
            None => c.error(path, "axes.name", format!("{at}[{i}] has no 'name' string")),
        }
        let kind = match axis.get("type") {
            None => None,
            Some(Value::String(k)) => Some(k.clone()),
            Some(other) => {
                c.error(
                    path,
                    "axes.type",
                    format!("{at}[{i}].type must be a string, found {other}"),
                );
                None
            }
        };
        match axis.get("unit") {
            None => {}
            Some(Value::String(unit)) => {
                let list = match kind.as_deref() {
                    Some("space") => Some(SPACE_UNITS),
                    Some("time") => Some(TIME_UNITS),
                    _ => None,
                };
                if let Some(list) = list {
                    if !list.contains(&unit.as_str()) {
                        c.warn(
                            path,
                            "axes.unit",
                            format!(
                                "{at}[{i}]: '{unit}' is not one of the specification's {} units",
                                kind.as_deref().unwrap_or("")
                            ),
                        );
                    }
                }
            }
            Some(other) => c.error(
                path,
                "axes.unit",
                format!("{at}[{i}].unit must be a string, found {other}"),
            ),
        }
        kinds.push(kind);
    }
    let count = |k: &str| kinds.iter().filter(|x| x.as_deref() == Some(k)).count();
    let space = count("space");
    if !(2..=3).contains(&space) {
        c.error(
            path,
            "axes.space-count",
            format!("{at} has {space} axes of type 'space'; an image has 2 or 3"),
        );
    }
    if count("time") > 1 {
        c.error(
            path,
            "axes.time-count",
            format!("{at} has more than one 'time' axis"),
        );
    }
    let other = kinds
        .iter()
        .filter(|k| !matches!(k.as_deref(), Some("space") | Some("time")))
        .count();
    if other > 1 {
        c.error(
            path,
            "axes.channel-count",
            format!("{at} has {other} axes of type 'channel' or custom; at most one"),
        );
    }
    // Order: time, then channel or custom, then space.
    let rank_of = |k: &Option<String>| match k.as_deref() {
        Some("time") => 0,
        Some("space") => 2,
        _ => 1,
    };
    if kinds.windows(2).any(|w| rank_of(&w[0]) > rank_of(&w[1])) {
        c.error(path, "axes.order", format!("{at}: the time axis comes first, then the channel (or custom) axis, then the space axes"));
    }
    axes.len()
}

/// One scale, then optionally one translation, each with one value per axis; returns the
/// scale.
fn check_transforms(
    c: &mut Checker,
    path: &str,
    value: &Value,
    rank: usize,
    at: &str,
) -> Option<Vec<f64>> {
    let Some(list) = value.as_array() else {
        c.error(path, "transformations.type", format!("{at} must be a list"));
        return None;
    };
    let kinds: Vec<&str> = list
        .iter()
        .map(|t| t.get("type").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let valid = matches!(kinds.as_slice(), ["scale"] | ["scale", "translation"]);
    if !valid {
        c.error(path, "transformations.kinds", format!("{at} is {kinds:?}; it must be one 'scale', optionally followed by one 'translation'"));
    }
    let mut scale = None;
    for (j, t) in list.iter().enumerate() {
        let kind = kinds[j];
        if !matches!(kind, "scale" | "translation") {
            continue;
        }
        let Some(values) = t.get(kind).and_then(Value::as_array) else {
            c.error(path, "transformations.values", format!("{at}[{j}] has no '{kind}' list of numbers (a 'path' to binary data is not checked)"));
            continue;
        };
        let numbers: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
        let Some(numbers) = numbers else {
            c.error(
                path,
                "transformations.values",
                format!("{at}[{j}].{kind} must hold numbers"),
            );
            continue;
        };
        if rank > 0 && numbers.len() != rank {
            c.error(
                path,
                "transformations.length",
                format!(
                    "{at}[{j}].{kind} has {} values for {rank} axes",
                    numbers.len()
                ),
            );
        }
        if kind == "scale" {
            if numbers.iter().any(|&s| s <= 0.0) {
                c.error(
                    path,
                    "transformations.scale-positive",
                    format!("{at}[{j}].scale must be positive"),
                );
            }
            scale = Some(numbers);
        }
    }
    scale
}

fn check_level_array(
    c: &mut Checker,
    level_path: &str,
    meta: &ArrayMetadata,
    rank: usize,
    format: ZarrFormat,
    axes: Option<&Value>,
) {
    if rank > 0 && meta.shape.len() != rank {
        c.error(
            level_path,
            "datasets.ndim",
            format!(
                "has {} dimensions but the image has {rank} axes",
                meta.shape.len()
            ),
        );
    }
    if meta.format != format {
        c.error(
            level_path,
            "datasets.format",
            format!(
                "is {} inside a {} image group",
                meta.format.label(),
                format.label()
            ),
        );
    }
    if format == ZarrFormat::V3 {
        let names: Vec<Option<String>> = axes
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| x.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        match &meta.dimension_names {
            None => c.warn(
                level_path,
                "datasets.dimension-names",
                "has no dimension_names (they should be the axis names)",
            ),
            Some(dims) if !names.is_empty() && *dims != names => c.error(
                level_path,
                "datasets.dimension-names",
                format!("dimension_names {dims:?} differ from the axis names {names:?}"),
            ),
            Some(_) => {}
        }
    }
}

fn check_omero(c: &mut Checker, path: &str, omero: &Value) {
    let Some(channels) = omero.get("channels") else {
        return;
    };
    let Some(channels) = channels.as_array() else {
        c.error(path, "omero.channels", "omero.channels must be a list");
        return;
    };
    for (i, ch) in channels.iter().enumerate() {
        if let Some(color) = ch.get("color") {
            let ok = color
                .as_str()
                .is_some_and(|s| s.len() == 6 && s.chars().all(|c| c.is_ascii_hexdigit()));
            if !ok {
                c.warn(path, "omero.color", format!("omero.channels[{i}].color should be 6 hexadecimal digits (RRGGBB), found {color}"));
            }
        }
        if let Some(window) = ch.get("window") {
            for key in ["min", "max", "start", "end"] {
                if !window.get(key).is_some_and(Value::is_number) {
                    c.error(
                        path,
                        "omero.window",
                        format!("omero.channels[{i}].window.{key} must be a number"),
                    );
                }
            }
        }
    }
}

fn check_image_label(c: &mut Checker, path: &str, label: &Value) {
    let Some(label) = label.as_object() else {
        c.error(path, "image-label.type", "'image-label' must be an object");
        return;
    };
    if let Some(colors) = label.get("colors") {
        let Some(colors) = colors.as_array() else {
            c.error(
                path,
                "image-label.colors",
                "image-label.colors must be a list",
            );
            return;
        };
        let mut values = HashSet::new();
        for (i, color) in colors.iter().enumerate() {
            match color.get("label-value").and_then(Value::as_f64) {
                Some(v) if !values.insert(v.to_bits()) => c.error(
                    path,
                    "image-label.label-value-unique",
                    format!("image-label.colors[{i}]: label-value {v} is listed twice"),
                ),
                Some(_) => {}
                None => c.error(
                    path,
                    "image-label.label-value",
                    format!("image-label.colors[{i}] has no numeric 'label-value'"),
                ),
            }
            if let Some(rgba) = color.get("rgba") {
                let ok = rgba.as_array().is_some_and(|a| {
                    a.len() == 4 && a.iter().all(|v| v.as_u64().is_some_and(|n| n <= 255))
                });
                if !ok {
                    c.error(
                        path,
                        "image-label.rgba",
                        format!(
                            "image-label.colors[{i}].rgba must be 4 integers 0..255, found {rgba}"
                        ),
                    );
                }
            }
        }
    }
}

fn check_labels(
    c: &mut Checker,
    store: &dyn Store,
    path: &str,
    format: ZarrFormat,
) -> OmeResult<()> {
    let labels_path = join_key(path, "labels");
    let node = match open_node(store, &labels_path) {
        Ok(node) => node,
        Err(neurochunk_array::ArrayError::NotFound(_)) => return Ok(()),
        Err(e) => {
            c.error(&labels_path, "labels.group", e.to_string());
            return Ok(());
        }
    };
    let NodeMetadata::Group(group) = node.metadata else {
        c.error(
            &labels_path,
            "labels.group",
            "'labels' is an array, not a group",
        );
        return Ok(());
    };
    let attrs = if format == ZarrFormat::V3 {
        match group.attributes.get("ome") {
            Some(Value::Object(ome)) => ome.clone(),
            _ => Map::new(),
        }
    } else {
        group.attributes.clone()
    };
    let Some(names) = attrs.get("labels") else {
        if group.attributes.contains_key("labels") {
            c.warn(&labels_path, "labels.list", "OME-Zarr 0.5 keeps the 'labels' list under attributes.ome, found it at the top level");
        } else {
            c.warn(
                &labels_path,
                "labels.list",
                "the labels group has no 'labels' list",
            );
        }
        return Ok(());
    };
    let Some(names) = names.as_array() else {
        c.error(
            &labels_path,
            "labels.list",
            "'labels' must be a list of paths",
        );
        return Ok(());
    };
    for name in names {
        let Some(name) = name.as_str() else {
            c.error(
                &labels_path,
                "labels.list",
                format!("'labels' entry {name} is not a string"),
            );
            continue;
        };
        let label_path = join_key(&labels_path, name);
        match open_node(store, &label_path) {
            Ok(node) => {
                if let NodeMetadata::Group(g) = &node.metadata {
                    let has_label =
                        crate::ngff::ome_object(&g.attributes).contains_key("image-label");
                    if !has_label {
                        c.warn(
                            &label_path,
                            "image-label.missing",
                            "a label image should carry 'image-label' metadata",
                        );
                    }
                    check_ngff(c, store, &label_path, format, &g.attributes)?;
                } else {
                    c.error(
                        &label_path,
                        "labels.image",
                        "is an array, not a label image group",
                    );
                }
            }
            Err(neurochunk_array::ArrayError::NotFound(_)) => c.error(
                &labels_path,
                "labels.image",
                format!("label image '{name}' is listed but does not exist"),
            ),
            Err(e) => c.error(&label_path, "labels.image", e.to_string()),
        }
    }
    Ok(())
}

/// N5 layouts: the metadata is understood and each level's shape follows from level 0's and
/// the downsampling factors (rounded down or up).
fn check_n5(c: &mut Checker, store: Arc<dyn Store>, path: &str) {
    let image = match MultiscaleImage::open(store, path) {
        Ok(image) => image,
        Err(e) => {
            c.error(path, "n5.metadata", e.to_string());
            return;
        }
    };
    let arrays: Vec<_> = (0..image.levels().len())
        .map(|k| image.level_array(k))
        .collect();
    let Some(Ok(first)) = arrays.first() else {
        if let Some(Err(e)) = arrays.first() {
            c.error(path, "n5.level", e.to_string());
        }
        return;
    };
    let shape0 = first.shape().to_vec();
    for (k, array) in arrays.iter().enumerate().skip(1) {
        let level_path = join_key(path, &image.levels()[k].path);
        match array {
            Err(e) => c.error(&level_path, "n5.level", e.to_string()),
            Ok(array) => {
                let factors = crate::n5::cumulative_factors(&image, k);
                for (d, (&n0, &n)) in shape0.iter().zip(array.shape()).enumerate() {
                    let f = factors[d] as u64;
                    let (low, high) = ((n0 / f).max(1), n0.div_ceil(f));
                    if n < low || n > high {
                        c.error(&level_path, "n5.shape", format!("axis {d} has length {n}; level 0's {n0} downsampled by {f} gives {low}..={high}"));
                    }
                }
            }
        }
    }
}
