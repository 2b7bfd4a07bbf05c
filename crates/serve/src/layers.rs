//! Finding what Neuroglancer can show below a directory: precomputed volumes, segmentations,
//! skeleton and mesh sources, annotation collections, OME-Zarr images and labels (v2 and v3), plain Zarr arrays and N5
//! datasets and multiscales. Only the metadata documents are read.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::ServeError;

/// How deep below the root layers are looked for.
const MAX_DEPTH: usize = 8;
/// How many segment ids a layer lists for the viewer to show at first.
const MAX_SEGMENTS: usize = 64;

/// The format of a layer's source, as Neuroglancer names it in a source URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// Neuroglancer precomputed (`precomputed://`).
    Precomputed,
    /// Zarr v2, OME-Zarr 0.4 included (`zarr2://`).
    Zarr2,
    /// Zarr v3, OME-Zarr 0.5 included (`zarr3://`).
    Zarr3,
    /// N5 (`n5://`).
    N5,
}

impl SourceFormat {
    /// The scheme Neuroglancer expects before `://` in a data source.
    pub fn scheme(self) -> &'static str {
        match self {
            SourceFormat::Precomputed => "precomputed",
            SourceFormat::Zarr2 => "zarr2",
            SourceFormat::Zarr3 => "zarr3",
            SourceFormat::N5 => "n5",
        }
    }
}

/// How a layer is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerKind {
    /// Intensities.
    Image,
    /// Segment ids (labels), with their skeletons and meshes when the source has them.
    Segmentation,
    /// A precomputed annotation collection (`neuroglancer_annotations_v1`).
    Annotation,
}

/// One source a viewer can open.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// A short name: the directory's name.
    pub name: String,
    /// The directory, relative to the served root, `/`-separated (empty for the root itself).
    pub path: String,
    /// The source's format.
    pub format: SourceFormat,
    /// Image or segmentation.
    pub kind: LayerKind,
    /// For segmentations: segment ids known from skeleton or mesh files (at most 64), shown
    /// when the view opens.
    pub segments: Vec<u64>,
}

/// Finds the layers below `root` (the root included), in path order.
pub fn discover_layers(root: &Path) -> Result<Vec<Layer>, ServeError> {
    let mut layers = Vec::new();
    visit(root, "", 0, false, &mut layers)?;
    Ok(layers)
}

fn visit(
    dir: &Path,
    rel: &str,
    depth: usize,
    in_labels: bool,
    layers: &mut Vec<Layer>,
) -> Result<(), ServeError> {
    let name = match rel.rsplit('/').next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into()),
    };
    let layer = |format, kind, segments| Layer {
        name: name.clone(),
        path: rel.to_string(),
        format,
        kind,
        segments,
    };
    // Which subdirectories to look into after this one: all, only `labels`, or none.
    let mut descend = Descend::All;
    if let Some(info) = json_object(&dir.join("info")) {
        if info.get("scales").is_some_and(Value::is_array) {
            let kind = match info.get("type").and_then(Value::as_str) {
                Some("segmentation") => LayerKind::Segmentation,
                _ => LayerKind::Image,
            };
            let mut segments = Vec::new();
            for key in ["skeletons", "mesh"] {
                if let Some(sub) = info.get(key).and_then(Value::as_str) {
                    if segments.is_empty() && is_plain_relative(sub) {
                        segments = segment_files(&dir.join(sub));
                    }
                }
            }
            layers.push(layer(SourceFormat::Precomputed, kind, segments));
            return Ok(());
        }
        if let Some(kind) = info.get("@type").and_then(Value::as_str) {
            if kind == "neuroglancer_annotations_v1" {
                layers.push(layer(
                    SourceFormat::Precomputed,
                    LayerKind::Annotation,
                    Vec::new(),
                ));
                return Ok(());
            }
            if kind.starts_with("neuroglancer_") {
                let segments = segment_files(dir);
                layers.push(layer(
                    SourceFormat::Precomputed,
                    LayerKind::Segmentation,
                    segments,
                ));
                return Ok(());
            }
        }
    }
    if let Some(doc) = json_object(&dir.join("zarr.json")) {
        let attributes = doc.get("attributes");
        let ome = attributes.and_then(|a| a.get("ome")).or(attributes);
        match doc.get("node_type").and_then(Value::as_str) {
            Some("array") => {
                layers.push(layer(SourceFormat::Zarr3, LayerKind::Image, Vec::new()));
                return Ok(());
            }
            Some("group") if ome.is_some_and(|o| o.get("multiscales").is_some()) => {
                let label = in_labels || ome.is_some_and(|o| o.get("image-label").is_some());
                layers.push(layer(SourceFormat::Zarr3, kind_of(label), Vec::new()));
                descend = Descend::LabelsOnly;
            }
            _ => {}
        }
    } else if dir.join(".zarray").is_file() {
        layers.push(layer(SourceFormat::Zarr2, LayerKind::Image, Vec::new()));
        return Ok(());
    } else if let Some(attrs) = json_object(&dir.join(".zattrs")) {
        if attrs.get("multiscales").is_some() {
            let label = in_labels || attrs.get("image-label").is_some();
            layers.push(layer(SourceFormat::Zarr2, kind_of(label), Vec::new()));
            descend = Descend::LabelsOnly;
        }
    } else if let Some(attrs) = json_object(&dir.join("attributes.json")) {
        if attrs.get("dataType").is_some() {
            layers.push(layer(SourceFormat::N5, LayerKind::Image, Vec::new()));
            return Ok(());
        }
        if attrs.get("multiScale").is_some()
            || attrs.get("downsamplingFactors").is_some()
            || attrs.get("scales").is_some()
        {
            layers.push(layer(SourceFormat::N5, LayerKind::Image, Vec::new()));
            return Ok(());
        }
    }
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    let entries = fs::read_dir(dir).map_err(|source| ServeError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut children: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    children.sort();
    for child in children {
        if descend == Descend::LabelsOnly && child != "labels" {
            continue;
        }
        let child_rel = if rel.is_empty() {
            child.clone()
        } else {
            format!("{rel}/{child}")
        };
        let labels = in_labels || child == "labels";
        visit(&dir.join(&child), &child_rel, depth + 1, labels, layers)?;
    }
    Ok(())
}

#[derive(PartialEq)]
enum Descend {
    All,
    LabelsOnly,
}

fn kind_of(label: bool) -> LayerKind {
    if label {
        LayerKind::Segmentation
    } else {
        LayerKind::Image
    }
}

/// A JSON object read from a small metadata file (a missing, unreadable, oversized or
/// malformed file is simply no layer).
fn json_object(path: &Path) -> Option<serde_json::Map<String, Value>> {
    const MAX_METADATA_BYTES: u64 = 16 << 20;
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_METADATA_BYTES {
        return None;
    }
    match serde_json::from_slice(&fs::read(path).ok()?).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn is_plain_relative(sub: &str) -> bool {
    !sub.is_empty()
        && !sub.contains("://")
        && Path::new(sub)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Segment ids named by the files of a skeleton or legacy mesh directory (`ID`, `ID.gz`,
/// `ID:0` manifests), smallest first, at most [`MAX_SEGMENTS`].
fn segment_files(dir: &Path) -> Vec<u64> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<u64> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|name| {
            let stem = name.strip_suffix(".gz").unwrap_or(&name);
            let stem = stem.strip_suffix(":0").unwrap_or(stem);
            stem.parse::<u64>().ok()
        })
        .filter(|&id| id != 0)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(MAX_SEGMENTS);
    ids
}
