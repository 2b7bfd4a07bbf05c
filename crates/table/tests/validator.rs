//! Validator behaviour on tables built in Rust (a subset of the digest's cases;
//! the full pyarrow-written suite lives in tests/interop/table).

mod common;

use arrow::array::{Array, Float64Array, ListArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, UInt64Type};
use common::*;
use neurochunk_table::io::{write_all, WriteOptions};
use neurochunk_table::rules::RuleId;
use neurochunk_table::schema::{ExtensionDef, KeyPattern, Registry, SchemaDef};
use neurochunk_table::validate::{
    validate_path, validate_paths, Severity, TableReport, ValidateOptions,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn write(dir: &Path, name: &str, b: &arrow::array::RecordBatch) -> PathBuf {
    let p = dir.join(name);
    write_all(
        &p,
        b.schema(),
        std::slice::from_ref(b),
        &WriteOptions::default(),
    )
    .unwrap();
    p
}

fn check(b: &arrow::array::RecordBatch, name: &str, strict: bool) -> TableReport {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, b);
    validate_path(
        &p,
        &ValidateOptions {
            strict,
            ..Default::default()
        },
    )
}

fn errs(r: &TableReport) -> Vec<RuleId> {
    r.errors.iter().map(|v| v.rule).collect()
}

#[test]
fn base_skeleton_is_clean() {
    let r = check(
        &Skel::default().batch(md(&[])),
        "v1.skeletons.parquet",
        true,
    );
    assert!(r.is_valid() && r.warnings.is_empty(), "{:?}", r.lines());
    assert_eq!(r.rows, 6);
    assert_eq!(r.schema.as_deref(), Some("skeletons"));
}

#[test]
fn tree_errors_are_located() {
    let s = Skel {
        parents: vec![None, Some(1), Some(2), Some(99), None, Some(4)],
        ..Skel::default()
    };
    let r = check(&s.batch(md(&[])), "t.skeletons.arrow", false);
    let missing: Vec<_> = r.violations(RuleId::SkeletonParentMissing).collect();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].location, "row 3 (sample_id 4)");
    assert!(missing[0].message.contains("99"));
    let cross: Vec<_> = r.violations(RuleId::SkeletonParentFragment).collect();
    assert_eq!(cross.len(), 1);
    assert!(cross[0].message.contains("fragment 7") && cross[0].message.contains("fragment 9"));
}

#[test]
fn derived_consistency_is_configurable() {
    let b = Skel::default().batch(md(&[]));
    let child = ListArray::from_iter_primitive::<UInt64Type, _, _>(vec![
        Some(vec![Some(2)]),
        Some(vec![Some(4), Some(3)]), // order does not matter
        Some(vec![]),
        Some(vec![]),
        Some(vec![Some(11)]),
        Some(vec![]),
    ]);
    let b = with_column(
        &b,
        Field::new("child_ids", child.data_type().clone(), true),
        Arc::new(child),
    );
    let good = with_column(
        &b,
        Field::new("strahler", DataType::UInt32, true),
        Arc::new(UInt32Array::from(vec![2, 2, 1, 1, 1, 1])),
    );
    assert!(check(&good, "d.skeletons.parquet", true)
        .warnings
        .is_empty());
    let stale = with_column(
        &b,
        Field::new("strahler", DataType::UInt32, true),
        Arc::new(UInt32Array::from(vec![1, 2, 1, 1, 1, 1])),
    );
    let lenient = check(&stale, "d.skeletons.parquet", false);
    assert!(lenient.is_valid() && lenient.has(RuleId::DerivedStrahler, Severity::Warning));
    let strict = check(&stale, "d.skeletons.parquet", true);
    assert!(!strict.is_valid() && strict.has(RuleId::DerivedStrahler, Severity::Error));
    assert!(strict
        .violations(RuleId::DerivedStrahler)
        .next()
        .unwrap()
        .message
        .contains("computed 2"));
}

#[test]
fn many_violations_are_capped_with_a_summary() {
    let n = 500u64;
    let s = Skel {
        ids: (0..n).collect(),
        frags: vec![1; n as usize],
        parents: (0..n)
            .map(|i| if i == 0 { None } else { Some(10_000 + i) })
            .collect(),
    };
    let r = check(&s.batch(md(&[])), "m.skeletons.parquet", false);
    let v: Vec<_> = r.violations(RuleId::SkeletonParentMissing).collect();
    assert_eq!(v.len(), 21);
    assert!(
        v.last().unwrap().message.contains("479 more"),
        "{}",
        v.last().unwrap().message
    );
}

