//! Arrow IPC / Parquet / Hive round trips: schema, metadata, values, big ids,
//! dictionary types, footer key/values, atomic writes and bounded batches.

mod common;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, UInt64Type};
use common::*;
use neurochunk_table::io::{read_all, write_all, Format, TableSource, TableWriter, WriteOptions};
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::fs::File;

const BIG: [u64; 6] = [u64::MAX, 1 << 63, (1 << 63) + 1, u64::MAX - 1, 5, 6];

fn big_skeleton() -> arrow::array::RecordBatch {
    Skel {
        ids: BIG.to_vec(),
        frags: vec![7, 7, 7, 7, 9, 9],
        parents: vec![
            None,
            Some(BIG[0]),
            Some(BIG[1]),
            Some(BIG[1]),
            None,
            Some(5),
        ],
    }
    .batch(md(&[]))
}

/// Write `batch` alone to `path` with the default options.
fn write_batch(path: &std::path::Path, batch: &RecordBatch) {
    write_all(
        path,
        batch.schema(),
        std::slice::from_ref(batch),
        &WriteOptions::default(),
    )
    .unwrap();
}

#[test]
fn parquet_and_ipc_roundtrip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let b = big_skeleton();
    for name in ["a.skeletons.parquet", "a.skeletons.arrow"] {
        let p = dir.path().join(name);
        write_batch(&p, &b);
        let (schema, batches) = read_all(&p).unwrap();
        assert_eq!(schema.fields(), b.schema().fields(), "{name}");
        assert_eq!(schema.metadata(), b.schema().metadata(), "{name}");
        let got: Vec<u64> = batches
            .iter()
            .flat_map(|x| x.column(0).as_primitive::<UInt64Type>().values().to_vec())
            .collect();
        assert_eq!(got, BIG, "{name}");
    }
}

#[test]
fn parquet_footer_has_plain_key_values() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.skeletons.parquet");
    let b = big_skeleton();
    write_batch(&p, &b);
    let r = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
    let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
    let get = |k: &str| kv.iter().find(|e| e.key == k).and_then(|e| e.value.clone());
    assert_eq!(get("context").as_deref(), Some(CTX));
    assert_eq!(get("unit").as_deref(), Some("nanometer"));
    assert_eq!(get("version").as_deref(), Some("0.2.1"));
    assert!(get("ARROW:schema").is_some());
    // And our reader reports no footer warning for our own files.
    let src = TableSource::open(&p).unwrap();
    assert!(src.notes().is_empty(), "{:?}", src.notes());
}

#[test]
fn dictionary_type_survives_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.connections.parquet");
    let b = connections(
        &[3, 4],
        &[11, 10],
        &["synapse", "gap_junction"],
        md(&[("unit", None)]),
    );
    write_batch(&p, &b);
    let (schema, batches) = read_all(&p).unwrap();
    assert_eq!(
        schema.field_with_name("type").unwrap().data_type(),
        &DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8))
    );
    let d = batches[0]
        .column(3)
        .as_dictionary::<arrow::datatypes::UInt16Type>();
    let vals = d.values().as_string::<i32>();
    let got: Vec<&str> = d
        .keys()
        .values()
        .iter()
        .map(|&k| vals.value(k as usize))
        .collect();
    assert_eq!(got, ["synapse", "gap_junction"]);
}

#[test]
fn hive_partitions_restore_uint64_and_evict_writers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("h.skeletons");
    let b = big_skeleton();
    let opts = WriteOptions {
        partition_by: Some("fragment_id".into()),
        file_infix: Some("skeletons".into()),
        max_open_partitions: 1,
        ..WriteOptions::default()
    };
    // Interleave partitions across batches so the single open writer is evicted.
    let mut w = TableWriter::create(&out, b.schema(), &opts).unwrap();
    for i in [0, 4, 1, 5, 2, 3] {
        // fragments 7, 9, 7, 9, 7, 7
        w.write(&b.slice(i, 1)).unwrap();
    }
    assert_eq!(w.finish().unwrap(), 6);
    let mut files: Vec<String> = walk(&out);
    files.sort();
    assert_eq!(
        files,
        [
            "_common_metadata",
            "fragment_id=7/part-0.skeletons.parquet",
            "fragment_id=7/part-1.skeletons.parquet",
            "fragment_id=7/part-2.skeletons.parquet",
            "fragment_id=9/part-0.skeletons.parquet",
            "fragment_id=9/part-1.skeletons.parquet",
        ]
    );
    let src = TableSource::open(&out).unwrap();
    assert_eq!(src.format(), Format::Hive);
    let f = src.schema().field_with_name("fragment_id").unwrap().clone();
    assert_eq!((f.data_type(), f.is_nullable()), (&DataType::UInt64, false));
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for batch in src.batches(2).unwrap() {
        let batch = batch.unwrap();
        assert!(batch.num_rows() <= 2);
        let ids = batch
            .column_by_name("sample_id")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .clone();
        let fr = batch
            .column_by_name("fragment_id")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .clone();
        pairs.extend(
            ids.values()
                .iter()
                .copied()
                .zip(fr.values().iter().copied()),
        );
    }
    pairs.sort();
    let mut want: Vec<(u64, u64)> = BIG.iter().copied().zip([7, 7, 7, 7, 9, 9]).collect();
    want.sort();
    assert_eq!(pairs, want);
    assert_eq!(src.schema().metadata(), b.schema().metadata());
}

