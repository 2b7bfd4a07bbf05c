//! `tree` and `info`: what is stored where, as text for people or JSON for scripts.

use clap::Args;
use neurochunk_array::{
    display_path, open_node_with, walk_nodes, ArrayMetadata, Node, NodeMetadata, Store, ZarrFormat,
};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use serde_json::{json, Map, Value};

use crate::arrays::AxisOrderOpt;
use crate::store_args::Location;
use crate::{CmdResult, Failure};

#[derive(Args, Debug)]
pub(crate) struct TreeArgs {
    /// The group (or array): a directory or a URL.
    path: Location,
    /// Print `{"nodes": [...]}` as JSON instead of a tree.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    axis_order: AxisOrderOpt,
}

#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// The array or group: a directory or a URL.
    path: Location,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    axis_order: AxisOrderOpt,
}

fn node_format(node: &NodeMetadata) -> ZarrFormat {
    match node {
        NodeMetadata::Array(a) => a.format,
        NodeMetadata::Group(g) => g.format,
    }
}

/// `zarr_format` for JSON output (null for N5 and precomputed) plus `format` (`zarr2`,
/// `zarr3`, `n5` or `precomputed`).
fn format_json(format: ZarrFormat, out: &mut Map<String, Value>) {
    let (number, name) = match format {
        ZarrFormat::V2 => (json!(2), "zarr2"),
        ZarrFormat::V3 => (json!(3), "zarr3"),
        ZarrFormat::N5 => (Value::Null, "n5"),
        ZarrFormat::Precomputed => (Value::Null, "precomputed"),
    };
    out.insert("zarr_format".into(), number);
    out.insert("format".into(), json!(name));
}

/// The array facts shared by `tree --json` and `info --json`.
fn array_summary(meta: &ArrayMetadata, out: &mut Map<String, Value>) {
    out.insert("shape".into(), json!(meta.shape));
    out.insert("chunks".into(), json!(meta.chunk_shape));
    out.insert(
        "data_type".into(),
        meta.data_type
            .to_v3_json()
            .unwrap_or_else(|_| json!(format!("{:?}", meta.data_type))),
    );
    out.insert("codecs".into(), Value::Array(meta.codecs.to_v3_json()));
    if let Some(n5) = meta.n5_block() {
        out.insert("n5_axis_order".into(), json!(n5.axis_order().name()));
        out.insert("compression".into(), n5.compression_json().clone());
    }
}

fn node_json(node: &Node) -> Value {
    let mut out = Map::new();
    out.insert("path".into(), json!(display_path(&node.path)));
    match &node.metadata {
        NodeMetadata::Array(meta) => {
            out.insert("node_type".into(), json!("array"));
            format_json(meta.format, &mut out);
            array_summary(meta, &mut out);
        }
        NodeMetadata::Group(group) => {
            out.insert("node_type".into(), json!("group"));
            format_json(group.format, &mut out);
        }
    }
    Value::Object(out)
}

/// Print JSON the way Python writes it: non-finite numbers stay bare `NaN`/`Infinity`, which
/// Python's `json` module reads back as floats.
fn print_json(value: &Value) {
    outln!("{}", to_python_json(value, PyJsonStyle::ZARR_PYTHON3));
}

