//! `neurochunk mesh …`: Neuroglancer precomputed meshes (a segmentation layer's mesh
//! directory). `ls` lists the segments, `show` one segment's fragments or multi-resolution
//! manifest, `export` writes legacy meshes as vertex and face tables (Parquet or Arrow IPC),
//! `import` writes such tables back as a legacy mesh directory.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use neurochunk_array::precomputed::mesh::{
    write_legacy_meshes, LegacyWriteOptions, MeshDir, MeshFragment, MeshKind, SegmentMesh,
};
use neurochunk_table::mesh::{
    faces_schema, mesh_batches, mesh_from_batches, vertices_schema, MeshPart,
};
use neurochunk_table::WriteOptions;
use serde_json::{json, Value};

use crate::store_args::Location;
use crate::{CmdResult, Failure};

/// Neuroglancer precomputed meshes.
#[derive(Subcommand)]
pub(crate) enum MeshCommand {
    /// List the segments with a mesh in a mesh directory (or a layer whose info names one).
    Ls(LsArgs),
    /// Show one segment's mesh: legacy fragments with vertex and triangle counts, or the lods
    /// and fragments of a multi-resolution manifest.
    Show(ShowArgs),
    /// Write meshes as two tables, OUT/vertices.EXT (segment_id, fragment, x, y, z) and
    /// OUT/faces.EXT (segment_id, fragment, v0, v1, v2; indices into the segment's vertices).
    /// Multi-resolution meshes: one lod (--lod, default 0, the finest), Draco fragments decoded
    /// when built with the `draco` feature, vertices in model coordinates.
    Export(ExportArgs),
    /// Write a legacy mesh directory from the tables `export` writes.
    Import(ImportArgs),
}

#[derive(Args)]
pub(crate) struct LsArgs {
    /// The mesh directory, or a segmentation layer whose info has a `mesh` member.
    mesh: Location,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct ShowArgs {
    /// The mesh directory, or a segmentation layer whose info has a `mesh` member.
    mesh: Location,
    /// The segment id.
    segment: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    /// The mesh directory, or a segmentation layer whose info has a `mesh` member.
    mesh: Location,
    /// The output directory (created) for vertices.EXT and faces.EXT.
    out: PathBuf,
    /// Only these segments (comma-separated ids); default every segment.
    #[arg(long, value_delimiter = ',')]
    segments: Vec<u64>,
    /// Table format: parquet or arrow (Arrow IPC file).
    #[arg(long, default_value = "parquet")]
    format: String,
    /// Level of detail of multi-resolution meshes (0, the finest, by default; empty fragments
    /// are left out, the others numbered in manifest order).
    #[arg(long)]
    lod: Option<usize>,
}

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// The directory holding vertices.parquet and faces.parquet (or .arrow).
    tables: PathBuf,
    /// The mesh directory to write (a legacy precomputed mesh directory).
    out: Location,
    /// Output format (only `precomputed`, legacy meshes).
    #[arg(long, default_value = "precomputed")]
    format: String,
    /// Store manifests and fragments gzip-compressed (`NAME.gz`).
    #[arg(long)]
    gzip: bool,
}

pub(crate) fn run(command: MeshCommand) -> CmdResult {
    match command {
        MeshCommand::Ls(args) => ls(args),
        MeshCommand::Show(args) => show(args),
        MeshCommand::Export(args) => export(args),
        MeshCommand::Import(args) => import(args),
    }
}

fn kind_name(kind: &MeshKind) -> &'static str {
    match kind {
        MeshKind::Legacy => "legacy",
        MeshKind::Multires(info) if info.sharding.is_some() => "multires (sharded)",
        MeshKind::Multires(_) => "multires",
    }
}

fn ls(args: LsArgs) -> CmdResult {
    let store = args.mesh.open_read()?;
    let dir = MeshDir::open(store.as_ref(), "")?;
    let ids = dir.segments()?;
    if args.json {
        println!(
            "{}",
            json!({"kind": kind_name(dir.kind()), "directory": dir.dir(), "segments": ids})
        );
    } else {
        println!(
            "{}: {} meshes ({}), directory '{}'",
            args.mesh.display(),
            ids.len(),
            kind_name(dir.kind()),
            if dir.dir().is_empty() { "." } else { dir.dir() }
        );
        for id in ids {
            println!("{id}");
        }
    }
    Ok(())
}

