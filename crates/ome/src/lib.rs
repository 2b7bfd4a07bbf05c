#![warn(missing_docs)]
//! Multiscale images over neurochunk arrays.
//!
//! A multiscale image is a group holding one array per resolution level plus metadata that
//! says how the levels relate to physical space. Four layouts are read and written:
//!
//! * **OME-Zarr 0.4** (NGFF, Zarr v2): `multiscales` in the group's `.zattrs` (0.1–0.3 are
//!   read too);
//! * **OME-Zarr 0.5** (NGFF, Zarr v3): the same under `attributes.ome` of `zarr.json`;
//! * **BigDataViewer N5**: `setupN/timepointM/sK` with `downsamplingFactors` on the setup;
//! * **n5-viewer N5** (saalfeldlab): `s0..sN` with `scales` / `downsamplingFactors`,
//!   `resolution` / `pixelResolution`.
//!
//! [`MultiscaleImage::open`] detects the layout and gives one description (axes with types and
//! units, levels with scale and translation, `omero`, labels); [`validate`] checks OME-Zarr
//! metadata against the NGFF rules; [`build_pyramid`] builds a multiscale image from one array,
//! streaming chunk-aligned blocks of each level into the next in parallel; [`convert_image`]
//! copies a multiscale image into another layout. N5 levels are presented in C order (the
//! reverse of N5's listed `dimensions`), so their axes read `z, y, x` like OME-Zarr's.
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_array::{ArrayBuilder, DataType, MemoryStore, Selection, Store};
//! use neurochunk_ome::{build_pyramid, Layout, Method, MultiscaleImage, PyramidOptions};
//!
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let raw = ArrayBuilder::new([40, 64, 64], DataType::UInt16)
//!     .dimension_names(["z", "y", "x"])
//!     .create(store.clone(), "raw")?;
//! raw.write_elements(&Selection::all(), &vec![100u16; 40 * 64 * 64])?;
//! // Three levels of OME-Zarr 0.5, block means, 2 µm × 0.5 µm × 0.5 µm voxels.
//! let mut options = PyramidOptions::new(3, Method::Mean, Layout::OmeZarr05);
//! options.scale = Some(vec![2.0, 0.5, 0.5]);
//! options.units = Some(vec!["micrometer".into(); 3]);
//! build_pyramid(&raw, store.clone(), "image.ome.zarr", &options, &|_| {})?;
//!
//! let image = MultiscaleImage::open(store, "image.ome.zarr")?;
//! assert_eq!(image.layout(), Layout::OmeZarr05);
//! assert_eq!(image.levels()[2].scale, [8.0, 2.0, 2.0]);
//! assert_eq!(image.level_array(2)?.shape(), [10, 16, 16]);
//! assert_eq!(image.to_json()["levels"][1]["translation"], serde_json::json!([1.0, 0.25, 0.25]));
//! # Ok::<(), neurochunk_ome::OmeError>(())
//! ```

mod bdv_xml;
mod collection;
mod error;
mod image;
mod kernels;
mod labels;
mod n5;
mod ngff;
mod precomputed;
mod pyramid;
mod stream;
mod validate;
mod write;

#[cfg(feature = "remote")]
pub use bdv_xml::open_location_read;
pub use bdv_xml::{bdv_xml_beside, bdv_xml_container, bdv_xml_for, is_xml, open_bdv_path, BdvXml};
pub use collection::{
    container_images, convert_container, convert_container_images, ContainerKind,
};
pub use error::{OmeError, OmeResult};
pub use image::{Axis, Layout, Level, MultiscaleImage};
pub use kernels::{downsample_block, Method};
pub use labels::{add_label, label_path, label_pyramid_options};
pub use pyramid::{build_pyramid, level_factors, pyramid_chunk_count, Factors, PyramidOptions};
pub use validate::{validate, Problem, Severity};
pub use write::{convert_image, ConvertImageOptions, MultiscaleWriter};
