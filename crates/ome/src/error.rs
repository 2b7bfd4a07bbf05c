//! The error type of the multiscale layer; every variant names the group or array concerned.

use neurochunk_array::ArrayError;
use neurochunk_store::StoreError;

/// Errors from opening, validating, converting or building multiscale images.
#[derive(Debug, thiserror::Error)]
pub enum OmeError {
    /// The array layer failed (reading a level, writing a chunk, ...).
    #[error(transparent)]
    Array(#[from] ArrayError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node is not a multiscale image of any known layout.
    #[error("'{path}' is not a multiscale image: {message}")]
    NotAnImage {
        /// The node's path.
        path: String,
        /// Why.
        message: String,
    },
    /// Multiscale metadata that cannot be understood.
    #[error("invalid multiscale metadata in '{path}': {message}")]
    Metadata {
        /// The group's path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A request that cannot be carried out (options, shapes, data types).
    #[error("'{path}': {message}")]
    Invalid {
        /// The path concerned.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Result of the multiscale layer.
pub type OmeResult<T> = Result<T, OmeError>;

/// Display form of a node path: `/` for the root, `/a/b` otherwise.
pub(crate) fn shown(path: &str) -> String {
    neurochunk_array::display_path(path)
}

impl OmeError {
    pub(crate) fn metadata(path: &str, message: impl Into<String>) -> Self {
        OmeError::Metadata {
            path: shown(path),
            message: message.into(),
        }
    }

    pub(crate) fn not_image(path: &str, message: impl Into<String>) -> Self {
        OmeError::NotAnImage {
            path: shown(path),
            message: message.into(),
        }
    }

    pub(crate) fn invalid(path: &str, message: impl Into<String>) -> Self {
        OmeError::Invalid {
            path: shown(path),
            message: message.into(),
        }
    }
}
