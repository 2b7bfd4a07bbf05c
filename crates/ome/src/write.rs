//! Writing multiscale metadata ([`MultiscaleWriter`]) and converting a multiscale image into
//! another layout ([`convert_image`]).

use std::sync::Arc;

use neurochunk_array::convert::{convert_array, ConvertOptions, SourceAdapter};
use neurochunk_array::{create_group, Codec, DataType, N5AxisOrder, Store, ZarrFormat};
use serde_json::{Map, Value};

use crate::error::{OmeError, OmeResult};
use crate::image::{Axis, Layout, Level, MultiscaleImage};
use crate::ngff::ome_attributes;

/// The metadata of a multiscale image to write: the group's attributes in the chosen layout
/// and the attributes each level array carries.
#[derive(Clone, Debug)]
pub struct MultiscaleWriter {
    layout: Layout,
    axes: Vec<Axis>,
    scales: Vec<(Vec<f64>, Option<Vec<f64>>)>,
    name: Option<String>,
    method: Option<String>,
    method_metadata: Option<Value>,
    omero: Option<Value>,
    image_label: Option<Value>,
    data_type: Option<DataType>,
}

impl MultiscaleWriter {
    /// A writer for `layout` with these axes and, per level, its scale and translation.
    pub fn new(layout: Layout, axes: Vec<Axis>, levels: Vec<(Vec<f64>, Option<Vec<f64>>)>) -> Self {
        MultiscaleWriter {
            layout,
            axes,
            scales: levels,
            name: None,
            method: None,
            method_metadata: None,
            omero: None,
            image_label: None,
            data_type: None,
        }
    }

    /// A writer describing `image` (axes, levels, name, method, omero, image-label) in `layout`.
    pub fn from_image(image: &MultiscaleImage, layout: Layout) -> Self {
        MultiscaleWriter {
            layout,
            axes: image.axes.clone(),
            scales: image
                .levels
                .iter()
                .map(|l| (l.scale.clone(), l.translation.clone()))
                .collect(),
            name: image.name.clone(),
            method: image.method.clone(),
            method_metadata: image.method_metadata.clone(),
            omero: image.omero.clone(),
            image_label: image.image_label.clone(),
            data_type: image
                .level_array(0)
                .ok()
                .map(|level| level.metadata().data_type.clone()),
        }
    }

    /// Record the levels' data type (BigDataViewer N5 states it on the setup as `dataType`).
    pub fn data_type(mut self, data_type: DataType) -> Self {
        self.data_type = Some(data_type);
        self
    }

    /// Record the image's name.
    pub fn name(mut self, name: Option<String>) -> Self {
        self.name = name;
        self
    }

    /// Record the downsampling method (OME-Zarr `type`) and its free-form `metadata`.
    pub fn method(mut self, method: Option<String>, metadata: Option<Value>) -> Self {
        self.method = method;
        self.method_metadata = metadata;
        self
    }

    /// Record `omero` rendering metadata (OME-Zarr only).
    pub fn omero(mut self, omero: Option<Value>) -> Self {
        self.omero = omero;
        self
    }

    /// Record `image-label` metadata (OME-Zarr only).
    pub fn image_label(mut self, label: Option<Value>) -> Self {
        self.image_label = label;
        self
    }

    /// The layout written.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The number of levels.
    pub fn level_count(&self) -> usize {
        self.scales.len()
    }

    /// The path of level `k` relative to the image group: `k` for OME-Zarr, `sK` for
    /// n5-viewer, `setup0/timepoint0/sK` for BigDataViewer, the resolution (`8_8_40`) for
    /// precomputed.
    pub fn level_path(&self, k: usize) -> String {
        match self.layout {
            Layout::OmeZarr04 | Layout::OmeZarr05 => k.to_string(),
            Layout::N5Viewer => format!("s{k}"),
            Layout::N5Bdv => format!("setup0/timepoint0/s{k}"),
            // Named after the resolution, as cloud-volume names scales: `8_8_40`.
            Layout::Precomputed => self.scales.get(k).map_or_else(
                || k.to_string(),
                |(scale, _)| {
                    let parts: Vec<String> = scale.iter().take(3).map(f64::to_string).collect();
                    parts.join("_")
                },
            ),
        }
    }

    /// Level `k`'s scale and translation per axis.
    pub fn level_scale(&self, k: usize) -> (Vec<f64>, Option<Vec<f64>>) {
        self.scales.get(k).cloned().unwrap_or_default()
    }

    /// The array format of the levels.
    pub fn format(&self) -> ZarrFormat {
        self.layout.format()
    }

    /// The axis order N5 levels are written in (C order presented, N5 `dimensions` reversed).
    pub fn n5_axis_order(&self) -> N5AxisOrder {
        N5AxisOrder::Reversed
    }

    /// Zarr v3 `dimension_names` for the levels (OME-Zarr 0.5), else `None`.
    pub fn dimension_names(&self) -> Option<Vec<Option<String>>> {
        (self.layout == Layout::OmeZarr05)
            .then(|| self.axes.iter().map(|a| Some(a.name.clone())).collect())
    }

