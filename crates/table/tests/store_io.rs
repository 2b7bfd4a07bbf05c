//! Tables read and written through the `Store` trait: every format through a
//! `MemoryStore` and a `PrefixStore`, Hive partitions in memory, projection that
//! prunes I/O, and writers that are dropped or fail leaving no key behind.

mod common;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt64Array};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use arrow::ipc::writer::StreamWriter;
use common::*;
use neurochunk_store::replace::Overwrite;
use neurochunk_store::{Bytes, CountingStore, FsStore, MemoryStore, PrefixStore, Store};
use neurochunk_table::derive::{derive_source, DeriveOptions};
use neurochunk_table::info::source_info;
use neurochunk_table::io::{Format, TableSource, TableWriter, WriteOptions};
use neurochunk_table::validate::{validate_source, validate_sources, ValidateOptions};
use std::sync::Arc;

fn skeleton() -> RecordBatch {
    Skel::default().batch(md(&[]))
}

fn write(store: &Arc<dyn Store>, key: &str, batch: &RecordBatch, opts: &WriteOptions) -> u64 {
    let mut w = TableWriter::create_in(store.clone(), key, batch.schema(), opts).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap()
}

fn read(store: &Arc<dyn Store>, key: &str) -> (TableSource, RecordBatch) {
    let src = TableSource::open_store(store.clone(), key).unwrap();
    let batches: Vec<RecordBatch> = src.batches(4).unwrap().map(|b| b.unwrap()).collect();
    let all = concat_batches(&src.schema(), &batches).unwrap();
    (src, all)
}

fn hive_opts() -> WriteOptions {
    WriteOptions {
        partition_by: Some("fragment_id".into()),
        file_infix: Some("skeletons".into()),
        max_open_partitions: 1,
        ..WriteOptions::default()
    }
}

/// `(sample_id, fragment_id)` pairs, sorted.
fn id_pairs(b: &RecordBatch) -> Vec<(u64, u64)> {
    let col = |n: &str| {
        b.column_by_name(n)
            .unwrap()
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec()
    };
    let mut pairs: Vec<(u64, u64)> = col("sample_id")
        .into_iter()
        .zip(col("fragment_id"))
        .collect();
    pairs.sort();
    pairs
}

