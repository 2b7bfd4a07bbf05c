//! [`MultiscaleImage`]: one description of a multiscale image whatever its layout.

use std::sync::Arc;

use neurochunk_array::{
    open_node, Array, N5AxisOrder, NodeMetadata, OpenOptions, Store, ZarrFormat,
};
use serde_json::{json, Value};

use crate::error::{OmeError, OmeResult};

/// How a multiscale image is laid out in its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// OME-Zarr (NGFF) 0.4 on Zarr v2: `multiscales` in `.zattrs` (0.1–0.3 are read as this
    /// layout too; [`MultiscaleImage::version`] tells which).
    OmeZarr04,
    /// OME-Zarr (NGFF) 0.5 on Zarr v3: `attributes.ome.multiscales` in `zarr.json`.
    OmeZarr05,
    /// BigDataViewer N5: `setupN/timepointM/sK`, `downsamplingFactors` on the setup group.
    N5Bdv,
    /// n5-viewer (saalfeldlab) N5: `s0..sN` with `scales` or per-level `downsamplingFactors`.
    N5Viewer,
    /// A Neuroglancer precomputed layer: its `info`'s scales are the levels (axes x, y, z,
    /// channel; resolution in nanometres), named by their keys.
    Precomputed,
}

impl Layout {
    /// The layout's name in JSON descriptions and on the command line: `ome-zarr-0.4`,
    /// `ome-zarr-0.5`, `n5-bdv`, `n5-viewer`, `precomputed`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::OmeZarr04 => "ome-zarr-0.4",
            Layout::OmeZarr05 => "ome-zarr-0.5",
            Layout::N5Bdv => "n5-bdv",
            Layout::N5Viewer => "n5-viewer",
            Layout::Precomputed => "precomputed",
        }
    }

    /// The layout named by [`Layout::name`].
    pub fn parse(name: &str) -> Option<Layout> {
        [
            Layout::OmeZarr04,
            Layout::OmeZarr05,
            Layout::N5Bdv,
            Layout::N5Viewer,
            Layout::Precomputed,
        ]
        .into_iter()
        .find(|l| l.name() == name)
    }

    /// The array format the layout's levels are stored in.
    pub fn format(self) -> ZarrFormat {
        match self {
            Layout::OmeZarr04 => ZarrFormat::V2,
            Layout::OmeZarr05 => ZarrFormat::V3,
            Layout::N5Bdv | Layout::N5Viewer => ZarrFormat::N5,
            Layout::Precomputed => ZarrFormat::Precomputed,
        }
    }

    /// Whether the layout is OME-Zarr.
    pub fn is_ome_zarr(self) -> bool {
        matches!(self, Layout::OmeZarr04 | Layout::OmeZarr05)
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One axis of the image.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The axis name (`x`, `y`, `z`, `c`, `t`, ...).
    pub name: String,
    /// `"space"`, `"time"`, `"channel"` or a custom type; `None` when not stated.
    pub kind: Option<String>,
    /// The unit (`micrometer`, `nanometer`, `second`, ...), when stated.
    pub unit: Option<String>,
}

impl Axis {
    /// An axis with a name, a type and a unit.
    pub fn new(name: impl Into<String>, kind: Option<&str>, unit: Option<&str>) -> Axis {
        Axis {
            name: name.into(),
            kind: kind.map(str::to_string),
            unit: unit.map(str::to_string),
        }
    }

    /// Whether the axis is spatial: type `space`, or, with no type, named `x`, `y` or `z`.
    pub fn is_spatial(&self) -> bool {
        match &self.kind {
            Some(kind) => kind == "space",
            None => matches!(self.name.to_ascii_lowercase().as_str(), "x" | "y" | "z"),
        }
    }
}

/// One resolution level: its array and where its voxels lie in physical space.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// The level's array, relative to the image group (`0`, `s1`, `setup0/timepoint0/s2`).
    pub path: String,
    /// The physical size of one voxel per axis (the multiscale-wide transformations of
    /// OME-Zarr folded in).
    pub scale: Vec<f64>,
    /// The physical position of voxel 0's centre per axis, when not all zero or stated.
    pub translation: Option<Vec<f64>>,
}

/// A multiscale image: its layout, axes, levels and the metadata around them.
#[derive(Clone, Debug)]
pub struct MultiscaleImage {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) path: String,
    pub(crate) layout: Layout,
    pub(crate) version: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) axes: Vec<Axis>,
    pub(crate) levels: Vec<Level>,
    /// The downsampling method recorded (`type` of OME-Zarr multiscales).
    pub(crate) method: Option<String>,
    /// `metadata` of OME-Zarr multiscales (free JSON).
    pub(crate) method_metadata: Option<Value>,
    pub(crate) omero: Option<Value>,
    pub(crate) labels: Vec<String>,
    pub(crate) image_label: Option<Value>,
}

impl MultiscaleImage {
    /// Open the multiscale image at `path` of `store` (`""` for the root), detecting its
    /// layout. A BigDataViewer container opens at its first setup and time point (or give
    /// `setupN` / `setupN/timepointM`); a bioformats2raw container at its first series.
    /// Metadata that cannot be understood is an error naming the group.
    pub fn open(store: Arc<dyn Store>, path: &str) -> OmeResult<MultiscaleImage> {
        let path = path.trim_matches('/').to_string();
        let node = open_node(store.as_ref(), &path)?;
        let group = match node.metadata {
            NodeMetadata::Group(group) => group,
            NodeMetadata::Array(_) => {
                return Err(OmeError::not_image(
                    &path,
                    "it is an array; a multiscale image is a group of level arrays",
                ))
            }
        };
        match group.format {
            ZarrFormat::V2 | ZarrFormat::V3 => {
                crate::ngff::open(store, &path, group.format, &group.attributes)
            }
            ZarrFormat::N5 => crate::n5::open(store, &path, &group.attributes),
            ZarrFormat::Precomputed => crate::precomputed::open(store, &path),
        }
    }

