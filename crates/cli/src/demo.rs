//! `demo`: writes a realistic microscopy-like volume and a small annotated hierarchy in every
//! supported format, reads everything back, checks it and reports throughput.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use neurochunk_array::convert::{convert_hierarchy, ConvertOptions};
use neurochunk_array::{
    consolidate, create_group, list_nodes, Array, ArrayBuilder, ArrayBytes, ArrayMetadata, Codec,
    DataType, Selection, ZarrFormat,
};
use neurochunk_codec::{BloscCompressor, BloscShuffle};
use serde_json::{json, Map, Value};

use crate::inspect::print_tree;
use crate::store_args::{Location, ReplaceArgs, WriteArgs};
use crate::{CmdResult, Failure};
use neurochunk_array::NodeTree;
use neurochunk_store::replace::{self, Overwrite, TreeKind};
use neurochunk_store::staging::resolve_target;
use neurochunk_store::{FsStore, PrefixStore, Store};
use neurochunk_table::io::HiveTable;

#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// Directory or URL to write into (created; existing demo output is replaced).
    dir: Location,
    /// Edge length of the cubic uint16 volume.
    #[arg(long, default_value_t = 256)]
    size: usize,
    #[command(flatten)]
    write: WriteArgs,
    #[command(flatten)]
    replace: ReplaceArgs,
}

/// What `demo` writes into its directory, which a later `demo` may replace: Zarr and N5 nodes
/// (the volumes, the hierarchies, the NWB files) and the tables under `tables/`.
#[derive(Debug)]
struct DemoOutput;

impl TreeKind for DemoOutput {
    fn name(&self) -> &'static str {
        "the output of neurochunk demo"
    }

    fn is_anchor(&self, file_name: &str) -> bool {
        NodeTree.is_anchor(file_name)
    }

    fn owns(&self, rest: &[&str], anchored: bool) -> bool {
        (anchored && NodeTree.owns(rest, true))
            || matches!(rest, ["tables", table @ ..] if HiveTable.owns(table, false))
    }
}

/// A deterministic pseudo-random generator (xorshift), so every run writes the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A light-sheet-like volume: dim smooth background, bright cell bodies, camera noise.
pub(crate) fn synthetic_volume(n: usize) -> Vec<u16> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let cells: Vec<(f32, f32, f32, f32, f32)> = (0..(n * n * n / 40_000).max(8))
        .map(|_| {
            let s = n as f32;
            (
                rng.unit() * s,
                rng.unit() * s,
                rng.unit() * s,
                2.0 + rng.unit() * 5.0,
                800.0 + rng.unit() * 3000.0,
            )
        })
        .collect();
    let mut volume = vec![0u16; n * n * n];
    for (z, plane) in volume.chunks_mut(n * n).enumerate() {
        for (y, row) in plane.chunks_mut(n).enumerate() {
            for (x, v) in row.iter_mut().enumerate() {
                let background = 100.0 + 40.0 * ((x + y + z) as f32 / (3 * n) as f32);
                *v = (background + (rng.next() % 16) as f32) as u16;
            }
        }
    }
    for &(cz, cy, cx, r, brightness) in &cells {
        let lo = |c: f32| (c - 3.0 * r).max(0.0) as usize;
        let hi = |c: f32| ((c + 3.0 * r) as usize).min(n);
        for z in lo(cz)..hi(cz) {
            for y in lo(cy)..hi(cy) {
                for x in lo(cx)..hi(cx) {
                    let d2 =
                        (z as f32 - cz).powi(2) + (y as f32 - cy).powi(2) + (x as f32 - cx).powi(2);
                    let add = brightness * (-d2 / (2.0 * r * r)).exp();
                    let v = &mut volume[(z * n + y) * n + x];
                    *v = v.saturating_add(add as u16);
                }
            }
        }
    }
    volume
}

