//! `validate` on files written in memory, in both conventions, against a small schema that
//! mirrors hdmf-common's tables: a valid file gives no error, and each broken variant gives
//! the finding (rule, object, type) its break calls for, and no other error.

use std::sync::Arc;

use neurochunk_dtype::DataType;
use neurochunk_hdmf::validate::{validate, Finding, Report, Rule, Severity, ValidateOptions};
use neurochunk_hdmf::{
    parse_namespaces, AttributeValue, Convention, Dataset, DatasetOptions, DatasetValue,
    NamespaceDocs, NwbFile, NwbWriter, ReadOptions, Reference, TypeInfo, WriteOptions,
};
use neurochunk_store::{MemoryStore, Store};
use serde_json::{json, Value};

const COMMON_NS: &str = "namespaces:
- name: common
  version: 1.0.0
  schema:
  - source: table.yaml
";

const TABLE: &str = r#"
groups:
- data_type_def: Container
- data_type_def: DynamicTable
  data_type_inc: Container
  attributes:
  - name: colnames
    dtype: text
    shape: [null]
  - name: description
    dtype: text
  datasets:
  - name: id
    data_type_inc: ElementIdentifiers
  - data_type_inc: VectorData
    quantity: '*'
datasets:
- data_type_def: Data
- data_type_def: VectorData
  data_type_inc: Data
  shape:
  - [null]
  - [null, null]
  attributes:
  - name: description
    dtype: text
- data_type_def: VectorIndex
  data_type_inc: VectorData
  dtype: uint8
  shape: [null]
  attributes:
  - name: target
    dtype:
      target_type: VectorData
      reftype: object
- data_type_def: ElementIdentifiers
  data_type_inc: Data
  dtype: int
  shape: [null]
- data_type_def: DynamicTableRegion
  data_type_inc: VectorData
  dtype: int
  attributes:
  - name: table
    dtype:
      target_type: DynamicTable
      reftype: object
"#;

const LAB_NS: &str = "namespaces:
- name: lab
  version: 0.1.0
  schema:
  - namespace: common
  - source: lab.yaml
";

const LAB: &str = r#"
groups:
- neurodata_type_def: Device
  neurodata_type_inc: Container
  attributes:
  - name: maker
    dtype: text
    required: false
- neurodata_type_def: Probe
  neurodata_type_inc: Container
  links:
  - name: device
    target_type: Device
  datasets:
  - name: data
    dtype: float32
    dims: [time, xyz]
    shape: [null, 3]
    attributes:
    - name: unit
      dtype: text
      value: volts
  - name: channels
    neurodata_type_inc: DynamicTableRegion
    quantity: '?'
- neurodata_type_def: Session
  neurodata_type_inc: Container
  attributes:
  - name: subject
    dtype: text
  - name: rate
    dtype: float32
  datasets:
  - name: start_time
    dtype: isodatetime
  - name: reference
    dtype:
      target_type: Device
      reftype: object
    quantity: '?'
  groups:
  - name: devices
    groups:
    - neurodata_type_inc: Device
      quantity: '+'
  - name: probes
    groups:
    - neurodata_type_inc: Probe
      quantity: '*'
  - name: tables
    groups:
    - neurodata_type_inc: DynamicTable
      quantity: '*'
  - name: config
    quantity: '?'
    linkable: false
    attributes:
    - name: level
      dtype: uint8
"#;

fn namespaces() -> Vec<NamespaceDocs> {
    let mut out = Vec::new();
    for (ns, name, text) in [(COMMON_NS, "table.yaml", TABLE), (LAB_NS, "lab.yaml", LAB)] {
        out.extend(
            parse_namespaces("ns.yaml", ns, &mut |source: &str| {
                assert_eq!(source, name);
                Ok((source.to_string(), text.to_string()))
            })
            .expect("namespace parses"),
        );
    }
    out
}

/// What to break in the file written by [`write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Break {
    Nothing,
    MissingAttribute,
    MissingDataset,
    MissingGroup,
    WrongDatasetDtype,
    WrongAttributeDtype,
    WrongShape,
    WrongRank,
    ScalarForArray,
    WrongValue,
    NoTimezone,
    NotIsoText,
    TooFewDevices,
    LinkToWrongType,
    DanglingLink,
    ReferenceToWrongType,
    AttributeReferenceToWrongType,
    UnknownType,
    UnknownNamespace,
    ColnamesWithoutColumn,
    UnequalColumns,
    DecreasingIndex,
    IndexPastTarget,
    RegionOutOfRange,
    DuplicateIds,
    IllegalLink,
    ExtraGroup,
    WrongTypeForName,
}

