//! `get`, `put`, `convert` and `consolidate`: moving array data between .npy files and stores,
//! and between stores.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use neurochunk_array::convert::{
    chunk_count, convert_array, convert_hierarchy, derive_metadata, ConvertOptions,
};
use neurochunk_array::{
    consolidate as consolidate_group, open_node_with, parse_selection, Array, ArrayBuilder,
    ArrayBytes, Codec, DataType, FillValue, N5AxisOrder, NodeMetadata, NodeTree, OpenOptions,
    Store, ZarrFormat,
};
use neurochunk_dtype::npy;
use neurochunk_dtype::Endian;
use neurochunk_store::replace::{self, Overwrite};
use neurochunk_store::staging::{resolve_target, StagedDir};
use serde_json::{Map, Value};

use crate::codec_spec::parse_codecs;
use crate::npz;
use crate::store_args::{Location, ReplaceArgs, WriteArgs};
use crate::{progress, CmdResult, Failure};

/// The on-disk format to write.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum FormatArg {
    /// Zarr v2 (`.zarray`, `.zgroup`, `.zattrs`).
    Zarr2,
    /// Zarr v3 (`zarr.json`, optional sharding).
    Zarr3,
    /// N5 (`attributes.json`, big-endian blocks at `i/j/k`).
    N5,
    /// Neuroglancer precomputed (a layer's `info`, scales `x, y, z, channel`; the path is the
    /// layer, the scale's key is its resolution, e.g. `8_8_40`).
    Precomputed,
    /// Zarr v3 in an Icechunk repository: a path (or URL) that is not one yet becomes a new
    /// repository, and what the command writes is committed to its branch when it succeeds.
    Icechunk,
}

impl From<FormatArg> for ZarrFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Zarr2 => ZarrFormat::V2,
            FormatArg::Zarr3 => ZarrFormat::V3,
            FormatArg::N5 => ZarrFormat::N5,
            FormatArg::Precomputed => ZarrFormat::Precomputed,
            FormatArg::Icechunk => ZarrFormat::V3,
        }
    }
}

/// The axis order N5 datasets are presented in.
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub(crate) enum AxisOrderArg {
    /// As `attributes.json` lists them (N5 Java API, tensorstore).
    #[default]
    Listed,
    /// Reversed (zarr-python 2's N5Store, z5).
    Reversed,
}

impl From<AxisOrderArg> for N5AxisOrder {
    fn from(a: AxisOrderArg) -> Self {
        match a {
            AxisOrderArg::Listed => N5AxisOrder::Listed,
            AxisOrderArg::Reversed => N5AxisOrder::Reversed,
        }
    }
}

/// The `--n5-axis-order` option of every command that reads or writes arrays.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct AxisOrderOpt {
    /// Axis order of N5 datasets: `listed` (as attributes.json lists them, like the N5 Java
    /// API and tensorstore) or `reversed` (like zarr-python 2's N5Store and z5).
    #[arg(long, value_enum, default_value = "listed")]
    pub(crate) n5_axis_order: AxisOrderArg,
}

impl AxisOrderOpt {
    pub(crate) fn open_options(self) -> OpenOptions {
        OpenOptions {
            n5_axis_order: self.n5_axis_order.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum OrderArg {
    #[value(name = "C", alias = "c")]
    C,
    #[value(name = "F", alias = "f")]
    F,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum EndianArg {
    Little,
    Big,
}

impl From<EndianArg> for Endian {
    fn from(e: EndianArg) -> Self {
        match e {
            EndianArg::Little => Endian::Little,
            EndianArg::Big => Endian::Big,
        }
    }
}

/// Options shared by `put` and `convert` that shape the stored array.
#[derive(Args, Debug)]
pub(crate) struct LayoutArgs {
    /// Chunk shape, comma-separated (with --shards: the inner chunk shape).
    #[arg(long, value_name = "N,N,...")]
    chunks: Option<String>,
    /// Shard shape for Zarr v3 sharding (each a multiple of the chunk shape).
    #[arg(long, value_name = "N,N,...")]
    shards: Option<String>,
    /// Compression and checksum codecs, comma-separated, applied in order:
    /// `none`, `zstd[:LEVEL[:checksum]]`, `gzip[:LEVEL]`, `zlib[:LEVEL]`,
    /// `blosc:CNAME:CLEVEL:SHUFFLE` (cname lz4|lz4hc|blosclz|zstd|zlib|snappy;
    /// shuffle noshuffle|shuffle|bitshuffle), `bz2[:LEVEL]`, `lzma[:PRESET]`, `lz4[:ACCEL]`,
    /// `crc32c`; for `--format precomputed` the encoding `raw`,
    /// `compressed_segmentation[:B[:B:B]]`, `jpeg[:QUALITY]` or `png[:LEVEL]` (with `gzip`:
    /// gzip-compressed chunk files). Example: `--codec zstd:3,crc32c`.
    #[arg(long, value_name = "SPEC")]
    codec: Option<String>,
    /// Element order inside each chunk.
    #[arg(long, value_enum)]
    order: Option<OrderArg>,
    /// Byte order of stored elements.
    #[arg(long, value_enum)]
    endian: Option<EndianArg>,
    /// Chunk key separator: `.` (`0.1`) or `/` (`0/1`).
    #[arg(long, value_name = "SEP")]
    dimension_separator: Option<char>,
    /// Precomputed: the scale's resolution in nanometres, `X,Y,Z` (default: the source's,
    /// else 1,1,1). `put` names the scale after it (`8,8,40`: `LAYER/8_8_40`).
    #[arg(long, value_name = "X,Y,Z")]
    resolution: Option<String>,
    /// Precomputed: the voxel coordinates of the array's first voxel, `X,Y,Z` (default: the
    /// source's, else 0,0,0).
    #[arg(long, value_name = "X,Y,Z", allow_hyphen_values = true)]
    voxel_offset: Option<String>,
    /// Precomputed: store the scale sharded, as the `sharding` object of its `info` says
    /// (JSON, `"@type": "neuroglancer_uint64_sharded_v1"` with `preshift_bits`, `hash`,
    /// `minishard_bits`, `shard_bits`, `minishard_index_encoding`, `data_encoding`), or
    /// `none` to write unsharded even from a sharded source.
    #[arg(long, value_name = "JSON|none")]
    sharding: Option<String>,
    #[command(flatten)]
    axis_order: AxisOrderOpt,
}

/// Three comma-separated numbers (`--resolution`, `--voxel-offset`).
fn parse_triple<T: std::str::FromStr>(text: &str, flag: &str) -> Result<[T; 3], Failure> {
    let fail = || Failure(format!("{flag} '{text}': expected three numbers X,Y,Z"));
    let parts: Vec<T> = text
        .split(',')
        .map(|p| p.trim().parse::<T>().map_err(|_| fail()))
        .collect::<Result<_, _>>()?;
    parts.try_into().map_err(|_| fail())
}

/// The key `put` gives a precomputed scale of `resolution` (cloud-volume's naming: `8_8_40`).
fn scale_key(resolution: [f64; 3]) -> String {
    resolution
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("_")
}

fn parse_shape(text: &str, what: &str) -> Result<Vec<usize>, Failure> {
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Failure(format!("{what} '{text}': '{p}' is not a positive integer")))
        })
        .collect()
}

impl LayoutArgs {
    fn precomputed_options(&self) -> Result<neurochunk_array::PrecomputedOptions, Failure> {
        let resolution = match self.resolution.as_deref() {
            None => None,
            Some(text) => {
                let r = parse_triple::<f64>(text, "--resolution")?;
                if !r.iter().all(|v| v.is_finite() && *v > 0.0) {
                    return Err(Failure(format!(
                        "--resolution '{text}': three positive numbers are needed"
                    )));
                }
                Some(r)
            }
        };
        let (sharding, unsharded) = match self.sharding.as_deref().map(str::trim) {
            None => (None, false),
            Some("none") => (None, true),
            Some(text) => {
                let value: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| Failure(format!("--sharding: not JSON: {e}")))?;
                let spec = neurochunk_array::ShardingSpec::from_json(&value)
                    .map_err(|e| Failure(format!("--sharding: {e}")))?;
                (Some(spec), false)
            }
        };
        Ok(neurochunk_array::PrecomputedOptions {
            resolution,
            voxel_offset: self
                .voxel_offset
                .as_deref()
                .map(|o| parse_triple::<i64>(o, "--voxel-offset"))
                .transpose()?,
            sharding,
            unsharded,
            ..Default::default()
        })
    }