    fn image(&self, store: Arc<dyn Store>, path: &str) -> MultiscaleImage {
        MultiscaleImage {
            store,
            path: path.trim_matches('/').to_string(),
            layout: self.layout,
            version: match self.layout {
                Layout::OmeZarr04 => Some("0.4".into()),
                Layout::OmeZarr05 => Some("0.5".into()),
                _ => None,
            },
            name: self.name.clone(),
            axes: self.axes.clone(),
            levels: self
                .scales
                .iter()
                .enumerate()
                .map(|(k, (scale, translation))| Level {
                    path: self.level_path(k),
                    scale: scale.clone(),
                    translation: translation.clone(),
                })
                .collect(),
            method: self.method.clone(),
            method_metadata: self.method_metadata.clone(),
            omero: self.omero.clone(),
            labels: Vec::new(),
            image_label: self.image_label.clone(),
        }
    }

    fn check(&self, path: &str) -> OmeResult<()> {
        let rank = self.axes.len();
        if self.scales.is_empty() {
            return Err(OmeError::invalid(
                path,
                "a multiscale image needs at least one level",
            ));
        }
        for (k, (scale, translation)) in self.scales.iter().enumerate() {
            if scale.len() != rank || translation.as_ref().is_some_and(|t| t.len() != rank) {
                return Err(OmeError::invalid(
                    path,
                    format!("level {k}: scale and translation need {rank} values, one per axis"),
                ));
            }
        }
        Ok(())
    }

    /// The attributes level `k`'s array carries: for the N5 layouts its own
    /// `downsamplingFactors` (and `pixelResolution` for n5-viewer); nothing for OME-Zarr.
    pub fn level_attributes(&self, k: usize) -> Map<String, Value> {
        if self.layout.is_ome_zarr() || self.layout == Layout::Precomputed {
            return Map::new();
        }
        let image = self.image(Arc::new(neurochunk_store::MemoryStore::new()), "");
        crate::n5::n5_attributes(&image, self.layout, None)
            .1
            .into_iter()
            .nth(k)
            .unwrap_or_default()
    }

    /// Write the image group(s) at `path` of `store`: the group with the multiscale metadata
    /// (for BigDataViewer also `setup0` and `setup0/timepoint0`). Level arrays are written
    /// by the caller at [`MultiscaleWriter::level_path`].
    pub fn write(&self, store: &Arc<dyn Store>, path: &str) -> OmeResult<()> {
        self.check(path)?;
        let path = path.trim_matches('/');
        let image = self.image(store.clone(), path);
        match self.layout {
            Layout::OmeZarr04 | Layout::OmeZarr05 => {
                let attrs = crate::ngff::image_attributes(&image, self.layout, Map::new());
                create_group(store.as_ref(), path, self.format(), attrs)?;
            }
            Layout::N5Viewer => {
                let (attrs, _) = crate::n5::n5_attributes(&image, self.layout, None);
                create_group(store.as_ref(), path, ZarrFormat::N5, attrs)?;
            }
            Layout::N5Bdv => {
                let (attrs, _) =
                    crate::n5::n5_attributes(&image, self.layout, self.data_type.as_ref());
                create_group(store.as_ref(), path, ZarrFormat::N5, Map::new())?;
                let setup = neurochunk_store::join_key(path, "setup0");
                create_group(store.as_ref(), &setup, ZarrFormat::N5, attrs)?;
                let timepoint = neurochunk_store::join_key(&setup, "timepoint0");
                create_group(store.as_ref(), &timepoint, ZarrFormat::N5, Map::new())?;
                crate::n5::write_bdv_xml(store.as_ref(), path, &image)?;
            }
            // The layer's `info` is written with its scales.
            Layout::Precomputed => {}
        }
        Ok(())
    }
}

/// How [`convert_image`] writes the levels; `None` keeps each level's own choice.
#[derive(Clone, Debug)]
pub struct ConvertImageOptions {
    /// The target layout.
    pub layout: Layout,
    /// Chunk shape of every level (the inner chunk shape when `shards` is set), clipped to
    /// each level's shape.
    pub chunks: Option<Vec<usize>>,
    /// Shard shape (Zarr v3 only), clipped likewise.
    pub shards: Option<Vec<usize>>,
    /// Compressions (bytes→bytes codecs) of every level.
    pub codecs: Option<Vec<Codec>>,
    /// Continue an interrupted conversion into the same destination: level arrays whose
    /// metadata is already there keep the chunks they hold (see the array layer's
    /// `ConvertOptions::resume`).
    pub resume: bool,
}

impl ConvertImageOptions {
    /// Convert into `layout`, keeping chunks and codecs.
    pub fn new(layout: Layout) -> Self {
        ConvertImageOptions {
            layout,
            chunks: None,
            shards: None,
            codecs: None,
            resume: false,
        }
    }
}