fn f32s(values: &[f32], shape: Vec<usize>) -> Dataset {
    Dataset {
        shape,
        scalar: false,
        value: DatasetValue::Numeric {
            data_type: DataType::Float32,
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        },
    }
}

fn ints<T: Copy>(values: &[T], data_type: DataType, to: fn(T) -> Vec<u8>) -> Dataset {
    Dataset {
        shape: vec![values.len()],
        scalar: false,
        value: DatasetValue::Numeric {
            data_type,
            bytes: values.iter().flat_map(|v| to(*v)).collect(),
        },
    }
}

fn text(value: &str) -> Dataset {
    Dataset {
        shape: Vec::new(),
        scalar: true,
        value: DatasetValue::Text {
            values: vec![value.to_string()],
            bytes: false,
        },
    }
}

fn v(value: Value) -> AttributeValue {
    AttributeValue::Value(value)
}

fn attr(name: &str, value: Value) -> (String, AttributeValue) {
    (name.to_string(), v(value))
}

/// A Session file with devices, a probe (link, data, region into a table) and a table with a
/// ragged column, broken as `b` says.
fn write(convention: Convention, b: Break) -> Arc<dyn Store> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut w = NwbWriter::create_in(
        store.clone(),
        "f.nwb.zarr",
        convention,
        WriteOptions::default(),
    )
    .expect("writer");
    let no = DatasetOptions::default();
    let session_type = if b == Break::UnknownType {
        TypeInfo::new("lab", "Sesion")
    } else {
        TypeInfo::new("lab", "Session")
    };
    let mut root_attrs = vec![attr("subject", json!("mouse 7")), attr("rate", json!(30.0))];
    match b {
        Break::MissingAttribute => root_attrs.retain(|(k, _)| k != "subject"),
        Break::WrongAttributeDtype => root_attrs[1] = attr("rate", json!("fast")),
        _ => {}
    }
    w.root("2.8.0", &session_type, &root_attrs).expect("root");
    let start = match b {
        Break::NoTimezone => "2024-01-02T03:04:05",
        Break::NotIsoText => "the second of January",
        _ => "2024-01-02T03:04:05+01:00",
    };
    if b != Break::MissingDataset {
        w.dataset("/start_time", None, &text(start), &[], &no)
            .expect("start");
    }
    // Devices: one, or none at all.
    w.group("/devices", None, &[]).expect("devices");
    if b != Break::TooFewDevices {
        let device = if b == Break::UnknownNamespace {
            TypeInfo::new("elsewhere", "Device")
        } else {
            TypeInfo::new("lab", "Device")
        };
        w.group(
            "/devices/d0",
            Some(&device),
            &[attr("maker", json!("Acme"))],
        )
        .expect("device");
    }
    if b != Break::MissingGroup {
        w.group("/probes", None, &[]).expect("probes");
    }
    // The table: ids, a plain column and a ragged one.
    w.group(
        "/tables/t",
        Some(&TypeInfo::new("common", "DynamicTable")),
        &[
            attr(
                "colnames",
                json!(if b == Break::ColnamesWithoutColumn {
                    vec!["x", "spikes", "ghost"]
                } else {
                    vec!["x", "spikes"]
                }),
            ),
            attr("description", json!("a table")),
        ],
    )
    .expect("table");
    let ids: Vec<i64> = if b == Break::DuplicateIds {
        vec![0, 1, 1]
    } else {
        vec![0, 1, 2]
    };
    w.dataset(
        "/tables/t/id",
        Some(&TypeInfo::new("common", "ElementIdentifiers")),
        &ints(&ids, DataType::Int64, |x: i64| x.to_le_bytes().to_vec()),
        &[],
        &no,
    )
    .expect("id");
    let x: Vec<f32> = if b == Break::UnequalColumns {
        vec![1.0, 2.0]
    } else {
        vec![1.0, 2.0, 3.0]
    };
    let n = x.len();
    w.dataset(
        "/tables/t/x",
        Some(&TypeInfo::new("common", "VectorData")),
        &f32s(&x, vec![n]),
        &[attr("description", json!("x"))],
        &no,
    )
    .expect("x");
    w.dataset(
        "/tables/t/spikes",
        Some(&TypeInfo::new("common", "VectorData")),
        &f32s(&[0.1, 0.2, 0.3, 0.4, 0.5], vec![5]),
        &[attr("description", json!("spike times"))],
        &no,
    )
    .expect("spikes");
    let index: Vec<u8> = match b {
        Break::DecreasingIndex => vec![2, 1, 5],
        Break::IndexPastTarget => vec![2, 3, 6],
        _ => vec![2, 3, 5],
    };
    w.dataset(
        "/tables/t/spikes_index",
        Some(&TypeInfo::new("common", "VectorIndex")),
        &ints(&index, DataType::UInt8, |x: u8| vec![x]),
        &[
            attr("description", json!("index")),
            (
                "target".into(),
                AttributeValue::Reference(Reference::to("/tables/t/spikes")),
            ),
        ],
        &no,
    )
    .expect("index");
    // A probe: link to the device, data, a region of the table.
    if b != Break::MissingGroup {
        w.group("/probes/p0", Some(&TypeInfo::new("lab", "Probe")), &[])
            .expect("probe");
        let target = match b {
            Break::LinkToWrongType => "/tables/t",
            Break::DanglingLink => "/devices/nothing",
            _ => "/devices/d0",
        };
        if b != Break::TooFewDevices {
            w.link("/probes/p0", "device", target, ".").expect("link");
        }
        let (values, shape): (Vec<f32>, Vec<usize>) = match b {
            Break::WrongShape => (vec![0.0; 8], vec![2, 4]),
            Break::WrongRank => (vec![0.0; 6], vec![6]),
            _ => (vec![0.0; 6], vec![2, 3]),
        };
        let data = if b == Break::WrongDatasetDtype {
            ints(&[1i32; 6], DataType::Int32, |x: i32| {
                x.to_le_bytes().to_vec()
            })
        } else if b == Break::ScalarForArray {
            Dataset {
                shape: Vec::new(),
                scalar: true,
                value: DatasetValue::Numeric {
                    data_type: DataType::Float32,
                    bytes: 1.0f32.to_le_bytes().to_vec(),
                },
            }
        } else {
            f32s(&values, shape)
        };
        let data = if b == Break::WrongDatasetDtype {
            Dataset {
                shape: vec![2, 3],
                ..data
            }
        } else {
            data
        };
        let unit = if b == Break::WrongValue {
            "millivolts"
        } else {
            "volts"
        };
        w.dataset(
            "/probes/p0/data",
            None,
            &data,
            &[attr("unit", json!(unit))],
            &no,
        )
        .expect("data");
        let rows: Vec<i64> = if b == Break::RegionOutOfRange {
            vec![0, 3]
        } else {
            vec![0, 2]
        };
        let table = if b == Break::AttributeReferenceToWrongType {
            "/devices/d0"
        } else {
            "/tables/t"
        };
        let region_type = if b == Break::WrongTypeForName {
            TypeInfo::new("common", "VectorData")
        } else {
            TypeInfo::new("common", "DynamicTableRegion")
        };
        w.dataset(
            "/probes/p0/channels",
            Some(&region_type),
            &ints(&rows, DataType::Int64, |x: i64| x.to_le_bytes().to_vec()),
            &[
                attr("description", json!("two rows")),
                (
                    "table".into(),
                    AttributeValue::Reference(Reference::to(table)),
                ),
            ],
            &no,
        )
        .expect("region");
    }
    let referenced = if b == Break::ReferenceToWrongType {
        "/tables/t"
    } else {
        "/devices/d0"
    };
    if b != Break::TooFewDevices {
        w.dataset(
            "/reference",
            None,
            &Dataset {
                shape: Vec::new(),
                scalar: true,
                value: DatasetValue::References(vec![Some(Reference::to(referenced))]),
            },
            &[],
            &no,
        )
        .expect("reference");
    }
    match b {
        Break::IllegalLink => w.link("/", "config", "/devices", ".").expect("link"),
        _ => w
            .group("/config", None, &[attr("level", json!(3))])
            .expect("config"),
    }
    if b == Break::ExtraGroup {
        w.group("/scratch", None, &[]).expect("extra");
    }
    for ns in namespaces() {
        w.cache_namespace(&ns).expect("cache");
    }
    w.finish().expect("finish");
    store
}