#[test]
fn dataset_checks_across_tables() {
    let dir = tempfile::tempdir().unwrap();
    let sk = write(
        dir.path(),
        "a.skeletons.parquet",
        &Skel::default().batch(md(&[("space", Some("urn:s:A"))])),
    );
    let other = Skel {
        ids: vec![1, 70],
        frags: vec![3, 3],
        parents: vec![None, Some(1)],
    };
    let sk2 = write(
        dir.path(),
        "b.skeletons.arrow",
        &other.batch(md(&[("space", Some("urn:s:B"))])),
    );
    let conn = write(
        dir.path(),
        "c.connections.parquet",
        &connections(
            &[3, 999],
            &[11, 10],
            &["synapse", "synapse"],
            md(&[("unit", None)]),
        ),
    );
    let reports = validate_paths(&[sk.clone(), sk2, conn], &ValidateOptions::default()).unwrap();
    assert!(reports[0].is_valid(), "{:?}", reports[0].lines());
    assert_eq!(
        errs(&reports[1]),
        [RuleId::ContextSpace, RuleId::ContextIdUnique]
    );
    assert_eq!(errs(&reports[2]), [RuleId::ConnectionSampleMissing]);
    assert!(reports[2].errors[0].message.contains("999"));
    // Alone, the connections table cannot be checked for references: valid.
    let alone = validate_paths(
        &[dir.path().join("c.connections.parquet")],
        &ValidateOptions::default(),
    )
    .unwrap();
    assert!(alone[0].is_valid());
}

#[test]
fn lenient_casts_int64_ids_including_negative_bit_patterns() {
    let b = Skel::default().batch(md(&[]));
    // sample_id as int64 with the bit pattern of 2^63 + 1 (negative when signed).
    let ids: Vec<i64> = vec![1, 2, 3, 4, 10, (1u64 << 63 | 1) as i64];
    let parents = UInt64Array::from(vec![None, Some(1), Some(2), Some(2), None, Some(10)]);
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[0] = Field::new("sample_id", DataType::Int64, false);
    let schema = Arc::new(arrow::datatypes::Schema::new_with_metadata(
        fields,
        b.schema().metadata().clone(),
    ));
    let mut cols = b.columns().to_vec();
    cols[0] = Arc::new(arrow::array::Int64Array::from(ids));
    cols[5] = Arc::new(parents);
    let b = arrow::array::RecordBatch::try_new(schema, cols).unwrap();
    let r = check(&b, "i.skeletons.parquet", false);
    assert!(r.is_valid(), "{:?}", r.lines());
    assert!(r.has(RuleId::FieldTypeCast, Severity::Warning));
    let r = check(&b, "i.skeletons.parquet", true);
    assert!(r.has(RuleId::FieldTypeCast, Severity::Error));
}

#[test]
fn registry_plugins_are_validated() {
    // A schema defined by an extension (extension by inheritance) plus an
    // extension field on skeletons.
    let mut reg = Registry::standard();
    let mut def: SchemaDef = reg.get("pointclouds").unwrap().clone();
    def.name = "org.example.meshvertices".into();
    def.parents = vec!["pointclouds".into()];
    def.fields = vec![];
    def.metadata = vec![];
    def.infixes = vec!["meshvertices".into()];
    def.signature = vec![];
    reg.register_schema(def.clone()).unwrap();
    assert!(reg.register_schema(def).is_err());
    let mut ext: ExtensionDef = reg.extension("net.clbarnes.swc").unwrap().clone();
    ext.prefix = "org.example.ext".into();
    ext.fields[0].name = "org.example.ext:weight".into();
    ext.fields[0].ty = neurochunk_table::schema::TypeSpec::Float64;
    ext.key_patterns = vec![KeyPattern::Version];
    reg.register_extension(ext);
    let eff = reg.effective("org.example.meshvertices").unwrap();
    assert!(eff.is_a("pointclouds") && eff.field("sample_id").is_some());

    let dir = tempfile::tempdir().unwrap();
    let b = Skel::default().batch(md(&[("org.example.ext:version", Some("1"))]));
    let b = with_column(
        &b,
        Field::new("org.example.ext:weight", DataType::Utf8, false),
        Arc::new(arrow::array::StringArray::from(vec!["a"; 6])),
    );
    let p = write(dir.path(), "e.skeletons.parquet", &b);
    let opts = ValidateOptions {
        registry: reg.clone(),
        ..Default::default()
    };
    let r = validate_path(&p, &opts);
    assert!(r.has(RuleId::FieldType, Severity::Error), "{:?}", r.lines());
    // With the standard registry the unknown extension field is accepted.
    assert!(validate_path(&p, &ValidateOptions::default()).is_valid());
    // The plug-in schema is identified by its file-name infix.
    let pc = write(
        dir.path(),
        "v.meshvertices.parquet",
        &Skel::default().batch(md(&[])),
    );
    let r = validate_path(&pc, &opts);
    assert_eq!(r.schema.as_deref(), Some("org.example.meshvertices"));
    assert!(r.has(RuleId::FieldUnknown, Severity::Warning)); // parent_id is not defined there
}

