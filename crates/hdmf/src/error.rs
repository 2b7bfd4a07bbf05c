//! The error type of the NWB / HDMF layer: every error names the file and the object (and,
//! where it applies, the attribute, link or element) that is wrong.

use std::path::{Path, PathBuf};

use neurochunk_array::ArrayError;
use neurochunk_store::StoreError;

/// Errors reading or writing an NWB file.
#[derive(Debug, thiserror::Error)]
pub enum HdmfError {
    /// The Zarr layer failed (metadata, chunk, codec, store).
    #[error("{file}: {source}")]
    Array {
        file: PathBuf,
        #[source]
        source: Box<ArrayError>,
    },
    /// The store failed.
    #[error("{file}: {source}")]
    Store {
        file: PathBuf,
        #[source]
        source: Box<StoreError>,
    },
    /// The path is not an NWB/HDMF Zarr file.
    #[error("{file}: {message}")]
    NotNwb { file: PathBuf, message: String },
    /// No group or dataset at this path (and no link by that name).
    #[error("{file}: no object at '{path}'")]
    NotFound { file: PathBuf, path: String },
    /// Something stored at `path` does not follow either hdmf-zarr convention.
    #[error("{file}: '{path}': {message}")]
    Malformed {
        file: PathBuf,
        path: String,
        message: String,
    },
    /// Links that lead back to themselves.
    #[error("{file}: link cycle: {}", chain.join(" -> "))]
    LinkCycle { file: PathBuf, chain: Vec<String> },
    /// A link or reference to another file outside the directories the caller allowed.
    #[error(
        "{file}: '{path}' refers to external file '{source_path}', which is outside the allowed \
         directory {allowed}; allow it explicitly (--allow-external DIR) to follow it"
    )]
    ExternalRefused {
        file: PathBuf,
        path: String,
        source_path: String,
        allowed: String,
    },
    /// The caller asked for something the data cannot give (wrong kind, bad selection).
    #[error("{file}: '{path}': {message}")]
    Invalid {
        file: PathBuf,
        path: String,
        message: String,
    },
    /// Reading an input file (e.g. a namespace YAML) failed.
    #[error("{file}: {message}")]
    Input { file: PathBuf, message: String },
}

/// Results of this crate.
pub type HdmfResult<T> = Result<T, HdmfError>;

impl HdmfError {
    pub(crate) fn array(file: &Path, source: ArrayError) -> Self {
        HdmfError::Array {
            file: file.to_path_buf(),
            source: Box::new(source),
        }
    }

    pub(crate) fn store(file: &Path, source: StoreError) -> Self {
        HdmfError::Store {
            file: file.to_path_buf(),
            source: Box::new(source),
        }
    }

    pub(crate) fn malformed(file: &Path, path: &str, message: impl Into<String>) -> Self {
        HdmfError::Malformed {
            file: file.to_path_buf(),
            path: path.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn invalid(file: &Path, path: &str, message: impl Into<String>) -> Self {
        HdmfError::Invalid {
            file: file.to_path_buf(),
            path: path.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn not_found(file: &Path, path: &str) -> Self {
        HdmfError::NotFound {
            file: file.to_path_buf(),
            path: path.to_string(),
        }
    }
}
