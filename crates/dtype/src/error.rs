//! The crate's error type: every message says what was found and what was expected.

use std::path::PathBuf;

/// Everything that can go wrong while reading or writing data type descriptions, fill values
/// and `.npy` files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DtypeError {
    /// Malformed JSON text; `line` and `column` (1-based, bytes) point into the original input.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// Line of the error, 1-based.
        line: usize,
        /// Column of the error, 1-based, in bytes.
        column: usize,
        /// What the parser expected or found.
        message: String,
    },
    /// A data type description that is not valid in `format`.
    #[error("invalid {format} data type {found}: {reason}")]
    InvalidDataType {
        /// The format whose rules were applied (e.g. `"Zarr v2"`).
        format: &'static str,
        /// The offending description, as JSON text.
        found: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A valid data type that has no representation in `format` (or that this crate does not
    /// support there).
    #[error("unsupported {format} data type {found}: {reason}")]
    Unsupported {
        /// The format the type was to be read from or written to.
        format: &'static str,
        /// The data type, as its description or name.
        found: String,
        /// Why it cannot be represented.
        reason: String,
    },
    /// A fill value that cannot be read as an element of `data_type`.
    #[error("invalid {format} fill value {found} for data type {data_type}: {reason}")]
    InvalidFillValue {
        /// The format whose fill value rules were applied.
        format: &'static str,
        /// The offending fill value, as JSON text.
        found: String,
        /// The array's data type.
        data_type: String,
        /// Why the value does not fit the type.
        reason: String,
    },
    /// A user-given type name that no known or registered type answers to.
    #[error("unknown data type name {name:?}; expected {expected}")]
    UnknownName {
        /// The name as given.
        name: String,
        /// A description of the accepted names.
        expected: String,
    },
    /// A user-given type name that several types answer to.
    #[error("data type name {name:?} is ambiguous; it matches {}: {}", candidates.len(), candidates.join("; "))]
    Ambiguous {
        /// The name as given.
        name: String,
        /// The types it matches, described.
        candidates: Vec<String>,
    },
    /// A second registration under a custom type name that is already taken.
    #[error("a custom data type named {name:?} is already registered")]
    AlreadyRegistered {
        /// The custom type name already in use.
        name: String,
    },
    /// A malformed or unsupported `.npy` file.
    #[error("invalid .npy data: {reason}")]
    Npy {
        /// What is wrong with the file.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("I/O error while {action}: {source}")]
    Io {
        /// What was being done (e.g. `"reading the .npy header"`).
        action: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An error that happened while working on a file.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file being read or written.
        path: PathBuf,
        /// The error itself.
        #[source]
        source: Box<DtypeError>,
    },
}

impl DtypeError {
    pub(crate) fn npy(reason: impl Into<String>) -> Self {
        DtypeError::Npy {
            reason: reason.into(),
        }
    }

    pub(crate) fn io(action: impl Into<String>, source: std::io::Error) -> Self {
        DtypeError::Io {
            action: action.into(),
            source,
        }
    }

    pub(crate) fn in_file(self, path: impl Into<PathBuf>) -> Self {
        DtypeError::InFile {
            path: path.into(),
            source: Box::new(self),
        }
    }
}

/// A short, single-line rendering of a JSON value for error messages.
pub(crate) fn show_json(value: &serde_json::Value) -> String {
    const LIMIT: usize = 200;
    let text = value.to_string();
    if text.len() <= LIMIT {
        return text;
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
