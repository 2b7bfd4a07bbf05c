//! What is measured: the benchmark rows (array layouts and codecs), the operations, and the
//! interface each compared library implements.

use std::path::Path;

use crate::error::BenchResult;

/// Zarr format version of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    V2,
    V3,
}

/// How the array is cut into stored objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One object per cubic chunk of this edge length.
    Chunked { chunk: usize },
    /// Cubic shards of edge `shard`, each holding cubic inner chunks of edge `inner`; the shard
    /// index is encoded as `bytes` + `crc32c` and stored at the end of the shard.
    Sharded { shard: usize, inner: usize },
}

/// The bytes→bytes codec applied to each (inner) chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    /// `zstd` at this level, without checksum.
    Zstd(i32),
}

/// The element type of the stored array. The volume is `uint16`; a `float32` row stores the
/// same values as `float32` (converted before the timer starts, and back after it stops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    UInt16,
    Float32,
}

impl Element {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Element::UInt16 => 2,
            Element::Float32 => 4,
        }
    }

    /// The Zarr v3 data type name (also NumPy's).
    pub fn name(self) -> &'static str {
        match self {
            Element::UInt16 => "uint16",
            Element::Float32 => "float32",
        }
    }
}

/// The array→bytes codec (serializer) of each chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Serializer {
    /// `bytes`, little-endian (Zarr v2: the dtype's byte order).
    Bytes,
    /// numcodecs `pcodec` at this level, numcodecs' other defaults (lossless).
    Pcodec { level: u32 },
    /// numcodecs `zfpy`, lossless (zfp's reversible mode).
    ZfpReversible,
    /// numcodecs `zfpy` in fixed-accuracy mode with this absolute tolerance (lossy).
    ZfpAccuracy { tolerance: f64 },
}

/// One benchmark row: an array layout on the filesystem, written and read whole.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Short identifier used on the command line and in JSON.
    pub id: &'static str,
    /// Human description for the table.
    pub title: &'static str,
    pub format: Format,
    pub layout: Layout,
    pub element: Element,
    pub serializer: Serializer,
    pub compression: Compression,
}

/// The rows, in table order. Every chunk is cubic; the element type is `uint16`, little-endian,
/// C order, fill value 0.
pub const ROWS: [Row; 4] = [
    Row {
        id: "zstd",
        title: "v3 zstd-1, 64^3 chunks",
        format: Format::V3,
        layout: Layout::Chunked { chunk: 64 },
        element: Element::UInt16,
        serializer: Serializer::Bytes,
        compression: Compression::Zstd(1),
    },
    Row {
        id: "sharded",
        title: "v3 256^3 shards of 32^3 zstd-1",
        format: Format::V3,
        layout: Layout::Sharded {
            shard: 256,
            inner: 32,
        },
        element: Element::UInt16,
        serializer: Serializer::Bytes,
        compression: Compression::Zstd(1),
    },
    Row {
        id: "raw",
        title: "v3 uncompressed, 64^3 chunks",
        format: Format::V3,
        layout: Layout::Chunked { chunk: 64 },
        element: Element::UInt16,
        serializer: Serializer::Bytes,
        compression: Compression::None,
    },
    Row {
        id: "zstd-v2",
        title: "v2 zstd-1, 64^3 chunks",
        format: Format::V2,
        layout: Layout::Chunked { chunk: 64 },
        element: Element::UInt16,
        serializer: Serializer::Bytes,
        compression: Compression::Zstd(1),
    },
];