/// A store to write through, the store that holds the values, and the prefix of the
/// written keys in the latter.
type StoreCase = (Arc<dyn Store>, Arc<dyn Store>, &'static str);

fn stores() -> Vec<StoreCase> {
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let prefixed: Arc<dyn Store> = Arc::new(PrefixStore::new(inner.clone(), "deep/er").unwrap());
    vec![(memory.clone(), memory, ""), (prefixed, inner, "deep/er/")]
}

#[test]
fn every_format_round_trips_through_memory_and_prefix_stores() {
    let b = skeleton();
    for (store, inner, inner_prefix) in stores() {
        for (key, format) in [
            ("t/a.skeletons.parquet", Format::Parquet),
            ("t/a.skeletons.arrow", Format::ArrowIpc),
        ] {
            assert_eq!(write(&store, key, &b, &WriteOptions::default()), 6);
            assert!(inner.exists(&format!("{inner_prefix}{key}")).unwrap());
            let (src, got) = read(&store, key);
            assert_eq!(src.format(), format, "{key}");
            assert_eq!(src.key(), key);
            assert_eq!(src.path().to_str(), Some(key));
            assert_eq!(got.schema().fields(), b.schema().fields(), "{key}");
            assert_eq!(got.schema().metadata(), b.schema().metadata(), "{key}");
            for i in 0..b.num_columns() {
                assert_eq!(got.column(i).to_data(), b.column(i).to_data(), "{key}");
            }
            let report = validate_source(&src, &ValidateOptions::default());
            assert!(report.is_valid(), "{:?}", report.lines());
        }

        // The IPC stream format is read (not written): put one in the store by hand.
        let mut stream = StreamWriter::try_new(Vec::new(), &b.schema()).unwrap();
        stream.write(&b).unwrap();
        let bytes = stream.into_inner().unwrap();
        store.set("t/s.arrows", Bytes::from(bytes)).unwrap();
        let (src, got) = read(&store, "t/s.arrows");
        assert_eq!(src.format(), Format::ArrowStream);
        assert_eq!(id_pairs(&got), id_pairs(&b));

        // Hive: one value per part file under the prefix, the partition column restored.
        assert_eq!(write(&store, "t/h.skeletons", &b, &hive_opts()), 6);
        let keys = store.list_prefix("t/h.skeletons/").unwrap();
        assert_eq!(
            keys,
            [
                "t/h.skeletons/_common_metadata",
                "t/h.skeletons/fragment_id=7/part-0.skeletons.parquet",
                "t/h.skeletons/fragment_id=9/part-0.skeletons.parquet",
            ]
        );
        for prefix in ["t/h.skeletons", "t/h.skeletons/"] {
            let (src, got) = read(&store, prefix);
            assert_eq!(src.format(), Format::Hive);
            assert_eq!(src.files().len(), 2);
            assert_eq!(
                src.files()[0].path.to_str(),
                Some(src.files()[0].key.as_str())
            );
            let f = src.schema().field_with_name("fragment_id").unwrap().clone();
            assert_eq!((f.data_type(), f.is_nullable()), (&DataType::UInt64, false));
            assert_eq!(id_pairs(&got), id_pairs(&b));
            let report = validate_source(&src, &ValidateOptions::default());
            assert!(report.is_valid(), "{:?}", report.lines());
        }
    }
}

#[test]
fn hive_in_a_store_evicts_and_replaces_an_earlier_table() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let b = skeleton();
    let mut w = TableWriter::create_in(store.clone(), "h", b.schema(), &hive_opts()).unwrap();
    for i in [0, 4, 1, 5, 2, 3] {
        // fragments 7, 9, 7, 9, 7, 7: the single open part file is evicted each time.
        w.write(&b.slice(i, 1)).unwrap();
    }
    assert_eq!(w.finish().unwrap(), 6);
    assert_eq!(
        store.list_prefix("h/").unwrap(),
        [
            "h/_common_metadata",
            "h/fragment_id=7/part-0.skeletons.parquet",
            "h/fragment_id=7/part-1.skeletons.parquet",
            "h/fragment_id=7/part-2.skeletons.parquet",
            "h/fragment_id=9/part-0.skeletons.parquet",
            "h/fragment_id=9/part-1.skeletons.parquet",
        ]
    );
    let (_, got) = read(&store, "h");
    assert_eq!(id_pairs(&got), id_pairs(&b));

    // Writing again replaces the table: nothing of the first one stays under the prefix.
    store.set("h-sibling", Bytes::from_static(b"kept")).unwrap();
    write(&store, "h", &b.slice(0, 4), &hive_opts());
    assert_eq!(
        store.list_prefix("h/").unwrap(),
        [
            "h/_common_metadata",
            "h/fragment_id=7/part-0.skeletons.parquet"
        ]
    );
    assert!(store.exists("h-sibling").unwrap());
    let (_, got) = read(&store, "h");
    assert_eq!(got.num_rows(), 4);

    // Overwrite::Never refuses an existing table.
    let keep = WriteOptions {
        overwrite: Overwrite::Never,
        ..hive_opts()
    };
    let e = TableWriter::create_in(store.clone(), "h", b.schema(), &keep)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(e, "refusing to replace 'h': it already exists");
}

