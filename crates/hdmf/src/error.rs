//! The error type of the NWB / HDMF layer: every error names the file (by its display name: a
//! path, a URL, a store prefix) and the object (and, where it applies, the attribute, link or
//! element) that is wrong.

use neurochunk_array::ArrayError;
use neurochunk_store::StoreError;

/// Errors reading or writing an NWB file. `file` is the file's display name
/// ([`crate::FileLocation::name`]).
#[derive(Debug, thiserror::Error)]
pub enum HdmfError {
    /// The Zarr layer failed (metadata, chunk, codec, store).
    #[error("{file}: {source}")]
    Array {
        /// The file.
        file: String,
        /// The array layer's error.
        #[source]
        source: Box<ArrayError>,
    },
    /// The store failed.
    #[error("{file}: {source}")]
    Store {
        /// The file.
        file: String,
        /// The store's error.
        #[source]
        source: Box<StoreError>,
    },
    /// The path is not an NWB/HDMF Zarr file.
    #[error("{file}: {message}")]
    NotNwb {
        /// The file.
        file: String,
        /// Why it is not one.
        message: String,
    },
    /// No group or dataset at this path (and no link by that name).
    #[error("{file}: no object at '{path}'")]
    NotFound {
        /// The file.
        file: String,
        /// The object path asked for.
        path: String,
    },
    /// Something stored at `path` does not follow either hdmf-zarr convention.
    #[error("{file}: '{path}': {message}")]
    Malformed {
        /// The file.
        file: String,
        /// The object concerned.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Links that lead back to themselves.
    #[error("{file}: link cycle: {}", chain.join(" -> "))]
    LinkCycle {
        /// The file where the cycle closed.
        file: String,
        /// Each hop as `file:link path`.
        chain: Vec<String>,
    },
    /// A link or reference to another file outside the directories the caller allowed.
    #[error(
        "{file}: '{path}' refers to external file '{source_path}', which is outside the allowed \
         directory {allowed}; allow it explicitly (--allow-external DIR) to follow it"
    )]
    ExternalRefused {
        /// The file holding the link or reference.
        file: String,
        /// The link or reference.
        path: String,
        /// Its `source`, as stored.
        source_path: String,
        /// The allowed directories, quoted and comma-separated.
        allowed: String,
    },
    /// A link or reference to another file that would lead outside the store holding this
    /// file (or that names an absolute path, which has no meaning inside a store).
    #[error(
        "{file}: '{path}' refers to external file '{source_path}', which is outside the store \
         holding this file"
    )]
    ExternalOutsideStore {
        /// The file holding the link or reference.
        file: String,
        /// The link or reference.
        path: String,
        /// Its `source`, as stored.
        source_path: String,
    },
    /// The caller asked for something the data cannot give (wrong kind, bad selection).
    #[error("{file}: '{path}': {message}")]
    Invalid {
        /// The file.
        file: String,
        /// The object concerned.
        path: String,
        /// What cannot be done.
        message: String,
    },
    /// The destination of a new file holds something the writer may not replace (see
    /// [`WriteOptions::overwrite`](crate::WriteOptions::overwrite)), or could not be looked
    /// at; nothing was written.
    #[error("{0}")]
    Replace(#[from] neurochunk_store::replace::ReplaceError),
    /// Reading an input file (e.g. a namespace YAML) or publishing an output failed.
    #[error("{file}: {message}")]
    Input {
        /// The input (or output) file.
        file: String,
        /// What failed.
        message: String,
    },
}

/// Results of this crate.
pub type HdmfResult<T> = Result<T, HdmfError>;

impl HdmfError {
    pub(crate) fn array(file: &str, source: ArrayError) -> Self {
        HdmfError::Array {
            file: file.to_string(),
            source: Box::new(source),
        }
    }

    pub(crate) fn store(file: &str, source: StoreError) -> Self {
        HdmfError::Store {
            file: file.to_string(),
            source: Box::new(source),
        }
    }

    pub(crate) fn malformed(file: &str, path: &str, message: impl Into<String>) -> Self {
        HdmfError::Malformed {
            file: file.to_string(),
            path: path.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn invalid(file: &str, path: &str, message: impl Into<String>) -> Self {
        HdmfError::Invalid {
            file: file.to_string(),
            path: path.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn not_found(file: &str, path: &str) -> Self {
        HdmfError::NotFound {
            file: file.to_string(),
            path: path.to_string(),
        }
    }

    pub(crate) fn input(file: impl Into<String>, message: impl Into<String>) -> Self {
        HdmfError::Input {
            file: file.into(),
            message: message.into(),
        }
    }
}
