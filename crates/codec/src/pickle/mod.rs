//! A restricted reader and a small writer of Python pickles, for the NumPy object arrays that
//! numcodecs' `pickle` codec stores (Zarr v2 arrays written by hdmf-zarr for NWB files).
//!
//! Code found inside a file is never run: [`decode_object_array`] and [`decode_value`]
//! interpret the pickle opcodes of protocols 0–5 themselves and accept only an allow-list of
//! globals — NumPy's array, dtype and scalar reconstructors (both the `numpy.core` and the
//! `numpy._core` spelling), `_codecs.encode`, `copyreg._reconstructor`, `builtins.object` /
//! `builtins.dict` and `hdmf_zarr.utils.ZarrReference`. Any other global (`os.system`,
//! `builtins.eval`, …) is refused with an error naming it. Hostile input is bounded: lengths
//! are checked against the remaining bytes before anything is allocated, nesting and output
//! size are limited, and every failure is a [`PickleError`] naming the opcode or object and
//! its byte offset.
//!
//! Python values become JSON: `None` → `null`, `bool`, `int` (within i64/u64), `float`
//! (non-finite ones as [`neurochunk_dtype::json::non_finite_value`] markers), `str`, `bytes`
//! (when UTF-8), `list`/`tuple` → array, `dict` and `ZarrReference` → object (insertion
//! order), elements of structured arrays and structured NumPy scalars → objects keyed by
//! field name, nested numeric NumPy arrays → nested lists.
//!
//! [`encode_object_array`] writes a protocol 2 stream that NumPy 1.x and 2.x unpickle into an
//! object (`|O`) or structured (`record`) array.

mod numpy;
mod read;
mod write;

use serde_json::Value;

pub use write::encode_object_array;
pub(crate) use write::encode_text_array;

/// An object ndarray decoded from a pickle: its shape and its elements in C order, each as
/// JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct PickledArray {
    /// The array's shape (empty for a 0-d array, which has one element).
    pub shape: Vec<usize>,
    /// The elements in C (row-major) order.
    pub items: Vec<Value>,
    /// The field names when the array has a structured dtype (its elements are then objects
    /// keyed by these names, in this order).
    pub field_names: Option<Vec<String>>,
    /// The array was pickled Fortran-contiguous (NumPy's `is_fortran` flag). Zarr flattens
    /// such a chunk in Fortran order before reshaping it (`reshape(-1, order="A")`).
    pub fortran: bool,
}

/// Why a pickle could not be read or written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PickleError {
    /// The stream ends before an opcode or its argument is complete (or before `STOP`);
    /// `offset` is where the incomplete opcode starts.
    #[error("pickle truncated at byte {len}: {what}")]
    Truncated {
        len: usize,
        offset: usize,
        what: String,
    },
    /// An opcode this reader never executes (extension registry, persistent ids, out-of-band
    /// buffers, old-style instances, sets).
    #[error("pickle opcode {name} (0x{opcode:02x}) at byte {offset} is not supported: {reason}")]
    RefusedOpcode {
        opcode: u8,
        name: &'static str,
        offset: usize,
        reason: &'static str,
    },
    /// A byte that is no pickle opcode.
    #[error("invalid pickle opcode 0x{opcode:02x} at byte {offset}")]
    UnknownOpcode { opcode: u8, offset: usize },
    /// A global outside the allow-list.
    #[error(
        "pickle global '{module}.{name}' at byte {offset} is refused: pickled code is never run; \
         only NumPy arrays, dtypes and scalars, plain dicts and hdmf-zarr references are read"
    )]
    RefusedGlobal {
        module: String,
        name: String,
        offset: usize,
    },
    /// A malformed stream: stack underflow, missing mark, memo index not set, wrong argument
    /// types, inconsistent array state.
    #[error("invalid pickle: {opcode} at byte {offset}: {message}")]
    Invalid {
        opcode: &'static str,
        offset: usize,
        message: String,
    },
    /// A well-formed value that has no JSON form here (an integer beyond 64 bits, non-UTF-8
    /// bytes, a dtype this reader does not decode, …).
    #[error("pickle value made at byte {offset} cannot be read: {message}")]
    Unsupported { offset: usize, message: String },
    /// A size or nesting limit was exceeded.
    #[error("pickle exceeds a limit: {0}")]
    Limit(String),
    /// [`encode_object_array`] was given something it cannot write.
    #[error("cannot pickle: {0}")]
    Encode(String),
}

/// Decode a pickled NumPy array (object, structured or numeric dtype) into its shape and its
/// elements as JSON.
pub fn decode_object_array(bytes: &[u8]) -> Result<PickledArray, PickleError> {
    let machine = read::Machine::run(bytes)?;
    numpy::array_from(&machine, bytes.len())
}

/// Decode any allowed top-level pickled value into JSON (e.g. the base64-decoded fill value
/// `"gAVLAC4="` of hdmf-zarr arrays, a pickled int 0).
pub fn decode_value(bytes: &[u8]) -> Result<Value, PickleError> {
    let machine = read::Machine::run(bytes)?;
    numpy::value_from(&machine, bytes.len())
}

/// What a field of a structured dtype written by [`encode_object_array`] holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A numeric field, as a NumPy typestr: `|b1`, `<i4`, `>u2`, `|u1`, `<f8`, … (kinds `b`,
    /// `i`, `u`, `f`; a missing byte-order character means little-endian).
    Numeric(String),
    /// A Python object field (`|O`).
    Object,
}

/// One field of a structured dtype written by [`encode_object_array`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordField {
    pub name: String,
    pub kind: RecordKind,
}