fn report(convention: Convention, b: Break) -> Report {
    let store = write(convention, b);
    let file = NwbFile::open_store(store, "f.nwb.zarr", ReadOptions::default()).expect("opens");
    validate(&file, &ValidateOptions::default()).expect("validates")
}

fn errors(report: &Report) -> Vec<&Finding> {
    report.errors().collect()
}

const CONVENTIONS: [Convention; 2] = [Convention::Legacy, Convention::V3];

#[test]
fn a_valid_file_has_no_findings_in_either_convention() {
    for convention in CONVENTIONS {
        let r = report(convention, Break::Nothing);
        assert!(r.findings.is_empty(), "{convention}: {}", r.to_text());
        assert!(r.is_valid());
        assert_eq!(r.objects, 9, "{}", r.to_text());
        assert_eq!(
            r.namespaces,
            [
                ("common".to_string(), "1.0.0".to_string()),
                ("lab".to_string(), "0.1.0".to_string())
            ]
        );
    }
}

/// Each break with the one error it must give: (rule, path, type, words of the message).
fn expected(b: Break) -> (Rule, &'static str, &'static str, &'static [&'static str]) {
    use Break as B;
    match b {
        B::Nothing | B::ExtraGroup => unreachable!(),
        B::MissingAttribute => (
            Rule::MissingAttribute,
            "/",
            "Session",
            &["required attribute"],
        ),
        B::MissingDataset => (Rule::MissingDataset, "/", "Session", &["'start_time'"]),
        B::MissingGroup => (Rule::MissingGroup, "/", "Session", &["'probes'"]),
        B::WrongDatasetDtype => (
            Rule::Dtype,
            "/probes/p0/data",
            "Probe/data",
            &["expected float32, found int32"],
        ),
        B::WrongAttributeDtype => (
            Rule::Dtype,
            "/",
            "Session",
            &["expected float32, found utf"],
        ),
        B::WrongShape => (
            Rule::Shape,
            "/probes/p0/data",
            "Probe/data",
            &["[*, 3]", "[2, 4]"],
        ),
        B::WrongRank => (
            Rule::Shape,
            "/probes/p0/data",
            "Probe/data",
            &["[*, 3]", "[6]"],
        ),
        B::ScalarForArray => (
            Rule::Shape,
            "/probes/p0/data",
            "Probe/data",
            &["found a scalar"],
        ),
        B::WrongValue => (
            Rule::Value,
            "/probes/p0/data",
            "Probe/data",
            &["\"volts\"", "\"millivolts\""],
        ),
        B::NoTimezone => (
            Rule::Timezone,
            "/start_time",
            "Session/start_time",
            &["no time zone"],
        ),
        B::NotIsoText => (
            Rule::Dtype,
            "/start_time",
            "Session/start_time",
            &["not ISO 8601"],
        ),
        B::TooFewDevices => (
            Rule::MissingGroup,
            "/devices",
            "Session/devices",
            &["of type Device", "quantity +"],
        ),
        B::LinkToWrongType => (
            Rule::LinkTarget,
            "/probes/p0/device",
            "Probe/device",
            &["DynamicTable", "expected Device"],
        ),
        B::DanglingLink => (
            Rule::Unresolved,
            "/probes/p0/device",
            "Probe/device",
            &["/devices/nothing"],
        ),
        B::ReferenceToWrongType => (
            Rule::ReferenceTarget,
            "/reference",
            "Session/reference",
            &["'/tables/t'", "expected Device"],
        ),
        B::AttributeReferenceToWrongType => (
            Rule::ReferenceTarget,
            "/probes/p0/channels",
            "DynamicTableRegion",
            &["expected DynamicTable"],
        ),
        B::UnknownType => (Rule::UnknownType, "/", "Sesion", &["'Sesion'"]),
        B::UnknownNamespace => (
            Rule::MissingNamespace,
            "/devices/d0",
            "Device",
            &["'elsewhere'"],
        ),
        B::ColnamesWithoutColumn => (
            Rule::TableColnames,
            "/tables/t",
            "DynamicTable",
            &["'ghost'"],
        ),
        B::UnequalColumns => (
            Rule::TableColumnLength,
            "/tables/t/x",
            "DynamicTable",
            &["2 row(s)", "has 3"],
        ),
        B::DecreasingIndex => (
            Rule::VectorIndex,
            "/tables/t/spikes_index",
            "VectorIndex",
            &["value 1 at row 1", "smaller than the 2"],
        ),
        B::IndexPastTarget => (
            Rule::VectorIndex,
            "/tables/t/spikes_index",
            "VectorIndex",
            &["last value 6", "(5 elements)"],
        ),
        B::RegionOutOfRange => (
            Rule::TableRegion,
            "/probes/p0/channels",
            "DynamicTableRegion",
            &["value 3 at element 1", "3 row(s)"],
        ),
        B::DuplicateIds => (
            Rule::DuplicateIds,
            "/tables/t/id",
            "ElementIdentifiers",
            &["1 appears at elements 1 and 2"],
        ),
        B::IllegalLink => (
            Rule::IllegalLink,
            "/config",
            "Session/config",
            &["'/devices'"],
        ),
        B::WrongTypeForName => (
            Rule::WrongType,
            "/probes/p0/channels",
            "Probe/channels",
            &["of type VectorData", "expected DynamicTableRegion"],
        ),
    }
}

