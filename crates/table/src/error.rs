//! Error type of the table crate: every error names the table (or file) it concerns by a
//! display name: the path as given for files on disk, the key (or a name chosen by the
//! caller) for tables in a [`Store`](neurochunk_store::Store).

use neurochunk_store::replace::ReplaceError;
use neurochunk_store::StoreError;
use std::path::Path;

/// An error from reading, writing or converting a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// Filesystem (or other I/O) error.
    #[error("{path}: {source}")]
    Io {
        /// Display name of the file or directory.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A store error other than an I/O error (a missing or invalid key, a read-only store).
    #[error("{path}: {source}")]
    Store {
        /// Display name of the table or file.
        path: String,
        /// Underlying error.
        source: StoreError,
    },
    /// The file is neither Arrow IPC nor Parquet (or is truncated / corrupt).
    #[error("{path}: {message}")]
    Format {
        /// Display name of the file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Arrow error while decoding or encoding.
    #[error("{path}: {message}")]
    Arrow {
        /// Display name of the file.
        path: String,
        /// Underlying message.
        message: String,
    },
    /// The table's contents do not allow the requested operation.
    #[error("{path}: {message}")]
    Data {
        /// Display name of the file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A bad argument (unknown schema, unsupported output kind, ...).
    #[error("{0}")]
    Usage(String),
    /// The output exists and is not something the writer may replace (see
    /// [`WriteOptions::overwrite`](crate::io::WriteOptions::overwrite)); nothing was written.
    #[error("{0}")]
    Refused(ReplaceError),
}

/// The display form of a path or name.
fn shown(path: impl AsRef<Path>) -> String {
    path.as_ref().display().to_string()
}

impl TableError {
    /// An I/O error for `path` (a path or a store key).
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        TableError::Io {
            path: shown(path),
            source,
        }
    }

    /// The error of a check whether the output `path` may be replaced.
    pub fn replace(path: impl AsRef<Path>, err: ReplaceError) -> Self {
        match err {
            ReplaceError::Store(e) => TableError::store(path, e),
            ReplaceError::Io { source, .. } => TableError::io(path, source),
            refused => TableError::Refused(refused),
        }
    }

    /// A store error for `path` (the display name of the table or file concerned). A
    /// backend's I/O error becomes [`TableError::Io`], so a file on disk reports the same
    /// message as a direct filesystem call would.
    pub fn store(path: impl AsRef<Path>, err: StoreError) -> Self {
        match err {
            StoreError::Backend { store, key, source } => match source.downcast::<std::io::Error>()
            {
                Ok(io) => TableError::io(path, *io),
                Err(source) => TableError::Store {
                    path: shown(path),
                    source: StoreError::Backend { store, key, source },
                },
            },
            other => TableError::Store {
                path: shown(path),
                source: other,
            },
        }
    }

    /// A format error for `path`.
    pub fn format(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        TableError::Format {
            path: shown(path),
            message: message.into(),
        }
    }

    /// An Arrow/Parquet library error for `path`.
    pub fn arrow(path: impl AsRef<Path>, err: impl std::fmt::Display) -> Self {
        TableError::Arrow {
            path: shown(path),
            message: err.to_string(),
        }
    }

    /// A data error for `path`.
    pub fn data(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        TableError::Data {
            path: shown(path),
            message: message.into(),
        }
    }
}

/// Result alias.
pub type Result<T, E = TableError> = std::result::Result<T, E>;