    fn options(&self, format: Option<ZarrFormat>) -> Result<ConvertOptions, Failure> {
        if let Some(sep) = self.dimension_separator {
            if sep != '.' && sep != '/' {
                return Err(Failure(format!(
                    "--dimension-separator must be '.' or '/', not '{sep}'"
                )));
            }
        }
        Ok(ConvertOptions {
            format,
            chunks: self
                .chunks
                .as_deref()
                .map(|c| parse_shape(c, "--chunks"))
                .transpose()?,
            shards: self
                .shards
                .as_deref()
                .map(|s| parse_shape(s, "--shards"))
                .transpose()?,
            compressors: self
                .codec
                .as_deref()
                .map(parse_codecs)
                .transpose()
                .map_err(|e| Failure(format!("--codec: {e}")))?,
            endian: self.endian.map(Endian::from),
            fortran_order: self.order.map(|o| matches!(o, OrderArg::F)),
            separator: self.dimension_separator,
            n5_axis_order: self.axis_order.n5_axis_order.into(),
            keep_checksums: false,
            resume: false,
            precomputed: self.precomputed_options()?,
            copy_stored: false,
            // NWB files converted as plain Zarr keep their reference dictionaries.
            source_adapter: Some(neurochunk_hdmf::reference_source_adapter()),
        })
    }
}

#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    /// The array's directory or URL.
    path: Location,
    /// Region to read, per axis an index or `start:stop[:step]`, e.g. `0:10,5,::2`.
    #[arg(long, value_name = "SEL", allow_hyphen_values = true)]
    region: Option<String>,
    /// The .npy file to write (a path or a URL; a ragged array goes to an .npz).
    #[arg(short, long, value_name = "OUT.npy")]
    output: Location,
    #[command(flatten)]
    axis_order: AxisOrderOpt,
}

#[derive(Args, Debug)]
pub(crate) struct PutArgs {
    /// The .npy file to read (a path or a URL; an .npz holds a ragged array).
    input: Location,
    /// The array directory or URL to create (replaced if it exists).
    path: Location,
    /// The format to write.
    #[arg(long, value_enum)]
    format: FormatArg,
    #[command(flatten)]
    layout: LayoutArgs,
    /// Fill value as JSON, in the target format's spelling (e.g. `0`, `"NaN"`, `[1.0, 0.0]`).
    #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
    fill_value: Option<String>,
    /// User attributes as a JSON object.
    #[arg(long, value_name = "JSON")]
    attrs: Option<String>,
    /// Store `<U`/`|S` text and bytes as variable-length strings/bytes.
    #[arg(long)]
    vlen: bool,
    /// Also store chunks that hold only the fill value.
    #[arg(long)]
    write_empty_chunks: bool,
    #[command(flatten)]
    write: WriteArgs,
    #[command(flatten)]
    replace: ReplaceArgs,
}

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// The source array or group: a directory or a URL.
    src: Location,
    /// The destination: a directory or a URL (replaced if it exists).
    dst: Location,
    /// The format to write (default: the source's).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    #[command(flatten)]
    layout: LayoutArgs,
    /// The N5 multiscale layout a multiscale image is written in with `--format n5` (default:
    /// bdv for 3-D spatial images, n5-viewer otherwise).
    #[arg(long, value_enum)]
    n5_layout: Option<crate::ome_cmd::N5LayoutArg>,
    /// Write consolidated metadata at the destination afterwards.
    #[arg(long)]
    consolidate: bool,
    /// Keep `crc32c` checksums when writing Zarr v2 (dropped by default: stock zarr-python 2
    /// cannot read them without an optional package).
    #[arg(long)]
    keep_checksums: bool,
    /// Continue an interrupted conversion of the same source with the same options: chunks
    /// it already stored are not converted again (a path: the tree it left staged beside the
    /// destination; a URL: the objects under the destination prefix, which must hold that
    /// conversion's marker). Without an interrupted conversion, converts from scratch.
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    write: WriteArgs,
    #[command(flatten)]
    replace: ReplaceArgs,
}

/// The key, at the destination's root, of the marker of a conversion in progress: which
/// source with which options (removed when the conversion finishes). `--resume` continues
/// only the conversion it describes.
const CONVERT_MARKER: &str = ".neurochunk-convert.json";

