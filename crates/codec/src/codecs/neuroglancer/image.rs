//! `neuroglancer_jpeg` and `neuroglancer_png`: a chunk stored as one image of width `x` and
//! height `y·z` (pixel rows in Fortran order, the channels of a voxel its colour components),
//! as Neuroglancer, tensorstore and cloud-volume store precomputed `jpeg` and `png` chunks.
//!
//! JPEG: uint8, 1 (grey) or 3 (RGB) channels, lossy; encoded with the `jpeg-encoder` crate,
//! decoded with `zune-jpeg`. PNG: uint8 or uint16 (16-bit samples, big-endian in the file), 1
//! to 4 channels (grey, grey + alpha, RGB, RGBA); the `png` crate both ways. Both are pure Rust.
//! A decoder panic on hostile input is caught and reported as corrupt data.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use neurochunk_dtype::DataType;
use serde_json::{json, Value};

use super::{fixed_chunk, gather, scatter, Layout, Order};
use crate::util::{config_err, corrupt, obj, unsupported, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecError, CodecResult};

const JPEG: &str = "neuroglancer_jpeg";
const PNG: &str = "neuroglancer_png";

/// Image width and height of a stored extent, checked against a format's limit.
fn image_size(codec: &str, layout: &Layout, max: usize) -> CodecResult<(usize, usize)> {
    let [ex, ey, ez] = layout.ext;
    let (w, h) = (ex, ey * ez);
    if w == 0 || h == 0 || w > max || h > max {
        return Err(unsupported(
            codec,
            format!(
                "a chunk extent of {:?} makes an image of {w} x {h} pixels; the format holds 1 \
                 to {max} per side (use smaller chunks)",
                layout.ext
            ),
        ));
    }
    Ok((w, h))
}

/// Run a decoder that may panic on hostile input, turning a panic into corrupt data.
fn guarded<T>(codec: &str, f: impl FnOnce() -> CodecResult<T>) -> CodecResult<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(corrupt(codec, "the image decoder failed on this data")))
}

/// The precomputed `jpeg` chunk encoding at a quality of 1–100.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeuroglancerJpegCodec {
    quality: u8,
}

impl NeuroglancerJpegCodec {
    /// The codec at `quality` (1–100; tensorstore's and cloud-volume's default is 75 and 85).
    pub fn new(quality: u8) -> CodecResult<Self> {
        if !(1..=100).contains(&quality) {
            return Err(config_err(
                JPEG,
                format!("quality must be 1-100, found {quality}"),
            ));
        }
        Ok(NeuroglancerJpegCodec { quality })
    }

    /// The quality, 1–100.
    pub fn quality(&self) -> u8 {
        self.quality
    }

    /// Parse `{"quality": q}` (default 75).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(JPEG, config)?;
        let quality = c.i64_in("quality", 1, 100)?.unwrap_or(75);
        Self::new(quality as u8)
    }

    /// Check that chunks of `repr` can be encoded (uint8, 1 or 3 channels).
    pub fn check_type(repr: &ChunkRepr) -> CodecResult<()> {
        let layout = Layout::new(JPEG, repr, None)?;
        if repr.data_type != DataType::UInt8 || !matches!(layout.channels, 1 | 3) {
            return Err(unsupported(
                JPEG,
                format!(
                    "encodes uint8 chunks of 1 or 3 channels, not {} with {} channel(s)",
                    repr.data_type, layout.channels
                ),
            ));
        }
        Ok(())
    }
}

impl ArrayToBytesCodec for NeuroglancerJpegCodec {
    fn name(&self) -> &str {
        JPEG
    }

    whole_chunk_by_extent!();