#[test]
fn dropped_or_failed_writers_leave_no_key() {
    let b = skeleton();
    let dir = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    for store in [Arc::new(MemoryStore::new()) as Arc<dyn Store>, disk] {
        for (key, opts) in [
            ("x.skeletons.parquet", WriteOptions::default()),
            ("x.skeletons.arrow", WriteOptions::default()),
            ("x.skeletons", hive_opts()),
        ] {
            // Dropped mid-way (the Hive writer has committed evicted part files by then).
            let mut w = TableWriter::create_in(store.clone(), key, b.schema(), &opts).unwrap();
            for i in [0, 4, 1, 5] {
                w.write(&b.slice(i, 1)).unwrap();
            }
            drop(w);
            assert_eq!(
                store.list_prefix("").unwrap(),
                Vec::<String>::new(),
                "{key}"
            );

            // A batch that does not fit the schema fails the write; the writer is dropped.
            let mut w = TableWriter::create_in(store.clone(), key, b.schema(), &opts).unwrap();
            w.write(&b).unwrap();
            let other = Arc::new(Schema::new(vec![Field::new("z", DataType::UInt64, false)]));
            let bad =
                RecordBatch::try_new(other, vec![Arc::new(UInt64Array::from(vec![1]))]).unwrap();
            let e = w.write(&bad).unwrap_err().to_string();
            assert!(e.starts_with(key), "{e}");
            drop(w);
            assert_eq!(
                store.list_prefix("").unwrap(),
                Vec::<String>::new(),
                "{key}"
            );
        }
    }
    // No temporary file of the filesystem store stayed behind either.
    assert_eq!(walk(dir.path()), Vec::<String>::new());
}

/// The error of opening `key` of `store`, as text.
fn open_error(store: &Arc<dyn Store>, key: &str) -> String {
    TableSource::open_store(store.clone(), key)
        .unwrap_err()
        .to_string()
}

#[test]
fn store_errors_name_the_key() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let e = open_error(&store, "no/such.parquet");
    assert!(e.starts_with("no/such.parquet: "), "{e}");
    // A value that is no table, a truncated Parquet file, a prefix with values but no
    // data file.
    for (key, value, opened, want) in [
        (
            "t/text.arrow",
            &b"hello, world"[..],
            "t/text.arrow",
            "t/text.arrow: not an Arrow IPC or Parquet file (no ARROW1 or PAR1 magic)",
        ),
        (
            "t/cut.parquet",
            b"PAR1....PAR",
            "t/cut.parquet",
            "t/cut.parquet: truncated Parquet file (no footer)",
        ),
        (
            "u/readme.txt",
            b"hi",
            "u",
            "u: directory holds no .parquet/.arrow files (not a Hive-partitioned table)",
        ),
    ] {
        store.set(key, Bytes::copy_from_slice(value)).unwrap();
        assert_eq!(open_error(&store, opened), want);
    }
    let e = TableSource::open_store_named(store.clone(), "t/cut.parquet", "mem://t/cut.parquet")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "mem://t/cut.parquet: truncated Parquet file (no footer)");
    let e = open_error(&store, "v");
    assert_eq!(e, "v: no value at 'v'");
}

/// `wide.parquet` in `store`: `columns` uint64 columns `c0`, `c1`, … of `rows` incompressible
/// values (row `r` of column `c` is `mix(r * columns + c)`), in row groups of `group_rows`.
fn write_wide(store: &Arc<dyn Store>, columns: u64, rows: u64, group_rows: usize) {
    let schema = Arc::new(Schema::new(
        (0..columns)
            .map(|c| Field::new(format!("c{c}"), DataType::UInt64, false))
            .collect::<Vec<_>>(),
    ));
    let cols: Vec<ArrayRef> = (0..columns)
        .map(|c| {
            let values = (0..rows).map(|r| neurochunk_table::synth::mix(r * columns + c));
            Arc::new(UInt64Array::from_iter_values(values)) as ArrayRef
        })
        .collect();
    let batch = RecordBatch::try_new(schema, cols).unwrap();
    let opts = WriteOptions {
        row_group_rows: group_rows,
        ..WriteOptions::default()
    };
    write(store, "wide.parquet", &batch, &opts);
}