#[test]
fn empty_table_is_valid() {
    let s = Skel {
        ids: vec![],
        frags: vec![],
        parents: vec![],
    };
    let r = check(&s.batch(md(&[])), "e.skeletons.arrow", true);
    assert!(r.is_valid() && r.warnings.is_empty(), "{:?}", r.lines());
}

#[test]
fn non_finite_coordinates_warn() {
    let b = Skel::default().batch(md(&[]));
    let mut cols = b.columns().to_vec();
    cols[2] = Arc::new(Float64Array::from(vec![
        0.0,
        f64::NAN,
        1.0,
        1.0,
        1.0,
        f64::INFINITY,
    ]));
    let b = arrow::array::RecordBatch::try_new(b.schema(), cols).unwrap();
    let r = check(&b, "n.skeletons.parquet", false);
    assert!(r.is_valid());
    let w: Vec<_> = r.violations(RuleId::CoordinateFinite).collect();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].message.contains("2 row(s)") && w[0].location == "row 1",
        "{:?}",
        w[0]
    );
}

#[test]
fn fuzz_regressions_are_reported_as_unreadable_files() {
    // Inputs the `table_file` fuzz target found (see fuzz/regressions/README.md): a panic in
    // the arrow reader, and declared sizes that exhausted memory.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/table_file");
    for (file, expected) in [
        (
            "ipc-buffer-past-body.skeletons.arrow",
            "corrupt Arrow IPC data",
        ),
        (
            "ipc-block-past-end.skeletons.arrow",
            "past the data of the file",
        ),
        (
            "parquet-negative-column-size.skeletons.parquet",
            "corrupt Parquet data: column start and length should not be negative",
        ),
        (
            "parquet-dictionary-count.skeletons.parquet",
            "the dictionary page claims -10866393088 values but holds 320 bytes",
        ),
        (
            "parquet-page-header-list-past-end.skeletons.parquet",
            "page at offset 244: the page header cannot be read",
        ),
        (
            "parquet-page-size-bomb.skeletons.parquet",
            "a page claims 2096886773 bytes once uncompressed from 232 stored bytes, more than SNAPPY",
        ),
        (
            "parquet-compressed-size-as-double.skeletons.parquet",
            "a page claims 2096886773 bytes once uncompressed from 232 stored bytes, more than SNAPPY",
        ),
        (
            "parquet-compressed-size-as-boolean.skeletons.parquet",
            "a page claims 1352745605 bytes once uncompressed from 0 stored bytes",
        ),
        (
            "parquet-stop-with-delta.skeletons.parquet",
            "a page claims 2096886773 bytes once uncompressed from 232 stored bytes, more than SNAPPY",
        ),
        (
            "ipc-magic-only.skeletons.arrow",
            "the file of 12 bytes is too short to hold a footer",
        ),
        (
            "ipc-negative-row-count.skeletons.arrow",
            "a record batch declares -1 rows (a negative count in the file)",
        ),
    ] {
        let report =
            neurochunk_table::validate::validate_path(dir.join(file), &ValidateOptions::default());
        assert!(!report.is_valid() && report.unreadable, "{file}");
        let unreadable: Vec<_> = report
            .errors
            .iter()
            .filter(|v| v.rule == RuleId::TableUnreadable)
            .collect();
        assert_eq!(unreadable.len(), 1, "{file}: {report:?}");
        assert!(
            unreadable[0].message.contains(expected),
            "{file}: {}",
            unreadable[0].message
        );
    }
}
