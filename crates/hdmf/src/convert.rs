//! Converting a file between the two conventions: groups, datasets (numeric arrays streamed
//! chunk by chunk, everything else re-encoded), attributes, links, references, compounds and
//! cached specifications; consolidated metadata is written at the end. [`convert_into`]
//! writes into any store; [`convert_file`] is its filesystem convenience.

use std::path::{Path, PathBuf};

use neurochunk_array::convert::same_encoding;

use crate::convention::{numeric_type_name, Convention};
use crate::error::HdmfResult;
use crate::file::NwbFile;
use crate::index::NodeKind;
use crate::specs::cached_namespaces;
use crate::write::{CopyLayout, DatasetOptions, NwbWriter, WriteOptions};

/// What a conversion wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Groups written.
    pub groups: usize,
    /// Datasets written (streamed or re-encoded).
    pub datasets: usize,
    /// Datasets copied chunk by chunk.
    pub streamed: usize,
    /// Links written (external links included).
    pub links: usize,
    /// External links written.
    pub external_links: usize,
    /// Chunks of numeric datasets copied as stored (no decoding), counted over their grids.
    pub chunks_copied: u64,
    /// Chunks of numeric datasets decoded and encoded again, counted over their grids.
    pub chunks_encoded: u64,
    /// Bytes of the numeric datasets streamed (decoded size).
    pub bytes: u64,
    /// Cached namespaces copied.
    pub namespaces: usize,
}

/// Convert `source` into a new file (a directory tree) at `destination` following
/// `convention`: the filesystem convenience over [`convert_into`]. `progress` is called with
/// the number of nodes done.
pub fn convert_file(
    source: &NwbFile,
    destination: &Path,
    convention: Convention,
    options: WriteOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> HdmfResult<(PathBuf, ConvertSummary)> {
    let writer = NwbWriter::create(destination, convention, options)?;
    let summary = convert_into(source, writer, progress)?;
    Ok((destination.to_path_buf(), summary))
}

/// Convert `source` into the file `writer` writes (in the writer's convention, into any store:
/// see [`NwbWriter::create_in`]) and finish it. `progress` is called with the number of nodes
/// done.
pub fn convert_into(
    source: &NwbFile,
    writer: NwbWriter,
    progress: &(dyn Fn(u64) + Sync),
) -> HdmfResult<ConvertSummary> {
    copy_into(
        source,
        writer,
        &CopyOptions {
            progress_nodes: progress,
            ..CopyOptions::default()
        },
    )
}

/// The chunk shape chosen for the dataset at a path, of a shape and element size.
pub type ChunkChoice<'a> = dyn Fn(&str, &[u64], usize) -> Option<Vec<usize>> + Sync + 'a;

/// The compressors chosen for the numeric dataset at a path, of a description.
pub type CompressorChoice<'a> = dyn Fn(&str, &neurochunk_array::ArrayMetadata) -> Option<Vec<neurochunk_codec::Codec>>
    + Sync
    + 'a;

/// How [`copy_into`] copies a file: what the plain conversion does, with hooks for the
/// callers that change chunking or link targets on the way (the HDF5 import).
pub struct CopyOptions<'a> {
    /// The chunk shape of the dataset at a path, of a shape and element size (`None`: as the
    /// source stores it); for numeric arrays and the other datasets alike.
    pub chunks: &'a ChunkChoice<'a>,
    /// The compressors of the numeric dataset at a path, described by the source's
    /// metadata (`None`: the source's own; the session's compressors win over both).
    pub compressors: &'a CompressorChoice<'a>,
    /// The `source` written for an external link, from the one stored.
    pub link_source: &'a (dyn Fn(&str) -> String + Sync),
    /// Called with the number of nodes done.
    pub progress_nodes: &'a (dyn Fn(u64) + Sync),
    /// Called once, before anything is copied, with the bytes of numeric data to stream
    /// (decoded size).
    pub total_bytes: &'a (dyn Fn(u64) + Sync),
    /// Called with the bytes of numeric data done (decoded size, chunk by chunk).
    pub progress_bytes: &'a (dyn Fn(u64) + Sync),
}