fn as_bytes(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A demo array: the given format, chunks and codecs (zstd level 3 when none are given).
fn demo_array(
    format: ZarrFormat,
    shape: Vec<u64>,
    chunks: Vec<usize>,
    data_type: DataType,
) -> ArrayBuilder {
    ArrayBuilder::new(shape, data_type)
        .format(format)
        .chunks(chunks)
        .codecs([Codec::zstd(3)])
}

fn mb_per_s(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 / seconds.max(1e-9) / 1e6
}

/// Where the demo writes: a local directory, or a prefix of a remote store (emptied first).
enum Destination {
    Local(PathBuf),
    Remote {
        /// The store rooted at the demo's prefix.
        store: Arc<dyn Store>,
        /// The prefix's URL.
        url: String,
    },
}

impl Destination {
    /// The destination, emptied: a directory removed and created again, a prefix emptied;
    /// an existing one only when it holds nothing but an earlier demo's output, or as
    /// `overwrite` allows ([`DemoOutput`]). A directory reached through a symbolic link is
    /// emptied where the link leads, and the link stays.
    fn prepare(location: &Location, overwrite: Overwrite) -> Result<Self, Failure> {
        let Some(dir) = location.local() else {
            return Ok(Destination::Remote {
                store: location.open_remote_replace(&DemoOutput, overwrite)?,
                url: location.display(),
            });
        };
        let real =
            resolve_target(dir, dir).map_err(|e| Failure(format!("{}: {e}", dir.display())))?;
        replace::check_dir(&real, &DemoOutput, overwrite)?;
        match std::fs::symlink_metadata(&real) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&real),
            Ok(_) => std::fs::remove_file(&real),
            Err(_) => Ok(()),
        }
        .map_err(|e| Failure(format!("{}: cannot replace: {e}", dir.display())))?;
        std::fs::create_dir_all(&real).map_err(|e| Failure(format!("{}: {e}", dir.display())))?;
        Ok(Destination::Local(dir.to_path_buf()))
    }

    /// The store of the entry `label` (a directory created on the first write, or the
    /// prefix `label`).
    fn store(&self, write: &WriteArgs, label: &str) -> Result<Arc<dyn Store>, Failure> {
        match self {
            Destination::Local(dir) => Ok(write.store(&dir.join(label))),
            Destination::Remote { store, url } => Ok(Arc::new(
                PrefixStore::new(store.clone(), label)
                    .map_err(|e| Failure(format!("{url}/{label}: {e}")))?,
            )),
        }
    }

    /// The entry `label` as a person reads it.
    fn name(&self, label: &str) -> String {
        match self {
            Destination::Local(dir) => dir.join(label).display().to_string(),
            Destination::Remote { url, .. } => format!("{url}/{label}"),
        }
    }

    /// Bytes stored under the entry `label` (`store` is its store).
    fn stored_size(&self, label: &str, store: &dyn Store) -> Result<u64, Failure> {
        match self {
            Destination::Local(dir) => Ok(disk_size(&dir.join(label))),
            Destination::Remote { .. } => {
                let fail =
                    |e: neurochunk_store::StoreError| Failure(format!("{}: {e}", self.name(label)));
                let mut total = 0;
                for key in store.list_prefix("").map_err(fail)? {
                    total += store.size(&key).map_err(fail)?.unwrap_or(0);
                }
                Ok(total)
            }
        }
    }
}

fn disk_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Write the volume with one layout, read it back, check it, and print one line.
fn volume_round_trip(
    write: &WriteArgs,
    dest: &Destination,
    label: &str,
    meta: ArrayMetadata,
    volume: &[u8],
) -> CmdResult {
    let store = dest.store(write, label)?;
    let started = Instant::now();
    let array = Array::create(store.clone(), "", meta)?;
    array.write_all(&ArrayBytes::Fixed(volume.to_vec()))?;
    let write_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let (_, read) = array.read_all()?;
    let read_s = started.elapsed().as_secs_f64();
    if read != ArrayBytes::Fixed(volume.to_vec()) {
        return Err(Failure(format!(
            "{}: data read back differ from data written",
            dest.name(label)
        )));
    }
    let stored = dest.stored_size(label, store.as_ref())?;
    outln!(
        "  {label:<28} write {:>7.0} MB/s   read {:>7.0} MB/s   {:>6.1} MB stored ({:.1}x)",
        mb_per_s(volume.len(), write_s),
        mb_per_s(volume.len(), read_s),
        stored as f64 / 1e6,
        volume.len() as f64 / stored.max(1) as f64
    );
    Ok(())
}