impl ConvertArgs {
    /// The marker of this conversion (see [`CONVERT_MARKER`]).
    fn marker(&self) -> Vec<u8> {
        let options = format!(
            "{:?}",
            (
                &self.format,
                &self.layout,
                self.keep_checksums,
                self.consolidate
            )
        );
        let doc = serde_json::json!({
            "neurochunk_convert": 1,
            "source": self.src.display(),
            "options": options,
        });
        serde_json::to_vec_pretty(&doc).unwrap_or_default()
    }
}

/// Whether the destination `store` holds a conversion to resume: `Some(true)` when it holds
/// the marker `marker`, `Some(false)` when it holds nothing at all, `None` otherwise (other
/// data, or another conversion's marker).
fn resumable(
    store: &dyn Store,
    marker: &[u8],
) -> Result<Option<bool>, neurochunk_store::StoreError> {
    if let Some(found) = store.get(CONVERT_MARKER)? {
        return Ok((found.as_ref() == marker).then_some(true));
    }
    let listing = store.list_dir("")?;
    Ok((listing.keys.is_empty() && listing.prefixes.is_empty()).then_some(false))
}

#[derive(Args, Debug)]
pub(crate) struct ConsolidateArgs {
    /// The group directory or URL.
    path: Location,
    #[command(flatten)]
    write: WriteArgs,
}

/// `--fsync` applies to local files only.
pub(crate) fn local_only_fsync(write: &WriteArgs, location: &Location) -> CmdResult {
    if write.fsync && location.local().is_none() {
        return Err(Failure(format!(
            "{location}: --fsync applies to local paths only (objects are stored durably by the service)"
        )));
    }
    Ok(())
}

pub(crate) fn get(args: GetArgs) -> CmdResult {
    let array = open_array_to_read(&args.path, &args.axis_order.open_options())?;
    let selection = parse_selection(args.region.as_deref().unwrap_or(""))
        .map_err(|e| Failure(format!("{}: --region: {e}", args.path.display())))?;
    if array.metadata().ragged_element_type().is_some() {
        return get_ragged(&args, &array, &selection);
    }
    // A remote read shows what it fetched so far (a local one is over before a bar helps).
    let spinner = args
        .path
        .local()
        .is_none()
        .then(|| progress::spinner(&format!("reading {}", args.path)));
    let (shape, data) = array
        .read(&selection)
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    if let Some(spinner) = spinner {
        spinner.finish_and_clear();
    }
    let (data_type, bytes) = to_npy_layout(&array.metadata().data_type, data);
    write_npy_to(&args.output, &data_type, &shape, &bytes)
}

/// The array `get` reads at `location`: the array stored there, else, for a Neuroglancer
/// precomputed layer, its first scale, or for a scale directory of a layer, that scale. The
/// location's own metadata is looked for first, so reading a Zarr or N5 array makes no request
/// for a layer's `info`.
fn open_array_to_read(location: &Location, options: &OpenOptions) -> Result<Array, Failure> {
    let display = location.display();
    let direct = Array::open_with(location.open_read()?, "", options);
    let error = match direct {
        Ok(array) => return Ok(array),
        Err(e) => e,
    };
    let (store, node) = location.open_read_node()?;
    let node = first_scale(store.as_ref(), node, &display)?;
    if node.is_empty() {
        return Err(Failure(format!("{display}: {error}")));
    }
    Array::open_with(store, &node, options).map_err(|e| Failure(format!("{display}: {e}")))
}

/// The array `get` reads at `node`: the node itself, or for a Neuroglancer precomputed layer
/// its first scale (scale 0, the finest, as tensorstore and cloud-volume open a layer).
fn first_scale(store: &dyn Store, node: String, display: &str) -> Result<String, Failure> {
    let layer = neurochunk_array::precomputed::read_layer(store, &node)
        .map_err(|e| Failure(format!("{display}: {e}")))?;
    match layer {
        Some(info) => match info.scales.first() {
            Some(scale) => Ok(neurochunk_store::join_key(&node, &scale.key)),
            None => Err(Failure(format!(
                "{display}: the precomputed layer's info lists no scales"
            ))),
        },
        None => Ok(node),
    }
}

/// A ragged array (numcodecs `vlen-array`) goes to an `.npz` holding `values` (every
/// element's numbers back to back), `offsets` (int64, element `i` is
/// `values[offsets[i]:offsets[i+1]]`, C order) and `shape` (int64, the selection's shape).
fn get_ragged(args: &GetArgs, array: &Array, selection: &neurochunk_array::Selection) -> CmdResult {
    let out = &args.output;
    if !out.file_name().ends_with(".npz") {
        return Err(Failure(format!(
            "{}: the array is ragged (numcodecs vlen-array): give an .npz output, which gets \
             `values`, `offsets` and `shape` (-o OUT.npz)",
            args.path.display()
        )));
    }
    let ragged = array
        .read_ragged(selection)
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    let size = ragged.element_type.fixed_size().unwrap_or(1).max(1);
    let int64 =
        |v: &[usize]| -> Vec<u8> { v.iter().flat_map(|&x| (x as i64).to_le_bytes()).collect() };
    let fail = |e: String| Failure(format!("{}: {e}", out.display()));
    let members = [
        (
            "values",
            npz::npy_bytes(
                &ragged.element_type,
                &[ragged.values.len() / size],
                &ragged.values,
            )
            .map_err(fail)?,
        ),
        (
            "offsets",
            npz::npy_bytes(
                &DataType::Int64,
                &[ragged.offsets.len()],
                &int64(&ragged.offsets),
            )
            .map_err(fail)?,
        ),
        (
            "shape",
            npz::npy_bytes(
                &DataType::Int64,
                &[ragged.shape.len()],
                &int64(&ragged.shape),
            )
            .map_err(fail)?,
        ),
    ];
    out.write_file(npz::npz_bytes(&members).map_err(fail)?)
}

/// Write a `.npy` file to a path (written aside and renamed into place) or a URL (one
/// object).
pub(crate) fn write_npy_to(
    output: &Location,
    data_type: &DataType,
    shape: &[usize],
    data: &[u8],
) -> CmdResult {
    let fail = |e: neurochunk_dtype::DtypeError| Failure(format!("{}: {e}", output.display()));
    match output.local() {
        Some(path) => npy::write_npy(path, data_type, shape, data).map_err(fail),
        None => output.write_file(npy::npy_file_bytes(data_type, shape, data).map_err(fail)?),
    }
}

