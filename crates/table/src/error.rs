//! Error type of the table crate: every error names the file it concerns.

use std::path::{Path, PathBuf};

/// An error from reading, writing or converting a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// Filesystem error.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The file is neither Arrow IPC nor Parquet (or is truncated / corrupt).
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Arrow error while decoding or encoding.
    #[error("{path}: {message}")]
    Arrow {
        /// The file.
        path: PathBuf,
        /// Underlying message.
        message: String,
    },
    /// The table's contents do not allow the requested operation.
    #[error("{path}: {message}")]
    Data {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A bad argument (unknown schema, unsupported output kind, ...).
    #[error("{0}")]
    Usage(String),
}

impl TableError {
    /// An I/O error for `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        TableError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A format error for `path`.
    pub fn format(path: &Path, message: impl Into<String>) -> Self {
        TableError::Format {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    /// An Arrow/Parquet library error for `path`.
    pub fn arrow(path: &Path, err: impl std::fmt::Display) -> Self {
        TableError::Arrow {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }

    /// A data error for `path`.
    pub fn data(path: &Path, message: impl Into<String>) -> Self {
        TableError::Data {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// Result alias.
pub type Result<T, E = TableError> = std::result::Result<T, E>;