/// The numcodecs serializer rows of the `--codecs` set (`crate::codec_rows`): Zarr v3, 64³
/// chunks, no compression after the serializer. zfp takes no 16-bit integers (numcodecs'
/// `zfpy` stores int32, int64, float32 and float64), so its rows store the volume as `float32`.
pub const CODEC_ROWS: [Row; 3] = [
    Row {
        id: "pcodec",
        title: "v3 uint16 pcodec-8, 64^3 chunks",
        format: Format::V3,
        layout: Layout::Chunked { chunk: 64 },
        element: Element::UInt16,
        serializer: Serializer::Pcodec { level: 8 },
        compression: Compression::None,
    },
    Row {
        id: "zfp",
        title: "v3 float32 zfpy reversible, 64^3 chunks",
        format: Format::V3,
        layout: Layout::Chunked { chunk: 64 },
        element: Element::Float32,
        serializer: Serializer::ZfpReversible,
        compression: Compression::None,
    },
    Row {
        id: "zfp-accuracy",
        title: "v3 float32 zfpy tolerance 1, 64^3 chunks",
        format: Format::V3,
        layout: Layout::Chunked { chunk: 64 },
        element: Element::Float32,
        serializer: Serializer::ZfpAccuracy { tolerance: 1.0 },
        compression: Compression::None,
    },
];

impl Row {
    /// The row with this identifier, among [`ROWS`] and [`CODEC_ROWS`].
    pub fn by_id(id: &str) -> Option<&'static Row> {
        ROWS.iter().chain(&CODEC_ROWS).find(|r| r.id == id)
    }

    /// The largest absolute difference a read may show from the volume: 0 for lossless rows.
    pub fn tolerance(&self) -> f64 {
        match self.serializer {
            Serializer::ZfpAccuracy { tolerance } => tolerance,
            _ => 0.0,
        }
    }

    /// Bytes of the decoded array of a cube of edge `n`.
    pub fn decoded_bytes(&self, n: usize) -> u64 {
        (n as u64).pow(3) * self.element.size() as u64
    }

    /// Edge length of the chunks the codecs see (the inner chunks of a sharded row).
    pub fn codec_chunk(&self) -> usize {
        match self.layout {
            Layout::Chunked { chunk } => chunk,
            Layout::Sharded { inner, .. } => inner,
        }
    }

    /// Edge length of the stored objects (shards for a sharded row).
    pub fn stored_chunk(&self) -> usize {
        match self.layout {
            Layout::Chunked { chunk } => chunk,
            Layout::Sharded { shard, .. } => shard,
        }
    }
}

/// What a child measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// Create the array (metadata) and write every element from one in-memory buffer.
    Write,
    /// Open the array and read every element into one new buffer.
    Read,
}

impl Op {
    pub const ALL: [Op; 2] = [Op::Write, Op::Read];

    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == s)
    }
}

/// One implementation under test. Each call runs inside its own child process and is timed
/// whole, so implementations should do their untimed preparation before being called (the
/// harness hands over the input already in memory).
pub trait Library: Sync {
    /// Name used on the command line, in the table and in JSON.
    fn name(&self) -> &'static str;

    /// Create a new array for `row` in the empty directory `dir` (the store root, array at the
    /// root) with `shape`, and write `data` (C order, little-endian `uint16`) as the whole
    /// array, using all cores. With `durable` (`--fsync`), a library that can make its writes
    /// durable on request ([`Library::syncs_on_request`]) does so before returning.
    fn write(
        &self,
        row: &Row,
        dir: &Path,
        shape: &[u64],
        data: Vec<u8>,
        durable: bool,
    ) -> BenchResult<()>;

    /// Whether [`Library::write`] always makes every object durable (`fsync`) before it
    /// returns, as the library writes by default.
    fn syncs_writes(&self) -> bool;

    /// Whether [`Library::write`] makes every object durable when asked (`durable`). With
    /// `--fsync`, the harness syncs the written files of libraries that cannot, inside the
    /// timed region, so that writes compare like with like.
    fn syncs_on_request(&self) -> bool {
        self.syncs_writes()
    }

    /// Open the array written by [`Library::write`] in `dir` and read it whole into memory,
    /// returning its elements as C-order little-endian bytes.
    fn read(&self, row: &Row, dir: &Path) -> BenchResult<Vec<u8>>;
}