    /// Whether `path` of `store` holds a multiscale image of a known layout (cheap: reads the
    /// group's metadata only, for listings).
    pub fn detect(store: &dyn Store, path: &str) -> Option<Layout> {
        let node = open_node(store, path).ok()?;
        Self::detect_node(store, path, &node.metadata)
    }

    /// [`MultiscaleImage::detect`] for a node whose metadata the caller has already read (an
    /// entry of a walk, perhaps from consolidated metadata): Zarr groups are judged by their
    /// attributes alone; only an N5 group's children are looked at in the store.
    pub fn detect_node(store: &dyn Store, path: &str, metadata: &NodeMetadata) -> Option<Layout> {
        let NodeMetadata::Group(group) = metadata else {
            return None;
        };
        match group.format {
            ZarrFormat::V2 | ZarrFormat::V3 => crate::ngff::detect(group.format, &group.attributes),
            ZarrFormat::N5 => crate::n5::detect(store, path, &group.attributes),
            ZarrFormat::Precomputed => Some(Layout::Precomputed),
        }
    }

    /// The store the image lives in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The image group's path in the store (`""` for the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The OME-Zarr version (`"0.4"`, `"0.5"`, or an older one read), `None` for N5 layouts.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The image's name, when recorded.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The axes, in the order of the level arrays' dimensions.
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The levels, highest resolution first.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The downsampling method recorded (OME-Zarr `type`, e.g. `mean`, `gaussian`).
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// OME-Zarr `multiscales[].metadata`, when present.
    pub fn method_metadata(&self) -> Option<&Value> {
        self.method_metadata.as_ref()
    }

    /// The `omero` rendering metadata (channels, colours, windows), when present.
    pub fn omero(&self) -> Option<&Value> {
        self.omero.as_ref()
    }

    /// The names of the label images under `labels/` (OME-Zarr).
    pub fn labels(&self) -> Vec<String> {
        self.labels.clone()
    }

    /// The `image-label` metadata when this image is itself a label image.
    pub fn image_label(&self) -> Option<&Value> {
        self.image_label.as_ref()
    }

    /// The path of level `i` in the store.
    pub fn level_path(&self, i: usize) -> OmeResult<String> {
        let level = self.levels.get(i).ok_or_else(|| {
            OmeError::invalid(
                &self.path,
                format!("has {} levels, no level {i}", self.levels.len()),
            )
        })?;
        Ok(neurochunk_store::join_key(&self.path, &level.path))
    }

    /// The array of level `i` (N5 levels in C order, the reverse of N5's listed dimensions).
    pub fn level_array(&self, i: usize) -> OmeResult<Array> {
        let path = self.level_path(i)?;
        let options = OpenOptions {
            n5_axis_order: N5AxisOrder::Reversed,
        };
        let array = Array::open_with(self.store.clone(), &path, &options).map_err(|e| match e {
            neurochunk_array::ArrayError::NotFound(_) => OmeError::metadata(
                &self.path,
                format!(
                    "level {i} names '{}', which is not an array",
                    self.levels[i].path
                ),
            ),
            other => other.into(),
        })?;
        if array.shape().len() != self.axes.len() {
            return Err(OmeError::metadata(
                &self.path,
                format!(
                    "level {i} ('{}') has {} dimensions but the image has {} axes",
                    self.levels[i].path,
                    array.shape().len(),
                    self.axes.len()
                ),
            ));
        }
        Ok(array)
    }

    /// All level arrays.
    pub fn level_arrays(&self) -> OmeResult<Vec<Array>> {
        (0..self.levels.len())
            .map(|i| self.level_array(i))
            .collect()
    }

    /// A normalised description: `{"layout", "version", "name", "axes": [{"name", "type",
    /// "unit"}], "levels": [{"path", "shape", "chunks", "shards", "dtype", "scale",
    /// "translation"}], "type", "omero", "labels", "image_label"}` (`chunks` is the inner chunk
    /// shape of a sharded level, `shards` its shard shape or `null`).
    pub fn to_json(&self) -> Value {
        let axes: Vec<Value> = self
            .axes
            .iter()
            .map(|a| json!({"name": a.name, "type": a.kind, "unit": a.unit}))
            .collect();
        let levels: Vec<Value> = self
            .levels
            .iter()
            .enumerate()
            .map(|(i, level)| {
                let mut entry = json!({
                    "path": level.path,
                    "shape": Value::Null,
                    "chunks": Value::Null,
                    "shards": Value::Null,
                    "dtype": Value::Null,
                    "scale": level.scale,
                    "translation": level.translation,
                });
                if let Ok(array) = self.level_array(i) {
                    let meta = array.metadata();
                    let (chunks, shards) = match meta.codecs.sharding() {
                        Some(sharding) => (
                            sharding.inner_chunk_shape().to_vec(),
                            Some(meta.chunk_shape.clone()),
                        ),
                        None => (meta.chunk_shape.clone(), None),
                    };
                    entry["shape"] = json!(meta.shape);
                    entry["chunks"] = json!(chunks);
                    entry["shards"] = json!(shards);
                    entry["dtype"] = json!(meta.data_type_name());
                }
                entry
            })
            .collect();
        json!({
            "layout": self.layout.name(),
            "version": self.version,
            "name": self.name,
            "axes": axes,
            "levels": levels,
            "type": self.method,
            "omero": self.omero,
            "labels": self.labels,
            "image_label": self.image_label,
        })
    }
}