/// Read a `.npy` file from a path or a URL.
fn read_npy_from(input: &Location) -> Result<(npy::NpyHeader, Vec<u8>), Failure> {
    let fail = |e: neurochunk_dtype::DtypeError| Failure(format!("{}: {e}", input.display()));
    match input.local() {
        Some(path) => npy::read_npy(path).map_err(fail),
        None => npy::read_npy_bytes(&input.read_file()?).map_err(fail),
    }
}

/// The values `put` stores: in memory, or a `.npy` file read slab by slab as it is written.
enum PutData {
    Whole(ArrayBytes),
    Npy(NpyFile),
}

/// A `.npy` file on disk whose data bytes are already the array's element bytes (C order,
/// little-endian or single-byte elements), so they can be written as read.
struct NpyFile {
    path: PathBuf,
    header: npy::NpyHeader,
}

/// Bytes of data a slab of a streamed `put` holds (at least one chunk or shard row): enough
/// chunks for every core; into a remote store, enough to keep its requests in flight.
const PUT_SLAB_BYTES: usize = 16 << 20;
const REMOTE_PUT_SLAB_BYTES: usize = 128 << 20;

/// The input of `put` as an [`NpyFile`] when it is one that can be streamed: a local `.npy`
/// file (not `--vlen`), C order, of fixed-size elements stored little-endian (or one byte
/// each, not a structure), at least one-dimensional.
fn streamable_npy(input: &Location, vlen: bool) -> Result<Option<NpyFile>, Failure> {
    let Some(path) = input.local().filter(|_| !vlen) else {
        return Ok(None);
    };
    let fail = |e: String| Failure(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let header = npy::read_npy_header(&mut std::io::BufReader::new(file))
        .map_err(|e| fail(e.to_string()))?;
    let size = header.data_type.fixed_size().unwrap_or(0);
    let plain_bytes = header.endian == Some(Endian::Little)
        || (size == 1 && !matches!(header.data_type, DataType::Structured(_)));
    let streamable = plain_bytes && !header.fortran_order && !header.shape.is_empty();
    Ok(streamable.then(|| NpyFile {
        path: path.to_path_buf(),
        header,
    }))
}

impl PutData {
    /// All of the values in memory (a streamed file is read whole now).
    fn whole(&mut self) -> Result<&ArrayBytes, Failure> {
        if let PutData::Npy(file) = self {
            let (_, bytes) = npy::read_npy(&file.path)
                .map_err(|e| Failure(format!("{}: {e}", file.path.display())))?;
            *self = PutData::Whole(ArrayBytes::Fixed(bytes));
        }
        match self {
            PutData::Whole(data) => Ok(data),
            PutData::Npy(_) => unreachable!("replaced above"),
        }
    }

    /// Write the values into `array` (of the input's shape): at once, or in slabs along the
    /// first axis, each a whole number of the array's chunk (shard) rows, so that memory holds
    /// one slab and no chunk is written twice.
    fn write_into(&self, array: &Array) -> Result<(), String> {
        let file = match self {
            PutData::Whole(data) => return array.write_all(data).map_err(|e| e.to_string()),
            PutData::Npy(file) => file,
        };
        let shape = &file.header.shape;
        let size = file.header.data_type.fixed_size().unwrap_or(1);
        let row_bytes = shape[1..].iter().product::<usize>().saturating_mul(size);
        let chunk_rows = array.metadata().chunk_shape[0].max(1);
        let slab_bytes = if array.store().concurrent_reads() > 1 {
            REMOTE_PUT_SLAB_BYTES
        } else {
            PUT_SLAB_BYTES
        };
        let slab_rows = chunk_rows * (slab_bytes / (chunk_rows * row_bytes).max(1)).max(1);
        let named = |e: String| format!("{}: {e}", file.path.display());
        let opened = std::fs::File::open(&file.path).map_err(|e| named(e.to_string()))?;
        let mut reader = std::io::BufReader::new(opened);
        npy::read_npy_header(&mut reader).map_err(|e| named(e.to_string()))?;
        let mut start = 0;
        while start < shape[0] {
            let rows = slab_rows.min(shape[0] - start);
            let mut slab = vec![0u8; rows * row_bytes];
            std::io::Read::read_exact(&mut reader, &mut slab).map_err(|e| {
                named(format!(
                    "the data ends before row {} of {} ({e})",
                    start + rows,
                    shape[0]
                ))
            })?;
            let mut origin = vec![0u64; shape.len()];
            origin[0] = start as u64;
            let mut extent: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
            extent[0] = rows as u64;
            array
                .write(
                    &neurochunk_array::Selection::from_box(&origin, &extent),
                    &ArrayBytes::Fixed(slab),
                )
                .map_err(|e| e.to_string())?;
            start += rows;
        }
        Ok(())
    }
}

/// An `.npz` as `get` writes it for a ragged array, read back for `put`: the shape, the
/// numbers' type and the elements as variable-length bytes holding the numbers.
fn read_ragged_npz(input: &Location) -> Result<(Vec<usize>, DataType, ArrayBytes), Failure> {
    let fail = |e: String| Failure(format!("{}: {e}", input.display()));
    let members = npz::read_npz(&input.read_file()?).map_err(fail)?;
    let find = |name: &str| {
        members.iter().find(|m| m.0 == name).ok_or_else(|| {
            fail(format!(
                "a ragged .npz needs a '{name}' member (values, offsets, shape)"
            ))
        })
    };
    let (_, vh, values) = find("values")?;
    let (_, oh, offsets) = find("offsets")?;
    let int64s = |h: &npy::NpyHeader, b: &[u8], what: &str| -> Result<Vec<usize>, Failure> {
        if h.data_type != DataType::Int64 || h.shape.len() != 1 {
            return Err(fail(format!("'{what}' must be a 1-d int64 array")));
        }
        b.chunks_exact(8)
            .map(|c| {
                usize::try_from(i64::from_le_bytes(c.try_into().unwrap_or_default()))
                    .map_err(|_| fail(format!("'{what}' holds a negative value")))
            })
            .collect()
    };
    let offsets = int64s(oh, offsets, "offsets")?;
    let n = offsets.len().saturating_sub(1);
    let shape = match members.iter().find(|m| m.0 == "shape") {
        Some((_, sh, sb)) => int64s(sh, sb, "shape")?,
        None => vec![n],
    };
    if vh.shape.len() != 1 || vh.data_type.fixed_size().is_none() {
        return Err(fail("'values' must be a 1-d numeric array".into()));
    }
    if shape.iter().product::<usize>() != n || offsets.first().is_some_and(|&o| o != 0) {
        return Err(fail(format!(
            "'offsets' must start at 0 and have one entry more than the {} elements of 'shape' {shape:?}",
            shape.iter().product::<usize>()
        )));
    }
    let size = vh.data_type.fixed_size().unwrap_or(1).max(1);
    let count = vh.shape[0];
    if offsets.windows(2).any(|w| w[0] > w[1]) || offsets.last().is_some_and(|&o| o != count) {
        return Err(fail(format!(
            "'offsets' must be non-decreasing and end at the {count} values"
        )));
    }
    let data = ArrayBytes::Variable {
        data: values.clone(),
        offsets: offsets.iter().map(|o| o * size).collect(),
    };
    Ok((shape, vh.data_type.clone(), data))
}

/// The distinct strings of `data` (of `data_type`, `<U` or variable-length text) in order of
/// first appearance, without `""`: the labels `--codec categorize` stores.
fn categorize_labels(data_type: &DataType, data: &ArrayBytes) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut labels = Vec::new();
    let mut add = |s: String| {
        if !s.is_empty() && seen.insert(s.clone()) {
            labels.push(s);
        }
    };
    match (data, data_type) {
        (ArrayBytes::Variable { data, offsets }, _) => {
            for w in offsets.windows(2) {
                add(String::from_utf8_lossy(&data[w[0]..w[1]]).into_owned());
            }
        }
        (ArrayBytes::Fixed(bytes), DataType::FixedUtf32 { chars }) if *chars > 0 => {
            for e in bytes.chunks_exact(4 * chars) {
                add(e
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .take_while(|&u| u != 0)
                    .filter_map(char::from_u32)
                    .collect());
            }
        }
        _ => {}
    }
    labels
}

