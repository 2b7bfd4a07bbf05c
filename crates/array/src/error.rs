//! The error type of the array layer; every variant names the node (and chunk) concerned.

use neurochunk_codec::CodecError;
use neurochunk_store::StoreError;

/// Errors from opening, reading or writing arrays and groups.
#[derive(Debug, thiserror::Error)]
pub enum ArrayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No metadata document at this path.
    #[error("no array or group at '{0}'")]
    NotFound(String),
    /// A metadata document is malformed.
    #[error("invalid metadata for '{path}': {message}")]
    Metadata { path: String, message: String },
    /// The array's codecs could not be built from its metadata.
    #[error("array '{path}': {source}")]
    Codecs {
        path: String,
        #[source]
        source: CodecError,
    },
    /// A chunk failed to decode or encode.
    #[error("array '{path}', chunk '{key}': {source}")]
    Chunk {
        path: String,
        key: String,
        #[source]
        source: CodecError,
    },
    /// A chunk's stored bytes are inconsistent with the metadata.
    #[error("array '{path}', chunk '{key}': {message}")]
    ChunkCorrupt {
        path: String,
        key: String,
        message: String,
    },
    /// The requested region does not fit the array.
    #[error("array '{path}': {message}")]
    Selection { path: String, message: String },
    /// An error found earlier and kept (e.g. for one entry of consolidated metadata).
    #[error(transparent)]
    Kept(std::sync::Arc<ArrayError>),
    /// The operation is not possible for this array or node.
    #[error("'{path}': {message}")]
    Unsupported { path: String, message: String },
}

pub type ArrayResult<T> = Result<T, ArrayError>;

impl ArrayError {
    pub(crate) fn metadata(path: &str, message: impl Into<String>) -> Self {
        ArrayError::Metadata {
            path: crate::display_path(path),
            message: message.into(),
        }
    }
}