#[test]
fn each_break_gives_its_finding_and_no_other_error() {
    use Break as B;
    let breaks = [
        B::MissingAttribute,
        B::MissingDataset,
        B::MissingGroup,
        B::WrongDatasetDtype,
        B::WrongAttributeDtype,
        B::WrongShape,
        B::WrongRank,
        B::ScalarForArray,
        B::WrongValue,
        B::NoTimezone,
        B::NotIsoText,
        B::LinkToWrongType,
        B::DanglingLink,
        B::ReferenceToWrongType,
        B::AttributeReferenceToWrongType,
        B::UnknownType,
        B::UnknownNamespace,
        B::ColnamesWithoutColumn,
        B::UnequalColumns,
        B::DecreasingIndex,
        B::IndexPastTarget,
        B::RegionOutOfRange,
        B::DuplicateIds,
        B::IllegalLink,
        B::WrongTypeForName,
    ];
    for convention in CONVENTIONS {
        for b in breaks {
            let r = report(convention, b);
            let (rule, path, data_type, words) = expected(b);
            let errors = errors(&r);
            assert!(
                !r.is_valid(),
                "{convention} {b:?}: no error:\n{}",
                r.to_text()
            );
            let found = errors
                .iter()
                .find(|f| f.rule == rule && f.path == path)
                .unwrap_or_else(|| {
                    panic!("{convention} {b:?}: no {rule} at {path}:\n{}", r.to_text())
                });
            assert_eq!(
                found.data_type,
                data_type,
                "{convention} {b:?}: {}",
                found.line()
            );
            for w in words {
                assert!(
                    found.message.contains(w),
                    "{convention} {b:?}: {w:?} not in {}",
                    found.line()
                );
            }
            // One problem, one error (an unknown type hides the specification of the root).
            assert_eq!(errors.len(), 1, "{convention} {b:?}:\n{}", r.to_text());
        }
    }
}

