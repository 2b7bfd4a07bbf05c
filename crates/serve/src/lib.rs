//! Serve a local tree of chunked data over HTTP and look at it in Neuroglancer.
//!
//! Neuroglancer reads Zarr v2/v3 (OME-Zarr), N5 and Neuroglancer precomputed volumes,
//! segmentations, skeletons and meshes straight from HTTP servers, by whole-file and byte-range
//! GETs. This crate is the small server that makes a directory on disk such a source:
//!
//! * [`Server`] answers `GET`, `HEAD` and CORS preflight `OPTIONS` requests for the files below
//!   one root, read-only, with single byte ranges (`206`, `416`) and the CORS headers a viewer on
//!   another origin needs. Paths never leave the root: `..`, encoded or not, is refused, and a
//!   symbolic link whose target lies outside the root is not followed. A file `KEY` that is
//!   missing but stored gzip-compressed as `KEY.gz` (cloud-volume's `compress="gzip"`) is sent
//!   with `Content-Encoding: gzip`.
//! * Optionally it serves Neuroglancer's own client (for example the copy inside the
//!   `neuroglancer` Python package) under [`CLIENT_PREFIX`], so the view works offline.
//! * [`discover_layers`] finds what a viewer can show below the root and [`neuroglancer_state`] /
//!   [`neuroglancer_link`] turn that into a Neuroglancer URL opening them as layers.
//!
//! ```no_run
//! use neurochunk_serve::{discover_layers, neuroglancer_link, neuroglancer_state, Server};
//!
//! let server = Server::bind("volumes/", "127.0.0.1:0".parse()?, None)?;
//! let layers = discover_layers(server.root())?;
//! let state = neuroglancer_state(&layers, &server.base_url());
//! println!("{}", neuroglancer_link("https://neuroglancer-demo.appspot.com/", &state));
//! server.run()?; // until the process ends
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod http;
mod layers;
mod neuroglancer;

pub use http::{Server, ServerHandle, CLIENT_PREFIX};
pub use layers::{discover_layers, Layer, LayerKind, SourceFormat};
pub use neuroglancer::{neuroglancer_link, neuroglancer_state};

/// What can go wrong when starting a server or looking for layers.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The root to serve (or the client directory) is not a readable directory.
    #[error("{path}: {message}")]
    Root {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {address}: {message}")]
    Bind {
        /// The address asked for.
        address: String,
        /// The operating system's reason.
        message: String,
    },
    /// Reading the tree failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory concerned.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}