/// Chunk and shard shapes fitted to a level's shape: chunks no larger than the level, shards a
/// multiple of the chunks and no larger than the level rounded up to whole chunks.
pub(crate) fn fit_chunks(
    shape: &[u64],
    chunks: &[usize],
    shards: Option<&[usize]>,
) -> (Vec<usize>, Option<Vec<usize>>) {
    let inner: Vec<usize> = chunks
        .iter()
        .zip(shape)
        .map(|(&c, &n)| c.min(n.max(1) as usize).max(1))
        .collect();
    let outer = shards.map(|s| {
        s.iter()
            .zip(&inner)
            .zip(shape)
            .map(|((&s, &c), &n)| {
                let whole = (n.max(1) as usize).div_ceil(c) * c;
                (s.div_ceil(c) * c).min(whole).max(c)
            })
            .collect()
    });
    (inner, outer)
}

/// Copy the multiscale image `src` into `dst_path` of `dst_store` in another layout (or the
/// same one with other chunks or codecs): every level is re-encoded, and the metadata is
/// carried over (axes, units, scales, translations, name, method; `omero`, labels and
/// `image-label` between OME-Zarr versions). `progress(n)` counts written chunks.
pub fn convert_image(
    src: &MultiscaleImage,
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &ConvertImageOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<MultiscaleImage> {
    let layout = options.layout;
    // Precomputed arrays are x, y, z, channel and OME-Zarr's channel, z, y, x: a conversion
    // between them reorders the axes of the metadata and of every level.
    let order = crate::precomputed::axis_order(src, layout)?;
    let writer = match &order {
        Some(order) => {
            MultiscaleWriter::from_image(&crate::precomputed::permuted(src, order, layout)?, layout)
        }
        None => MultiscaleWriter::from_image(src, layout),
    };
    if !layout.is_ome_zarr() {
        // N5 layouts hold neither offsets of level 0 nor OME rendering metadata.
        if let Some(axis) = src.axes.iter().find(|a| !a.is_spatial()) {
            if layout == Layout::N5Bdv {
                return Err(OmeError::invalid(
                    &src.path,
                    format!(
                        "BigDataViewer N5 holds 3-D spatial images; axis '{}' is not spatial \
                         (convert to n5-viewer or OME-Zarr instead)",
                        axis.name
                    ),
                ));
            }
        }
    }
    writer.write(&dst_store, dst_path)?;
    for k in 0..src.levels.len() {
        let array = src.level_array(k)?;
        let (chunks, shards) = match &options.chunks {
            Some(c) => {
                let (c, s) = fit_chunks(array.shape(), c, options.shards.as_deref());
                (Some(c), s)
            }
            None => (None, options.shards.clone()),
        };
        let target = neurochunk_store::join_key(dst_path.trim_matches('/'), &writer.level_path(k));
        if let Some(order) = &order {
            crate::precomputed::copy_permuted(
                &array,
                order,
                &writer,
                k,
                // Chunk shapes are given in the destination's axis order.
                (options.chunks.clone(), options.codecs.clone()),
                dst_store.clone(),
                &target,
                progress,
            )?;
            continue;
        }
        let level_attrs = writer.level_attributes(k);
        let names = writer.dimension_names();
        let convert = ConvertOptions {
            format: Some(writer.format()),
            chunks,
            shards,
            compressors: options.codecs.clone(),
            n5_axis_order: writer.n5_axis_order(),
            source_adapter: Some(SourceAdapter::new(move |meta| {
                meta.attributes = level_attrs.clone();
                meta.dimension_names = names.clone();
            })),
            resume: options.resume,
            ..ConvertOptions::default()
        };
        convert_array(&array, dst_store.clone(), &target, &convert, progress)?;
    }
    if layout == Layout::N5Bdv {
        // The BigDataViewer XML records level 0's size: written again now that it exists.
        writer.write(&dst_store, dst_path)?;
    }
    if layout.is_ome_zarr() && src.layout.is_ome_zarr() && !src.labels.is_empty() {
        convert_labels(src, &dst_store, dst_path, options, progress)?;
    }
    MultiscaleImage::open(dst_store, dst_path)
}

/// The label images of an OME-Zarr image, converted along with it.
fn convert_labels(
    src: &MultiscaleImage,
    dst_store: &Arc<dyn Store>,
    dst_path: &str,
    options: &ConvertImageOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<()> {
    let labels_path = neurochunk_store::join_key(dst_path.trim_matches('/'), "labels");
    let attrs = ome_attributes(options.layout, "labels", Value::from(src.labels.clone()));
    create_group(
        dst_store.as_ref(),
        &labels_path,
        options.layout.format(),
        attrs,
    )?;
    for name in &src.labels {
        let label_src =
            neurochunk_store::join_key(&neurochunk_store::join_key(&src.path, "labels"), name);
        let label = MultiscaleImage::open(src.store.clone(), &label_src)?;
        let mut label_options = options.clone();
        // Label levels keep their own chunking unless asked.
        label_options.shards = options.shards.clone();
        convert_image(
            &label,
            dst_store.clone(),
            &neurochunk_store::join_key(&labels_path, name),
            &label_options,
            progress,
        )?;
    }
    Ok(())
}