#[test]
fn projection_fetches_only_the_projected_column_chunks() {
    let counting = Arc::new(CountingStore::new(Arc::new(MemoryStore::new())));
    let store: Arc<dyn Store> = counting.clone();
    // Eight columns of incompressible values, four row groups.
    let rows = 200_000u64;
    write_wide(&store, 8, rows, 50_000);
    let size = store.size("wide.parquet").unwrap().unwrap();

    counting.reset();
    let src = TableSource::open_store(store.clone(), "wide.parquet").unwrap();
    let mut seen = 0u64;
    for b in src.batches_projected(&["c3".to_string()], 8192).unwrap() {
        let b = b.unwrap();
        let col = b.column(0).as_primitive::<UInt64Type>();
        for (i, v) in col.values().iter().enumerate() {
            assert_eq!(*v, neurochunk_table::synth::mix((seen + i as u64) * 8 + 3));
        }
        seen += b.num_rows() as u64;
    }
    assert_eq!(seen, rows);
    let fetched = counting.counts().bytes_read;
    eprintln!("one column of {size} bytes: {fetched} fetched");
    // One column of eight, plus the footer: far less than the file.
    assert!(
        fetched < size / 4,
        "a one-column read fetched {fetched} of {size} bytes"
    );
    assert!(fetched > size / 10, "{fetched} of {size}");

    counting.reset();
    let all: usize = src
        .batches(8192)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(all as u64, rows);
    let fetched_all = counting.counts().bytes_read;
    assert!(fetched_all >= size * 9 / 10, "{fetched_all} of {size}");
}

#[test]
fn derive_info_and_validate_work_on_store_tables() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let b = skeleton();
    write(
        &store,
        "in/s.skeletons.parquet",
        &b,
        &WriteOptions::default(),
    );
    let src = TableSource::open_store(store.clone(), "in/s.skeletons.parquet").unwrap();
    let summary = derive_source(
        &src,
        &[],
        store.clone(),
        "out/s.skeletons.arrow",
        &DeriveOptions::default(),
    )
    .unwrap();
    assert_eq!(summary.rows, 6);
    let derived = TableSource::open_store(store.clone(), "out/s.skeletons.arrow").unwrap();
    assert_eq!(derived.format(), Format::ArrowIpc);
    assert!(derived.schema().field_with_name("strahler").is_ok());
    let info = source_info(&derived).unwrap();
    assert_eq!((info.rows, info.files), (6, 1));
    assert_eq!(info.path.to_str(), Some("out/s.skeletons.arrow"));
    let alone = validate_sources(std::slice::from_ref(&derived), &ValidateOptions::default());
    assert!(alone.unwrap()[0].is_valid());
    // Both tables hold the same ids in one context: the dataset rules run across them.
    let reports = validate_sources(&[src, derived], &ValidateOptions::default()).unwrap();
    assert_eq!(reports.len(), 2);
    assert!(reports[0].is_valid(), "{:?}", reports[0].lines());
    assert!(reports[1].has(
        neurochunk_table::RuleId::ContextIdUnique,
        neurochunk_table::Severity::Error
    ));
}