#[test]
fn too_few_objects_and_unmatched_objects() {
    for convention in CONVENTIONS {
        // No device: the '+' of devices fails, and the probe's required link is missing.
        let r = report(convention, Break::TooFewDevices);
        let rules: Vec<(Rule, &str)> = errors(&r)
            .iter()
            .map(|f| (f.rule, f.path.as_str()))
            .collect();
        assert_eq!(
            rules,
            [
                (Rule::MissingGroup, "/devices"),
                (Rule::MissingLink, "/probes/p0")
            ],
            "{}",
            r.to_text()
        );
        let (_, _, data_type, words) = expected(Break::TooFewDevices);
        let first = errors(&r)[0];
        assert_eq!(first.data_type, data_type);
        assert!(
            words.iter().all(|w| first.message.contains(w)),
            "{}",
            first.line()
        );
        // A group the specification does not describe is a warning; the file stays valid.
        let r = report(convention, Break::ExtraGroup);
        assert!(r.is_valid(), "{}", r.to_text());
        let warnings: Vec<&Finding> = r.warnings().collect();
        assert_eq!(warnings.len(), 1, "{}", r.to_text());
        assert_eq!(
            (
                warnings[0].rule,
                warnings[0].path.as_str(),
                warnings[0].severity
            ),
            (Rule::Unmatched, "/scratch", Severity::Warning)
        );
    }
}