impl Default for CopyOptions<'_> {
    fn default() -> Self {
        CopyOptions {
            chunks: &|_, _, _| None,
            compressors: &|_, _| None,
            link_source: &|s| s.to_string(),
            progress_nodes: &|_| {},
            total_bytes: &|_| {},
            progress_bytes: &|_| {},
        }
    }
}

/// Copy `source` into the file `writer` writes, as `options` say, and finish it.
pub fn copy_into(
    source: &NwbFile,
    mut writer: NwbWriter,
    options: &CopyOptions<'_>,
) -> HdmfResult<ConvertSummary> {
    let mut summary = ConvertSummary::default();
    let specloc = source.specloc();
    let in_specs = |path: &str| {
        specloc
            .as_deref()
            .is_some_and(|s| path == s || path.starts_with(&format!("{s}/")))
    };
    let nodes: Vec<(String, NodeKind)> = source
        .nodes()
        .map(|(p, k)| (p.to_string(), k))
        .filter(|(p, _)| !in_specs(p))
        .collect();
    // The numeric arrays streamed, and their bytes.
    let mut streamed = std::collections::HashSet::new();
    for (path, kind) in &nodes {
        if *kind == NodeKind::Dataset {
            let array = source.open_array(path)?;
            let meta = array.metadata();
            if numeric_type_name(&meta.data_type).is_some() && !source.is_scalar(path)? {
                summary.bytes += meta.shape.iter().product::<u64>()
                    * meta.data_type.fixed_size().unwrap_or(0) as u64;
                streamed.insert(path.clone());
            }
        }
    }
    (options.total_bytes)(summary.bytes);
    for (path, kind) in nodes {
        let attrs = source.attributes(&path)?;
        match kind {
            NodeKind::Group => {
                writer.group(&path, None, &attrs)?;
                for link in source.links_of(&path)? {
                    let external = link.source != ".";
                    let target_file = if external {
                        (options.link_source)(&link.source)
                    } else {
                        link.source.clone()
                    };
                    writer.link(&link.parent, &link.name, &link.target, &target_file)?;
                    summary.links += 1;
                    summary.external_links += usize::from(external);
                }
                summary.groups += 1;
            }
            NodeKind::Dataset => {
                let array = source.open_array(&path)?;
                let meta = array.metadata();
                let item = meta.data_type.fixed_size().unwrap_or(64);
                let chunks = (options.chunks)(&path, &meta.shape, item);
                if streamed.contains(&path) {
                    let source_chunks: Vec<usize> = meta.chunk_shape.clone();
                    let grid_chunk = chunks.clone().unwrap_or(source_chunks);
                    let chunk_bytes = grid_chunk.iter().product::<usize>() as u64 * item as u64;
                    let total = meta.shape.iter().product::<u64>() * item as u64;
                    let done = std::sync::atomic::AtomicU64::new(0);
                    let layout = CopyLayout {
                        chunks,
                        compressors: (options.compressors)(&path, meta),
                    };
                    let dst = writer.copy_array(&path, &array, None, &attrs, layout, &|n| {
                        // Bytes of the grid's chunks, the edges counted whole: capped.
                        let before =
                            done.fetch_add(n * chunk_bytes, std::sync::atomic::Ordering::Relaxed);
                        let now = (before + n * chunk_bytes).min(total);
                        (options.progress_bytes)(now.saturating_sub(before.min(total)));
                    })?;
                    let grid: u64 = dst
                        .shape()
                        .iter()
                        .zip(&dst.metadata().chunk_shape)
                        .map(|(&d, &c)| d.div_ceil(c.max(1) as u64))
                        .product();
                    if same_encoding(meta, dst.metadata()) {
                        summary.chunks_copied += grid;
                    } else {
                        summary.chunks_encoded += grid;
                    }
                    summary.streamed += 1;
                } else {
                    let data = source.read_node_dataset(&path, None)?;
                    let dataset_options = DatasetOptions { chunks, dims: None };
                    writer.dataset(&path, None, &data, &attrs, &dataset_options)?;
                }
                summary.datasets += 1;
            }
        }
        (options.progress_nodes)(1);
    }
    for namespace in cached_namespaces(source)? {
        writer.cache_namespace(&namespace)?;
        summary.namespaces += 1;
    }
    writer.finish()?;
    Ok(summary)
}
