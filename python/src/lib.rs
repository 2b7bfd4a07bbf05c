//! `neurochunk._neurochunk`: the native half of the `neurochunk` Python package.
//!
//! A thin layer over the engine: it turns a location into a store (`store::open_store`),
//! reads regions straight into NumPy buffers the Python side allocated, writes from contiguous
//! NumPy buffers, and maps every engine error onto the package's exception classes (defined in
//! `neurochunk/_errors.py`). The GIL is released while the engine works; long reads and writes
//! run in slabs, with a check for signals (Ctrl-C) between them. Indexing semantics (NumPy's
//! basic and orthogonal indexing, broadcasting, dtypes) live on the Python side, which hands
//! this module one normalised run per axis.
//!
//! Not for: anything a user calls directly (the Python package wraps every function here).

mod codecs;
mod errors;
mod icechunk;
mod node;
mod nwb;
mod ome;
mod precomputed;
mod store;
mod table;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _neurochunk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<node::RawArray>()?;
    m.add_class::<icechunk::RawSession>()?;
    m.add_class::<icechunk::RawFork>()?;
    m.add_function(wrap_pyfunction!(icechunk::icechunk_init, m)?)?;
    m.add_function(wrap_pyfunction!(icechunk::icechunk_log, m)?)?;
    m.add_function(wrap_pyfunction!(icechunk::icechunk_create_ref, m)?)?;
    m.add_function(wrap_pyfunction!(icechunk::icechunk_session, m)?)?;
    m.add_function(wrap_pyfunction!(icechunk::icechunk_fork_open, m)?)?;
    m.add_class::<node::RawGroup>()?;
    m.add_function(wrap_pyfunction!(node::open_node, m)?)?;
    m.add_function(wrap_pyfunction!(node::create_array, m)?)?;
    m.add_function(wrap_pyfunction!(node::create_group, m)?)?;
    m.add_function(wrap_pyfunction!(node::convert, m)?)?;
    m.add_function(wrap_pyfunction!(node::remove_node, m)?)?;
    m.add_class::<table::RawTable>()?;
    m.add_function(wrap_pyfunction!(table::table_open, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_write, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_validate, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_derive, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_from_swc, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_to_swc, m)?)?;
    m.add_class::<nwb::RawNwbFile>()?;
    m.add_function(wrap_pyfunction!(nwb::nwb_open, m)?)?;
    m.add_function(wrap_pyfunction!(nwb::nwb_convert, m)?)?;
    m.add_function(wrap_pyfunction!(nwb::nwb_demo, m)?)?;
    m.add_function(wrap_pyfunction!(ome::ome_describe, m)?)?;
    m.add_function(wrap_pyfunction!(ome::ome_pyramid, m)?)?;
    m.add_function(wrap_pyfunction!(ome::ome_validate, m)?)?;
    m.add_function(wrap_pyfunction!(nwb::nwb_validate, m)?)?;
    m.add_function(wrap_pyfunction!(nwb::nwb_import, m)?)?;
    m.add_class::<precomputed::RawSkeletons>()?;
    m.add_class::<precomputed::RawMeshes>()?;
    m.add_class::<precomputed::RawAnnotations>()?;
    m.add_function(wrap_pyfunction!(precomputed::skeletons_open, m)?)?;
    m.add_function(wrap_pyfunction!(precomputed::skeletons_write, m)?)?;
    m.add_function(wrap_pyfunction!(precomputed::skeletons_from_table, m)?)?;
    m.add_function(wrap_pyfunction!(precomputed::meshes_open, m)?)?;
    m.add_function(wrap_pyfunction!(precomputed::meshes_write, m)?)?;
    m.add_function(wrap_pyfunction!(precomputed::annotations_open, m)?)?;
    m.add_function(wrap_pyfunction!(precomputed::annotations_write, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
