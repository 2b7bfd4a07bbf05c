//! A restricted reader and a small writer of Python pickles, for the NumPy object arrays that
//! numcodecs' `pickle` codec stores (Zarr v2 arrays written by hdmf-zarr for NWB files).
//!
//! **What it is for.** Reading the pickled chunks and fill values of such arrays into JSON
//! values, and writing object and structured arrays that NumPy 1.x and 2.x unpickle.
//!
//! ```
//! use neurochunk_pickle::{decode_object_array, encode_object_array, AllowList};
//! use serde_json::json;
//!
//! // An object array of shape [3], as numcodecs' `pickle` codec stores a chunk.
//! let items = [json!("text"), json!(42), json!({"path": "/acquisition/ts"})];
//! let pickled = encode_object_array(&[3], &items, None)?;
//!
//! // Reading it back needs NumPy's reconstruction globals, and nothing else.
//! let array = decode_object_array(&pickled, &AllowList::numpy())?;
//! assert_eq!(array.shape, [3]);
//! assert_eq!(array.items, items);
//! # Ok::<(), neurochunk_pickle::PickleError>(())
//! ```
//!
//! **What it is not.** It never executes code and it is not a general unpickler. It imports
//! nothing and calls nothing: [`decode_object_array`] and [`decode_value`] interpret the pickle
//! opcodes of protocols 0–5 themselves, and a global (`GLOBAL` / `STACK_GLOBAL`) is accepted
//! only when the caller's [`AllowList`] names it, as a marker whose [`Meaning`] selects one of
//! the reader's built-in behaviours (NumPy array, dtype and scalar reconstruction, bytes from
//! `_codecs.encode`, dict-like instances). Any other global (`os.system`, `builtins.eval`, …)
//! is refused with [`PickleError::RefusedGlobal`], naming it and its byte offset. Arbitrary
//! classes, persistent ids, the extension registry, out-of-band buffers and sets are refused
//! too. Hostile input is bounded: lengths are checked against the remaining bytes before
//! anything is allocated, nesting and output size are limited, and every failure is a
//! [`PickleError`] naming the opcode or object and its byte offset.
//!
//! Python values become JSON: `None` → `null`, `bool`, `int` (within i64/u64), `float`
//! (non-finite ones as [`neurochunk_dtype::json::non_finite_value`] markers), `str`, `bytes`
//! (when UTF-8), `list`/`tuple` → array, `dict` and dict-like instances (hdmf-zarr's
//! `ZarrReference`) → object (insertion order), elements of structured arrays and structured
//! NumPy scalars → objects keyed by field name, nested numeric NumPy arrays → nested lists.
//!
//! [`encode_object_array`] and [`encode_text_array`] write a protocol 2 stream that NumPy 1.x
//! and 2.x unpickle into an object (`|O`) or structured (`record`) array.
//!
//! # Example
//!
//! ```
//! use neurochunk_pickle::{decode_value, AllowList, PickleError};
//! use serde_json::json;
//!
//! // pickle.dumps(ZarrReference(source='.', path='/acquisition/ts', object_id=None,
//! //                            source_object_id=None), protocol=2)
//! let reference = b"\x80\x02chdmf_zarr.utils\nZarrReference\nq\x00)\x81q\x01(\
//!     X\x06\x00\x00\x00sourceq\x02X\x01\x00\x00\x00.q\x03X\x04\x00\x00\x00pathq\x04\
//!     X\x0f\x00\x00\x00/acquisition/tsq\x05X\t\x00\x00\x00object_idq\x06N\
//!     X\x10\x00\x00\x00source_object_idq\x07Nu.";
//!
//! // hdmf-zarr's list reads it as a dict.
//! let value = decode_value(reference, &AllowList::hdmf_zarr())?;
//! assert_eq!(
//!     value,
//!     json!({"source": ".", "path": "/acquisition/ts", "object_id": null,
//!            "source_object_id": null})
//! );
//!
//! // The NumPy-only list refuses the class, naming it and the offset of its GLOBAL opcode.
//! let refused = decode_value(reference, &AllowList::numpy()).unwrap_err();
//! assert!(matches!(&refused, PickleError::RefusedGlobal { offset: 2, .. }));
//! assert!(refused.to_string().contains("'hdmf_zarr.utils.ZarrReference' at byte 2"));
//!
//! // os.system('echo') is refused under every list; nothing is ever called.
//! let evil = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R.";
//! let refused = decode_value(evil, &AllowList::hdmf_zarr()).unwrap_err();
//! assert!(refused.to_string().contains("'os.system' at byte 2 is refused"));
//! # Ok::<(), PickleError>(())
//! ```

