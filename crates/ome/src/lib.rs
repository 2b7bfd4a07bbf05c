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

mod error;
mod image;
mod kernels;
mod n5;
mod ngff;
mod pyramid;
mod validate;
mod write;

pub use error::{OmeError, OmeResult};
pub use image::{Axis, Layout, Level, MultiscaleImage};
pub use kernels::{downsample_block, Method};
pub use pyramid::{build_pyramid, level_factors, pyramid_chunk_count, Factors, PyramidOptions};
pub use validate::{validate, Problem, Severity};
pub use write::{convert_image, ConvertImageOptions, MultiscaleWriter};