#[test]
fn given_namespaces_replace_cached_ones_and_none_at_all_is_an_error() {
    let store = write(Convention::V3, Break::Nothing);
    let file = NwbFile::open_store(store, "f.nwb.zarr", ReadOptions::default()).expect("opens");
    // A stricter 'lab' given by the caller: Session also needs 'experimenter'.
    let strict = LAB.replacen(
        "  - name: rate\n",
        "  - name: experimenter\n    dtype: text\n  - name: rate\n",
        1,
    );
    let given = parse_namespaces("ns.yaml", LAB_NS, &mut |s: &str| {
        Ok((s.to_string(), strict.clone()))
    })
    .expect("parses");
    let r = validate(
        &file,
        &ValidateOptions {
            namespaces: given.clone(),
            use_cached: true,
        },
    )
    .expect("validates");
    let missing: Vec<_> = r
        .errors()
        .map(|f| (f.rule, f.attribute.as_deref()))
        .collect();
    assert_eq!(missing, [(Rule::MissingAttribute, Some("experimenter"))]);
    // Only the given 'lab': its include 'common' is missing.
    let r = validate(
        &file,
        &ValidateOptions {
            namespaces: given,
            use_cached: false,
        },
    )
    .expect("validates");
    assert!(
        r.errors()
            .any(|f| f.rule == Rule::MissingNamespace && f.message.contains("includes 'common'")),
        "{}",
        r.to_text()
    );
    let err = validate(
        &file,
        &ValidateOptions {
            namespaces: Vec::new(),
            use_cached: false,
        },
    )
    .expect_err("nothing to validate against");
    assert!(
        err.to_string().contains("caches no specifications"),
        "{err}"
    );
}

#[test]
fn report_forms() {
    let r = report(Convention::Legacy, Break::WrongValue);
    let json = r.to_json();
    assert_eq!(json.len(), 1);
    assert_eq!(
        json[0],
        json!({
            "file": "f.nwb.zarr",
            "severity": "error",
            "path": "/probes/p0/data",
            "type": "Probe/data",
            "rule": "value",
            "message": "must be \"volts\", found \"millivolts\"",
            "attribute": "unit",
        })
    );
    let text = r.to_text();
    assert!(text.starts_with("f.nwb.zarr: invalid: 1 error(s), 0 warning(s) (9 typed objects; common 1.0.0, lab 0.1.0)\nerrors:\n"), "{text}");
    assert!(text.contains("  error [value] /probes/p0/data (Probe/data): attribute 'unit': must be \"volts\", found \"millivolts\"\n"), "{text}");
    for rule in Rule::ALL {
        assert_eq!(Rule::from_id(rule.id()), Some(rule));
    }
}

#[test]
fn a_hierarchy_deeper_than_the_walk_goes_is_reported_not_overflowed() {
    let ns = "namespaces:\n- name: deep\n  version: '1'\n  schema:\n  - source: deep.yaml\n";
    let source = "groups:\n- neurodata_type_def: Folder\n  groups:\n  - neurodata_type_inc: Folder\n    quantity: '*'\n";
    let docs = parse_namespaces("ns.yaml", ns, &mut |s: &str| {
        Ok((s.to_string(), source.to_string()))
    })
    .expect("parses");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut w = NwbWriter::create_in(
        store.clone(),
        "d.nwb.zarr",
        Convention::V3,
        WriteOptions::default(),
    )
    .expect("writer");
    w.root("2.8.0", &TypeInfo::new("deep", "Folder"), &[])
        .expect("root");
    let mut path = String::new();
    for _ in 0..600 {
        path.push_str("/f");
        w.group(&path, Some(&TypeInfo::new("deep", "Folder")), &[])
            .expect("group");
    }
    w.cache_namespace(&docs[0]).expect("cache");
    w.finish().expect("finish");
    let file = NwbFile::open_store(store, "d.nwb.zarr", ReadOptions::default()).expect("opens");
    // On a thread with a small stack, as a guard against unbounded recursion.
    let report = std::thread::Builder::new()
        .stack_size(4 << 20)
        .spawn(move || validate(&file, &ValidateOptions::default()).expect("validates"))
        .expect("thread")
        .join()
        .expect("no overflow");
    let errors: Vec<&Finding> = report.errors().collect();
    assert_eq!(errors.len(), 1, "{}", report.to_text());
    assert_eq!(errors[0].rule, Rule::Unreadable);
    assert_eq!(
        errors[0].path.matches("/f").count(),
        512,
        "{}",
        errors[0].line()
    );
    assert!(
        errors[0].message.contains("more than 512 levels"),
        "{}",
        errors[0].line()
    );
    assert_eq!(report.objects, 601);
}
