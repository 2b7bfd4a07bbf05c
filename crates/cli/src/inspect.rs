//! `tree` and `info`: what is stored where, as text for people or JSON for scripts.

use std::path::PathBuf;

use clap::Args;
use neurochunk_array::{
    display_path, list_nodes, open_node, ArrayMetadata, Node, NodeMetadata, Store,
};
use serde_json::{json, Map, Value};

use crate::arrays::open_store;
use crate::{CmdResult, Failure};

#[derive(Args, Debug)]
pub(crate) struct TreeArgs {
    /// The group (or array) directory.
    path: PathBuf,
    /// Print `{"nodes": [...]}` as JSON instead of a tree.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// The array or group directory.
    path: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn format_number(node: &NodeMetadata) -> u8 {
    match node {
        NodeMetadata::Array(a) => a.format.number(),
        NodeMetadata::Group(g) => g.format.number(),
    }
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
}

fn node_json(node: &Node) -> Value {
    let mut out = Map::new();
    out.insert("path".into(), json!(display_path(&node.path)));
    match &node.metadata {
        NodeMetadata::Array(meta) => {
            out.insert("node_type".into(), json!("array"));
            out.insert("zarr_format".into(), json!(meta.format.number()));
            array_summary(meta, &mut out);
        }
        NodeMetadata::Group(group) => {
            out.insert("node_type".into(), json!("group"));
            out.insert("zarr_format".into(), json!(group.format.number()));
        }
    }
    Value::Object(out)
}

fn codec_names(meta: &ArrayMetadata) -> String {
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
    let store = open_store(&args.path)?;
    let nodes = list_nodes(store.as_ref(), "")
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    if args.json {
        let list: Vec<Value> = nodes.iter().map(node_json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "nodes": list }))?
        );
        return Ok(());
    }
    print_tree(&nodes);
    Ok(())
}

/// Print nodes as an indented tree, one line each.
pub(crate) fn print_tree(nodes: &[Node]) {
    for node in nodes {
        let depth = node.path.split('/').filter(|s| !s.is_empty()).count();
        let name = node
            .path
            .rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or("/");
        let indent = "  ".repeat(depth);
        match &node.metadata {
            NodeMetadata::Group(g) => {
                println!("{indent}{name}  (group, zarr v{})", g.format.number())
            }
            NodeMetadata::Array(a) => println!(
                "{indent}{name}  {:?} {}  chunks {:?}  [{}]  (zarr v{})",
                a.shape,
                a.data_type_name(),
                a.chunk_shape,
                codec_names(a),
                a.format.number()
            ),
        }
    }
}

fn raw_document(store: &dyn Store, node: &Node) -> Value {
    let files: &[&str] = match &node.metadata {
        NodeMetadata::Array(a) if a.format.number() == 2 => &[".zarray"],
        NodeMetadata::Group(g) if g.format.number() == 2 => &[".zgroup"],
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
    let store = open_store(&args.path)?;
    let node = open_node(store.as_ref(), "")
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    let attributes = match &node.metadata {
        NodeMetadata::Array(a) => a.attributes.clone(),
        NodeMetadata::Group(g) => g.attributes.clone(),
    };
    if args.json {
        let mut out = node_json(&node).as_object().cloned().unwrap_or_default();
        out.insert("attributes".into(), Value::Object(attributes));
        out.insert("metadata".into(), raw_document(store.as_ref(), &node));
        if let NodeMetadata::Array(meta) = &node.metadata {
            out.insert(
                "fill_value".into(),
                neurochunk_dtype::v3::fill_value_to_v3_json(
                    &meta.effective_fill(),
                    &meta.data_type,
                ),
            );
        }
        println!("{}", serde_json::to_string_pretty(&Value::Object(out))?);
        return Ok(());
    }
    println!("path:        {}", args.path.display());
    println!("zarr format: {}", format_number(&node.metadata));
    match &node.metadata {
        NodeMetadata::Array(a) => {
            println!("node type:   array");
            println!("shape:       {:?}", a.shape);
            println!("chunks:      {:?}", a.chunk_shape);
            println!("data type:   {}", a.data_type_name());
            println!(
                "fill value:  {}",
                neurochunk_dtype::v3::fill_value_to_v3_json(&a.effective_fill(), &a.data_type)
            );
            println!("codecs:      {}", codec_names(a));
            if let Some(names) = &a.dimension_names {
                println!("dimensions:  {names:?}");
            }
        }
        NodeMetadata::Group(_) => println!("node type:   group"),
    }
    println!(
        "attributes:  {}",
        serde_json::to_string_pretty(&Value::Object(attributes))?
    );
    Ok(())
}
