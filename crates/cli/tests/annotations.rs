//! `neurochunk table convert` between point cloud or connections tables and Neuroglancer
//! precomputed annotation collections: Neuroglancer's own collections read into tables that
//! validate, round trips through a collection (points, lines, sharded), bad tables naming the
//! column, and outputs replaced only when a conversion succeeds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::UInt64Type;
use neurochunk_table::io::read_all;

const CONTEXT: &str = "urn:uuid:00000000-0000-4000-8000-0000000000a1";

fn table(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .arg("table")
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = table(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../array/tests/data/annotations")
        .join(name)
}

fn batch(path: &Path) -> RecordBatch {
    let (schema, batches) = read_all(path).unwrap();
    concat_batches(&schema, &batches).unwrap()
}

fn ids(b: &RecordBatch, c: &str) -> Vec<u64> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<UInt64Type>()
        .values()
        .to_vec()
}

#[test]
fn neuroglancer_collections_read_into_tables_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Points into a point cloud (the kind from the output's name).
    let points = d.join("points.pointclouds.parquet");
    let said = ok(&[
        "convert",
        text(&fixture("points")),
        text(&points),
        "--context",
        CONTEXT,
    ]);
    assert!(said.contains("5 point annotation(s)"), "{said}");
    ok(&["validate", "--strict", text(&points)]);
    assert_eq!(
        ids(&batch(&points), "sample_id"),
        vec![100, 101, 102, 103, 104]
    );
    // Lines into connections (the kind from the annotation type).
    let synapses = d.join("synapses.parquet");
    ok(&[
        "convert",
        text(&fixture("synapses")),
        text(&synapses),
        "--context",
        CONTEXT,
    ]);
    ok(&[
        "validate",
        "--strict",
        "--schema",
        "connections",
        text(&synapses),
    ]);
    let b = batch(&synapses);
    assert_eq!(ids(&b, "src_fragment_id"), vec![11, 12, 13]);
    assert_eq!(ids(&b, "tgt_fragment_id"), vec![21, 22, 23]);

    // Back to collections: points, sharded points, lines and points of connections.
    let conns = d.join("syn.connections.parquet");
    std::fs::rename(&synapses, &conns).unwrap();
    for (input, layer, extra) in [
        (&points, "pts", vec![]),
        (&points, "pts_sharded", vec!["--sharded"]),
        (&conns, "syn_lines", vec![]),
        (&conns, "syn_points", vec!["--annotation-type", "point"]),
    ] {
        let out = d.join(layer);
        let mut args = vec![
            "convert",
            text(input),
            text(&out),
            "--format",
            "precomputed",
        ];
        args.extend(extra.iter().copied());
        ok(&args);
        let info: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("info")).unwrap()).unwrap();
        assert_eq!(info["@type"], "neuroglancer_annotations_v1");
        let expected_type = if layer == "syn_lines" {
            "line"
        } else {
            "point"
        };
        assert_eq!(info["annotation_type"], expected_type, "{layer}");
        assert_eq!(
            info["by_id"].get("sharding").is_some(),
            layer == "pts_sharded"
        );
        // No staging directory is left beside it.
        let hidden: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "{hidden:?}");
        let back = d.join(format!("{layer}.back.parquet"));
        ok(&["convert", text(&out), text(&back), "--context", CONTEXT]);
        ok(&["validate", "--strict", text(&back)]);
    }
    let lines = d.join("syn_lines");
    assert!(lines.join("rel_pre").is_dir() && lines.join("rel_post").is_dir());
    assert_eq!(
        ids(&batch(&d.join("syn_lines.back.parquet")), "tgt_fragment_id"),
        vec![21, 22, 23]
    );
    assert_eq!(
        ids(&batch(&d.join("pts_sharded.back.parquet")), "fragment_id"),
        ids(&batch(&points), "fragment_id")
    );
}

#[test]
fn bad_tables_name_the_column_and_leave_the_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let conns = d.join("syn.connections.parquet");
    ok(&[
        "convert",
        text(&fixture("synapses")),
        text(&conns),
        "--context",
        CONTEXT,
    ]);
    let layer = d.join("layer");
    ok(&[
        "convert",
        text(&conns),
        text(&layer),
        "--format",
        "precomputed",
    ]);
    let before = std::fs::read(layer.join("info")).unwrap();
    // Without the post positions: an error naming the column, the old layer kept whole.
    let cut = d.join("cut.connections.parquet");
    ok(&[
        "convert",
        text(&conns),
        text(&cut),
        "--columns",
        "connection_id,src_sample_id,tgt_sample_id,type,attr:pre_x,attr:pre_y,attr:pre_z",
    ]);
    let out = table(&[
        "convert",
        text(&cut),
        text(&layer),
        "--format",
        "precomputed",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("attr:post_x"), "{stderr}");
    assert_eq!(std::fs::read(layer.join("info")).unwrap(), before);
    assert!(layer.join("by_id/1").is_file());
    let hidden: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    // A directory holding something else is not replaced without --overwrite.
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "keep").unwrap();
    let out = table(&[
        "convert",
        text(&conns),
        text(&other),
        "--format",
        "precomputed",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(other.join("notes.txt").is_file());
    // Usage: no context; a point cloud as lines; --annotation-type for a skeleton table.
    assert_eq!(
        table(&["convert", text(&layer), text(&d.join("x.parquet"))])
            .status
            .code(),
        Some(2)
    );
    let points = d.join("p.pointclouds.parquet");
    ok(&[
        "convert",
        text(&fixture("points")),
        text(&points),
        "--context",
        CONTEXT,
    ]);
    let pl = d.join("pl");
    let args = [
        "convert",
        text(&points),
        text(&pl),
        "--format",
        "precomputed",
        "--annotation-type",
        "line",
    ];
    assert_eq!(table(&args).status.code(), Some(2));
    assert!(!d.join("pl").exists());
}

#[test]
fn a_failed_skeleton_export_leaves_the_existing_layer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let swc = d.join("7.swc");
    std::fs::write(&swc, "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n").unwrap();
    let tbl = d.join("t.skeletons.parquet");
    ok(&["from-swc", text(&swc), text(&tbl), "--context", CONTEXT]);
    let layer = d.join("skel");
    ok(&[
        "convert",
        text(&tbl),
        text(&layer),
        "--format",
        "precomputed",
    ]);
    assert!(layer.join("7").is_file());
    // A skeletons table without z cannot be written: the layer stays as it was.
    let cut = d.join("cut.skeletons.parquet");
    ok(&[
        "convert",
        text(&tbl),
        text(&cut),
        "--columns",
        "sample_id,fragment_id,parent_id,x,y",
    ]);
    let out = table(&[
        "convert",
        text(&cut),
        text(&layer),
        "--format",
        "precomputed",
    ]);
    assert!(!out.status.success());
    assert!(layer.join("info").is_file() && layer.join("7").is_file());
    let hidden = std::fs::read_dir(d)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(hidden, 0);
}
