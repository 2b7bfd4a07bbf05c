//! A tour of the neurochunk library, all in memory: a sharded Zarr v3 volume written from an
//! `ndarray`, a strided region read back typed, the volume converted to N5 and to Zarr v2 and
//! compared, then an NWB file and a neurarrow Parquet table opened from a `MemoryStore`.
//!
//! ```text
//! cargo run --release -p neurochunk --example tour
//! ```
//! It exits non-zero, naming the step, if anything read back differs from what was written.

use std::error::Error;
use std::sync::Arc;

use ndarray::{s, Array3};
use neurochunk::{
    convert_array, selection, ArrayBuilder, AxisSelection, Codec, ConvertOptions, DataType,
    MemoryStore, Store, ZarrFormat,
};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn check(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(format!("tour: {what}").into())
    }
}

fn main() -> Result<()> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());

    // 1. A sharded Zarr v3 volume: 32³ chunks in 64³ shards, zstd and a checksum.
    let volume = ArrayBuilder::new([64, 128, 128], DataType::UInt16)
        .chunks([32, 32, 32])
        .shards([64, 64, 64])
        .codecs([Codec::zstd(3), Codec::Crc32c])
        .dimension_names(["z", "y", "x"])
        .attribute("voxel_size_nm", serde_json::json!([8, 4, 4]))
        .create(store.clone(), "em/raw")?;

    // 2. Write a region from an ndarray (any memory layout).
    let block = Array3::from_shape_fn((16, 100, 90), |(z, y, x)| (z * 10_000 + y * 100 + x) as u16);
    volume.write_ndarray(
        &selection![8..24_u64, 10..110_u64, 20..110_u64],
        &block.view().into_dyn(),
    )?;
    println!("wrote a 16×100×90 region into a sharded 64×128×128 Zarr v3 array");

    // 3. Read a strided region back, typed: every 3rd row, columns in reverse.
    let strided = volume.read_ndarray::<u16>(&selection![
        12_i64,
        AxisSelection::slice(10, 110, 3),
        AxisSelection::slice(109, 19, -1),
    ])?;
    let expected = block.slice(s![4, ..;3, ..;-1]).to_owned().into_dyn();
    check(
        strided == expected,
        "the strided read differs from the region written",
    )?;
    println!(
        "read back a strided, reversed region of shape {:?}",
        strided.shape()
    );

    // 4. Convert to N5 and to Zarr v2 (compression chosen per target) and compare.
    let everything = neurochunk::Selection::all();
    let original = volume.read_elements::<u16>(&everything)?.1;
    for (format, path, codecs) in [
        (ZarrFormat::N5, "em.n5/raw", vec![Codec::Gzip { level: 6 }]),
        (ZarrFormat::V2, "em.zarr2/raw", vec![Codec::zstd(1)]),
    ] {
        let options = ConvertOptions {
            format: Some(format),
            compressors: Some(codecs),
            ..Default::default()
        };
        let (converted, changes) = convert_array(&volume, store.clone(), path, &options, &|_| {})?;
        let copy = converted.read_elements::<u16>(&everything)?.1;
        check(
            copy == original,
            &format!("the {} copy differs", format.label()),
        )?;
        println!(
            "converted to {} at {path} ({})",
            format.label(),
            if changes.is_empty() {
                "nothing to change".to_string()
            } else {
                changes.join("; ")
            }
        );
    }

    nwb_and_tables(&store)?;
    println!("tour: everything read back matched");
    Ok(())
}

/// 5. An NWB file and a neurarrow table, both opened from the memory store.
fn nwb_and_tables(store: &Arc<dyn Store>) -> Result<()> {
    use neurochunk::table::{synth::SkeletonSynth, validate, TableSource, TableWriter};

    // A skeleton table of 3 neurons (5,000 samples) as Parquet, written and validated in memory.
    let samples = SkeletonSynth::new(5_000, 3, 1_024, 1, "urn:uuid:5f1c0a3e-tour");
    let options = neurochunk::table::WriteOptions {
        format: Some(neurochunk::table::Format::Parquet),
        ..Default::default()
    };
    let key = "tables/neurons.skeletons.parquet";
    let mut writer = TableWriter::create_in(store.clone(), key, samples.schema(), &options)?;
    for batch in samples {
        writer.write(&batch)?;
    }
    let rows = writer.finish()?;
    let table = TableSource::open_store(store.clone(), key)?;
    check(table.num_rows()? == 5_000, "the table's row count differs")?;
    let report = validate::validate_source(&table, &validate::ValidateOptions::default());
    check(report.is_valid(), "the skeleton table does not validate")?;
    println!("wrote and validated a {rows}-sample skeleton table at {key}");

    nwb_file(store)
}

/// An NWB file on Zarr (hdmf-zarr's v3 convention), written and opened in the memory store.
fn nwb_file(store: &Arc<dyn Store>) -> Result<()> {
    use neurochunk::nwb::demo::{write_demo_into, DemoOptions};
    use neurochunk::nwb::{check as check_file, Convention, NwbFile, NwbWriter, WriteOptions};

    // An extracellular-electrophysiology session: electrodes table, recording, units, trials,
    // links and object references, written under a prefix of the store.
    let prefix = "nwb/session.nwb.zarr";
    let writer = NwbWriter::create_in(
        store.clone(),
        prefix,
        Convention::V3,
        WriteOptions::default(),
    )?;
    let options = DemoOptions {
        convention: Convention::V3,
        scale: 0,
        namespaces: Vec::new(),
        write: WriteOptions::default(),
    };
    let written = write_demo_into(writer, &options)?;

    let file = NwbFile::open_store(store.clone(), prefix, Default::default())?;
    check(
        file.used_consolidated_metadata(),
        "the NWB file was not opened from its consolidated metadata",
    )?;
    let problems = check_file(&file);
    check(
        problems.is_empty(),
        &format!("the NWB file has problems: {problems:?}"),
    )?;
    let series = file.find_by_type("ElectricalSeries");
    check(series.len() == 1, "expected one ElectricalSeries")?;
    let data = file.read_dataset(&format!("{}/data", series[0].path), None)?;
    check(
        data.shape == [written.samples, written.electrodes],
        "the recording's shape differs",
    )?;
    let units = file.find_by_type("Units");
    check(units.len() == 1, "expected one Units table")?;
    println!(
        "wrote and opened an NWB file at {prefix}: {} typed objects, {} links, a {}×{} recording",
        file.typed_objects().len(),
        file.links()?.len(),
        written.samples,
        written.electrodes,
    );
    Ok(())
}