pub(crate) fn run(args: DemoArgs) -> CmdResult {
    if args.write.fsync && args.dir.local().is_none() {
        return Err(Failure(format!(
            "{}: --fsync applies to local paths only (objects are stored durably by the service)",
            args.dir
        )));
    }
    let dest = Destination::prepare(&args.dir, args.replace.policy())?;
    let n = args.size.max(8);
    outln!("neurochunk demo in {}", args.dir);
    outln!(
        "\n1. A {n}³ uint16 light-sheet-like volume ({:.1} MB) in each layout:",
        (n * n * n * 2) as f64 / 1e6
    );
    let volume = as_bytes(&synthetic_volume(n));
    let shape = vec![n as u64; 3];
    let chunk = 64.min(n);
    let base = |format| demo_array(format, shape.clone(), vec![chunk; 3], DataType::UInt16);
    let layouts: Vec<(&str, ArrayBuilder)> = vec![
        ("volume.zarr2.zstd", base(ZarrFormat::V2)),
        (
            "volume.zarr2.blosc",
            base(ZarrFormat::V2).codecs([Codec::Blosc {
                cname: BloscCompressor::Lz4,
                clevel: 5,
                shuffle: BloscShuffle::Shuffle,
            }]),
        ),
        ("volume.zarr3.zstd", base(ZarrFormat::V3)),
        (
            "volume.zarr3.sharded",
            base(ZarrFormat::V3)
                .chunks(vec![32.min(n); 3])
                .shards(vec![(2 * chunk).min(n.next_multiple_of(32.min(n))); 3])
                .codecs([Codec::zstd(3), Codec::Crc32c]),
        ),
        ("volume.zarr3.raw", base(ZarrFormat::V3).codecs([])),
        (
            "volume.n5.gzip",
            base(ZarrFormat::N5).codecs([Codec::Gzip { level: 6 }]),
        ),
    ];
    for (label, builder) in layouts {
        volume_round_trip(&args.write, &dest, label, builder.metadata("")?, &volume)?;
    }

    outln!(
        "\n2. A small annotated recording session (Zarr v3), converted to Zarr v2 (consolidated) \
         and its imaging group to N5 (which holds numeric data only):"
    );
    let store = dest.store(&args.write, "session.zarr3")?;
    let mut attrs = Map::new();
    attrs.insert("subject".into(), json!("mouse-042"));
    attrs.insert("session_start".into(), json!("2026-03-14T09:30:00+01:00"));
    attrs.insert("experimenter".into(), json!(["Dr. Müller", "A. Ngata"]));
    create_group(store.as_ref(), "", ZarrFormat::V3, attrs)?;
    let mut imaging = Map::new();
    imaging.insert("pixel_size_um".into(), json!([0.4, 0.4, 2.0]));
    imaging.insert("baseline".into(), json!(f64::NAN.to_string()));
    create_group(store.as_ref(), "imaging", ZarrFormat::V3, imaging)?;
    let small = n.min(64);
    let raw_values = synthetic_volume(small);
    demo_array(
        ZarrFormat::V3,
        vec![small as u64; 3],
        vec![32.min(small); 3],
        DataType::UInt16,
    )
    .dimension_names(["z", "y", "x"])
    .create(store.clone(), "imaging/raw")?
    .write_elements(&Selection::all(), &raw_values)?;
    let frames = 1000u64;
    let times: Vec<f64> = (0..frames).map(|i| i as f64 / 30.0).collect();
    demo_array(ZarrFormat::V3, vec![frames], vec![256], DataType::Float64)
        .create(store.clone(), "imaging/timestamps")?
        .write_elements(&Selection::all(), &times)?;
    let names = ["CA1 pyramidal", "CA3", "dentate gyrus", "entorhinal ctx"];
    let mut text = Vec::new();
    let mut offsets = vec![0];
    for name in names {
        text.extend_from_slice(name.as_bytes());
        offsets.push(text.len());
    }
    demo_array(
        ZarrFormat::V3,
        vec![names.len() as u64],
        vec![2],
        DataType::String,
    )
    .create(store.clone(), "regions")?
    .write_all(&ArrayBytes::Variable {
        data: text,
        offsets,
    })?;
    consolidate(store.as_ref(), "")?;
    let v2_store = dest.store(&args.write, "session.zarr2")?;
    let options = ConvertOptions {
        format: Some(ZarrFormat::V2),
        ..Default::default()
    };
    convert_hierarchy(
        store.clone(),
        "",
        v2_store.clone(),
        "",
        &options,
        &|_| {},
        &|_, _| {},
    )?;
    consolidate(v2_store.as_ref(), "")?;
    // N5 holds numeric data only: the imaging group goes to N5, the region names stay in Zarr.
    let n5_store = dest.store(&args.write, "session.n5")?;
    let options = ConvertOptions {
        format: Some(ZarrFormat::N5),
        compressors: Some(vec![Codec::Gzip { level: 6 }]),
        ..Default::default()
    };
    let session_attributes = match neurochunk_array::open_node(store.as_ref(), "")?.metadata {
        neurochunk_array::NodeMetadata::Group(g) => g.attributes,
        neurochunk_array::NodeMetadata::Array(_) => Map::new(),
    };
    create_group(n5_store.as_ref(), "", ZarrFormat::N5, session_attributes)?;
    convert_hierarchy(
        store.clone(),
        "imaging",
        n5_store.clone(),
        "imaging",
        &options,
        &|_| {},
        &|_, _| {},
    )?;
    for (label, s) in [
        ("session.zarr3", &store),
        ("session.zarr2", &v2_store),
        ("session.n5", &n5_store),
    ] {
        outln!("  {label}:");
        print_tree(&list_nodes(s.as_ref(), "")?);
        let names: &[&str] = if label == "session.n5" {
            &["imaging/raw", "imaging/timestamps"]
        } else {
            &["regions", "imaging/raw"]
        };
        for &name in names {
            let (_, back) = Array::open(s.clone(), name)?.read_all()?;
            let (_, original) = Array::open(store.clone(), name)?.read_all()?;
            if back != original {
                return Err(Failure(format!("{label}: {name} read back differs")));
            }
        }
    }
    let root = neurochunk_array::open_node(v2_store.as_ref(), "")?;
    if let neurochunk_array::NodeMetadata::Group(g) = root.metadata {
        let subject = g.attributes.get("subject").cloned().unwrap_or(Value::Null);
        outln!("  attributes survive conversion: subject = {subject}");
    }

    outln!("\n3. neurarrow tables (skeletons and connections):");
    let table_options = neurochunk_table::WriteOptions {
        durability: args.write.durability(),
        ..Default::default()
    };
    let summary = match &dest {
        Destination::Local(dir) => neurochunk_table::demo_with(&dir.join("tables"), &table_options),
        Destination::Remote { store, url } => neurochunk_table::demo_in_store(
            store.clone(),
            "tables",
            &format!("{url}/tables"),
            &table_options,
        ),
    }
    .map_err(|e| Failure(format!("tables: {e}")))?;
    for line in summary.lines() {
        outln!("  {line}");
    }
    outln!(
        "\n4. NWB on Zarr: an extracellular-electrophysiology file in both hdmf-zarr conventions:"
    );
    nwb_demo(&dest, &args.write)?;
    outln!("\nEverything written was read back and matched.");
    Ok(())
}

