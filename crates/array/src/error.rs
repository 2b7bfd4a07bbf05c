//! The error type of the array layer; every variant names the node (and chunk) concerned.

use neurochunk_codec::CodecError;
use neurochunk_store::StoreError;

/// Errors from opening, reading or writing arrays and groups.
#[derive(Debug, thiserror::Error)]
pub enum ArrayError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No metadata document at this path.
    #[error("no array or group at '{0}'")]
    NotFound(String),
    /// A metadata document is malformed.
    #[error("invalid metadata for '{path}': {message}")]
    Metadata {
        /// The node's path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The array's codecs could not be built from its metadata.
    #[error("array '{path}': {source}")]
    Codecs {
        /// The node's path.
        path: String,
        /// Why the chain could not be built.
        #[source]
        source: CodecError,
    },
    /// A chunk failed to decode or encode.
    #[error("array '{path}', chunk '{key}': {source}")]
    Chunk {
        /// The node's path.
        path: String,
        /// The chunk's store key.
        key: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// A chunk's stored bytes are inconsistent with the metadata.
    #[error("array '{path}', chunk '{key}': {message}")]
    ChunkCorrupt {
        /// The node's path.
        path: String,
        /// The chunk's store key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The requested region does not fit the array.
    #[error("array '{path}': {message}")]
    Selection {
        /// The array's path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An error found earlier and kept (e.g. for one entry of consolidated metadata).
    #[error(transparent)]
    Kept(std::sync::Arc<ArrayError>),
    /// The operation is not possible for this array or node.
    #[error("'{path}': {message}")]
    Unsupported {
        /// The node's path.
        path: String,
        /// Why it is not possible.
        message: String,
    },
}

/// The result of an array-layer operation.
pub type ArrayResult<T> = Result<T, ArrayError>;

impl ArrayError {
    pub(crate) fn metadata(path: &str, message: impl Into<String>) -> Self {
        ArrayError::Metadata {
            path: crate::display_path(path),
            message: message.into(),
        }
    }

    /// Whether the error says what this build cannot do rather than what is wrong with the
    /// data: a codec it does not implement (or cannot apply here), an operation not possible
    /// for the node. A malformed document, corrupt chunk or failing store is not.
    pub fn is_unsupported(&self) -> bool {
        match self {
            ArrayError::Unsupported { .. } => true,
            ArrayError::Codecs { source, .. } => matches!(
                source,
                CodecError::Unknown(_) | CodecError::Unsupported { .. }
            ),
            ArrayError::Kept(inner) => inner.is_unsupported(),
            _ => false,
        }
    }
}
