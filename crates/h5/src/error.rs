//! The error type: every error names the file (its display name), the object path when known
//! and the structure at fault.

use std::fmt;
use std::sync::Arc;

use neurochunk_store::StoreError;

/// Results of this crate.
pub type H5Result<T> = Result<T, H5Error>;

/// What went wrong (see [`H5Error::kind`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The store failed to answer a read.
    Store(Arc<StoreError>),
    /// The value is not an HDF5 file (no signature where one must be).
    NotHdf5(String),
    /// A structure of the file is malformed: a bad signature or checksum, a field out of range,
    /// a truncated block, a cycle.
    Corrupt {
        /// The structure, e.g. "v2 B-tree node" or "object header".
        structure: String,
        /// Its address in the file (relative to the superblock, as HDF5 addresses are), when
        /// known.
        address: Option<u64>,
        /// What is wrong.
        message: String,
    },
    /// The file uses a feature this reader does not implement (a virtual dataset, an szip
    /// filter, data in external files, ...).
    Unsupported(String),
    /// A filter of a dataset's pipeline could not decode a chunk.
    Filter {
        /// The filter id (1 deflate, 2 shuffle, 3 fletcher32, 32000 lzf, ...).
        id: u16,
        /// Its name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// No object at a path, or a link that leads nowhere.
    NotFound(String),
    /// An argument is not valid for the object (a selection out of bounds, a buffer of the
    /// wrong size).
    InvalidArgument(String),
    /// A declared size exceeds what this reader accepts (a limit against hostile input).
    TooLarge(String),
}

/// An error of this crate, naming the file, the object (when known) and the structure at
/// fault, e.g. `x.nwb: '/acquisition/ts/data': v2 B-tree node at 0x1f400: bad checksum`.
#[derive(Clone, Debug)]
pub struct H5Error {
    file: Option<Arc<str>>,
    path: Option<String>,
    kind: ErrorKind,
}

impl H5Error {
    /// An error of `kind`, not yet attributed to a file or object.
    pub fn new(kind: ErrorKind) -> Self {
        H5Error {
            file: None,
            path: None,
            kind,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The display name of the file, when known.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The path of the object concerned, when known.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// This error attributed to the file `name` (unless it already names one).
    pub(crate) fn in_file(mut self, name: &Arc<str>) -> Self {
        if self.file.is_none() {
            self.file = Some(name.clone());
        }
        self
    }

    /// This error attributed to the object at `path` (unless it already names one).
    pub(crate) fn at(mut self, path: &str) -> Self {
        if self.path.is_none() && !path.is_empty() {
            self.path = Some(path.to_string());
        }
        self
    }

    /// Whether this error is a store failure (as opposed to a problem with the file).
    pub fn is_store_error(&self) -> bool {
        matches!(self.kind, ErrorKind::Store(_))
    }
}

impl fmt::Display for H5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{file}")?,
            None => write!(f, "HDF5 file")?,
        }
        if let Some(path) = &self.path {
            write!(f, ": '{path}'")?;
        }
        match &self.kind {
            ErrorKind::Store(e) => write!(f, ": read failed: {e}"),
            ErrorKind::NotHdf5(m) => write!(f, ": not an HDF5 file: {m}"),
            ErrorKind::Corrupt {
                structure,
                address,
                message,
            } => match address {
                Some(a) => write!(f, ": {structure} at {a:#x}: {message}"),
                None => write!(f, ": {structure}: {message}"),
            },
            ErrorKind::Unsupported(m) => write!(f, ": unsupported: {m}"),
            ErrorKind::Filter { id, name, message } => {
                write!(f, ": filter {id} ({name}): {message}")
            }
            ErrorKind::NotFound(m) => write!(f, ": not found: {m}"),
            ErrorKind::InvalidArgument(m) => write!(f, ": invalid argument: {m}"),
            ErrorKind::TooLarge(m) => write!(f, ": too large: {m}"),
        }
    }
}

impl std::error::Error for H5Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Store(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<StoreError> for H5Error {
    fn from(e: StoreError) -> Self {
        H5Error::new(ErrorKind::Store(Arc::new(e)))
    }
}

/// A [`ErrorKind::Corrupt`] error.
pub(crate) fn corrupt(
    structure: impl Into<String>,
    address: Option<u64>,
    message: impl Into<String>,
) -> H5Error {
    H5Error::new(ErrorKind::Corrupt {
        structure: structure.into(),
        address,
        message: message.into(),
    })
}

/// A [`ErrorKind::Unsupported`] error.
pub(crate) fn unsupported(message: impl Into<String>) -> H5Error {
    H5Error::new(ErrorKind::Unsupported(message.into()))
}

/// A [`ErrorKind::InvalidArgument`] error.
pub(crate) fn invalid(message: impl Into<String>) -> H5Error {
    H5Error::new(ErrorKind::InvalidArgument(message.into()))
}

/// A [`ErrorKind::TooLarge`] error.
pub(crate) fn too_large(message: impl Into<String>) -> H5Error {
    H5Error::new(ErrorKind::TooLarge(message.into()))
}

/// A [`ErrorKind::NotFound`] error.
pub(crate) fn not_found(message: impl Into<String>) -> H5Error {
    H5Error::new(ErrorKind::NotFound(message.into()))
}
