//! Errors of an import: each names the HDF5 file and, where there is one, the object.

use neurochunk_hdmf::HdmfError;

/// Errors importing an HDF5 file.
#[derive(Debug, thiserror::Error)]
pub enum Hdf5Error {
    /// The file cannot be opened or read as HDF5.
    #[error("{file}: {message}")]
    File {
        /// The HDF5 file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// An object of the file cannot be imported.
    #[error("{file}: '{path}': {message}")]
    Object {
        /// The HDF5 file.
        file: String,
        /// The object (group, dataset, link).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An external link to a file outside the directories the caller allowed.
    #[error(
        "{file}: '{path}' is an external link to '{target}', which is outside the allowed \
         directory {allowed}; allow it explicitly (--allow-external DIR) to import it"
    )]
    ExternalRefused {
        /// The HDF5 file.
        file: String,
        /// The link.
        path: String,
        /// Its target file, as stored.
        target: String,
        /// The allowed directories, quoted and comma-separated.
        allowed: String,
    },
    /// Writing the NWB Zarr file failed.
    #[error(transparent)]
    Hdmf(#[from] HdmfError),
}

/// Results of this crate.
pub type Hdf5Result<T> = Result<T, Hdf5Error>;

impl Hdf5Error {
    pub(crate) fn file(file: &str, message: impl Into<String>) -> Self {
        Hdf5Error::File {
            file: file.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn object(file: &str, path: &str, message: impl Into<String>) -> Self {
        Hdf5Error::Object {
            file: file.to_string(),
            path: path.to_string(),
            message: message.into(),
        }
    }
}

impl From<Hdf5Error> for HdmfError {
    /// An error of an HDF5 file as the NWB layer reports it.
    fn from(e: Hdf5Error) -> Self {
        match e {
            Hdf5Error::Hdmf(e) => e,
            Hdf5Error::File { file, message } => HdmfError::Input { file, message },
            Hdf5Error::Object {
                file,
                path,
                message,
            } => HdmfError::Malformed {
                file,
                path,
                message,
            },
            other @ Hdf5Error::ExternalRefused { .. } => HdmfError::Input {
                file: String::new(),
                message: other.to_string(),
            },
        }
    }
}