/// Convert variable-length elements to the fixed width NumPy needs (`<U{max}` / `|S{max}`).
pub(crate) fn to_npy_layout(data_type: &DataType, data: ArrayBytes) -> (DataType, Vec<u8>) {
    match data {
        // In memory every field is little-endian, whatever its byte order on disk.
        ArrayBytes::Fixed(bytes) => (data_type.without_field_byte_orders(), bytes),
        ArrayBytes::Variable { data, offsets } => {
            let elements: Vec<&[u8]> = offsets
                .windows(2)
                .map(|w| data.get(w[0]..w[1]).unwrap_or(&[]))
                .collect();
            if matches!(data_type, DataType::String) {
                let texts: Vec<Vec<u32>> = elements
                    .iter()
                    .map(|e| {
                        String::from_utf8_lossy(e)
                            .chars()
                            .map(|c| c as u32)
                            .collect()
                    })
                    .collect();
                let chars = texts.iter().map(Vec::len).max().unwrap_or(0).max(1);
                let mut out = Vec::with_capacity(texts.len() * chars * 4);
                for text in texts {
                    for i in 0..chars {
                        out.extend_from_slice(&text.get(i).copied().unwrap_or(0).to_le_bytes());
                    }
                }
                (DataType::FixedUtf32 { chars }, out)
            } else {
                let len = elements.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
                let mut out = Vec::with_capacity(elements.len() * len);
                for e in elements {
                    out.extend_from_slice(e);
                    out.resize(out.len() + len - e.len(), 0);
                }
                (DataType::FixedBytes { len }, out)
            }
        }
    }
}

/// Convert fixed-width text/bytes to variable-length elements (trailing NULs dropped).
fn to_variable(data_type: &DataType, bytes: &[u8]) -> Option<(DataType, ArrayBytes)> {
    let (vtype, width) = match data_type {
        DataType::FixedUtf32 { chars } => (DataType::String, chars * 4),
        DataType::FixedBytes { len } => (DataType::Bytes, *len),
        _ => return None,
    };
    let mut data = Vec::new();
    let mut offsets = vec![0];
    if width > 0 {
        for element in bytes.chunks_exact(width) {
            if matches!(vtype, DataType::String) {
                let text: String = element
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .take_while(|&c| c != 0)
                    .filter_map(char::from_u32)
                    .collect();
                data.extend_from_slice(text.as_bytes());
            } else {
                let end = element.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                data.extend_from_slice(&element[..end]);
            }
            offsets.push(data.len());
        }
    }
    Some((vtype, ArrayBytes::Variable { data, offsets }))
}

fn parse_json_arg(text: &str, flag: &str) -> Result<Value, Failure> {
    neurochunk_dtype::json::parse_lenient(text.as_bytes())
        .map_err(|e| Failure(format!("{flag}: {e}")))
}