#[test]
fn unfinished_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = big_skeleton();
    for name in ["x.skeletons.parquet", "x.skeletons.arrow"] {
        let p = dir.path().join(name);
        let mut w = TableWriter::create(&p, b.schema(), &WriteOptions::default()).unwrap();
        w.write(&b).unwrap();
        drop(w);
        assert!(!p.exists());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn nulls_in_non_nullable_refused_by_writer() {
    let dir = tempfile::tempdir().unwrap();
    let b = big_skeleton();
    // Same columns, but the writer's schema says parent_id is non-nullable.
    let mut fields: Vec<_> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[5] = fields[5].clone().with_nullable(false);
    let strict = std::sync::Arc::new(arrow::datatypes::Schema::new_with_metadata(
        fields,
        b.schema().metadata().clone(),
    ));
    let p = dir.path().join("n.skeletons.parquet");
    let mut w = TableWriter::create(&p, strict, &WriteOptions::default()).unwrap();
    let e = w.write(&b).unwrap_err().to_string();
    assert!(e.contains("n.skeletons.parquet"), "{e}");
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let b = big_skeleton();
    let p = dir.path().join("t.skeletons.parquet");
    write_batch(&p, &b);
    let data = std::fs::read(&p).unwrap();
    for cut in [4usize, data.len() / 2, data.len() - 1] {
        std::fs::write(&p, &data[..cut]).unwrap();
        let e = TableSource::open(&p).unwrap_err().to_string();
        assert!(e.contains("t.skeletons.parquet"), "{e}");
        assert!(e.to_lowercase().contains("parquet"), "{e}");
    }
    let q = dir.path().join("text.arrow");
    std::fs::write(&q, "hello, world").unwrap();
    let e = TableSource::open(&q).unwrap_err().to_string();
    assert!(
        e.contains("text.arrow") && e.contains("not an Arrow IPC or Parquet file"),
        "{e}"
    );
    let missing = dir.path().join("missing.parquet");
    assert!(TableSource::open(&missing)
        .unwrap_err()
        .to_string()
        .contains("missing.parquet"));
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    assert!(TableSource::open(&empty_dir).is_err());
}

#[test]
fn projection_reads_only_requested_columns_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let b = big_skeleton();
    for name in ["p.skeletons.parquet", "p.skeletons.arrow"] {
        let p = dir.path().join(name);
        write_batch(&p, &b);
        let src = TableSource::open(&p).unwrap();
        let cols = vec!["parent_id".to_string(), "sample_id".to_string()];
        let got: Vec<_> = src
            .batches_projected(&cols, 4)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(got[0].num_columns(), 2);
        assert_eq!(got[0].schema().field(0).name(), "parent_id");
        assert_eq!(
            got[0].column(1).as_primitive::<UInt64Type>().value(0),
            u64::MAX
        );
        assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 6);
        assert!(got[0].column(0).is_null(0));
        assert!(src.batches_projected(&["nope".to_string()], 4).is_err());
    }
}

/// A local file of many row groups (decoded a window of groups at a time, in parallel) reads
/// back in order, whole and projected; a damaged group later in the file is an error naming the
/// file, after the rows before it.
#[test]
fn many_row_groups_read_in_order_and_stop_at_damage() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("groups.skeletons.parquet");
    let n = 10_000u64;
    let batch = Skel {
        ids: (0..n).collect(),
        frags: (0..n).map(|i| i / 100).collect(),
        parents: (0..n).map(|i| i.checked_sub(1)).collect(),
    }
    .batch(md(&[]));
    let opts = WriteOptions {
        row_group_rows: 700,
        ..WriteOptions::default()
    };
    write_all(&p, batch.schema(), std::slice::from_ref(&batch), &opts).unwrap();
    let groups = SerializedFileReader::new(File::open(&p).unwrap())
        .unwrap()
        .metadata()
        .num_row_groups();
    assert_eq!(groups, 15);
    let src = TableSource::open(&p).unwrap();
    for columns in [
        vec!["sample_id".to_string()],
        vec!["parent_id".into(), "sample_id".into()],
    ] {
        let mut ids = Vec::new();
        for b in src.batches_projected(&columns, 256).unwrap() {
            let b = b.unwrap();
            let c = b.column_by_name("sample_id").unwrap();
            ids.extend_from_slice(c.as_primitive::<UInt64Type>().values());
        }
        assert_eq!(ids, (0..n).collect::<Vec<_>>(), "{columns:?}");
    }
    // Damage the data pages of the ninth group's first column: the rows before it arrive,
    // then an error naming the file, then nothing.
    let reader = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
    let chunk = reader.metadata().row_group(8).column(0);
    let start = chunk.data_page_offset() as usize;
    let mut bytes = std::fs::read(&p).unwrap();
    for b in &mut bytes[start..start + chunk.compressed_size() as usize] {
        *b = 0xa5;
    }
    std::fs::write(&p, &bytes).unwrap();
    let src = TableSource::open(&p).unwrap();
    let mut rows = 0u64;
    let mut errors = Vec::new();
    for b in src.batches(256).unwrap() {
        match b {
            Ok(b) if errors.is_empty() => rows += b.num_rows() as u64,
            Ok(_) => panic!("a batch after the error"),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("groups.skeletons.parquet"),
        "{}",
        errors[0]
    );
    assert!(rows <= 8 * 700, "{rows} rows before the damaged group");
}