fn codec_names(meta: &ArrayMetadata) -> String {
    if let Some(precomputed) = meta.precomputed() {
        let scale = precomputed.scale();
        let layout = match (&scale.sharding, precomputed.gzip_chunks()) {
            (Some(_), _) => " (sharded)",
            (None, true) => " (gzip files)",
            (None, false) => "",
        };
        return format!("precomputed {}{layout}", scale.encoding.name());
    }
    if let Some(n5) = meta.n5_block() {
        let kind = n5
            .compression_json()
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("?");
        return format!("n5 block → {kind}");
    }
    meta.codecs
        .to_v3_json()
        .iter()
        .map(|c| {
            c.get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

pub(crate) fn tree(args: TreeArgs) -> CmdResult {
    let store = args.path.open_read()?;
    // A node that cannot be read is shown with its error; the rest of the tree is still shown.
    let entries = walk_nodes(store.as_ref(), "", &args.axis_order.open_options())
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    // The groups shown as multiscale images: groups inside one (a BigDataViewer setup and
    // time point) are not described again, except the images of a container (BigDataViewer
    // setups and time points, bioformats2raw series), each described on its own.
    let mut images: Vec<String> = Vec::new();
    let mut container_members: Vec<String> = Vec::new();
    let mut describe = |path: &str, metadata: &NodeMetadata| -> Shown {
        if container_members.iter().any(|p| p == path) {
            images.push(path.to_string());
            return Shown::Image;
        }
        let inside = images
            .iter()
            .any(|p| p.is_empty() || path.starts_with(&format!("{p}/")));
        let between = container_members
            .iter()
            .any(|p| p.starts_with(&format!("{path}/")));
        if inside || between {
            return Shown::Nothing;
        }
        let layout = neurochunk_ome::MultiscaleImage::detect_node(store.as_ref(), path, metadata);
        if may_be_container(metadata, layout) {
            if let Ok(Some((kind, members))) =
                neurochunk_ome::container_images(store.as_ref(), path)
            {
                if kind == neurochunk_ome::ContainerKind::Bioformats2Raw || members.len() > 1 {
                    let shown = Shown::Container(kind, members.clone());
                    container_members.extend(members);
                    return shown;
                }
            }
        }
        if layout.is_some() {
            images.push(path.to_string());
            return Shown::Image;
        }
        Shown::Nothing
    };
    if args.json {
        let list: Vec<Value> = entries
            .iter()
            .map(|entry| match &entry.metadata {
                Ok(metadata) => {
                    let mut out = node_json(&Node {
                        path: entry.path.clone(),
                        metadata: metadata.clone(),
                    });
                    match describe(&entry.path, metadata) {
                        Shown::Image => {
                            out["multiscale"] =
                                crate::ome_cmd::multiscale_json(&store, &entry.path);
                        }
                        Shown::Container(kind, members) => {
                            let members: Vec<String> =
                                members.iter().map(|p| display_path(p)).collect();
                            out["container"] = json!({"kind": kind.to_string(), "images": members});
                        }
                        Shown::Nothing => {}
                    }
                    out
                }
                Err(e) => json!({"path": display_path(&entry.path), "error": e.to_string()}),
            })
            .collect();
        print_json(&json!({ "nodes": list }));
        return malformed_nodes(&args.path, &entries);
    }
    for entry in &entries {
        match &entry.metadata {
            Ok(metadata) => {
                print_node(&entry.path, metadata);
                let (indent, _) = tree_position(&entry.path);
                match describe(&entry.path, metadata) {
                    Shown::Image => {
                        let summary = crate::ome_cmd::tree_summary(&store, &entry.path);
                        outln!("{indent}  = {summary}");
                    }
                    Shown::Container(kind, members) => {
                        outln!("{indent}  = {kind} container of {} images", members.len());
                    }
                    Shown::Nothing => {}
                }
            }
            Err(e) => {
                let (indent, name) = tree_position(&entry.path);
                outln!("{indent}{name}  [error: {e}]");
            }
        }
    }
    malformed_nodes(&args.path, &entries)
}

/// The end of `tree`, after the whole hierarchy is shown: a failure naming the nodes whose
/// metadata is malformed (or could not be read), whether it came from consolidated metadata
/// or the nodes' own documents. A node whose codec this build does not implement is marked
/// in the output but is not a failure: its metadata is fine.
fn malformed_nodes(location: &Location, entries: &[neurochunk_array::NodeEntry]) -> CmdResult {
    let bad: Vec<&neurochunk_array::NodeEntry> = entries
        .iter()
        .filter(|e| e.metadata.as_ref().is_err_and(|e| !e.is_unsupported()))
        .collect();
    let Some(first) = bad.first() else {
        return Ok(());
    };
    let error = first
        .metadata
        .as_ref()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let more = match bad.len() {
        1 => String::new(),
        n => format!(
            " (and {} more: {})",
            n - 1,
            bad[1..]
                .iter()
                .map(|e| display_path(&e.path))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(Failure(format!(
        "{}: node '{}' cannot be read: {error}{more}",
        location.display(),
        display_path(&first.path)
    )))
}

/// How `tree` describes a node beyond its own line.
enum Shown {
    /// A multiscale image: its summary.
    Image,
    /// A container of several images, with their paths.
    Container(neurochunk_ome::ContainerKind, Vec<String>),
    Nothing,
}

/// Whether a group could be a container of several images, judged from what is already read
/// (so that only such groups cost the listing `container_images` makes): a BigDataViewer
/// image at an N5 group, or bioformats2raw metadata.
fn may_be_container(metadata: &NodeMetadata, layout: Option<neurochunk_ome::Layout>) -> bool {
    let NodeMetadata::Group(group) = metadata else {
        return false;
    };
    let ome = match group.attributes.get("ome") {
        Some(Value::Object(ome)) => ome,
        _ => &group.attributes,
    };
    layout == Some(neurochunk_ome::Layout::N5Bdv) || ome.contains_key("bioformats2raw.layout")
}

/// The indentation and display name of a node path in the tree view.
fn tree_position(path: &str) -> (String, &str) {
    let depth = path.split('/').filter(|s| !s.is_empty()).count();
    let name = path
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("/");
    ("  ".repeat(depth), name)
}

/// Print nodes as an indented tree, one line each.
pub(crate) fn print_tree(nodes: &[Node]) {
    for node in nodes {
        print_node(&node.path, &node.metadata);
    }
}

/// Print one node's line of the tree view.
fn print_node(path: &str, metadata: &NodeMetadata) {
    let (indent, name) = tree_position(path);
    match metadata {
        NodeMetadata::Group(g) => outln!("{indent}{name}  (group, {})", g.format.label()),
        NodeMetadata::Array(a) => outln!(
            "{indent}{name}  {:?} {}  chunks {:?}  [{}]  ({})",
            a.shape,
            a.data_type_name(),
            a.chunk_shape,
            codec_names(a),
            a.format.label()
        ),
    }
}

fn raw_document(store: &dyn Store, node: &Node) -> Value {
    let files: &[&str] = match (&node.metadata, node_format(&node.metadata)) {
        (_, ZarrFormat::N5) => &[neurochunk_array::n5::ATTRIBUTES_JSON],
        (NodeMetadata::Group(_), ZarrFormat::Precomputed) => &[neurochunk_array::precomputed::INFO],
        // A scale's description is its `precomputed` attribute.
        (NodeMetadata::Array(_), ZarrFormat::Precomputed) => &[],
        (NodeMetadata::Array(_), ZarrFormat::V2) => &[".zarray"],
        (NodeMetadata::Group(_), ZarrFormat::V2) => &[".zgroup"],
        _ => &["zarr.json"],
    };
    files
        .iter()
        .filter_map(|f| {
            store
                .get(&neurochunk_store::join_key(&node.path, f))
                .ok()
                .flatten()
        })
        .filter_map(|bytes| neurochunk_dtype::json::parse_lenient(&bytes).ok())
        .next()
        .unwrap_or(Value::Null)
}

pub(crate) fn info(args: InfoArgs) -> CmdResult {
    let (store, path) = args.path.open_read_node()?;
    let node = open_node_with(store.as_ref(), &path, &args.axis_order.open_options())
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    let attributes = match &node.metadata {
        NodeMetadata::Array(a) => a.attributes.clone(),
        NodeMetadata::Group(g) => g.attributes.clone(),
    };
    let image = neurochunk_ome::MultiscaleImage::detect_node(store.as_ref(), &path, &node.metadata)
        .is_some();
    if args.json {
        let mut out = node_json(&node).as_object().cloned().unwrap_or_default();
        out.insert("attributes".into(), Value::Object(attributes));
        out.insert("metadata".into(), raw_document(store.as_ref(), &node));
        if image {
            out.insert(
                "multiscale".into(),
                crate::ome_cmd::multiscale_json(&store, &path),
            );
        }
        if let NodeMetadata::Array(meta) = &node.metadata {
            out.insert(
                "fill_value".into(),
                neurochunk_dtype::v3::fill_value_to_v3_json(
                    &meta.effective_fill(),
                    &meta.data_type,
                ),
            );
        }
        print_json(&Value::Object(out));
        return Ok(());
    }
    outln!("path:        {}", args.path.display());
    match node_format(&node.metadata) {
        ZarrFormat::N5 => outln!("format:      n5"),
        ZarrFormat::Precomputed => outln!("format:      precomputed"),
        f => outln!("zarr format: {}", f.number()),
    }
    match &node.metadata {
        NodeMetadata::Array(a) => {
            outln!("node type:   array");
            outln!("shape:       {:?}", a.shape);
            outln!("chunks:      {:?}", a.chunk_shape);
            outln!("data type:   {}", a.data_type_name());
            outln!(
                "fill value:  {}",
                neurochunk_dtype::v3::fill_value_to_v3_json(&a.effective_fill(), &a.data_type)
            );
            outln!("codecs:      {}", codec_names(a));
            if let Some(names) = &a.dimension_names {
                outln!("dimensions:  {names:?}");
            }
        }
        NodeMetadata::Group(_) => {
            outln!("node type:   group");
            if image {
                match neurochunk_ome::MultiscaleImage::open(store.clone(), &path) {
                    Ok(image) => crate::ome_cmd::print_image(&image, ""),
                    Err(e) => outln!("multiscale:  [error: {e}]"),
                }
            }
        }
    }
    outln!(
        "attributes:  {}",
        to_python_json(&Value::Object(attributes), PyJsonStyle::ZARR_PYTHON3)
    );
    Ok(())
}