pub(crate) fn put(args: PutArgs) -> CmdResult {
    crate::repo_cmd::prepare(Some(args.format), &args.path)?;
    let format = ZarrFormat::from(args.format);
    // An .npz (values, offsets, shape) is a ragged array, stored with numcodecs vlen-array.
    let ragged_input = args.input.file_name().ends_with(".npz");
    let (shape, ragged_element, data_type, mut data) = if ragged_input {
        let (shape, element, data) = read_ragged_npz(&args.input)?;
        (shape, Some(element), DataType::Bytes, PutData::Whole(data))
    } else if let Some(npy_file) = streamable_npy(&args.input, args.vlen)? {
        // A plain .npy on disk is read slab by slab while it is written (`PutData::Npy`).
        let header = npy_file.header.clone();
        (header.shape, None, header.data_type, PutData::Npy(npy_file))
    } else {
        let (header, bytes) = read_npy_from(&args.input)?;
        let (data_type, data) = match (args.vlen, to_variable(&header.data_type, &bytes)) {
            (true, Some(converted)) => converted,
            (true, None) => return Err(Failure("--vlen needs a '<U' or '|S' input array".into())),
            (false, _) => (header.data_type.clone(), ArrayBytes::Fixed(bytes)),
        };
        (header.shape, None, data_type, PutData::Whole(data))
    };
    let fill_value = match &args.fill_value {
        None => FillValue::Zero,
        Some(text) => FillValue::Json(parse_json_arg(text, "--fill-value")?),
    };
    let attributes = match &args.attrs {
        None => Map::new(),
        Some(text) => match parse_json_arg(text, "--attrs")? {
            Value::Object(map) => map,
            other => {
                return Err(Failure(format!(
                    "--attrs must be a JSON object, not {other}"
                )))
            }
        },
    };
    let options = args.layout.options(Some(format))?;
    local_only_fsync(&args.write, &args.path)?;
    // A path or URL may name a node inside a hierarchy, whose missing parent groups are
    // created.
    let (root, remote, node) = match args.path.local() {
        Some(path) => {
            let (root, node) = locate_node(path);
            (Some(root), None, node)
        }
        None => {
            let remote = args.path.locate_remote_node()?;
            let node = remote.node.clone();
            (None, Some(remote), node)
        }
    };
    let rank = shape.len();
    if format == ZarrFormat::N5
        && (options.endian.is_some()
            || options.fortran_order.is_some()
            || options.separator.is_some())
    {
        return Err(Failure(format!(
            "{}: N5 blocks are always big-endian and column-major with '/' block paths; \
             --endian, --order and --dimension-separator do not apply",
            args.path.display()
        )));
    }
    if format == ZarrFormat::Precomputed
        && (options.endian.is_some()
            || options.fortran_order.is_some()
            || options.separator.is_some()
            || options.shards.is_some())
    {
        return Err(Failure(format!(
            "{}: precomputed chunks are always little-endian in Fortran order with keys \
             xBegin-xEnd_yBegin-yEnd_zBegin-zEnd; --endian, --order, --dimension-separator and \
             --shards do not apply",
            args.path.display()
        )));
    }
    // A precomputed destination is the layer; the array is its scale, named after the
    // resolution.
    let scale = (format == ZarrFormat::Precomputed)
        .then(|| scale_key(options.precomputed.resolution.unwrap_or([1.0; 3])));
    let in_layer = |node: &str| match &scale {
        Some(key) => neurochunk_store::join_key(node, key),
        None => node.to_string(),
    };
    // The command line's layout options as the typed codecs of the array.
    let mut codecs = Vec::new();
    if options.fortran_order == Some(true) && rank > 1 {
        codecs.push(Codec::Transpose {
            order: (0..rank).rev().collect(),
        });
    }
    let own_serializer = options
        .compressors
        .iter()
        .flatten()
        .any(|c| c.kind() == neurochunk_codec::CodecKind::ArrayToBytes);
    if let (Some(endian), Some(_), false) = (options.endian, data_type.fixed_size(), own_serializer)
    {
        codecs.push(Codec::Bytes { endian });
    }
    let mut compressors = options
        .compressors
        .clone()
        .unwrap_or_else(|| neurochunk_array::default_codecs(format));
    for codec in &mut compressors {
        if let Codec::Categorize { labels } = codec {
            if labels.is_empty() {
                // The labels are the data's: read it all.
                let whole = data.whole()?;
                *labels = categorize_labels(&data_type, whole);
                if labels.is_empty() {
                    labels.push(String::new());
                }
            }
        }
    }
    if let Some(element) = ragged_element {
        if own_serializer {
            return Err(Failure(format!(
                "{}: a ragged array (.npz input) is stored with vlen-array; --codec can add \
                 compressions only",
                args.path.display()
            )));
        }
        codecs.push(Codec::VlenArray { element });
    }
    codecs.extend(compressors);
    let mut builder = ArrayBuilder::new(
        shape.iter().map(|&s| s as u64).collect::<Vec<_>>(),
        data_type.clone(),
    )
    .format(format)
    .codecs(codecs)
    .fill_value(fill_value)
    .attributes(attributes)
    .n5_axis_order(options.n5_axis_order)
    .precomputed(options.precomputed.clone())
    .write_empty_chunks(args.write_empty_chunks);
    if let Some(chunks) = options.chunks {
        builder = builder.chunks(chunks);
    }
    if let Some(shards) = options.shards {
        builder = builder.shards(shards);
    }
    if let Some(separator) = options.separator {
        builder = builder.chunk_key_separator(separator);
    }
    let meta = builder
        .metadata(&in_layer(&node))
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    if let Some(remote) = remote {
        // Objects are written in place, each one atomically (see docs/remote.md).
        remote.replace(&NodeTree, args.replace.policy())?;
        let array = Array::create(remote.store.clone(), &in_layer(&remote.node), meta)
            .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?
            .with_options(neurochunk_array::ArrayOptions {
                write_empty_chunks: args.write_empty_chunks,
            });
        data.write_into(&array)
            .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
        return Ok(());
    }
    let (Some(path), Some(root)) = (args.path.local(), root) else {
        return Err(Failure(format!(
            "{}: neither a path nor a URL",
            args.path.display()
        )));
    };
    // The array is built in a hidden sibling of its directory (inside the container for a
    // node below the root) and swapped in at the end, so that the path holds the old array or
    // the new one at every moment, even if this process is killed.
    // A node is staged where its path leads inside the container (symbolic links resolved),
    // and refused, before anything is created, when a link on its path leads out of it.
    let staged = stage_beside(&root, path, &args.write, args.replace.policy())?;
    let (store, staged_node): (Arc<dyn Store>, String) = if node.is_empty() {
        (args.write.store(staged.path()), String::new())
    } else {
        // Parent groups that do not exist yet are created (with the N5 root's version, the
        // Zarr root's group document), as zarr-python and the N5 reference do.
        let real_root = resolve_target(&root, &root)
            .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
        let staged_node = staged
            .path()
            .strip_prefix(&real_root)
            .map_err(|_| {
                Failure(format!(
                    "{}: cannot stage '{}' inside '{}'",
                    args.path.display(),
                    staged.path().display(),
                    real_root.display()
                ))
            })?
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        (args.write.store(&root), staged_node)
    };
    let array = Array::create(store, &in_layer(&staged_node), meta)
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?
        .with_options(neurochunk_array::ArrayOptions {
            write_empty_chunks: args.write_empty_chunks,
        });
    data.write_into(&array)
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    staged
        .publish()
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    Ok(())
}