#[test]
fn swc_import_and_export_and_derive_through_a_store() {
    use neurochunk_table::derive::derive_to;
    use neurochunk_table::swc::{
        export_swc_to_store, import_swc_files, parse_swc_bytes, SwcImportOptions,
    };
    use neurochunk_table::TableTarget;
    use std::path::PathBuf;

    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = "# neuron a\n1 1 0 0 0 1 -1\n2 3 1 0 0 0.5 1\n3 3 2 0 0 0.5 2\n";
    let b = "1 1 9 9 9 1 -1\n2 4 8 8 8 1 1\n";
    let files: Vec<(PathBuf, _)> = [("mem://in/10.swc", a), ("mem://in/20.swc", b)]
        .iter()
        .map(|(name, text)| {
            let path = PathBuf::from(name);
            let parsed = parse_swc_bytes(text.as_bytes().to_vec(), &path).unwrap();
            (path, parsed)
        })
        .collect();
    let target = TableTarget::Store {
        store: store.clone(),
        key: "t/n.skeletons.parquet".into(),
        name: "mem://t/n.skeletons.parquet".into(),
    };
    let opts = SwcImportOptions {
        context: "urn:uuid:00000000-0000-4000-8000-000000000005".into(),
        ..Default::default()
    };
    let summary = import_swc_files(&files, &target, &opts, &WriteOptions::default()).unwrap();
    assert_eq!(summary.rows, 5);
    // Fragment ids from the stems of the URLs' file names.
    assert_eq!(
        summary.fragments.iter().map(|f| f.1).collect::<Vec<_>>(),
        [10, 20]
    );
    assert_eq!(store.list_prefix("t/").unwrap(), ["t/n.skeletons.parquet"]);

    let src = TableSource::open_store(store.clone(), "t/n.skeletons.parquet").unwrap();
    // Derived fields into a store target, named by the target's name in errors.
    let derived_target = TableTarget::Store {
        store: store.clone(),
        key: "t/d.skeletons.arrow".into(),
        name: "mem://t/d.skeletons.arrow".into(),
    };
    let derived = derive_to(&src, &[], &derived_target, &DeriveOptions::default()).unwrap();
    assert_eq!(derived.rows, 5);
    let d = TableSource::open_store(store.clone(), "t/d.skeletons.arrow").unwrap();
    assert!(d.schema().field_with_name("n_children").is_ok());

    // A directory of {fragment}.swc objects, and a single object for one fragment.
    let keys = export_swc_to_store(&src, store.as_ref(), "out", "mem://out", None).unwrap();
    assert_eq!(keys, ["out/10.swc", "out/20.swc"]);
    let text = |k: &str| String::from_utf8(store.get(k).unwrap().unwrap().to_vec()).unwrap();
    assert_eq!(
        text("out/10.swc"),
        "# neuron a\n1 1 0 0 0 1 -1\n2 3 1 0 0 0.5 1\n3 3 2 0 0 0.5 2\n"
    );
    assert_eq!(text("out/20.swc"), b);
    let e = export_swc_to_store(&src, store.as_ref(), "one.swc", "mem://one.swc", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds 2 fragments"), "{e}");
    assert!(!store.exists("one.swc").unwrap());
    let keys =
        export_swc_to_store(&src, store.as_ref(), "one.swc", "mem://one.swc", Some(20)).unwrap();
    assert_eq!(keys, ["one.swc"]);
    assert_eq!(text("one.swc"), b);
}

#[test]
fn row_filters_skip_row_groups_and_partitions_they_rule_out() {
    use neurochunk_table::RowFilter;

    let counting = Arc::new(CountingStore::new(Arc::new(MemoryStore::new())));
    let store: Arc<dyn Store> = counting.clone();
    // fragment_id rises with the row: each of the eight row groups holds its own fragments.
    let rows = 160_000u64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("fragment_id", DataType::UInt64, false),
        Field::new("x", DataType::UInt64, false),
        Field::new("y", DataType::UInt64, false),
    ]));
    let frag = |r: u64| r / 5_000; // 32 fragments, 4 per row group
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from_iter_values((0..rows).map(frag))) as ArrayRef,
            Arc::new(UInt64Array::from_iter_values(
                (0..rows).map(neurochunk_table::synth::mix),
            )),
            Arc::new(UInt64Array::from_iter_values(
                (0..rows).map(|r| neurochunk_table::synth::mix(r + rows)),
            )),
        ],
    )
    .unwrap();
    let opts = WriteOptions {
        row_group_rows: 20_000,
        ..WriteOptions::default()
    };
    write(&store, "f.parquet", &batch, &opts);
    let src = TableSource::open_store(store.clone(), "f.parquet").unwrap();

    let read_x = |filter: Option<&RowFilter>| -> (Vec<u64>, u64, u64) {
        counting.reset();
        let mut xs = Vec::new();
        for b in src
            .batches_filtered(&["x".to_string()], filter, 4096)
            .unwrap()
        {
            let b = b.unwrap();
            assert_eq!(b.num_columns(), 1, "only the projected column comes out");
            xs.extend_from_slice(b.column(0).as_primitive::<UInt64Type>().values());
        }
        let c = counting.counts();
        (xs, c.bytes_read, c.ranges_read + c.whole_reads)
    };
    let (all, all_bytes, _) = read_x(None);
    assert_eq!(all.len() as u64, rows);
    // Fragments 9 and 10: rows 45 000..55 000, in row groups 2 (40 000..60 000) only.
    let filter = RowFilter {
        column: "fragment_id".into(),
        values: vec![10, 9, 999],
    };
    let (some, some_bytes, _) = read_x(Some(&filter));
    let expected: Vec<u64> = (45_000..55_000).map(neurochunk_table::synth::mix).collect();
    assert_eq!(some, expected);
    // One row group of eight, of the x column plus the filter column (which compresses
    // well): far less than the unfiltered read of x.
    assert!(
        some_bytes * 4 < all_bytes,
        "filtered read fetched {some_bytes} bytes, unfiltered {all_bytes}"
    );
    // A value no row group can hold reads no data at all.
    let (none, none_bytes, _) = read_x(Some(&RowFilter {
        column: "fragment_id".into(),
        values: vec![1_000],
    }));
    assert!(none.is_empty());
    assert!(none_bytes < 1_000, "{none_bytes} bytes for no row group");
    // Errors name the table and the column.
    let e = src
        .batches_filtered(
            &["x".to_string()],
            Some(&RowFilter {
                column: "nope".into(),
                values: vec![1],
            }),
            10,
        )
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("f.parquet") && e.contains("\"nope\""), "{e}");

    // Hive partitions of other values are never opened.
    let hive_batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("fragment_id", DataType::UInt64, false),
            Field::new("x", DataType::UInt64, false),
        ])),
        vec![
            Arc::new(UInt64Array::from_iter_values((0..4000u64).map(|r| r % 4))) as ArrayRef,
            Arc::new(UInt64Array::from_iter_values(0..4000u64)),
        ],
    )
    .unwrap();
    let hive_opts = WriteOptions {
        partition_by: Some("fragment_id".into()),
        ..WriteOptions::default()
    };
    write(&store, "h", &hive_batch, &hive_opts);
    let hive = TableSource::open_store(store.clone(), "h").unwrap();
    counting.reset();
    let xs: Vec<u64> = hive
        .batches_filtered(
            &["x".to_string(), "fragment_id".to_string()],
            Some(&RowFilter {
                column: "fragment_id".into(),
                values: vec![2],
            }),
            1000,
        )
        .unwrap()
        .flat_map(|b| {
            let b = b.unwrap();
            let f = b.column(1).as_primitive::<UInt64Type>();
            assert!(f.values().iter().all(|&v| v == 2));
            b.column(0).as_primitive::<UInt64Type>().values().to_vec()
        })
        .collect();
    assert_eq!(xs, (0..4000u64).filter(|r| r % 4 == 2).collect::<Vec<_>>());
    let one_file = store.size("h/fragment_id=2/part-0.parquet").unwrap();
    assert!(one_file.is_some(), "{:?}", store.list_prefix("h/").unwrap());
    assert!(
        counting.counts().bytes_read <= one_file.unwrap(),
        "{} bytes read for a partition of {:?} bytes",
        counting.counts().bytes_read,
        one_file
    );
}