#![warn(missing_docs)]

mod allow;
mod numpy;
mod read;
mod write;

use serde_json::Value;

pub use allow::{AllowList, Meaning};
pub use write::{encode_object_array, encode_text_array};

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
        /// The length of the stream.
        len: usize,
        /// Where the incomplete opcode starts.
        offset: usize,
        /// What is missing.
        what: String,
    },
    /// An opcode this reader never executes (extension registry, persistent ids, out-of-band
    /// buffers, old-style instances, sets).
    #[error("pickle opcode {name} (0x{opcode:02x}) at byte {offset} is not supported: {reason}")]
    RefusedOpcode {
        /// The opcode byte.
        opcode: u8,
        /// Its name in `pickletools`.
        name: &'static str,
        /// Where it is in the stream.
        offset: usize,
        /// Why it is never executed.
        reason: &'static str,
    },
    /// A byte that is no pickle opcode.
    #[error("invalid pickle opcode 0x{opcode:02x} at byte {offset}")]
    UnknownOpcode {
        /// The byte.
        opcode: u8,
        /// Where it is in the stream.
        offset: usize,
    },
    /// A global outside the allow-list.
    #[error(
        "pickle global '{module}.{name}' at byte {offset} is refused: pickled code is never run; \
         only the globals on the reader's allow-list are loaded"
    )]
    RefusedGlobal {
        /// The global's module, as the stream spells it.
        module: String,
        /// The global's name in its module.
        name: String,
        /// Where the `GLOBAL` / `STACK_GLOBAL` opcode naming it is in the stream.
        offset: usize,
    },
    /// A malformed stream: stack underflow, missing mark, memo index not set, wrong argument
    /// types, inconsistent array state.
    #[error("invalid pickle: {opcode} at byte {offset}: {message}")]
    Invalid {
        /// The name of the opcode being run.
        opcode: &'static str,
        /// Where it is in the stream.
        offset: usize,
        /// What is wrong.
        message: String,
    },
    /// A well-formed value that has no JSON form here (an integer beyond 64 bits, non-UTF-8
    /// bytes, a dtype this reader does not decode, …).
    #[error("pickle value made at byte {offset} cannot be read: {message}")]
    Unsupported {
        /// Where the opcode that made the value is in the stream.
        offset: usize,
        /// Why it cannot be read.
        message: String,
    },
    /// A size or nesting limit was exceeded.
    #[error("pickle exceeds a limit: {0}")]
    Limit(String),
    /// [`encode_object_array`] or [`encode_text_array`] was given something it cannot write.
    #[error("cannot pickle: {0}")]
    Encode(String),
}

/// Decode a pickled NumPy array (object, structured or numeric dtype) into its shape and its
/// elements as JSON, loading only the globals `allow` lists.
pub fn decode_object_array(bytes: &[u8], allow: &AllowList) -> Result<PickledArray, PickleError> {
    let machine = read::Machine::run(bytes, allow)?;
    numpy::array_from(&machine, bytes.len())
}

/// Decode any allowed top-level pickled value into JSON (e.g. the base64-decoded fill value
/// `"gAVLAC4="` of hdmf-zarr arrays, a pickled int 0), loading only the globals `allow` lists.
pub fn decode_value(bytes: &[u8], allow: &AllowList) -> Result<Value, PickleError> {
    let machine = read::Machine::run(bytes, allow)?;
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
    /// The field's name (not empty, unique in the record).
    pub name: String,
    /// What the field holds.
    pub kind: RecordKind,
}
