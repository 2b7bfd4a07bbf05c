//! Containers of several multiscale images: a BigDataViewer N5 container (one image per setup
//! and time point) and the bioformats2raw layout of OME-Zarr 0.4 / 0.5 (series `0`, `1`, …
//! under a group marked `"bioformats2raw.layout": 3`, listed by the `OME` group's `series`).
//!
//! [`container_images`] lists the images a container holds; [`convert_container`] converts
//! every one of them, writing OME-Zarr as a bioformats2raw container so that none is lost.

use std::sync::Arc;

use neurochunk_array::{create_group, open_node, NodeMetadata, Store, ZarrFormat};
use neurochunk_store::join_key;
use serde_json::Value;

use crate::error::{OmeError, OmeResult};
use crate::image::MultiscaleImage;
use crate::n5::{bdv_setup_timepoints, numbered_children};
use crate::ngff::{ome_attributes, ome_object};
use crate::write::{convert_image, ConvertImageOptions};

/// The value of `bioformats2raw.layout` this crate reads and writes.
const BIOFORMATS2RAW_LAYOUT: u64 = 3;

/// What kind of container a group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    /// A BigDataViewer N5 container: `setupN/timepointM` images.
    BigDataViewer,
    /// An OME-Zarr bioformats2raw container: series `0`, `1`, … (0.4 or 0.5).
    Bioformats2Raw,
}

/// The images of a container: its kind and the paths of its images, relative to the store's
/// root, in order (setups then time points by number; bioformats2raw series as the `OME`
/// group lists them, else `0`, `1`, … while they exist). `None` when the group at `path` is
/// not a container (a single image, or not an image at all).
pub fn container_images(
    store: &dyn Store,
    path: &str,
) -> OmeResult<Option<(ContainerKind, Vec<String>)>> {
    let path = path.trim_matches('/');
    let Ok(node) = open_node(store, path) else {
        return Ok(None);
    };
    let NodeMetadata::Group(group) = node.metadata else {
        return Ok(None);
    };
    if group.format == ZarrFormat::N5 {
        let mut images = Vec::new();
        for (_, setup) in numbered_children(store, path, "setup")? {
            let setup_path = join_key(path, &setup);
            for timepoint in bdv_setup_timepoints(store, &setup_path)? {
                images.push(join_key(&setup_path, &timepoint));
            }
        }
        return Ok((!images.is_empty()).then_some((ContainerKind::BigDataViewer, images)));
    }
    let ome = ome_object(&group.attributes);
    if ome.get("bioformats2raw.layout").and_then(Value::as_u64) != Some(BIOFORMATS2RAW_LAYOUT) {
        return Ok(None);
    }
    let listed = open_node(store, &join_key(path, "OME"))
        .ok()
        .and_then(|n| match n.metadata {
            NodeMetadata::Group(g) => ome_object(&g.attributes).get("series").cloned(),
            NodeMetadata::Array(_) => None,
        });
    let series: Vec<String> = match listed {
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| {
                n.as_str().map(str::to_string).ok_or_else(|| {
                    OmeError::metadata(
                        &join_key(path, "OME"),
                        format!("'series' lists {n}, not a path"),
                    )
                })
            })
            .collect::<OmeResult<_>>()?,
        Some(other) => {
            return Err(OmeError::metadata(
                &join_key(path, "OME"),
                format!("'series' is {other}, not a list of paths"),
            ))
        }
        None => (0..)
            .map(|i: u64| i.to_string())
            .take_while(|name| open_node(store, &join_key(path, name)).is_ok())
            .collect(),
    };
    let images = series.iter().map(|s| join_key(path, s)).collect();
    Ok(Some((ContainerKind::Bioformats2Raw, images)))
}

/// Convert every image of the container at `src_path` into `dst_path` of `dst_store` in
/// `options.layout`, each as [`convert_image`] converts one. Into OME-Zarr the result is a
/// bioformats2raw container: image `i` (in [`container_images`] order) at series `i`, the
/// root group marked `"bioformats2raw.layout": 3` and the `OME` group listing the series;
/// each series keeps its source path as its name (`setup1/timepoint0`). The N5 layouts hold
/// one image each, so a container of several images is refused for them (convert a series
/// or setup on its own). `progress(n)` counts written chunks. Returns the converted images.
pub fn convert_container(
    src_store: &Arc<dyn Store>,
    src_path: &str,
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &ConvertImageOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<Vec<MultiscaleImage>> {
    let Some((kind, paths)) = container_images(src_store.as_ref(), src_path)? else {
        return Err(OmeError::not_image(
            src_path,
            "not a container of multiscale images (a BigDataViewer N5 container or an \
             OME-Zarr bioformats2raw group)",
        ));
    };
    let images = paths
        .iter()
        .map(|path| MultiscaleImage::open(src_store.clone(), path))
        .collect::<OmeResult<Vec<_>>>()?;
    convert_container_images(
        kind, src_path, &images, dst_store, dst_path, options, progress,
    )
}

/// [`convert_container`] of images already opened: `images` are those of the `kind`
/// container at `src_path`, in [`container_images`] order.
pub fn convert_container_images(
    kind: ContainerKind,
    src_path: &str,
    images: &[MultiscaleImage],
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &ConvertImageOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> OmeResult<Vec<MultiscaleImage>> {
    let layout = options.layout;
    if !layout.is_ome_zarr() {
        return Err(OmeError::invalid(
            src_path,
            format!(
                "the {kind} container holds {} images; {} holds one image, so convert them \
                 one at a time (e.g. '{}')",
                images.len(),
                layout.name(),
                crate::error::shown(images.first().map_or("", |i| i.path())),
            ),
        ));
    }
    let dst_path = dst_path.trim_matches('/');
    let format = layout.format();
    let series: Vec<String> = (0..images.len()).map(|i| i.to_string()).collect();
    create_group(
        dst_store.as_ref(),
        dst_path,
        format,
        ome_attributes(
            layout,
            "bioformats2raw.layout",
            Value::from(BIOFORMATS2RAW_LAYOUT),
        ),
    )?;
    create_group(
        dst_store.as_ref(),
        &join_key(dst_path, "OME"),
        format,
        ome_attributes(layout, "series", Value::from(series.clone())),
    )?;
    let mut converted = Vec::with_capacity(images.len());
    for (source, name) in images.iter().zip(&series) {
        let mut image = source.clone();
        if image.name.is_none() || kind == ContainerKind::BigDataViewer {
            let relative = source
                .path()
                .strip_prefix(src_path.trim_matches('/'))
                .unwrap_or(source.path());
            image.name = Some(relative.trim_start_matches('/').to_string());
        }
        converted.push(convert_image(
            &image,
            dst_store.clone(),
            &join_key(dst_path, name),
            options,
            progress,
        )?);
    }
    Ok(converted)
}

impl std::fmt::Display for ContainerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ContainerKind::BigDataViewer => "BigDataViewer",
            ContainerKind::Bioformats2Raw => "bioformats2raw",
        })
    }
}