/// Write the NWB demo file in the legacy and v3 conventions, convert each to the other, and
/// check that the inventories (typed objects, links, references) and the data agree.
fn nwb_demo(dest: &Destination, write: &WriteArgs) -> CmdResult {
    use neurochunk_hdmf::demo::{write_demo_into, DemoOptions};
    use neurochunk_hdmf::{
        convert_into, Convention, FileLocation, Inventory, NwbFile, NwbWriter, ReadOptions,
        WriteOptions,
    };
    // A file of the demo: in its own directory, or under its own prefix.
    let location = |label: &str| -> Result<FileLocation, Failure> {
        Ok(FileLocation::named(
            match dest {
                Destination::Local(dir) => Arc::new(FsStore::new(dir)) as Arc<dyn Store>,
                Destination::Remote { store, .. } => store.clone(),
            },
            label,
            dest.name(label),
        ))
    };
    let writer = |label: &str, convention, options: &WriteOptions| -> Result<NwbWriter, Failure> {
        Ok(match dest {
            Destination::Local(dir) => {
                NwbWriter::create(dir.join(label), convention, options.clone())?
            }
            Destination::Remote { .. } => {
                NwbWriter::create_at(location(label)?, convention, options.clone())?
            }
        })
    };
    let open = |label: &str| -> Result<NwbFile, Failure> {
        Ok(match dest {
            Destination::Local(dir) => NwbFile::open(dir.join(label))?,
            Destination::Remote { .. } => {
                NwbFile::open_location(location(label)?, ReadOptions::default())?
            }
        })
    };
    for (convention, other) in [
        (Convention::Legacy, Convention::V3),
        (Convention::V3, Convention::Legacy),
    ] {
        let label = format!("ecephys.{}.nwb.zarr", convention.label());
        let options = DemoOptions {
            convention,
            scale: 0,
            namespaces: Vec::new(),
            write: WriteOptions {
                durability: write.durability(),
                ..Default::default()
            },
        };
        write_demo_into(writer(&label, convention, &options.write)?, &options)?;
        let file = open(&label)?;
        let inventory = Inventory::of(&file)?;
        outln!(
            "  {}: {} typed objects, {} links, {} attribute and {} dataset references",
            label,
            inventory.objects.len(),
            inventory.links.len(),
            inventory.attribute_refs.len(),
            inventory.dataset_refs.len()
        );
        let converted = format!(
            "ecephys.{}-from-{}.nwb.zarr",
            other.label(),
            convention.label()
        );
        convert_into(&file, writer(&converted, other, &options.write)?, &|_| {})?;
        let back = open(&converted)?;
        if Inventory::of(&back)?.to_json() != inventory.to_json() {
            return Err(Failure(format!(
                "{}: the converted file lists different objects",
                dest.name(&converted)
            )));
        }
        let series = "/acquisition/ElectricalSeries/data";
        if back.read_dataset(series, None)?.value != file.read_dataset(series, None)?.value {
            return Err(Failure(format!(
                "{}: {series} differs after conversion",
                dest.name(&converted)
            )));
        }
        let groups = back.read_dataset("/general/extracellular_ephys/electrodes/group", None)?;
        let first = groups
            .value
            .references()
            .first()
            .map(|(_, _, r)| r.path.clone())
            .unwrap_or_default();
        outln!(
            "    converted to the {} convention: same objects, links and references (electrodes/group[0] -> {first})",
            other.label()
        );
    }
    let inspect = open("ecephys.zarr2.nwb.zarr")?;
    let text = Inventory::of(&inspect)?.to_text(&inspect);
    for line in text.lines().take(12) {
        outln!("    {line}");
    }
    outln!("    … (neurochunk nwb inspect shows the whole tree)");
    Ok(())
}
