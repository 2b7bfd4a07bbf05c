//! Converting a file between the two conventions: groups, datasets (numeric arrays streamed
//! chunk by chunk, everything else re-encoded), attributes, links, references, compounds and
//! cached specifications; consolidated metadata is written at the end. [`convert_into`]
//! writes into any store; [`convert_file`] is its filesystem convenience.

use std::path::{Path, PathBuf};

use crate::convention::{numeric_type_name, Convention};
use crate::error::HdmfResult;
use crate::file::NwbFile;
use crate::index::NodeKind;
use crate::specs::cached_namespaces;
use crate::write::{DatasetOptions, NwbWriter, WriteOptions};

/// What a conversion wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Groups written.
    pub groups: usize,
    /// Datasets written (streamed or re-encoded).
    pub datasets: usize,
    /// Datasets copied chunk by chunk.
    pub streamed: usize,
    /// Links written.
    pub links: usize,
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
    mut writer: NwbWriter,
    progress: &(dyn Fn(u64) + Sync),
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
    let no_progress = |_: u64| {};
    for (path, kind) in nodes {
        let attrs = source.attributes(&path)?;
        match kind {
            NodeKind::Group => {
                writer.group(&path, None, &attrs)?;
                for link in source.links_of(&path)? {
                    writer.link(&link.parent, &link.name, &link.target, &link.source)?;
                    summary.links += 1;
                }
                summary.groups += 1;
            }
            NodeKind::Dataset => {
                let array = source.open_array(&path)?;
                let numeric = numeric_type_name(&array.metadata().data_type).is_some();
                if numeric && !source.is_scalar(&path)? {
                    writer.copy_array(&path, &array, None, &attrs, &no_progress)?;
                    summary.streamed += 1;
                } else {
                    let data = source.read_node_dataset(&path, None)?;
                    writer.dataset(&path, None, &data, &attrs, &DatasetOptions::default())?;
                }
                summary.datasets += 1;
            }
        }
        progress(1);
    }
    for namespace in cached_namespaces(source)? {
        writer.cache_namespace(&namespace)?;
        summary.namespaces += 1;
    }
    writer.finish()?;
    Ok(summary)
}