/// A staging directory beside `path` (whose parent is created), where a new tree for `path`
/// is built before it is swapped in. `path` is replaced only as `overwrite` allows (by
/// default, when it holds nothing but Zarr or N5 nodes: [`NodeTree`]); otherwise nothing is
/// created. `root` is the root of the hierarchy `path` belongs to (`path` itself for a whole
/// store): the staging directory follows the store's symbolic link policy
/// ([`resolve_target`]): it is created beside the real destination (where a link at `path`
/// leads, judged like any destination), and a link below `root` leading out of it is refused
/// before anything is created.
fn stage_beside(
    root: &Path,
    path: &Path,
    write: &WriteArgs,
    overwrite: Overwrite,
) -> Result<StagedDir, Failure> {
    let real =
        resolve_target(root, path).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    // A missing destination's parents are created; an existing one's exist already, and
    // the check below comes before anything else is created.
    if let Some(parent) = real.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Failure(format!("{}: {e}", parent.display())))?;
    }
    Ok(StagedDir::replacing(&real, &NodeTree, overwrite)?.with_durability(write.durability()))
}

/// The staging directory a killed conversion into `path` left behind, taken over to finish
/// (see [`StagedDir::adopt_stale`]), or `None`. Published under the same rule as a new one
/// ([`stage_beside`]).
fn adopt_staged(
    path: &Path,
    write: &WriteArgs,
    overwrite: Overwrite,
) -> Result<Option<StagedDir>, Failure> {
    let real =
        resolve_target(path, path).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    replace::check_dir(&real, &NodeTree, overwrite)?;
    Ok(StagedDir::adopt_stale(&real)
        .map_err(|e| Failure(format!("{}: cannot resume: {e}", path.display())))?
        .map(|staged| {
            staged
                .guarded(&NodeTree, overwrite)
                .with_durability(write.durability())
        }))
}

/// The store a new tree at `dst` is written into, and for a local path the staging directory
/// to publish when it is complete (nothing is half-written at `dst`); a URL's prefix is emptied
/// and written in place (objects are stored one by one, atomically; see docs/remote.md). An
/// existing destination is replaced only as `overwrite` allows ([`stage_beside`],
/// [`Location::open_remote_replace`]).
pub(crate) fn staged_destination(
    dst: &Location,
    write: &WriteArgs,
    overwrite: Overwrite,
) -> Result<(Arc<dyn Store>, Option<StagedDir>), Failure> {
    match dst.local() {
        Some(path) => {
            let staged = stage_beside(path, path, write, overwrite)?;
            let store = write.store(staged.path());
            store
                .delete_prefix("")
                .map_err(|e| Failure(format!("{}: {e}", dst.display())))?;
            Ok((store, Some(staged)))
        }
        None => Ok((dst.open_remote_replace(&NodeTree, overwrite)?, None)),
    }
}

/// Where a node to be written at `path` lives: the root directory of its hierarchy and the
/// node's path inside it. Existing ancestors that are nodes (have a metadata document) belong
/// to the hierarchy; otherwise the shallowest directory that does not exist yet is the root,
/// so `OUT.n5/a/b/ds` on a fresh `OUT.n5` is dataset `a/b/ds` of container `OUT.n5`.
fn locate_node(path: &Path) -> (PathBuf, String) {
    let is_node = |dir: &Path| {
        [".zarray", ".zgroup", "zarr.json", "attributes.json"]
            .iter()
            .any(|doc| dir.join(doc).is_file())
    };
    let components: Vec<&std::ffi::OsStr> = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .map(Component::as_os_str)
        .collect();
    // The leading part of the path that is not plain names (`/`, `..`) stays with the root.
    let mut base = PathBuf::new();
    for c in path.components() {
        if matches!(c, Component::Normal(_)) {
            break;
        }
        base.push(c.as_os_str());
    }
    let dir_at = |n: usize| -> PathBuf {
        let mut dir = base.clone();
        dir.extend(&components[..n]);
        dir
    };
    // Deepest existing ancestor (or the path itself).
    let existing = (0..=components.len())
        .rev()
        .find(|&n| n == 0 || dir_at(n).is_dir())
        .unwrap_or(0);
    let root_len = if existing > 0 && is_node(&dir_at(existing)) {
        // Climb while the parent is a node of the same hierarchy.
        let mut n = existing;
        while n > 1 && is_node(&dir_at(n - 1)) {
            n -= 1;
        }
        n
    } else if existing < components.len() {
        existing + 1
    } else {
        components.len()
    };
    let node: Vec<String> = components[root_len..]
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    (dir_at(root_len), node.join("/"))
}

/// True when one location is inside the other (or they are the same).
fn overlap(a: &Location, b: &Location) -> bool {
    let (a, b) = (a.display(), b.display());
    let inside =
        |x: &str, y: &str| x == y || x.starts_with(&format!("{}/", y.trim_end_matches('/')));
    inside(&a, &b) || inside(&b, &a)
}