/// A memory store that says it serves 8 reads at once (or `concurrency`) and holds each
/// `size` and ranged read a moment, counting how many are in flight together and noting the
/// threads that made them.
#[derive(Debug, Default)]
struct SlowConcurrentStore {
    inner: MemoryStore,
    in_flight: std::sync::atomic::AtomicUsize,
    most_in_flight: std::sync::atomic::AtomicUsize,
    /// What `concurrent_reads` says (0: 8).
    concurrency: usize,
    /// The names of the threads that made ranged reads.
    readers: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl SlowConcurrentStore {
    fn hold<R>(&self, read: impl FnOnce() -> R) -> R {
        use std::sync::atomic::Ordering::SeqCst;
        let name = std::thread::current().name().unwrap_or("").to_string();
        self.readers.lock().unwrap().insert(name);
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.most_in_flight.fetch_max(now, SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let out = read();
        self.in_flight.fetch_sub(1, SeqCst);
        out
    }
}

impl Store for SlowConcurrentStore {
    fn get(&self, key: &str) -> neurochunk_store::StoreResult<Option<Bytes>> {
        self.inner.get(key)
    }
    fn get_ranges(
        &self,
        key: &str,
        ranges: &[neurochunk_store::ByteRange],
    ) -> neurochunk_store::StoreResult<Option<Vec<Bytes>>> {
        self.hold(|| self.inner.get_ranges(key, ranges))
    }
    fn size(&self, key: &str) -> neurochunk_store::StoreResult<Option<u64>> {
        self.hold(|| self.inner.size(key))
    }
    fn set(&self, key: &str, value: Bytes) -> neurochunk_store::StoreResult<()> {
        self.inner.set(key, value)
    }
    fn delete(&self, key: &str) -> neurochunk_store::StoreResult<()> {
        self.inner.delete(key)
    }
    fn list_prefix(&self, prefix: &str) -> neurochunk_store::StoreResult<Vec<String>> {
        self.inner.list_prefix(prefix)
    }
    fn list_dir(
        &self,
        prefix: &str,
    ) -> neurochunk_store::StoreResult<neurochunk_store::DirListing> {
        self.inner.list_dir(prefix)
    }
    fn concurrent_reads(&self) -> usize {
        if self.concurrency == 0 {
            8
        } else {
            self.concurrency
        }
    }
}

#[test]
fn the_next_column_windows_are_fetched_while_the_decoder_works() {
    // Four columns of incompressible values in eight row groups: 32 column chunks of 512 KiB.
    // A store serving two reads at once gets first windows in groups of 8 MiB (16 of them);
    // once half of a group is decoded, the next one is fetched on a thread of its own.
    let slow = Arc::new(SlowConcurrentStore {
        concurrency: 2,
        ..Default::default()
    });
    let store: Arc<dyn Store> = slow.clone();
    let rows = 8 * 65_536u64;
    write_wide(&store, 4, rows, 65_536);
    let src = TableSource::open_store(store.clone(), "wide.parquet").unwrap();
    let mut seen = 0u64;
    for b in src.batches(65_536).unwrap() {
        let b = b.unwrap();
        for c in 0..4u64 {
            let col = b.column(c as usize).as_primitive::<UInt64Type>();
            for (i, v) in col.values().iter().enumerate() {
                assert_eq!(*v, neurochunk_table::synth::mix((seen + i as u64) * 4 + c));
            }
        }
        seen += b.num_rows() as u64;
    }
    assert_eq!(seen, rows);
    let readers = slow.readers.lock().unwrap().clone();
    assert!(
        readers.contains("neurochunk-parquet-ahead"),
        "no window was fetched in the background: {readers:?}"
    );
}

#[test]
fn hive_part_files_open_concurrently_in_order() {
    // Six partitions, one part file each.
    let slow = Arc::new(SlowConcurrentStore::default());
    let store: Arc<dyn Store> = slow.clone();
    let skel = Skel {
        ids: (1..=12).collect(),
        frags: vec![1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
        parents: vec![None; 12],
    };
    let b = skel.batch(md(&[]));
    let opts = WriteOptions {
        max_open_partitions: 8,
        ..hive_opts()
    };
    write(&store, "h", &b, &opts);
    let parts: Vec<String> = store
        .list_prefix("h/")
        .unwrap()
        .into_iter()
        .filter(|k| k.ends_with(".parquet"))
        .collect();
    assert_eq!(parts.len(), 6);

    let (src, got) = read(&store, "h");
    assert_eq!(id_pairs(&got), id_pairs(&b));
    let order: Vec<String> = src
        .files()
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    assert_eq!(order, parts, "files keep the listing's order");
    let most = slow
        .most_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        most > 1,
        "the part files were opened one at a time ({most} in flight at most)"
    );
    assert!(
        most <= 8,
        "{most} reads in flight, more than the store serves"
    );
}