fn show(args: ShowArgs) -> CmdResult {
    let store = args.mesh.open_read()?;
    let dir = MeshDir::open(store.as_ref(), "")?;
    let value: Value = match dir.kind() {
        MeshKind::Legacy => {
            let mesh = dir.read_legacy(args.segment)?;
            json!({
                "segment": args.segment,
                "kind": "legacy",
                "fragments": mesh.fragments.iter().map(|f| json!({
                    "name": f.name,
                    "vertices": f.vertices.len(),
                    "triangles": f.triangles.len(),
                })).collect::<Vec<_>>(),
            })
        }
        MeshKind::Multires(_) => {
            let (manifest, data, start) = dir.read_multires_manifest(args.segment)?;
            let mut value = manifest.to_json();
            value["segment"] = json!(args.segment);
            value["kind"] = json!("multires");
            value["data"] = json!(data);
            value["data_start"] = json!(start);
            value
        }
    };
    if args.json {
        println!("{value}");
    } else {
        println!("{}", serde_json::to_string_pretty(&value)?);
    }
    Ok(())
}

fn table_format(format: &str) -> Result<(neurochunk_table::Format, &'static str), Failure> {
    match format {
        "parquet" => Ok((neurochunk_table::Format::Parquet, "parquet")),
        "arrow" | "ipc" => Ok((neurochunk_table::Format::ArrowIpc, "arrow")),
        other => Err(Failure(format!(
            "--format {other}: parquet or arrow expected"
        ))),
    }
}

fn export(args: ExportArgs) -> CmdResult {
    let (format, ext) = table_format(&args.format)?;
    let store = args.mesh.open_read()?;
    let dir = MeshDir::open(store.as_ref(), "")?;
    let ids = if args.segments.is_empty() {
        dir.segments()?
    } else {
        args.segments.clone()
    };
    if args.lod.is_some() && matches!(dir.kind(), MeshKind::Legacy) {
        return Err(Failure(
            "--lod: legacy meshes have one level of detail".to_string(),
        ));
    }
    let mut parts = Vec::new();
    for id in &ids {
        let mesh = match args.lod {
            Some(lod) => dir.read_multires_lod(*id, lod)?,
            None => dir.read_segment(*id)?,
        };
        for (i, fragment) in mesh.fragments.into_iter().enumerate() {
            parts.push(MeshPart {
                segment_id: *id,
                fragment: i as u32,
                vertices: fragment.vertices,
                triangles: fragment.triangles,
            });
        }
    }
    let (vertices, faces) = mesh_batches(&parts)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure(format!("{}: {e}", args.out.display())))?;
    let opts = WriteOptions {
        format: Some(format),
        ..WriteOptions::default()
    };
    let vpath = args.out.join(format!("vertices.{ext}"));
    let fpath = args.out.join(format!("faces.{ext}"));
    neurochunk_table::io::write_all(
        &vpath,
        vertices_schema(),
        std::slice::from_ref(&vertices),
        &opts,
    )?;
    neurochunk_table::io::write_all(&fpath, faces_schema(), std::slice::from_ref(&faces), &opts)?;
    println!(
        "wrote {} segments: {} ({} vertices), {} ({} faces)",
        ids.len(),
        vpath.display(),
        vertices.num_rows(),
        fpath.display(),
        faces.num_rows()
    );
    Ok(())
}

fn find_table(dir: &std::path::Path, stem: &str) -> Result<PathBuf, Failure> {
    for ext in ["parquet", "arrow", "ipc", "feather"] {
        let path = dir.join(format!("{stem}.{ext}"));
        if path.exists() {
            return Ok(path);
        }
    }
    Err(Failure(format!(
        "{}: no {stem}.parquet or {stem}.arrow",
        dir.display()
    )))
}

fn import(args: ImportArgs) -> CmdResult {
    if args.format != "precomputed" {
        return Err(Failure(format!(
            "--format {}: only precomputed (legacy meshes) is written",
            args.format
        )));
    }
    let (_, vertices) = neurochunk_table::io::read_all(find_table(&args.tables, "vertices")?)?;
    let (_, faces) = neurochunk_table::io::read_all(find_table(&args.tables, "faces")?)?;
    let parts = mesh_from_batches(&vertices, &faces)?;
    let mut meshes: Vec<SegmentMesh> = Vec::new();
    for part in parts {
        if meshes.last().map(|m| m.segment) != Some(part.segment_id) {
            meshes.push(SegmentMesh {
                segment: part.segment_id,
                fragments: Vec::new(),
            });
        }
        if let Some(mesh) = meshes.last_mut() {
            mesh.fragments.push(MeshFragment {
                name: String::new(),
                vertices: part.vertices,
                triangles: part.triangles,
            });
        }
    }
    let (store, key) = args.out.open_parts()?;
    let options = LegacyWriteOptions {
        gzip: args.gzip,
        ..LegacyWriteOptions::default()
    };
    write_legacy_meshes(store.as_ref(), &key, &meshes, &options)?;
    println!("wrote {} meshes to {}", meshes.len(), args.out.display());
    Ok(())
}
