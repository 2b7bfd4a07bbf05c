//! The core types shared by every codec: chunk buffers, chunk representations, codec traits
//! and the error type.

use std::any::Any;
use std::fmt::Debug;

use neurochunk_dtype::DataType;

/// Errors from building or running a codec.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The codec name is not known to the registry.
    #[error(
        "uses codec '{0}', which neurochunk does not support; convert the array with \
         zarr-python / numcodecs to a supported codec (e.g. zstd or blosc) to read it here"
    )]
    Unknown(String),
    /// The codec's JSON configuration is invalid.
    #[error("codec '{codec}': invalid configuration: {message}")]
    Config {
        /// The codec's name.
        codec: String,
        /// What is wrong.
        message: String,
    },
    /// The codec cannot handle this data type / representation.
    #[error("codec '{codec}': {message}")]
    Unsupported {
        /// The codec's name.
        codec: String,
        /// What is wrong.
        message: String,
    },
    /// Encoded bytes are corrupt, truncated or fail a checksum.
    #[error("codec '{codec}': corrupt data: {message}")]
    Corrupt {
        /// The codec's name.
        codec: String,
        /// What is wrong.
        message: String,
    },
}

/// The result of a codec operation.
pub type CodecResult<T> = Result<T, CodecError>;

/// The elements of one chunk (or any N-d block) in C order.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayBytes {
    /// Fixed-size elements, packed, in-memory (little-endian) layout.
    Fixed(Vec<u8>),
    /// Variable-length elements: element `i` is `data[offsets[i]..offsets[i + 1]]`;
    /// `offsets.len()` is the element count plus one.
    Variable {
        /// The elements' bytes, back to back.
        data: Vec<u8>,
        /// Start of each element in `data`, then the end of the last; non-decreasing.
        offsets: Vec<usize>,
    },
}

/// What a codec is handed: the shape, element type and fill value of the chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRepr {
    /// Shape of the chunk in elements (empty for a 0-d chunk).
    pub shape: Vec<usize>,
    /// Element type.
    pub data_type: DataType,
    /// The fill value as one element's in-memory bytes (for variable-length types: its bytes).
    pub fill_value: Vec<u8>,
}

impl ChunkRepr {
    /// Number of elements in the chunk (the product of the shape; 1 for a 0-d chunk).
    pub fn num_elements(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A codec that maps an array to another array (possibly of another shape or data type).
pub trait ArrayToArrayCodec: Any + Send + Sync + Debug {
    /// The codec's name as written in Zarr v3 metadata.
    fn name(&self) -> &str;
    /// The representation this codec produces from `input`.
    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr>;
    /// Encode `data`, which has the representation `input`, into [`Self::encoded_repr`]'s.
    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes>;
    /// `decoded` is the representation before encoding (what `decode` must return).
    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes>;
    /// Zarr v3 JSON: `{"name": ..., "configuration": {...}}`.
    fn to_v3_json(&self) -> serde_json::Value;
    /// Zarr v2 filter JSON (`{"id": ...}`), if the codec has a v2 form.
    fn to_v2_json(&self) -> Option<serde_json::Value>;
}

/// The one codec that turns an array into bytes (`bytes`, `vlen-utf8`, `sharding_indexed`, …).
///
/// The trait knows no particular codec: a layer that drives one specially (the array layer's
/// partial reads of shards, its N5 block paths) finds it by downcasting through [`Any`] (see
/// [`crate::CodecChain::serializer`]).
pub trait ArrayToBytesCodec: Any + Send + Sync + Debug {
    /// The codec's name as written in Zarr v3 metadata.
    fn name(&self) -> &str;
    /// Serialize the elements of a chunk of representation `repr`.
    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>>;
    /// Deserialize stored bytes into the elements of a chunk of representation `repr`.
    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes>;
    /// The encoded size when it does not depend on the data (used for shard indexes).
    fn fixed_encoded_size(&self, _repr: &ChunkRepr) -> Option<usize> {
        None
    }
    /// Zarr v3 JSON: `{"name": ..., "configuration": {...}}`.
    fn to_v3_json(&self) -> serde_json::Value;
    /// Zarr v2 JSON (a compressor or filter `{"id": ...}`), if the codec has a v2 form.
    fn to_v2_json(&self) -> Option<serde_json::Value>;
    /// The Zarr v2 `dtype` this codec's elements need, when the data type alone does not say
    /// it (pickled structured arrays with object fields).
    fn v2_dtype(&self) -> Option<serde_json::Value> {
        None
    }
    /// Encode a chunk of which only the leading `extent` elements per axis lie inside the
    /// array (an edge chunk; `extent == repr.shape` inside the array). Formats that store
    /// edge chunks truncated (N5) override this; the default stores the whole chunk.
    fn encode_extent(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        _extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        self.encode(data, repr)
    }
    /// Decode a chunk stored by [`ArrayToBytesCodec::encode_extent`] (or a full-size one);
    /// the result always has the full chunk shape.
    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        _extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        self.decode(bytes, repr)
    }
}

/// A codec from bytes to bytes (compressors, checksums, shuffles).
pub trait BytesToBytesCodec: Any + Send + Sync + Debug {
    /// The codec's name as written in Zarr v3 metadata.
    fn name(&self) -> &str;
    /// Encode `input`, replacing the contents of `out`.
    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()>;
    /// Decode `input`, replacing the contents of `out`. `decoded_size` is the expected size
    /// when known (a hint for preallocation, and a check).
    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()>;
    /// Encoded size as a function of the decoded size, when fixed (e.g. checksums).
    fn fixed_encoded_size(&self, _decoded_size: usize) -> Option<usize> {
        None
    }
    /// Zarr v3 JSON: `{"name": ..., "configuration": {...}}`.
    fn to_v3_json(&self) -> serde_json::Value;
    /// Zarr v2 JSON (a compressor or filter `{"id": ...}`), if the codec has a v2 form.
    fn to_v2_json(&self) -> Option<serde_json::Value>;
}