    fn encode_extent(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        Self::check_type(repr)?;
        let layout = Layout::new(JPEG, repr, Some(extent))?;
        let (w, h) = image_size(JPEG, &layout, u16::MAX as usize)?;
        let pixels = gather(
            fixed_chunk(JPEG, &data, &layout)?,
            &layout,
            Order::Interleaved,
        );
        let color = if layout.channels == 1 {
            jpeg_encoder::ColorType::Luma
        } else {
            jpeg_encoder::ColorType::Rgb
        };
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, self.quality)
            .encode(&pixels, w as u16, h as u16, color)
            .map_err(|e| unsupported(JPEG, format!("cannot encode the chunk: {e}")))?;
        Ok(out)
    }

    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        Self::check_type(repr)?;
        let layout = Layout::new(JPEG, repr, Some(extent))?;
        let pixels = layout.stored_elements() / layout.channels;
        let colorspace = if layout.channels == 1 {
            zune_jpeg::zune_core::colorspace::ColorSpace::Luma
        } else {
            zune_jpeg::zune_core::colorspace::ColorSpace::RGB
        };
        let decoded = guarded(JPEG, || {
            let options = zune_jpeg::zune_core::options::DecoderOptions::default()
                .jpeg_set_out_colorspace(colorspace)
                .set_max_width(pixels.max(1))
                .set_max_height(pixels.max(1));
            let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
                zune_jpeg::zune_core::bytestream::ZCursor::new(&bytes[..]),
                options,
            );
            decoder
                .decode_headers()
                .map_err(|e| corrupt(JPEG, format!("not a readable JPEG: {e:?}")))?;
            let info = decoder
                .info()
                .ok_or_else(|| corrupt(JPEG, "the JPEG has no frame header"))?;
            let (w, h) = (info.width as usize, info.height as usize);
            if w * h != pixels {
                return Err(corrupt(
                    JPEG,
                    format!(
                        "the image is {w} x {h} pixels, but the chunk extent {:?} has {pixels} \
                         voxels",
                        layout.ext
                    ),
                ));
            }
            decoder
                .decode()
                .map_err(|e| corrupt(JPEG, format!("not a readable JPEG: {e:?}")))
        })?;
        if decoded.len() != layout.stored_elements() {
            return Err(corrupt(
                JPEG,
                format!(
                    "decoded {} samples, expected {} ({} channel(s))",
                    decoded.len(),
                    layout.stored_elements(),
                    layout.channels
                ),
            ));
        }
        Ok(ArrayBytes::Fixed(scatter(
            &decoded,
            &layout,
            Order::Interleaved,
            &repr.fill_value,
        )))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(JPEG, Some(obj([("quality", json!(self.quality))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}

/// The precomputed `png` chunk encoding with an optional zlib level 0–9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeuroglancerPngCodec {
    level: Option<u8>,
}

impl NeuroglancerPngCodec {
    /// The codec with zlib `level` 0–9 (`None`: the png crate's balanced default).
    pub fn new(level: Option<u8>) -> CodecResult<Self> {
        if let Some(level) = level.filter(|l| *l > 9) {
            return Err(config_err(PNG, format!("level must be 0-9, found {level}")));
        }
        Ok(NeuroglancerPngCodec { level })
    }

    /// The zlib level, when one was given.
    pub fn level(&self) -> Option<u8> {
        self.level
    }

    /// Parse `{"level": l}` (optional).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(PNG, config)?;
        Self::new(c.i64_in("level", 0, 9)?.map(|l| l as u8))
    }

    /// Check that chunks of `repr` can be encoded (uint8 or uint16, 1 to 4 channels).
    pub fn check_type(repr: &ChunkRepr) -> CodecResult<()> {
        let layout = Layout::new(PNG, repr, None)?;
        if !matches!(repr.data_type, DataType::UInt8 | DataType::UInt16)
            || !(1..=4).contains(&layout.channels)
        {
            return Err(unsupported(
                PNG,
                format!(
                    "encodes uint8 or uint16 chunks of 1 to 4 channels, not {} with {} channel(s)",
                    repr.data_type, layout.channels
                ),
            ));
        }
        Ok(())
    }

    fn color(channels: usize) -> png::ColorType {
        match channels {
            1 => png::ColorType::Grayscale,
            2 => png::ColorType::GrayscaleAlpha,
            3 => png::ColorType::Rgb,
            _ => png::ColorType::Rgba,
        }
    }
}

fn png_error(e: impl std::fmt::Display) -> CodecError {
    corrupt(PNG, format!("not a readable PNG: {e}"))
}

impl ArrayToBytesCodec for NeuroglancerPngCodec {
    fn name(&self) -> &str {
        PNG
    }

    whole_chunk_by_extent!();

    fn encode_extent(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        Self::check_type(repr)?;
        let layout = Layout::new(PNG, repr, Some(extent))?;
        let (w, h) = image_size(PNG, &layout, i32::MAX as usize)?;
        let mut pixels = gather(
            fixed_chunk(PNG, &data, &layout)?,
            &layout,
            Order::Interleaved,
        );
        let sixteen = layout.elem == 2;
        if sixteen {
            // PNG samples are big-endian.
            for pair in pixels.chunks_exact_mut(2) {
                pair.swap(0, 1);
            }
        }
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
            encoder.set_color(Self::color(layout.channels));
            encoder.set_depth(if sixteen {
                png::BitDepth::Sixteen
            } else {
                png::BitDepth::Eight
            });
            if let Some(level) = self.level {
                encoder.set_deflate_compression(png::DeflateCompression::Level(level));
            }
            let fail = |e: png::EncodingError| unsupported(PNG, format!("cannot encode: {e}"));
            let mut writer = encoder.write_header().map_err(fail)?;
            writer.write_image_data(&pixels).map_err(fail)?;
            writer.finish().map_err(fail)?;
        }
        Ok(out)
    }

    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        Self::check_type(repr)?;
        let layout = Layout::new(PNG, repr, Some(extent))?;
        let expected = layout.stored_elements() * layout.elem;
        let pixels = layout.stored_elements() / layout.channels;
        let mut decoded = guarded(PNG, || {
            let limits = png::Limits {
                bytes: expected.saturating_mul(2).saturating_add(1 << 20),
            };
            let mut decoder = png::Decoder::new_with_limits(Cursor::new(&bytes[..]), limits);
            decoder.set_transformations(png::Transformations::IDENTITY);
            let mut reader = decoder.read_info().map_err(png_error)?;
            let info = reader.info();
            let (w, h) = (info.width as usize, info.height as usize);
            let (color, depth) = (info.color_type, info.bit_depth);
            let want_depth = if layout.elem == 2 {
                png::BitDepth::Sixteen
            } else {
                png::BitDepth::Eight
            };
            if w.saturating_mul(h) != pixels
                || color != Self::color(layout.channels)
                || depth != want_depth
            {
                return Err(corrupt(
                    PNG,
                    format!(
                        "the image is {w} x {h} pixels of {color:?} at {depth:?} bits, but the \
                         chunk extent {:?} needs {pixels} pixels of {:?} at {want_depth:?} bits",
                        layout.ext,
                        Self::color(layout.channels)
                    ),
                ));
            }
            let mut buf = vec![0u8; expected];
            let frame = reader.next_frame(&mut buf).map_err(png_error)?;
            if frame.buffer_size() != expected {
                return Err(corrupt(
                    PNG,
                    format!("decoded {} bytes, expected {expected}", frame.buffer_size()),
                ));
            }
            Ok(buf)
        })?;
        if layout.elem == 2 {
            for pair in decoded.chunks_exact_mut(2) {
                pair.swap(0, 1);
            }
        }
        Ok(ArrayBytes::Fixed(scatter(
            &decoded,
            &layout,
            Order::Interleaved,
            &repr.fill_value,
        )))
    }

    fn to_v3_json(&self) -> Value {
        match self.level {
            Some(level) => v3_json(PNG, Some(obj([("level", json!(level))]))),
            None => v3_json(PNG, None),
        }
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}