pub(crate) fn convert(args: ConvertArgs) -> CmdResult {
    local_only_fsync(&args.write, &args.dst)?;
    if args.dst.local().is_none() && overlap(&args.src, &args.dst) {
        return Err(Failure(format!(
            "{} -> {}: the destination overlaps the source",
            args.src, args.dst
        )));
    }
    crate::repo_cmd::prepare(args.format, &args.dst)?;
    // (A precomputed scale `LAYER/KEY` is read as an array of its layer.)
    let (src_store, src_node) = args.src.open_read_node()?;
    let open = args.layout.axis_order.open_options();
    let node = open_node_with(src_store.as_ref(), &src_node, &open)
        .map_err(|e| Failure(format!("{}: {e}", args.src.display())))?;
    let format = args.format.map(ZarrFormat::from);
    // A multiscale image going to another layout carries its metadata across.
    let multiscale = match node.metadata {
        NodeMetadata::Group(_) => {
            crate::ome_cmd::multiscale_plan(&args.src, &src_store, (args.format, args.n5_layout))?
        }
        NodeMetadata::Array(_) => None,
    };
    let name = format!("{} -> {}", args.src.display(), args.dst.display());
    // The destination is written in a hidden sibling directory and swapped in at the end:
    // an existing destination is replaced whole, and is complete at every moment.
    let marker = args.marker();
    let mut resume = false;
    // A conversion into an Icechunk repository is committed whole or not at all: there is
    // nothing to resume, and no marker to leave.
    let in_repository = args.dst.in_repository()?;
    if in_repository && args.resume {
        return Err(Failure(format!(
            "{}: a conversion into an Icechunk repository is committed whole or not at all, so \
             there is nothing to resume; run it again without --resume",
            args.dst.display()
        )));
    }
    let (dst_store, staged) = match args.dst.local() {
        Some(path) => {
            let overwrite = args.replace.policy();
            let adopted = if args.resume {
                adopt_staged(path, &args.write, overwrite)?
            } else {
                None
            };
            let staged = match adopted {
                Some(staged) => staged,
                None => stage_beside(path, path, &args.write, overwrite)?,
            };
            let store = args.write.store(staged.path());
            match resumable(store.as_ref(), &marker) {
                Ok(Some(true)) => resume = true,
                Ok(Some(false)) => {}
                // Another writer's leftovers: start afresh.
                _ => {
                    store
                        .delete_prefix("")
                        .map_err(|e| Failure(format!("{}: {e}", args.dst.display())))?;
                }
            }
            (store, Some(staged))
        }
        // Objects are written in place, each one atomically (see docs/remote.md).
        None if args.resume => {
            let store = args.dst.open_read()?;
            match resumable(store.as_ref(), &marker)
                .map_err(|e| Failure(format!("{}: {e}", args.dst.display())))?
            {
                Some(found) => resume = found,
                None => {
                    return Err(Failure(format!(
                        "{}: nothing to resume: the prefix holds no interrupted conversion of {} \
                         with these options (its marker {CONVERT_MARKER} is missing or differs); \
                         convert without --resume to replace it",
                        args.dst.display(),
                        args.src.display()
                    )))
                }
            }
            (store, None)
        }
        None => (
            args.dst
                .open_remote_replace(&NodeTree, args.replace.policy())?,
            None,
        ),
    };
    if resume && !progress::quiet() {
        eprintln!(
            "neurochunk: note: {}: resuming the interrupted conversion",
            args.dst.display()
        );
    }
    if !in_repository {
        dst_store
            .set(CONVERT_MARKER, marker.into())
            .map_err(|e| Failure(format!("{}: {e}", args.dst.display())))?;
    }
    let mut options = args.layout.options(format)?;
    options.keep_checksums = args.keep_checksums;
    options.resume = resume;
    if let Some(plan) = &multiscale {
        crate::ome_cmd::write_multiscale(
            plan,
            (&args.src, &src_store),
            &args.dst,
            dst_store.clone(),
            &options,
        )?;
        return finish_convert(&args, &name, dst_store.as_ref(), staged);
    }
    let fail = |e: neurochunk_array::ArrayError| Failure(format!("{name}: {e}"));
    // One line per array whose encoding had to change on the way.
    let note = |path: &str, changes: &[String]| {
        if progress::quiet() {
            return;
        }
        let node = path.trim_matches('/');
        let sep = if node.is_empty() { "" } else { "/" };
        eprintln!(
            "neurochunk: note: {}{sep}{node}: {}",
            args.dst.display(),
            changes.join("; ")
        );
    };
    match node.metadata {
        NodeMetadata::Array(meta) => {
            // An array converted to precomputed is a scale of the destination layer.
            let dst_node = match format {
                Some(ZarrFormat::Precomputed) => destination_scale_key(&meta, &options),
                _ => String::new(),
            };
            let bar = progress::bar(
                chunk_count(&derive_metadata(&meta, &options, &dst_node).map_err(fail)?),
                "converting",
            );
            let src = Array::from_metadata(src_store, &src_node, *meta);
            let (_, changes) = convert_array(&src, dst_store.clone(), &dst_node, &options, &|n| {
                bar.inc(n)
            })
            .map_err(fail)?;
            bar.finish_and_clear();
            if !changes.is_empty() {
                note("", &changes);
            }
        }
        NodeMetadata::Group(_) => {
            let mut total = 0;
            for n in
                neurochunk_array::list_nodes_with(src_store.as_ref(), "", &open).map_err(fail)?
            {
                if let NodeMetadata::Array(meta) = &n.metadata {
                    total += chunk_count(&derive_metadata(meta, &options, &n.path).map_err(fail)?);
                }
            }
            let bar = progress::bar(total, "converting");
            let result = convert_hierarchy(
                src_store,
                "",
                dst_store.clone(),
                "",
                &options,
                &|k| bar.inc(k),
                &|path, changes| bar.suspend(|| note(path, changes)),
            );
            bar.finish_and_clear();
            result.map_err(fail)?;
        }
    }
    finish_convert(&args, &name, dst_store.as_ref(), staged)
}

/// The scale key of an array converted into a precomputed layer: the source scale's own key,
/// else named after the resolution (`--resolution`, else the source's, else 1,1,1).
fn destination_scale_key(
    src: &neurochunk_array::ArrayMetadata,
    options: &ConvertOptions,
) -> String {
    let described = src
        .attributes
        .get(neurochunk_array::precomputed::ATTRIBUTE)
        .and_then(Value::as_object);
    if options.precomputed.resolution.is_none() {
        if let Some(key) = described.and_then(|d| d.get("key")).and_then(Value::as_str) {
            return key.to_string();
        }
    }
    let resolution = options.precomputed.resolution.or_else(|| {
        let list = described?.get("resolution")?.as_array()?;
        let values: Option<Vec<f64>> = list.iter().map(Value::as_f64).collect();
        values?.try_into().ok()
    });
    scale_key(resolution.unwrap_or([1.0; 3]))
}

/// The end of a conversion: its resume marker removed, the metadata consolidated when asked,
/// and a staged local destination put in place.
fn finish_convert(
    args: &ConvertArgs,
    name: &str,
    dst_store: &dyn Store,
    staged: Option<StagedDir>,
) -> CmdResult {
    dst_store
        .delete(CONVERT_MARKER)
        .map_err(|e| Failure(format!("{}: {e}", args.dst.display())))?;
    if args.consolidate {
        consolidate_group(dst_store, "").map_err(|e| Failure(format!("{name}: {e}")))?;
    }
    if let Some(staged) = staged {
        staged
            .publish()
            .map_err(|e| Failure(format!("{}: {e}", args.dst.display())))?;
    }
    Ok(())
}

pub(crate) fn consolidate(args: ConsolidateArgs) -> CmdResult {
    local_only_fsync(&args.write, &args.path)?;
    let store = args.write.store_at(&args.path)?;
    let count = consolidate_group(store.as_ref(), "")
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    if !progress::quiet() {
        eprintln!("consolidated metadata of {count} nodes");
    }
    Ok(())
}
